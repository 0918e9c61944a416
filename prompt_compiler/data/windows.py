"""Rows of a large JSON Lines file found by the workers that read them, not by one process.

A file is cut into byte ranges (:func:`byte_ranges`); each is counted by whichever process
gets it (:func:`count_range`: its lines start at the first line start at or after the
range's first byte, and are the lines that start inside it). Adding the counts up
(:func:`line_ranges`) numbers every row without anyone reading the whole file: a
:class:`LineRanges`. A process that compiles rows ``a`` to ``b - 1`` then opens the file as a
:class:`JsonlWindow` (:func:`row_windows`): it seeks to the range holding row ``a``, skips
to it, and indexes only its own rows (and row 0, whose keys are the columns); the split
still has the file's length, so row ids are the same as with the whole file indexed.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..safety import limits
from .sources import JSONL_OPENER, JsonlRows, _open_regular

__all__ = ["RANGE_BYTES", "JsonlWindow", "LineRanges", "byte_ranges", "count_range",
           "line_ranges", "row_windows", "windowed"]

RANGE_BYTES = 16 << 20
"""Bytes of one counted range."""

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class LineRanges:
    """A JSON Lines file's byte ranges and the rows (non-blank lines) before each."""

    file: str
    """The file's real path."""
    starts: tuple[int, ...]
    """The first line start in each range (the range's end where none starts in it)."""
    rows: tuple[int, ...]
    """Rows before each range."""
    lines: tuple[int, ...]
    """Lines (blank ones too) before each range."""
    total: int
    """Rows in the file."""


