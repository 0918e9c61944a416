"""Rows a native reader returned, checked once and held as a read-only sequence.

The values are checked here as the JSON Lines reader checks its rows (no huge integer, no
nesting past the limit, no more columns than the limit), so the compiler does not walk them
again as it walks rows given inline in a config.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...errors import LimitError
from ...safety import limits
from ...safety.values import check_row, int_problem
from ..rows import LazyRows, Row

__all__ = ["CheckedRows"]

_PLAIN = frozenset((str, float, bool, type(None)))


class CheckedRows(LazyRows):
    """The rows of one split, checked when made (``check=False``: rows of strings from a
    CSV file's fixed columns, nothing to check)."""

    def __init__(self, rows: list[Row], where: str, *, check: bool = True) -> None:
        columns = limits.current().columns
        for index, row in enumerate(rows if check else ()):
            if len(row) > columns:
                raise LimitError(f"{where}: row {index}: {len(row):,} columns; "
                                 + limits.describe("columns", columns))
            for value in row.values():
                kind = type(value)
                if kind in _PLAIN or (kind is int and int_problem(value) is None):
                    continue
                check_row(row, f"{where}: row {index}")
                break
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def _row(self, index: int) -> Row:
        return self._rows[index]

    def iter_range(self, start: int, stop: int) -> Iterator[Row]:
        return iter(self._rows[start:stop])

    def __repr__(self) -> str:
        return f"CheckedRows({len(self)} rows)"
