"""Limits on the values configs and rows may hold, checked where they enter.

Configs and data are plain values (dicts, lists, strings, numbers). A few of those break code
far from where they came from, so they are refused at the door with the file, key path or row:

* integers of more than 4,300 digits: Python will not turn them into text
  (``sys.get_int_max_str_digits``), and every prompt is text;
* nesting deeper than :data:`MAX_DEPTH` levels: no prompt needs it and walking it exhausts the
  stack;
* (config text only) lone surrogates such as ``"\\ud800"``: not Unicode text, so they cannot be
  written as UTF-8. In rows they are reported when the record holding them is written.

``NaN``/``Infinity`` are allowed in values (a prompt shows them as ``nan``/``inf``); output
JSON is kept strict where records are serialised (:mod:`prompt_compiler.emit.records`).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "MAX_DEPTH",
    "join_path",
    "describe_load_error",
    "find_problem",
    "int_problem",
    "is_finite_json",
    "text_problem",
]

MAX_DEPTH: Final = 100
"""Deepest nesting of lists/dicts accepted in configs and rows."""

_INT_CHECK_BITS: Final = 14_000  # below ~4,214 digits: always printable, skip the costly check


def int_problem(value: int) -> str | None:
    """Why ``value`` cannot be printed, or None."""
    if value.bit_length() <= _INT_CHECK_BITS:
        return None
    limit = sys.get_int_max_str_digits()
    if limit == 0:
        return None
    try:
        str(value)
    except ValueError:
        return (f"an integer of more than {limit:,} digits (Python does not turn longer "
                "integers into text; write it as a string)")
    return None


def text_problem(value: str) -> str | None:
    """Why ``value`` is not valid Unicode text (a lone surrogate), or None."""
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"text holding a lone surrogate {value[exc.start:exc.end]!r} at position "
                f"{exc.start} (not valid Unicode, cannot be written as UTF-8)")
    return None


def find_problem(value: Any, *, text: bool = True) -> tuple[str, str] | None:
    """The first value that breaks the limits above: ``(sub-path, why)``, or None.

    ``sub-path`` is relative to ``value`` (``""``, ``"['a'][0]"``); ``text`` also checks
    strings for lone surrogates (configs do, rows leave it to the writer).
    """
    found = _find(value, text)
    if found is None:
        return None
    path, why = found
    return (path if len(path) <= 80 else path[:60] + "[...]"), why


def _find(value: Any, text: bool) -> tuple[str, str] | None:
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        kind = type(item)
        if kind is str:
            if text and (why := text_problem(item)):
                return path, why
        elif kind is int:
            if why := int_problem(item):
                return path, why
        elif isinstance(item, Mapping) or isinstance(item, (list, tuple)):
            if depth >= MAX_DEPTH:
                return path, f"values nested more than {MAX_DEPTH} levels deep"
            if isinstance(item, Mapping):
                for key, sub in reversed(list(item.items())):  # popped in written order
                    sub_path = f"{path}[{_key_repr(key)}]"
                    why = (text_problem(key) if text and type(key) is str
                           else int_problem(key) if type(key) is int else None)
                    if why:
                        return sub_path, "a key that is " + why
                    stack.append((sub, sub_path, depth + 1))
            else:
                for i, sub in reversed(list(enumerate(item))):
                    stack.append((sub, f"{path}[{i}]", depth + 1))
        elif isinstance(item, int) and not isinstance(item, bool):
            if why := int_problem(item):
                return path, why
    return None


def join_path(prefix: str, sub: str) -> str:
    """``datasets[0]`` + ``['infer_cfg']['x'][1]`` -> ``datasets[0].infer_cfg.x[1]``."""
    sub = re.sub(r"\['([A-Za-z_][A-Za-z0-9_]*)'\]", r".\1", sub)
    return (prefix + sub) if prefix else sub.lstrip(".")


def _key_repr(key: Any) -> str:
    if isinstance(key, str):
        return repr(key) if key.isascii() else ascii(key)
    if isinstance(key, int) and int_problem(key):
        return "<huge int>"
    return repr(key)


def is_finite_json(value: Any) -> bool:
    """False when ``value`` holds a float NaN or +/-Infinity (no strict JSON spelling)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return True


def describe_load_error(exc: BaseException) -> str | None:
    """A user-facing sentence for a parser failure caused by a value limit, else None.

    JSON and YAML parsers raise ``ValueError`` for integers over the digit limit and
    ``RecursionError`` for very deep nesting; neither is a syntax error of the file.
    """
    if isinstance(exc, RecursionError):
        return f"values nested too deeply (more than {MAX_DEPTH} levels are not supported)"
    if isinstance(exc, ValueError) and "integer string conversion" in str(exc):
        limit = sys.get_int_max_str_digits()
        return (f"an integer of more than {limit:,} digits (Python does not read longer "
                "integers; write it as a string)")
    return None


def check_row(row: Any, where: str, key_path: str = "") -> None:
    """Refuse a data row holding a value no prompt can show (huge integer, very deep
    nesting): a :class:`~prompt_compiler.errors.DataError` naming ``where`` and the column."""
    from ..errors import DataError

    found = find_problem(row, text=False)
    if found is not None:
        sub, why = found
        raise DataError(f"{where}: column {sub.removeprefix('[').split(']', 1)[0]}: {why}",
                        key_path=key_path or None)
