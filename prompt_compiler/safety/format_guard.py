"""``str.format`` for templates written in configs: names only, bounded widths.

A template's placeholders may name a value (``{answer}``, ``{0}``) and give a format spec, but
never reach into it: ``{0.__class__.__mro__}`` or ``{x[0]}`` would print interpreter internals
(or a memory address, which changes from run to run) into a prompt. A width or precision above
the prompt-size limit (``{x:>999999999}``) is refused before the string is built.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from . import limits

__all__ = ["FormatRefused", "NamesOnlyFormatter", "safe_format"]

_NUMBER = re.compile(r"[0-9]+")


class FormatRefused(ValueError):
    """A placeholder follows an attribute or index, or asks for a width over the limit."""


class NamesOnlyFormatter(string.Formatter):
    """:class:`string.Formatter` whose fields are bare names or positions."""

    def get_field(self, field_name: str, args: Sequence[Any],
                  kwargs: Mapping[str, Any]) -> tuple[Any, str]:
        if "." in field_name or "[" in field_name:
            raise FormatRefused(
                f"the placeholder {{{field_name[:60]}}} reaches into a value (an attribute or "
                "index); placeholders may only name a value")
        key: int | str = int(field_name) if field_name.isdigit() else field_name
        return self.get_value(key, args, kwargs), field_name

    def format_field(self, value: Any, format_spec: str) -> Any:
        check_spec(format_spec)
        return format(value, format_spec)


def check_spec(format_spec: str) -> None:
    """Refuse a width or precision above the prompt-size limit."""
    if not format_spec:
        return
    limit = limits.current().prompt_chars
    for m in _NUMBER.finditer(format_spec):
        if len(m.group()) > 18 or int(m.group()) > limit:
            raise FormatRefused(f"the format spec {format_spec[:40]!r} asks for "
                                f"{m.group()[:30]} characters; "
                                + limits.describe("prompt_chars", limit))


_FORMATTER = NamesOnlyFormatter()


def safe_format(template: str, *args: Any, **kwargs: Any) -> str:
    """``template.format(*args, **kwargs)`` with the limits above.

    Raises:
        FormatRefused: See above.
        KeyError, IndexError: A placeholder names no given value (as ``str.format``).
        ValueError: A malformed template or spec (as ``str.format``).
    """
    return _FORMATTER.vformat(template, args, kwargs)
