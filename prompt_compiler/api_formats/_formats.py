"""The built-in request shapes, one function per API (AgentScope 0.0.5 strategies).

Every function takes the already-read messages (roles settled, in order) and a
:class:`FormatContext`, and returns exactly what that API's client takes as its prompt.

Shared rule of the "dialogue history" formats: the first message is the system prompt
only if its role is ``system``; every other message (a later system message too) becomes
a line ``"{name}: {content}"``, lines joined by ``\\n`` after the header
``## Dialogue History\\n``. Content is never passed through ``str.format``, so braces in
messages are safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._media import dashscope_media, openai_image_url
from ._messages import (
    INVALID_IMAGE_URL,
    NOT_VISION_MODEL,
    UNSUPPORTED_URL,
    Msg,
    content_text,
    warn,
)

__all__ = [
    "FormatContext",
    "dashscope_chat",
    "dashscope_multimodal",
    "gemini",
    "litellm",
    "ollama_chat",
    "ollama_generate",
    "openai",
]

HISTORY_HEADER = "## Dialogue History"

# Model-name substrings that mark an OpenAI vision model (AgentScope 0.0.5's list).
_VISION_MARKERS = ("gpt-4-turbo", "vision", "gpt-4o")


@dataclass(frozen=True, slots=True)
class FormatContext:
    """What a format needs besides the messages.

    Args:
        model_name: The API model name; the OpenAI format decides from it whether the
            model takes images.
        base_dir: Where relative local paths in urls are resolved.
        vision: Force the OpenAI vision decision (None: decide from ``model_name``).
    """

    model_name: str = ""
    base_dir: Path = field(default_factory=Path.cwd)
    vision: bool | None = None

    def is_vision_model(self) -> bool:
        """Whether the OpenAI format should attach images."""
        if self.vision is not None:
            return self.vision
        return any(marker in self.model_name for marker in _VISION_MARKERS)


def _split_system(msgs: Sequence[Msg]) -> tuple[Msg | None, list[Msg]]:
    """The leading system message (if the first message is one) and the rest."""
    if msgs and msgs[0].role == "system":
        return msgs[0], list(msgs[1:])
    return None, list(msgs)


def _history_lines(msgs: Sequence[Msg]) -> str:
    return "\n".join(f"{m.name}: {content_text(m.content)}" for m in msgs)


def _history(msgs: Sequence[Msg]) -> str:
    """Header plus lines; with no lines the header keeps its trailing newline."""
    return f"{HISTORY_HEADER}\n{_history_lines(msgs)}"


def _system_and_history(msgs: Sequence[Msg]) -> str:
    """The one-text form of LiteLLM and Ollama chat.

    The system text is made to end with a newline and joined to the history by another
    one (so a blank line separates them); the header is left out when there is no
    dialogue, and no messages give ``""``.
    """
    system, rest = _split_system(msgs)
    parts: list[str] = []
    if system is not None:
        text = content_text(system.content)
        parts.append(text if text.endswith("\n") else text + "\n")
    if rest:
        parts += [HISTORY_HEADER, _history_lines(rest)]
    return "\n".join(parts)


def _generation_prompt(msgs: Sequence[Msg]) -> str:
    """The single prompt string of Ollama generate and Gemini."""
    system, rest = _split_system(msgs)
    if system is None:
        return _history(rest)
    return f"{content_text(system.content)}\n\n{_history(rest)}"


def openai(msgs: Sequence[Msg], ctx: FormatContext) -> list[dict[str, Any]]:
    """One ``{"role", "name", "content"}`` dict per message, order and roles untouched.

    With a vision model, a message with usable image urls gets content parts
    ``[{"type": "text"}, {"type": "image_url"}...]``; unusable urls are skipped with a
    warning. With any other model the urls are dropped with a warning.
    """
    out: list[dict[str, Any]] = []
    for msg in msgs:
        text = content_text(msg.content)
        plain = {"role": msg.role, "name": msg.name, "content": text}
        if msg.url is None:
            out.append(plain)
            continue
        if not ctx.is_vision_model():
            warn(
                f"model {ctx.model_name!r} does not take images; the url(s) of message "
                f"{msg.name!r} are left out",
                kind=NOT_VISION_MODEL,
                detail=ctx.model_name,
            )
            out.append(plain)
            continue
        images: list[str] = []
        for url in msg.urls:
            image = openai_image_url(url, ctx.base_dir)
            if image is None:
                warn(
                    f"url {url!r} of message {msg.name!r} is not an image the OpenAI API "
                    "takes (web url ending in .png/.jpg/.jpeg/.gif/.webp, or such a local "
                    "file); skipped",
                    kind=INVALID_IMAGE_URL,
                    url=url,
                )
            else:
                images.append(image)
        if not images:
            out.append(plain)
            continue
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
        parts += [{"type": "image_url", "image_url": {"url": image}} for image in images]
        out.append({"role": msg.role, "name": msg.name, "content": parts})
    return out


def dashscope_chat(msgs: Sequence[Msg], ctx: FormatContext) -> list[dict[str, Any]]:
    """Optional leading system message, then one user message holding the dialogue.

    Urls are not part of this text-only API and are ignored.
    """
    system, rest = _split_system(msgs)
    out: list[dict[str, Any]] = []
    if system is not None:
        out.append({"role": "system", "content": content_text(system.content)})
    out.append({"role": "user", "content": _history(rest)})
    return out


def _media_parts(msg: Msg, ctx: FormatContext) -> list[dict[str, str]]:
    parts: list[dict[str, str]] = []
    for url in msg.urls:
        kind, value = dashscope_media(url, ctx.base_dir)
        if kind in ("image", "audio"):
            parts.append({kind: value})
        else:
            warn(
                f"url {url!r} of message {msg.name!r} looks like a {kind}, not an image or "
                "audio; skipped",
                kind=UNSUPPORTED_URL,
                url=url,
                detail=kind,
            )
    return parts


def dashscope_multimodal(msgs: Sequence[Msg], ctx: FormatContext) -> list[dict[str, Any]]:
    """Like :func:`dashscope_chat` with list contents: media parts first, then the text."""
    system, rest = _split_system(msgs)
    out: list[dict[str, Any]] = []
    if system is not None:
        content = [*_media_parts(system, ctx), {"text": content_text(system.content)}]
        out.append({"role": "system", "content": content})
    media = [part for msg in rest for part in _media_parts(msg, ctx)]
    out.append({"role": "user", "content": [*media, {"text": _history(rest)}]})
    return out


def litellm(msgs: Sequence[Msg], ctx: FormatContext) -> list[dict[str, Any]]:
    """A single user message: system text, blank line, dialogue history."""
    return [{"role": "user", "content": _system_and_history(msgs)}]


def ollama_chat(msgs: Sequence[Msg], ctx: FormatContext) -> list[dict[str, Any]]:
    """A single system message with the LiteLLM text, plus ``images`` when urls exist.

    ``images`` lists every url of every message in order, unvalidated. A message with
    several urls contributes them one by one (AgentScope 0.0.5 nests them as a list,
    which the Ollama API cannot take; see docs/divergences.md).
    """
    message: dict[str, Any] = {"role": "system", "content": _system_and_history(msgs)}
    images = [url for msg in msgs for url in msg.urls]
    if images:
        message["images"] = images
    return [message]


def ollama_generate(msgs: Sequence[Msg], ctx: FormatContext) -> str:
    """One prompt string: ``system\\n\\n`` (if any) then the dialogue history."""
    return _generation_prompt(msgs)


def gemini(msgs: Sequence[Msg], ctx: FormatContext) -> list[dict[str, Any]]:
    """One user turn whose single part is the Ollama-generate prompt string."""
    return [{"role": "user", "parts": [_generation_prompt(msgs)]}]
