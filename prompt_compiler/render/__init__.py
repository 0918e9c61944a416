"""Renderers: a compiled prompt + a model's meta template -> the model's input."""

from .api import DEFAULT_CHAT_META, ApiPrompt, render_api
from .chat import chat_to_api, chat_to_lm, to_chat_messages
from .lm import join_plain, render_lm
from .meta import MetaTemplate
from .parsers import APITemplateParser, LMTemplateParser

__all__ = [
    "APITemplateParser",
    "DEFAULT_CHAT_META",
    "LMTemplateParser",
    "ApiPrompt",
    "MetaTemplate",
    "chat_to_api",
    "chat_to_lm",
    "join_plain",
    "render_api",
    "render_lm",
    "to_chat_messages",
]