def byte_ranges(file: str | os.PathLike[str], size: int = RANGE_BYTES) -> list[tuple[int, int]]:
    """The byte ranges ``[lo, hi)`` a file is counted in."""
    total = os.path.getsize(file)
    count = max(1, -(-total // size))
    return [(total * k // count, total * (k + 1) // count) for k in range(count)]


def count_range(file: str, lo: int, hi: int) -> tuple[int, int, int]:
    """``(first line start, rows, lines)`` of the lines that start in ``[lo, hi)``."""
    with open(_open_regular(Path(file)), "rb", buffering=0) as fh:
        first = 3 if fh.read(3) == _BOM else 0  # line 1 starts after a BOM
        if lo <= first:
            start = first
        else:
            fh.seek(lo - 1)
            start = lo - 1 + _line_end(fh)
        if start >= hi:
            return start, 0, 0
        fh.seek(start)
        data = _read(fh, hi - start)
        if data and not data.endswith(b"\n"):  # the rest of the line that starts before hi
            rest = _line_end(fh)
            fh.seek(start + len(data))
            data += _read(fh, rest)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return start, sum(map(bool, map(bytes.strip, lines))), len(lines)


def _read(fh: Any, size: int) -> bytes:
    """``size`` bytes from the current position (fewer at the end of the file)."""
    parts, left = [], size
    while left > 0:
        chunk = fh.read(left)
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _line_end(fh: Any) -> int:
    """Bytes from the current position to just past the next newline (or to the end)."""
    n = 0
    read = fh.read
    while chunk := read(1 << 16):
        at = chunk.find(b"\n")
        if at >= 0:
            return n + int(at) + 1
        n += len(chunk)
    return n


def line_ranges(file: str, counted: Sequence[tuple[int, int, int]]) -> LineRanges:
    """The counts of a file's ranges (in order) added up."""
    rows, lines = [0], [0]
    for _, r, n in counted:
        rows.append(rows[-1] + r)
        lines.append(lines[-1] + n)
    return LineRanges(os.path.realpath(file), tuple(c[0] for c in counted), tuple(rows[:-1]),
                      tuple(lines[:-1]), rows[-1])


_WINDOWS: ContextVar[Mapping[str, tuple[LineRanges, range]] | None] = ContextVar(
    "_WINDOWS", default=None)


@contextmanager
def row_windows(windows: Mapping[str, tuple[LineRanges, range]]) -> Iterator[None]:
    """Within: a JSON Lines file named here (by real path) is opened as a
    :class:`JsonlWindow` of those rows."""
    token = _WINDOWS.set(windows)
    opener = JSONL_OPENER.set(windowed)
    try:
        yield
    finally:
        JSONL_OPENER.reset(opener)
        _WINDOWS.reset(token)


def windowed(file: Path) -> JsonlWindow | None:
    """The window of ``file`` set by :func:`row_windows`, opened; None if it has none."""
    found = (_WINDOWS.get() or {}).get(os.path.realpath(file))
    return None if found is None else JsonlWindow(file, *found)


class JsonlWindow(JsonlRows):
    """The rows ``window`` (and row 0) of a JSON Lines file whose rows were counted by
    ranges: as long as the whole file, but only those rows can be read."""

    def __init__(self, file: Path, ranges: LineRanges, window: range) -> None:
        self.file = Path(file)
        found = limits.current()
        self._columns = found.columns
        self._limit = found.line_bytes
        self._total = ranges.total
        self._w0 = window.start
        self._starts, self._ends = array("q"), array("q")
        self._linenos = array("q")
        self._blank_lines = False
        self._fd: int | None = None
        self._first: tuple[int, int] = (0, 0)
        if not self._total:
            return
        with open(_open_regular(self.file), "rb", buffering=1 << 20) as fh:
            self._first = self._row_zero(fh)
            self._index(fh, ranges, window)
        self[0]  # a file that is not JSON Lines fails here, not mid-compile

    def _row_zero(self, fh: object) -> tuple[int, int]:
        pos, lineno = 0, 1
        head = fh.read(3)  # type: ignore[attr-defined]
        pos = 3 if head == _BOM else 0
        fh.seek(pos)  # type: ignore[attr-defined]
        for line in fh:  # type: ignore[attr-defined]
            if line.strip():
                self._check_length(len(line.rstrip(b"\n")), lineno, self._limit)
                return pos, pos + len(line)
            pos += len(line)
            lineno += 1
        raise DataError(f"{self.file}: it changed while it was read (no row found)")

    def _index(self, fh: object, ranges: LineRanges, window: range) -> None:
        if not window:
            return
        j = max(0, bisect_right(ranges.rows, window.start) - 1)
        pos, row, lineno = ranges.starts[j], ranges.rows[j], ranges.lines[j] + 1
        fh.seek(pos)  # type: ignore[attr-defined]
        for line in fh:  # type: ignore[attr-defined]
            end = pos + len(line)
            if line.strip():
                if row >= window.start:
                    self._check_length(len(line.rstrip(b"\n")), lineno, self._limit)
                    self._starts.append(pos)
                    self._ends.append(end)
                    self._linenos.append(lineno)
                row += 1
                if row >= window.stop:
                    break
            elif row >= window.start:
                self._blank_lines = True
            pos, lineno = end, lineno + 1
        if len(self._starts) != len(window):
            raise DataError(f"{self.file}: it changed while it was read (rows "
                            f"{window.start}-{window.stop - 1} were counted, "
                            f"{len(self._starts)} found)")

    def __len__(self) -> int:
        return self._total

    def _span(self, index: int) -> tuple[int, int]:
        k = index - self._w0
        if 0 <= k < len(self._starts):
            return self._starts[k], self._ends[k]
        if index == 0:
            return self._first
        raise DataError(f"internal error: row {index} of {self.file} is outside the rows "
                        f"this process reads ({self._w0}-{self._w0 + len(self._starts) - 1})")

    def _lineno(self, index: int) -> int:
        k = index - self._w0
        if 0 <= k < len(self._linenos):
            return int(self._linenos[k])
        return 1 if index == 0 else 0

    def byte_cuts(self, lo: int, hi: int, fractions: Sequence[float]) -> list[int]:
        raise DataError("internal error: a row window is not cut again")

    def __repr__(self) -> str:
        return f"JsonlWindow({str(self.file)!r}, rows {self._w0}+{len(self._starts)})"
