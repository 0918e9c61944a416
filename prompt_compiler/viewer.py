"""The prompt viewer: a compiled prompt with whitespace and special tokens made visible."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["visible"]

# Special-token shapes used by chat formats: <|im_start|>, <s>, </s>, [INST], <eoa>, <｜User｜>.
_SPECIAL = re.compile(r"<\|[^|<>\s]{1,40}\|>|<｜[^｜<>\s]{1,40}｜>|</?[A-Za-z_][A-Za-z0-9_]{0,20}>|\[/?[A-Z_]{2,12}\]")


def _text(s: str, color: bool) -> str:
    s = _SPECIAL.sub(lambda m: f"\x1b[7m{m.group()}\x1b[0m" if color else f"⟦{m.group()}⟧", s)
    s = s.replace("\t", "→").replace("\r", "␍")
    lines = s.split("\n")
    out = [re.sub(r" +$", lambda m: "·" * len(m.group()), line) for line in lines]
    return "↵\n".join(out) + "␃"


def visible(prompt: Any, *, color: bool = False) -> str:
    """Render ``prompt`` for a human: ``↵`` ends lines, ``→`` tabs, ``·`` trailing spaces,
    ``⟦…⟧`` (or reverse video) marks special tokens, ``␃`` marks the end."""
    if isinstance(prompt, str):
        return _text(prompt, color)
    parts = []
    for msg in prompt:
        if isinstance(msg, str):
            parts.append(f"[raw] {_text(msg, color)}")
        else:
            body = msg.get("prompt", msg.get("content"))
            head = msg.get("role", "?")
            parts.append(f"[{head}] " + (_text(body, color) if isinstance(body, str)
                                          else json.dumps(body, ensure_ascii=False)))
    return "\n".join(parts)
