"""Dataset rows: the files they come from and the reader that presents them to templates."""

from .._moved import forward

__getattr__ = forward("data")  # the names of the module this package replaced (deprecated)
