"""Per-API message formats: the request shape each chat/generation API accepts.

Given a multi-agent dialogue (messages with ``name``, ``role``, ``content`` and optional
``url``), build what OpenAI, DashScope (chat and multimodal), LiteLLM, ZhipuAI, Ollama
(chat and generate) or Gemini take, following AgentScope 0.0.5's prompt strategies
(differences: docs/divergences.md; user guide: docs/api_formats.md)::

    from prompt_compiler.api_formats import Msg, format_messages

    format_messages("dashscope_chat",
                    Msg("system", "Be brief.", role="system"),
                    [Msg("Bob", "Hi!", role="assistant")])
    # [{'role': 'system', 'content': 'Be brief.'},
    #  {'role': 'user', 'content': '## Dialogue History\\nBob: Hi!'}]
"""

from __future__ import annotations

from ._formats import FormatContext
from ._media import guess_media_type
from ._messages import (
    DEFAULT_ROLE,
    INVALID_IMAGE_URL,
    NOT_VISION_MODEL,
    UNSUPPORTED_URL,
    FormatWarning,
    Msg,
    content_text,
)
from ._registry import (
    DEFAULT_FORMATS,
    FormatRegistry,
    MessageFormat,
    chat_to_msgs,
    format_chat,
    format_messages,
)

__all__ = [
    "DEFAULT_FORMATS",
    "DEFAULT_ROLE",
    "FormatContext",
    "FormatRegistry",
    "FormatWarning",
    "INVALID_IMAGE_URL",
    "MessageFormat",
    "Msg",
    "NOT_VISION_MODEL",
    "UNSUPPORTED_URL",
    "chat_to_msgs",
    "content_text",
    "format_chat",
    "format_messages",
    "guess_media_type",
]
