"""Rows as a Hugging Face ``Dataset`` leaves them: one Arrow type per column.

OpenCompass's loaders build their splits with ``Dataset.from_list`` (the columns are the first
row's keys; a later row's missing key reads ``None``) or ``load_dataset("json")`` (the columns
are every key in the order first seen). Either way each column gets one Arrow type for all
its rows, so reading the rows back changes values: an ``int`` in a column that also holds a
``float`` comes back as a ``float``, a dict in a column of dicts comes back with every key any
of them has (missing ones ``None``; in name order after ``from_list``), and so on inside
lists. A column whose values Arrow cannot give one type (``1`` beside ``"a"``) fails there;
it fails here too, naming the column.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ...errors import DataError
from ..rows import Row

__all__ = ["from_json_rows", "from_list", "json_columns"]

# A column type: "null", "bool", "int", "float", "str", "bytes", ("list", item type) or
# ("struct", ((field, type), ...)).
_Type = Any


class _Conflict(Exception):
    pass


def _type_of(value: Any) -> _Type:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, (list, tuple)):
        item: _Type = "null"
        for v in value:
            item = _merge(item, _type_of(v))
        return ("list", item)
    if isinstance(value, dict):
        return ("struct", tuple((str(k), _type_of(v)) for k, v in value.items()))
    raise _Conflict(type(value).__name__)


def _merge(a: _Type, b: _Type) -> _Type:
    if a == b or b == "null":
        return a
    if a == "null":
        return b
    if {a, b} == {"int", "float"}:
        return "float"
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0]:
        if a[0] == "list":
            return ("list", _merge(a[1], b[1]))
        fields = dict(a[1])
        for name, t in b[1]:
            fields[name] = _merge(fields[name], t) if name in fields else t
        return ("struct", tuple(fields.items()))
    raise _Conflict(f"{_name(a)} beside {_name(b)}")


def _name(t: _Type) -> str:
    return t if isinstance(t, str) else t[0]


def _cast(value: Any, t: _Type) -> Any:
    if value is None:
        return None
    if t == "float":
        return float(value)
    if isinstance(t, tuple):
        if t[0] == "list":
            return [_cast(v, t[1]) for v in value]
        return {name: _cast(value.get(name), ft) for name, ft in t[1]}
    return value


def _sorted(t: _Type) -> _Type:
    """``t`` with every struct's fields in name order (how ``from_list`` orders them)."""
    if isinstance(t, str):
        return t
    if t[0] == "list":
        return ("list", _sorted(t[1]))
    return ("struct", tuple(sorted((name, _sorted(ft)) for name, ft in t[1])))


def _table(rows: Sequence[Row], columns: Sequence[str], where: str,
           *, sort_fields: bool) -> list[Row]:
    types: dict[str, _Type] = {}
    for column in columns:
        merged: _Type = "null"
        try:
            for row in rows:
                merged = _merge(merged, _type_of(row.get(column)))
        except _Conflict as exc:
            raise DataError(f"{where}: column {column!r} holds {exc}, which a Hugging Face "
                            "Dataset cannot hold in one column (OpenCompass's loader fails "
                            "here too)") from None
        types[column] = _sorted(merged) if sort_fields else merged
    plain = [c for c, t in types.items() if isinstance(t, str) and t != "float"]
    if len(plain) == len(columns):
        return [{c: row.get(c) for c in columns} for row in rows]
    return [{c: _cast(row.get(c), types[c]) for c in columns} for row in rows]


def from_list(rows: Sequence[Row], where: str) -> list[Row]:
    """``Dataset.from_list(rows).to_list()``: the first row's columns, one type each, the
    fields of dicts in name order."""
    if not rows:
        return []
    return _table(rows, list(rows[0]), where, sort_fields=True)


def json_columns(rows: Iterable[Row]) -> list[str]:
    """Every key of ``rows`` in the order first seen (the columns of ``load_dataset("json")``)."""
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)


def from_json_rows(rows: Sequence[Row], where: str) -> list[Row]:
    """``load_dataset("json", data_files=...)["train"].to_list()`` for the parsed lines:
    every key a column, the fields of dicts in the order first seen."""
    return _table(rows, json_columns(rows), where, sort_fields=False)
