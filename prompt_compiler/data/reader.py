"""Dataset rows as OpenCompass's dataset reader presents them to templates.

Every split is normalised the way a Hugging Face ``Dataset.from_list`` plus
OpenCompass's ``BaseDataset`` would leave it: the columns are the first row's keys
(in order; a later row's missing key reads ``None``), and two columns are appended,
``subdivision`` (the dataset abbr, or ``"{abbr}_{split}"`` for named splits) and
``idx`` (the row's index within its split; an existing ``idx`` is overwritten in place).
``reader_cfg`` then picks the train and test splits and applies ranges.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, DataError

__all__ = ["DatasetRows", "ReaderConfig", "RowView", "iter_rows", "prepare_rows"]

Row = dict[str, Any]
_BOUND = re.compile(r"[+-]?\d*")
_MAX_BOUND_DIGITS = 4000


def _slice_bounds(text: str) -> tuple[str, str, str | None] | None:
    r"""``' [ 1 : -2 ]'`` -> ``("1", "-2", None)``: what the pattern
    ``^\s*\[\s*([+-]?\d*)\s*:\s*([+-]?\d*)\s*(?::\s*([+-]?\d*)\s*)?\]\s*$`` captures, found
    without a regex whose adjacent ``\s*`` backtrack quadratically over a long run of spaces."""
    inner = text.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        return None
    parts = [p.strip() for p in inner[1:-1].split(":")]
    if len(parts) not in (2, 3) or not all(_BOUND.fullmatch(p) for p in parts):
        return None
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


@dataclass(frozen=True, slots=True)
class ReaderConfig:
    """OpenCompass's ``reader_cfg``: which columns are inputs and which is the answer."""

    input_columns: tuple[str, ...]
    output_column: str | None = None
    train_split: str = "train"
    test_split: str = "test"
    train_range: Any = None
    test_range: Any = None

    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any] | None, *, where: str = "reader_cfg") -> ReaderConfig:
        if cfg is None:
            raise ConfigError("reader_cfg is required", key_path=where)
        if not isinstance(cfg, Mapping):
            raise ConfigError(f"reader_cfg must be a dict, got {type(cfg).__name__}",
                              key_path=where)
        cols = cfg.get("input_columns")
        if isinstance(cols, str):
            cols = cols.split()
        if not isinstance(cols, (list, tuple)) or not all(isinstance(c, str) for c in cols):
            raise ConfigError(
                f"input_columns must be a list of column names, got {cols!r}",
                key_path=f"{where}.input_columns",
            )
        out = cfg.get("output_column") or None
        if out is not None and not isinstance(out, str):
            raise ConfigError(f"output_column must be a column name, got {out!r}",
                              key_path=f"{where}.output_column")
        return cls(
            tuple(cols), out,
            str(cfg.get("train_split") or "train"), str(cfg.get("test_split") or "test"),
            cfg.get("train_range"), cfg.get("test_range"),
        )


@dataclass(frozen=True, slots=True)
class DatasetRows:
    """The train (in-context example pool) and test rows of one dataset.

    Inline rows are tuples; rows read from a file are :class:`RowView` sequences that read,
    normalise and select each row when it is used, so test rows stream."""

    train: Sequence[Row]
    test: Sequence[Row]


class RowView(Sequence[Row]):
    """Rows of a lazily read split, normalised (and range-selected) one at a time.

    Args:
        source: The split as read (e.g. :class:`~prompt_compiler.data.sources.JsonlRows`).
        columns: The first row's keys: every row gets exactly these, in this order.
        subdivision: The ``subdivision`` value.
        where: Key path of the data, for errors.
        index: Which source rows, in order (a range, or a list after a random range).
    """

    def __init__(self, source: Sequence[Any], columns: list[str], subdivision: str, where: str,
                 index: Sequence[int] | None = None) -> None:
        self.source, self.columns = source, columns
        self.subdivision, self.where = subdivision, where
        self.positions: Sequence[int] = range(len(source)) if index is None else index

    def select(self, index: Sequence[int]) -> RowView:
        """The view of rows ``self[i] for i in index``."""
        return RowView(self.source, self.columns, self.subdivision, self.where,
                       [self.positions[i] for i in index] if not isinstance(index, range)
                       else self.positions[index.start:index.stop:index.step])

    def _row(self, row: Any, i: int) -> Row:
        if not isinstance(row, Mapping):
            raise DataError(f"each row must be an object (dict), got {type(row).__name__}",
                            key_path=self.where, row=i)
        columns = self.columns
        if type(row) is dict and len(row) == len(columns) and list(row) == columns:
            new = row  # freshly read: normalise in place
        else:
            new = {c: row.get(c) for c in columns}
        new["subdivision"] = self.subdivision
        new["idx"] = i
        return new

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        src = self.positions[i]
        return self._row(self.source[src], src)

    def __iter__(self) -> Iterator[Row]:
        return self.iter_range(0, len(self))

    def iter_range(self, start: int, stop: int) -> Iterator[Row]:
        """Rows ``start`` to ``stop - 1``; one sequential read where the source allows it."""
        positions = self.positions
        if (isinstance(positions, range) and positions.step == 1
                and hasattr(self.source, "iter_range")):
            first = positions.start + start
            last = positions.start + min(stop, len(positions))
            columns, n, subdivision = self.columns, len(self.columns), self.subdivision
            for i, row in enumerate(self.source.iter_range(first, last), first):
                if type(row) is dict and len(row) == n and list(row) == columns:
                    row["subdivision"] = subdivision  # freshly read: normalise in place
                    row["idx"] = i
                    yield row
                else:
                    yield self._row(row, i)
        else:
            for src in positions[start:stop]:
                yield self._row(self.source[src], src)


