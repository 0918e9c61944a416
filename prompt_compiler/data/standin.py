"""Stand-in rows for ``--check --no-rows``: a suite checked before its data is there.

A dataset whose rows would be read from a file (a ``path``, ``--data-dir``, OpenCompass's data
folder or its own loader) gets rows made from its ``reader_cfg`` instead: one column per
``input_columns`` entry and the ``output_column``; a test split of one row whose values are
the column names in angle brackets (``<question>``) and a training split of numbered rows
(``<question #0>``, ...). Everything after the rows runs as in a real check: the keys, the
templates and their placeholders (a placeholder that is no column is the usual warning), the
retriever (enough rows for the largest id or count it names), the inferencer, the model class
and its tokenizer. Inline rows are kept, and so are the rows of a path-only dataset (its
columns come from its file).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from ..config.records import CUSTOM_KEY, DatasetConfig

__all__ = ["needs_rows", "stand_in"]

_MAX_ROWS = 1024
"""Stand-in rows at most (a retriever naming a larger id is checked against this many)."""


def needs_rows(dataset: DatasetConfig) -> bool:
    """Whether ``dataset`` is checked on its own rows under ``--no-rows`` (inline rows, or a
    path-only dataset whose columns come from its file)."""
    spec = dataset.spec
    return "rows" in spec or "splits" in spec or bool(spec.get(CUSTOM_KEY))


def stand_in(dataset: DatasetConfig) -> DatasetConfig:
    """A copy of ``dataset`` with stand-in ``splits`` (see the module docstring)."""
    reader = dataset.spec.get("reader_cfg")
    reader = reader if isinstance(reader, dict) else {}
    columns = reader.get("input_columns")
    names = [columns] if isinstance(columns, str) else list(columns or ())
    output = reader.get("output_column")
    if output is not None:
        names.append(output)
    names = [str(name) for name in names if isinstance(name, (str, int))]
    infer = dataset.spec.get("infer_cfg")
    retriever = infer.get("retriever") if isinstance(infer, dict) else None
    count = min(_MAX_ROWS, max([1, *(n + 1 for n in _ints(retriever))]))
    train_split = str(reader.get("train_split", "train"))
    test_split = str(reader.get("test_split", "test"))
    # examples and test rows differ (no stand-in row is an example of itself)
    splits = {train_split: [{c: f"<{c} #{i}>" for c in names} for i in range(count)]}
    if test_split != train_split:
        splits[test_split] = [{c: f"<{c}>" for c in names}]
    spec = {k: v for k, v in dataset.spec.items() if k not in ("rows", "splits")}
    spec["splits"] = splits
    return replace(dataset, spec=spec)


def _ints(value: Any) -> Iterator[int]:
    """Every non-negative int in a config value (ids of ``fix_id_list``, ``ice_num`` ...)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int) and value >= 0:
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _ints(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _ints(item)
