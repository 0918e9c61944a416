"""Retrievers: which training rows become each test row's in-context examples."""

from .._moved import forward

__getattr__ = forward("retrieve")  # the names of the module this package replaced (deprecated)