def iter_rows(rows: Sequence[Row], start: int, stop: int) -> Iterator[Row]:
    """``rows[start:stop]`` one by one, streaming where ``rows`` is read from a file."""
    if isinstance(rows, RowView):
        return rows.iter_range(start, stop)
    return itertools.islice(rows, start, stop)


def _normalise(rows: Sequence[Any], subdivision: str, where: str) -> Sequence[Row]:
    if isinstance(rows, (str, bytes)) or not isinstance(rows, (list, tuple, Sequence)):
        raise DataError(f"rows must be a list of objects, got {type(rows).__name__}",
                        key_path=where)
    if not rows:
        return []
    if not isinstance(rows, (list, tuple)):
        first = rows[0]
        if not isinstance(first, Mapping):
            raise DataError(f"each row must be an object (dict), got {type(first).__name__}",
                            key_path=where, row=0)
        return RowView(rows, list(first.keys()), subdivision, where)
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise DataError(f"each row must be an object (dict), got {type(row).__name__}",
                            key_path=where, row=i)
    columns = list(rows[0].keys())
    out = []
    for i, row in enumerate(rows):
        new = {c: row.get(c) for c in columns}
        new["subdivision"] = subdivision
        new["idx"] = i
        out.append(new)
    return out


def _pick(rows: Sequence[Row], index: Sequence[int]) -> Sequence[Row]:
    if isinstance(rows, RowView):
        return rows.select(index)
    return [rows[i] for i in index]


def _apply_range(rows: Sequence[Row], rng: Any, where: str) -> Sequence[Row]:
    if rng is None:
        return rows
    if isinstance(rng, str):
        bounds = _slice_bounds(rng)
        if bounds is None:
            raise ConfigError(f"a range string must be a slice like '[0:10]', got {rng[:80]!r}",
                              key_path=where)
        if any(g is not None and len(g) > _MAX_BOUND_DIGITS for g in bounds):
            raise ConfigError(f"a range slice bound of more than {_MAX_BOUND_DIGITS:,} digits",
                              key_path=where)
        start, stop, step = (int(g) if g not in (None, "", "+", "-") else None for g in bounds)
        if step == 0:
            raise ConfigError("a range slice step cannot be 0", key_path=where)
        return _pick(rows, range(len(rows))[start:stop:step])
    if isinstance(rng, bool) or not isinstance(rng, (int, float)):
        raise ConfigError(f"a range must be an int, a float or a slice string, got {rng!r}",
                          key_path=where)
    # OpenCompass's load_partial_dataset: the whole split unless 0 < size < len(rows); a
    # fraction is then turned into a count (which may be 0: no rows), the rows shuffled with
    # random.Random(count) and the first count kept.
    if rng <= 0 or rng >= len(rows):
        return rows
    if isinstance(rng, float):
        if not rng < 1:
            raise ConfigError(
                f"a float range is a fraction of the split (between 0 and 1), or at least its "
                f"number of rows ({len(rows)}) to keep them all; got {rng!r}",
                key_path=where, hint=f"write the number of rows as an int ({int(rng)})",
                reference=("TypeError", "slice indices must be integers or None or have an "
                           "__index__ method"))
        rng = int(rng * len(rows))
    import random

    index = list(range(len(rows)))
    random.Random(rng).shuffle(index)
    return _pick(rows, index[:rng])


def prepare_rows(
    abbr: str | None,
    reader: ReaderConfig,
    *,
    splits: Mapping[str, Sequence[Any]] | None = None,
    rows: Sequence[Any] | None = None,
    where: str = "dataset",
) -> DatasetRows:
    """Select and normalise the train and test rows per ``reader``.

    Args:
        abbr: The dataset abbr (``subdivision`` value); ``None`` reads ``"dataset"``.
        reader: The reader config.
        splits: Named splits (``{"train": [...], "test": [...]}``).
        rows: One list used as both train and test.
        where: Key path of the data, for errors.
    """
    name = abbr or "dataset"
    if rows is not None:
        one = _normalise(rows, name, f"{where}.rows")
        train, test = one, one
    elif splits is not None:
        def get(split: str, role: str) -> Sequence[Row]:
            if split not in splits:
                raise DataError(
                    f"the {role} split {split!r} is missing; available splits: "
                    f"{', '.join(map(repr, splits)) or 'none'}",
                    key_path=f"reader_cfg.{role}_split",
                )
            return _normalise(splits[split], f"{name}_{split}", f"{where}.splits.{split}")

        train = get(reader.train_split, "train")
        test = train if reader.test_split == reader.train_split else get(reader.test_split, "test")
    else:
        raise DataError("the dataset has no rows (neither 'rows' nor 'splits')", key_path=where)
    train = _apply_range(train, reader.train_range, "reader_cfg.train_range")
    test = _apply_range(test, reader.test_range, "reader_cfg.test_range")
    return DatasetRows(_frozen(train), _frozen(test))


def _frozen(rows: Sequence[Row]) -> Sequence[Row]:
    return tuple(rows) if isinstance(rows, list) else rows
