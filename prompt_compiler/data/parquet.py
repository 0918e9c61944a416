"""Parquet rows: a ``.parquet`` file, several of them (shards of one split), or a folder.

Rows are read by row groups (``pyarrow.parquet.ParquetFile.iter_batches``), so a test split
of any size streams through the compiler with flat memory; a row read by id (a training
row a retriever picked) reads its row group, and the last few row groups read are kept.

Values are what the same rows read from JSON Lines give: strings, ints (at most 64 bits),
floats, booleans, nulls, lists and structs (objects, keys in schema order). A column of a
type JSON has no value for (binary, dates and times, decimals, maps) is refused when the
file is opened, naming the file and the column. Needs ``pyarrow`` (the ``parquet`` extra).

In a folder, ``<split>.parquet`` is one split and Hugging Face hub shards
``<split>-00000-of-00003.parquet`` are joined in name order into one.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .._version import install_hint
from ..errors import DataError, LimitError
from ..safety import limits
from ..safety.values import check_row
from .rows import LazyRows, Row

__all__ = ["ConcatRows", "ParquetRows", "parquet_splits", "require_pyarrow"]


_BATCH = 4096
"""Rows decoded at a time while streaming a row group."""
_KEEP = 4
"""Row groups kept for reads by id."""
_SHARD = re.compile(r"^(?P<split>.+?)-\d+-of-\d+$")


def require_pyarrow(what: str) -> Any:
    """``pyarrow.parquet``, or a one-line error naming the extra to install."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(f"{what}: reading Parquet needs the 'pyarrow' package",
                        hint="install the extra: " + install_hint("parquet")) from None
    return pq


def _json_type(kind: Any) -> bool:
    """Whether values of this Arrow type read as JSON values (see the module docstring)."""
    import pyarrow.types as t

    if t.is_dictionary(kind):
        return _json_type(kind.value_type)
    if (t.is_null(kind) or t.is_boolean(kind) or t.is_integer(kind) or t.is_float32(kind)
            or t.is_float64(kind) or t.is_string(kind) or t.is_large_string(kind)
            or getattr(t, "is_string_view", lambda _: False)(kind)):
        return True
    if t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind) or (
            getattr(t, "is_list_view", lambda _: False)(kind)):
        return _json_type(kind.value_type)
    if t.is_struct(kind):
        return all(_json_type(kind.field(i).type) for i in range(kind.num_fields))
    return False


def _nested(kind: Any) -> bool:
    import pyarrow.types as t

    return bool(t.is_nested(kind))


