"""Dataset rows: the files they come from and the reader that presents them to templates."""
