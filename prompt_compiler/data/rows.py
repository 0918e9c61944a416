"""What every lazily read row file is: a sequence of rows, read when used.

:class:`LazyRows` holds the parts the JSON Lines, Parquet and concatenated readers share
(index checks, slices, iteration in order, comparison with any sequence of rows); each
reader only says how to read one row (``_row``) and a run of rows (``iter_range``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

Row = dict[str, Any]


class LazyRows(Sequence[Row]):
    """A sequence of rows read from a file when used (subclasses: ``__len__``, ``_row``,
    ``iter_range``)."""

    def __len__(self) -> int:
        raise NotImplementedError

    def _row(self, index: int) -> Row:
        """Row ``index`` (``0 <= index < len(self)``)."""
        raise NotImplementedError

    def iter_range(self, start: int, stop: int) -> Iterator[Row]:
        """Rows ``start`` to ``stop - 1``, read in order."""
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> Row: ...
    @overload
    def __getitem__(self, index: slice) -> list[Row]: ...
    def __getitem__(self, index: int | slice) -> Row | list[Row]:
        if isinstance(index, slice):
            return [self._row(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("row index out of range")
        return self._row(index)

    def __iter__(self) -> Iterator[Row]:
        return self.iter_range(0, len(self))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class LoadedRows:
    """The rows of one dataset as loaded, shaped like the case format's ``rows`` /
    ``splits`` (the reader's :class:`prompt_compiler.data.reader.DatasetRows` are the
    train and test rows a job uses)."""

    rows: Sequence[Row] | None
    """One split used as both train and test (``subdivision`` = abbr), or None."""
    splits: Mapping[str, Sequence[Row]] | None
    """Named splits (``subdivision`` = ``{abbr}_{split}``), or None."""
    origin: str
    """Where the rows came from: ``inline`` or the file / folder read."""

    def case_fields(self) -> dict[str, Any]:
        """``{"rows": [...]}`` or ``{"splits": {...}}``, ready to put into a case dataset."""
        if self.rows is not None:
            return {"rows": self.rows}
        return {"splits": self.splits}
