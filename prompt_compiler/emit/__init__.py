"""The emit stage: record bytes, the output folder as one unit, file names and the manifest."""

from .._moved import forward

__getattr__ = forward("emit")  # the names of the module this package replaced (deprecated)
