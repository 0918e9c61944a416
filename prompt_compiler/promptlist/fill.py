"""Placeholder filling for ``{column}`` templates.

Two semantics exist, chosen by the compile policy:

* **single pass** (default mode, fixing OpenCompass defect D1): the template text is
  scanned once; each ``{k}`` whose ``k`` is a column of the row is replaced by
  ``str(value)`` and scanning resumes after the inserted text, so values are never
  re-interpreted. Unknown ``{x}``, lone braces and ``{{`` stay as written
  (``{{a}}`` gives ``{`` + value + ``}``: there is no escape syntax).
* **sequential** (``compat="opencompass"``): for each column in row order, every
  ``{k}`` of the *current* text is replaced, so a value containing ``{later_col}``
  is filled again by a later column (OpenCompass's ``safe_format``).

A :class:`Pattern` is parsed once per template text and filled per row. When no
key or value of a row contains a brace, the two semantics coincide, so the compiled
pattern also serves compat mode on that fast path.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..errors import LimitError
from ..safety import limits

__all__ = ["VALUE_TAGGER", "Pattern", "RowValues", "fill_sequential", "fill_single_pass",
           "fill_text"]

VALUE_TAGGER: ContextVar[Callable[[Mapping[str, Any], str, str], str] | None] = ContextVar(
    "VALUE_TAGGER", default=None)
"""Set only while span provenance is computed (:mod:`prompt_compiler.assemble.spans`): wraps each
stringified value (row, column, value) so that its position in the prompt can be found."""

_SLOT = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True, slots=True)
class RowValues:
    """A row prepared for filling: its values stringified once, in column order."""

    values: dict[str, str]
    """Column name -> ``str(value)``, in the row's column order."""
    brace_free: bool
    """True when no key or value contains ``{`` or ``}`` (both semantics agree then)."""
    raw: Mapping[str, Any] | None = None
    """The row itself (typed values), for Jinja2 templates."""

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> RowValues:
        tag = VALUE_TAGGER.get()
        if tag is None:
            values = {str(k): str(v) for k, v in row.items()}
        else:
            values = {str(k): tag(row, str(k), str(v)) for k, v in row.items()}
        brace_free = not any(
            "{" in s or "}" in s for pair in values.items() for s in pair
        )
        return cls(values, brace_free, row)


@dataclass(frozen=True, slots=True)
class Pattern:
    """A template text split once into literal text and ``{name}`` slots."""

    source: str
    parts: tuple[str, ...]
    """Alternating literal, slot name, literal, ... (odd indexes are slot names)."""
    stray_braces: bool = False
    """True when a literal part holds a brace, which a filled value could complete into a
    new placeholder (``{{a}}`` -> ``{b}``): sequential filling must then really re-scan."""

    @classmethod
    def parse(cls, text: str) -> Pattern:
        return _parse(text)

    @classmethod
    def _build(cls, text: str) -> Pattern:
        pieces: list[str] = []
        last = 0
        for m in _SLOT.finditer(text):
            pieces.append(text[last:m.start()])
            pieces.append(m.group(1))
            last = m.end()
        pieces.append(text[last:])
        stray = any("{" in p or "}" in p for p in pieces[0::2])
        return cls(text, tuple(pieces), stray)

    @property
    def slots(self) -> tuple[str, ...]:
        """The placeholder names, in order of appearance."""
        return self.parts[1::2]

    def fill(self, row: RowValues, *, sequential: bool = False) -> str:
        """Fill with a row; ``sequential`` selects OpenCompass's semantics."""
        if len(self.parts) == 1:
            return self.source
        if sequential and (self.stray_braces or not row.brace_free):
            return fill_sequential(self.source, row.values)
        values = row.values
        out = []
        for i, part in enumerate(self.parts):
            if i % 2 == 0:
                out.append(part)
            else:
                value = values.get(part)
                out.append("{" + part + "}" if value is None else value)
        return "".join(out)


@functools.lru_cache(maxsize=8192)
def _parse(text: str) -> Pattern:
    return Pattern._build(text)


def fill_sequential(text: str, values: Mapping[str, str]) -> str:
    """OpenCompass's ``safe_format``: replace ``{k}`` for each key in order, re-scanning.

    Re-filling can grow the text exponentially (a value holding its own placeholder twice);
    each step's size is computed before it is built, and a step past the prompt-size limit
    raises :class:`~prompt_compiler.errors.LimitError`.
    """
    limit = 0
    for key, value in values.items():
        slot = "{" + key + "}"
        if len(value) > len(slot):
            count = text.count(slot)
            if count:
                limit = limit or limits.current().prompt_chars
                size = len(text) + count * (len(value) - len(slot))
                if size > limit:
                    raise LimitError(
                        f"filling {slot[:40]} again inside inserted values (OpenCompass's "
                        f"re-fill, defect D1) would build {size:,} characters; "
                        + limits.describe("prompt_chars", limit, "characters"),
                        hint="--mode default fills each placeholder once")
        text = text.replace(slot, value)
    return text


def fill_single_pass(text: str, values: Mapping[str, str]) -> str:
    """Fill ``text`` once, left to right, never re-reading inserted values."""
    return Pattern.parse(text).fill(RowValues(dict(values), brace_free=True))


def fill_text(text: str, values: RowValues, *, sequential: bool = True) -> str:
    """Placeholders filled from ``values``: OpenCompass's sequential filling, or one pass."""
    if "{" not in text:
        return text
    return Pattern.parse(text).fill(values, sequential=sequential)
