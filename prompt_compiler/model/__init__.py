"""The model side: its spec, meta template library, system role, special tokens, tokenizer."""

from .._moved import forward

__getattr__ = forward("model")  # the names of the module this package replaced (deprecated)
