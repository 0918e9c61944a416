"""One module per reference system; each exposes ``run(cases, golden, mode)``."""
