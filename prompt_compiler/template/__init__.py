"""Dataset templates: PromptTemplate, RawPromptTemplate, Jinja2 prompts and placeholder filling."""

from .._moved import forward

__getattr__ = forward("template")  # the names of the module this package replaced (deprecated)
