"""A compiled prompt with whitespace and special tokens made visible (``--show``, ``diff``,
the HTML report of ``view``)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["GLYPHS", "Segment", "segments", "visible"]

# Special-token shapes used by chat formats: <|im_start|>, <s>, </s>, [INST], <eoa>, <｜User｜>.
_SPECIAL = re.compile(r"<\|[^|<>\s]{1,40}\|>|<｜[^｜<>\s]{1,40}｜>"
                      r"|</?[A-Za-z_][A-Za-z0-9_]{0,20}>|\[/?[A-Z_]{2,12}\]")


_WHITESPACE = re.compile(r"\n|\t|\r| +")
"""Whitespace shown visibly; a run of spaces only when a line break or the end follows it
(checked in code: `` +(?=\n)| +$`` as a pattern backtracks quadratically on long runs)."""
_KINDS = {"\n": "newline", "\t": "tab", "\r": "cr"}

Segment = tuple[int, int, str]
"""``(start, end, kind)`` of a prompt text: kind is ``text``, ``special`` (a special token),
``newline``, ``tab``, ``cr`` or ``trailing`` (spaces that end a line)."""

GLYPHS = {"newline": "↵", "tab": "→", "cr": "␍", "trailing": "·"}
"""The visible stand-in for each character of a whitespace segment kind."""


def segments(s: str) -> list[Segment]:
    """Cut ``s`` into runs that :func:`visible` (and the HTML report) show differently."""
    out: list[Segment] = []
    pos = 0

    def plain(start: int, end: int) -> None:
        sub = s[start:end]
        last = 0
        for m in _WHITESPACE.finditer(sub):
            if m.group()[0] == " " and m.end() < len(sub) and sub[m.end()] != "\n":
                continue  # spaces inside a line
            if m.group()[0] == " " and m.end() == len(sub) and end != len(s):
                continue  # spaces before a special token do not end a line
            if m.start() > last:
                out.append((start + last, start + m.start(), "text"))
            out.append((start + m.start(), start + m.end(), _KINDS.get(m.group()[0], "trailing")))
            last = m.end()
        if last < len(sub):
            out.append((start + last, end, "text"))

    for m in _SPECIAL.finditer(s):
        if m.start() > pos:
            plain(pos, m.start())
        out.append((m.start(), m.end(), "special"))
        pos = m.end()
    if pos < len(s):
        plain(pos, len(s))
    return out


def _text(s: str, color: bool) -> str:
    parts = []
    for a, b, kind in segments(s):
        piece = s[a:b]
        if kind == "special":
            parts.append(f"\x1b[7m{piece}\x1b[0m" if color else f"⟦{piece}⟧")
        elif kind == "newline":
            parts.append("↵\n")
        elif kind == "text":
            parts.append(piece)
        else:
            parts.append(GLYPHS[kind] * len(piece))
    return "".join(parts) + "␃"


def _text_parts(parts: Any) -> bool:
    return isinstance(parts, list) and bool(parts) and all(
        isinstance(p, Mapping) and isinstance(p.get("text"), str) for p in parts)


def visible(prompt: Any, *, color: bool = False) -> str:
    """Render ``prompt`` for a human: ``↵`` ends lines, ``→`` tabs, ``·`` trailing spaces,
    ``⟦…⟧`` (or reverse video) marks special tokens, ``␃`` marks the end."""
    if isinstance(prompt, str):
        return _text(prompt, color)
    if isinstance(prompt, Mapping):  # an API class's request ({"messages", "system"} ...)
        fields = []
        for key, value in prompt.items():
            if isinstance(value, str):
                fields.append(f"[{key}] {_text(value, color)}")
            elif isinstance(value, list):
                fields.append(visible(value, color=color))
            else:
                fields.append(f"[{key}] {json.dumps(value, ensure_ascii=False, default=repr)}")
        return "\n".join(fields)
    parts = []
    for msg in prompt:
        if isinstance(msg, str):
            parts.append(f"[raw] {_text(msg, color)}")
        elif not hasattr(msg, "get"):  # neither a message dict nor a RoleItem
            # e.g. a section marker of an unparsed PromptList (compat-mode CLP scores one, D9)
            obj = msg.to_obj() if hasattr(msg, "to_obj") else msg
            parts.append(f"[item] {json.dumps(obj, ensure_ascii=False, default=repr)}")
        else:
            body = msg.get("prompt", msg.get("content"))
            if body is None and _text_parts(msg.get("parts")):  # Gemini's {"text"} parts
                body = "".join(p["text"] for p in msg["parts"])
            head = msg.get("role", "?")
            parts.append(f"[{head}] " + (_text(body, color) if isinstance(body, str)
                                          else json.dumps(body, ensure_ascii=False)))
    return "\n".join(parts)
