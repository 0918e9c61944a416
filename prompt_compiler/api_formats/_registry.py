"""The registry of message formats and the public entry points.

A :class:`FormatRegistry` is immutable: it is built from a list of formats (duplicate
names or aliases raise) and extended by :meth:`FormatRegistry.with_format`, which returns
a new registry. :data:`DEFAULT_FORMATS` holds the built-in formats, so there is no
mutable module-level state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import ConfigError, RegistryError, RenderError
from . import _formats
from ._formats import FormatContext
from ._messages import Msg, read_args

__all__ = [
    "DEFAULT_FORMATS",
    "FormatRegistry",
    "MessageFormat",
    "chat_to_msgs",
    "format_chat",
    "format_messages",
]

Renderer = Callable[[Sequence[Msg], FormatContext], Any]


@dataclass(frozen=True, slots=True)
class MessageFormat:
    """A named request shape.

    Args:
        name: The format's name, e.g. ``"openai"``.
        render: Builds the request from the read messages.
        aliases: Other names, e.g. AgentScope's wrapper class ``"OpenAIChatWrapper"``.
        nested_lists: Whether argument lists may nest (only OpenAI's format allows it).
        summary: One line for listings.
    """

    name: str
    render: Renderer
    aliases: tuple[str, ...] = ()
    nested_lists: bool = False
    summary: str = ""


def _key(name: str) -> str:
    # Names are matched case-insensitively, so "OpenAI" in a model config also works.
    return name.casefold()


class FormatRegistry:
    """Formats by name or alias (case-insensitive); immutable once built.

    Raises:
        ConfigError: Two formats share a name or alias.
    """

    __slots__ = ("_formats", "_lookup")

    def __init__(self, formats: Iterable[MessageFormat] = ()) -> None:
        by_name: dict[str, MessageFormat] = {}
        lookup: dict[str, MessageFormat] = {}
        for fmt in formats:
            for label in (fmt.name, *fmt.aliases):
                other = lookup.get(_key(label))
                if other is not None:
                    raise ConfigError(
                        f"message format name {label!r} of format {fmt.name!r} is already "
                        f"taken by format {other.name!r}"
                    )
                lookup[_key(label)] = fmt
            by_name[fmt.name] = fmt
        self._formats: Mapping[str, MessageFormat] = MappingProxyType(by_name)
        self._lookup: Mapping[str, MessageFormat] = MappingProxyType(lookup)

    def with_format(self, fmt: MessageFormat) -> FormatRegistry:
        """A new registry with ``fmt`` added (this one is unchanged)."""
        return FormatRegistry((*self._formats.values(), fmt))

    def get(self, name: str) -> MessageFormat:
        """The format called ``name`` (a format name or an alias).

        Raises:
            RegistryError: No such format.
        """
        fmt = self._lookup.get(_key(name)) if isinstance(name, str) else None
        if fmt is None:
            raise RegistryError(
                f"unknown message format {name!r}",
                hint="one of " + ", ".join(self.names()) + " (or an AgentScope wrapper name)",
            )
        return fmt

    def names(self) -> tuple[str, ...]:
        """Format names in registration order."""
        return tuple(self._formats)

    def aliases(self) -> dict[str, str]:
        """Every alias mapped to its format name."""
        return {a: f.name for f in self._formats.values() for a in f.aliases}

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and _key(name) in self._lookup

    def __iter__(self) -> Iterator[MessageFormat]:
        return iter(self._formats.values())

    def __len__(self) -> int:
        return len(self._formats)


DEFAULT_FORMATS = FormatRegistry(
    [
        MessageFormat("openai", _formats.openai, ("OpenAIChatWrapper",), nested_lists=True,
                      summary="one dict per message with name; image parts for vision models"),
        MessageFormat("dashscope_chat", _formats.dashscope_chat, ("DashScopeChatWrapper",),
                      summary="leading system message + one user message with the dialogue"),
        MessageFormat("dashscope_multimodal", _formats.dashscope_multimodal,
                      ("DashScopeMultiModalWrapper",),
                      summary="as dashscope_chat with image/audio content parts"),
        MessageFormat("litellm", _formats.litellm, ("LiteLLMChatWrapper",),
                      summary="one user message: system text + dialogue"),
        MessageFormat("zhipuai", _formats.dashscope_chat, ("ZhipuAIChatWrapper",),
                      summary="same as dashscope_chat"),
        MessageFormat("ollama_chat", _formats.ollama_chat, ("OllamaChatWrapper",),
                      summary="one system message: system text + dialogue, urls as images"),
        MessageFormat("ollama_generate", _formats.ollama_generate, ("OllamaGenerationWrapper",),
                      summary="one prompt string"),
        MessageFormat("gemini", _formats.gemini, ("GeminiChatWrapper",),
                      summary="one user turn whose parts hold the prompt string"),
    ]
)


def _context(
    model_name: str, base_dir: str | PathLike[str] | None, vision: bool | None
) -> FormatContext:
    if not isinstance(model_name, str):
        raise RenderError(f"model_name must be a string, got {model_name!r}")
    return FormatContext(model_name, Path.cwd() if base_dir is None else Path(base_dir), vision)


def format_messages(
    fmt: str | MessageFormat,
    *args: object,
    model_name: str = "",
    base_dir: str | PathLike[str] | None = None,
    vision: bool | None = None,
    registry: FormatRegistry = DEFAULT_FORMATS,
) -> Any:
    """The request for one API from messages, like AgentScope's ``wrapper.format(*args)``.

    Args:
        fmt: A format name or alias (see :data:`DEFAULT_FORMATS`) or a format object.
        *args: Messages (:class:`Msg` or dicts), lists of them, or None (skipped).
        model_name: The API model name (the OpenAI format checks it for vision support).
        base_dir: Where relative local paths in urls are resolved (default: the
            current directory).
        vision: Force whether the OpenAI format attaches images.
        registry: Where format names are looked up.

    Returns:
        The request shape of that API: a list of message dicts, or a string for
        ``ollama_generate``.

    Raises:
        RegistryError: Unknown format name.
        RenderError: An argument is not a message, a list of messages or None.

    Warns:
        FormatWarning: A url was skipped or a role defaulted.
    """
    spec = fmt if isinstance(fmt, MessageFormat) else registry.get(fmt)
    ctx = _context(model_name, base_dir, vision)
    msgs = read_args(args, spec.name, nested=spec.nested_lists)
    return spec.render(msgs, ctx)


def _from_parts(parts: list[Any], where: str) -> tuple[str, tuple[str, ...]]:
    """Text and image urls of OpenAI content parts."""
    texts: list[str] = []
    urls: list[str] = []
    for j, part in enumerate(parts):
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            if not isinstance(url, str):
                raise RenderError(f"{where}.content[{j}]: image_url part without a url string")
            urls.append(url)
        else:
            raise RenderError(
                f"{where}.content[{j}]: unsupported content part {kind!r}; expected 'text' "
                "or 'image_url'"
            )
    return "\n".join(texts), tuple(urls)


def chat_to_msgs(messages: Sequence[Mapping[str, Any]]) -> list[Msg]:
    """Messages from an OpenAI-style list ``[{"role", "content"[, "name"]}]``.

    The speaker name is the message's ``name``, else its role (so dialogue lines read
    ``user: ...``). OpenAI content parts become text (joined by newlines) plus urls.

    Raises:
        RenderError: Not a list of dicts with ``role`` and ``content``.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise RenderError(f"expected a list of chat messages, got {type(messages)}")
    out: list[Msg] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
            raise RenderError(
                f"{where}: expected a dict with 'role' and 'content', got {message!r}"
            )
        role = message["role"]
        if not isinstance(role, str):
            raise RenderError(f"{where}: 'role' must be a string, got {role!r}")
        content = message["content"]
        urls: tuple[str, ...] | None = None
        is_parts = isinstance(content, list) and content and all(
            isinstance(p, Mapping) and "type" in p for p in content
        )
        if is_parts:
            content, urls = _from_parts(content, where)
        out.append(Msg(message.get("name") or role, content, role, urls or None))
    return out


def format_chat(
    fmt: str | MessageFormat,
    messages: Sequence[Mapping[str, Any]],
    *,
    model_name: str = "",
    base_dir: str | PathLike[str] | None = None,
    vision: bool | None = None,
    registry: FormatRegistry = DEFAULT_FORMATS,
) -> Any:
    """Reshape an OpenAI-style message list (e.g. a compiled API prompt) for one API.

    Same as :func:`format_messages` applied to :func:`chat_to_msgs` ``(messages)``.
    """
    return format_messages(
        fmt, chat_to_msgs(messages),
        model_name=model_name, base_dir=base_dir, vision=vision, registry=registry,
    )
