"""Messages for the per-API formats: the ``Msg`` value type, warnings, and argument reading.

The formats take their input the way AgentScope's ``ModelWrapper.format(*args)`` does:
every positional argument is a message, a list of messages, or ``None`` (skipped).
A message is a :class:`Msg` or any mapping with ``name`` and ``content`` (AgentScope's
own ``Msg`` is a dict, so it is accepted as is).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import RenderError

__all__ = [
    "DEFAULT_ROLE",
    "FormatWarning",
    "INVALID_IMAGE_URL",
    "Msg",
    "NOT_VISION_MODEL",
    "UNSUPPORTED_URL",
    "content_text",
    "read_args",
]

# Kinds of FormatWarning; stable strings so that callers (and the conformance suite)
# can tell the situations apart without parsing messages.
DEFAULT_ROLE = "default_role"
NOT_VISION_MODEL = "not_vision_model"
INVALID_IMAGE_URL = "invalid_image_url"
UNSUPPORTED_URL = "unsupported_url"


class FormatWarning(UserWarning):
    """Part of a message was defaulted or skipped while shaping an API request.

    Attributes:
        kind: One of ``default_role``, ``not_vision_model``, ``invalid_image_url``,
            ``unsupported_url``.
        url: The url concerned, when there is one.
        detail: Extra fact: the model name (``not_vision_model``) or the guessed media
            type (``unsupported_url``).
    """

    def __init__(
        self, message: str, *, kind: str, url: str | None = None, detail: str | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.url = url
        self.detail = detail


def warn(message: str, *, kind: str, url: str | None = None, detail: str | None = None) -> None:
    """Emit a :class:`FormatWarning` (one place, so every warning carries its kind)."""
    warnings.warn(FormatWarning(message, kind=kind, url=url, detail=detail), stacklevel=3)


@dataclass(frozen=True, slots=True)
class Msg:
    """One message of a multi-agent dialogue.

    Args:
        name: Who speaks; used as the ``name:`` prefix in dialogue-history formats.
        content: The text; other JSON values are serialised (see :func:`content_text`).
        role: ``system``, ``user`` or ``assistant``; ``None`` becomes ``assistant`` with a
            :class:`FormatWarning` at format time (AgentScope 0.0.5 does the same).
        url: One url or local path, or several (stored as a tuple).
    """

    name: str
    content: Any
    role: str | None = None
    url: str | Sequence[str] | None = None

    def __post_init__(self) -> None:
        # Store several urls as a tuple so that the value stays immutable.
        url = _check_url(self.url, f"message {self.name!r}")
        object.__setattr__(self, "url", url)

    @property
    def urls(self) -> tuple[str, ...]:
        """The urls as a tuple (empty when there is none)."""
        if self.url is None:
            return ()
        return (self.url,) if isinstance(self.url, str) else tuple(self.url)


def _check_url(url: object, where: str) -> str | tuple[str, ...] | None:
    if url is None or isinstance(url, str):
        return url
    if isinstance(url, (list, tuple)) and all(isinstance(u, str) for u in url):
        return tuple(url)
    raise RenderError(f"{where}: 'url' must be a string, a list of strings or None, got {url!r}")


def content_text(content: Any) -> str:
    """The text a message contributes: strings as is, JSON values as compact JSON.

    Dicts, lists, tuples, numbers and booleans are written with ``json.dumps`` (double
    quotes, non-ASCII kept) so that a model sees valid JSON; anything else uses ``str()``
    (``None`` gives ``"None"``), which is what AgentScope 0.0.5 produces.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, (dict, list, tuple, int, float, bool)):
        try:
            return json.dumps(content, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise RenderError(f"message content cannot be written as JSON: {exc}") from exc
    return str(content)


def _is_message(value: object) -> bool:
    return isinstance(value, (Msg, Mapping))


def to_msg(value: Msg | Mapping[str, Any], where: str) -> Msg:
    """A message with its role settled (missing role: ``assistant`` plus a warning)."""
    if isinstance(value, Msg):
        msg = value
    else:
        for key in ("name", "content"):
            if key not in value:
                raise RenderError(
                    f"{where}: the message has no {key!r} field; a message needs 'name' and "
                    f"'content' (optional 'role', 'url'), got keys {sorted(map(str, value))}"
                )
        role = value.get("role")
        if role is not None and not isinstance(role, str):
            raise RenderError(f"{where}: 'role' must be a string, got {role!r}")
        msg = Msg(value["name"], value["content"], role, _check_url(value.get("url"), where))
    if msg.role is None:
        warn(
            f"{where}: message {msg.name!r} has no role; 'assistant' is used",
            kind=DEFAULT_ROLE,
        )
    if not msg.role:
        # None and "" both become "assistant", as in AgentScope 0.0.5 (only None warns).
        msg = replace(msg, role="assistant")
    return msg


def read_args(args: Sequence[object], fmt: str, *, nested: bool) -> list[Msg]:
    """The messages of ``format(*args)`` in order, ``None`` arguments skipped.

    Args:
        args: The positional arguments.
        fmt: The format name, for error messages.
        nested: Whether lists may contain lists (only the OpenAI format allows it, and
            there ``None`` inside a list is skipped too).

    Raises:
        RenderError: An argument is neither a message, a list of messages nor ``None``.
    """
    out: list[Msg] = []
    _read(args, fmt, nested, "argument", out)
    return out


def _read(args: Sequence[object], fmt: str, nested: bool, path: str, out: list[Msg]) -> None:
    for i, arg in enumerate(args):
        where = f"format {fmt!r}, {path} {i + 1}" if path == "argument" else f"{path}[{i}]"
        if arg is None:
            continue
        if _is_message(arg):
            out.append(to_msg(arg, where))  # type: ignore[arg-type]
        elif isinstance(arg, list) and nested:
            _read(arg, fmt, nested, where, out)
        elif isinstance(arg, list):
            bad = next(((j, x) for j, x in enumerate(arg) if not _is_message(x)), None)
            if bad is not None:
                raise RenderError(
                    f"{where}: expected a message or a list of messages, got {list} whose "
                    f"item {bad[0]} is {type(bad[1])} (this format takes no nested lists "
                    "and no None inside a list)"
                )
            out.extend(to_msg(x, f"{where}[{j}]") for j, x in enumerate(arg))
        else:
            raise RenderError(
                f"{where}: expected a message (Msg or dict), a list of messages or None, "
                f"got {type(arg)}"
            )