class ParquetRows(LazyRows):
    """The rows of one or more Parquet files (one split), read when used.

    Opening reads only the files' footers (row counts per row group, the schema). Every
    file must have the columns of the first, in the same order.
    """

    def __init__(self, files: Sequence[Path]) -> None:
        pq = require_pyarrow(str(files[0]) if files else "parquet")
        self.files = [Path(f) for f in files]
        self._groups: list[tuple[int, int]] = []  # (file number, row group)
        self._starts: list[int] = []  # first row of each row group
        total, columns = 0, None
        for n, file in enumerate(self.files):
            try:
                meta = pq.ParquetFile(file)
                schema = meta.schema_arrow
            except OSError as exc:
                raise DataError(f"{file}: cannot read: {exc.strerror or exc}") from None
            except MemoryError as exc:  # pyarrow.ArrowMemoryError: a footer too big to read
                raise DataError(f"{file}: cannot read its footer: out of memory ({exc})") from None
            except Exception as exc:  # pyarrow.ArrowInvalid and others for a non-Parquet file
                raise DataError(f"{file}: not a Parquet file ({exc})") from None
            names = list(schema.names)
            most = limits.current().columns
            if len(names) > most:  # before any row is read: each row would be that wide
                raise LimitError(f"{file}: {len(names):,} columns; "
                                 + limits.describe("columns", most))
            if columns is None:
                columns = names
            elif names != columns:
                raise DataError(f"{file}: its columns ({', '.join(names)}) differ from those of "
                                f"{self.files[0]} ({', '.join(columns)})")
            for field in schema:
                if not _json_type(field.type):
                    raise DataError(
                        f"{file}: column {field.name!r} has the Parquet type {field.type}, which "
                        "has no JSON value (strings, numbers, booleans, nulls, lists and structs "
                        "are read)", hint="cast or drop the column before compiling")
            for g in range(meta.metadata.num_row_groups):
                rows = meta.metadata.row_group(g).num_rows
                if rows:
                    self._groups.append((n, g))
                    self._starts.append(total)
                    total += rows
        self.columns = columns or []
        self._nested = False
        if self.files:
            self._nested = any(_nested(f.type) for f in pq.ParquetFile(self.files[0]).schema_arrow)
        self._len = total
        self._open: dict[int, Any] = {}
        self._cache: OrderedDict[int, Any] = OrderedDict()

    # pickled (sent to another process) without open files or cached row groups
    def __getstate__(self) -> dict[str, Any]:
        return {"files": self.files, "_groups": self._groups, "_starts": self._starts,
                "columns": self.columns, "_nested": self._nested, "_len": self._len}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._open, self._cache = {}, OrderedDict()

    def _file(self, n: int) -> Any:
        pf = self._open.get(n)
        if pf is None:
            pq = require_pyarrow(str(self.files[n]))
            pf = self._open[n] = pq.ParquetFile(self.files[n])
        return pf

    def _where(self, group: int, offset: int = 0) -> str:
        n, g = self._groups[group]
        return f"{self.files[n]}: row {self._starts[group] + offset} (row group {g})"

    def _group(self, group: int) -> Any:
        table = self._cache.get(group)
        if table is not None:
            self._cache.move_to_end(group)
            return table
        n, g = self._groups[group]
        try:
            table = self._file(n).read_row_group(g, use_threads=False)
        except Exception as exc:
            raise DataError(f"{self._where(group)}: cannot read this row group ({exc})") from None
        self._cache[group] = table
        if len(self._cache) > _KEEP:
            self._cache.popitem(last=False)
        return table

    def __len__(self) -> int:
        return self._len

    def _row(self, index: int) -> Row:
        group = bisect_right(self._starts, index) - 1
        offset = index - self._starts[group]
        row: Row = self._group(group).slice(offset, 1).to_pylist()[0]
        if self._nested:
            self._check(row, group, offset)
        return row

    def _check(self, row: Row, group: int, offset: int) -> None:
        check_row(row, self._where(group, offset))

    def iter_range(self, start: int, stop: int) -> Iterator[Row]:
        """Rows ``start`` to ``stop - 1``, read in order one row group at a time."""
        stop = min(stop, len(self))
        if start >= stop:
            return
        group = bisect_right(self._starts, start) - 1
        row = self._starts[group]
        while row < stop:
            n, g = self._groups[group]
            try:
                batches = self._file(n).iter_batches(batch_size=_BATCH, row_groups=[g],
                                                     use_threads=False)
                for batch in batches:
                    size = batch.num_rows
                    if row + size <= start:
                        row += size
                        continue
                    lo, hi = max(start - row, 0), min(stop - row, size)
                    if lo or hi < size:
                        batch = batch.slice(lo, hi - lo)
                    for k, value in enumerate(batch.to_pylist(), row + lo - self._starts[group]):
                        if self._nested:
                            self._check(value, group, k)
                        yield value
                    row += size
                    if row >= stop:
                        return
            except DataError:
                raise
            except Exception as exc:
                raise DataError(f"{self._where(group)}: cannot read this row group "
                                f"({exc})") from None
            group += 1
            row = self._starts[group] if group < len(self._starts) else stop

    def __repr__(self) -> str:
        return f"ParquetRows({[str(f) for f in self.files]!r}, {len(self)} rows)"


class ConcatRows(LazyRows):
    """Several row sequences read as one (the files of a glob), in order."""

    def __init__(self, parts: Sequence[Sequence[Row]]) -> None:
        self.parts = list(parts)
        self._starts: list[int] = []
        total = 0
        for part in self.parts:
            self._starts.append(total)
            total += len(part)
        self._len = total

    def __len__(self) -> int:
        return self._len

    def _row(self, index: int) -> Row:
        part = bisect_right(self._starts, index) - 1
        return self.parts[part][index - self._starts[part]]

    def iter_range(self, start: int, stop: int) -> Iterator[Row]:
        """Rows ``start`` to ``stop - 1``, each part read sequentially where it can be."""
        for part, first in zip(self.parts, self._starts, strict=True):
            lo, hi = max(start - first, 0), min(stop - first, len(part))
            if lo >= hi:
                continue
            reader = getattr(part, "iter_range", None)
            yield from (reader(lo, hi) if reader is not None else
                        (part[i] for i in range(lo, hi)))


def parquet_splits(folder: Path) -> dict[str, list[Path]]:
    """The splits of a folder of Parquet files: ``<split>.parquet`` and hub shards
    ``<split>-NNNNN-of-NNNNN.parquet`` (joined in name order); empty if it has none."""
    splits: dict[str, list[Path]] = {}
    for file in sorted(folder.glob("*.parquet")):
        match = _SHARD.match(file.stem)
        splits.setdefault(match["split"] if match else file.stem, []).append(file)
    return splits
