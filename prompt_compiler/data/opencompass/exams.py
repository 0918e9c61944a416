"""Multiple-choice exams read from CSV files: MMLU, CMMLU, C-Eval, GPQA."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import DataError
from ..rows import Row
from .arrow import from_list
from .files import csv_fields, csv_records
from .registry import NativeReader, Splits

__all__ = ["READERS"]


def _mmlu(files: list[Path], path: str, name: str, **kwargs: Any) -> Splits:
    """``MMLUDataset``: ``dev`` and ``test``, six fields a record, no header."""
    keys = ("input", "A", "B", "C", "D", "target")
    return {split: [dict(zip(keys, fields, strict=True)) for fields in csv_fields(file, 6)]
            for split, file in zip(("dev", "test"), files, strict=True)}


def _cmmlu(files: list[Path], path: str, name: str, **kwargs: Any) -> Splits:
    """``CMMLUDataset``: ``dev`` and ``test``, a header, seven fields (the first unused)."""
    keys = ("question", "A", "B", "C", "D", "answer")
    splits: dict[str, list[Row]] = {}
    for split, file in zip(("dev", "test"), files, strict=True):
        records = csv_records(file)
        next(records, None)
        rows = []
        for line, fields in records:
            if len(fields) != 7:
                raise DataError(f"{file}: line {line}: {len(fields)} fields, expected 7 "
                                "(OpenCompass's loader asserts it)")
            rows.append(dict(zip(keys, fields[1:], strict=True)))
        splits[split] = rows
    return splits


def _ceval(files: list[Path], path: str, name: str, local_mode: bool = False) -> Splits:
    """``CEvalDataset``: ``dev``, ``val``, ``test`` keyed by the header; ``explanation`` and
    ``answer`` added (``''``) where absent; a split without rows is left out."""
    splits: dict[str, list[Row]] = {}
    for split, file in zip(("dev", "val", "test"), files, strict=True):
        records = csv_records(file)
        first = next(records, None)
        if first is None:
            raise DataError(f"{file}: empty CSV file (C-Eval's loader reads a header line)")
        header = first[1]
        rows = []
        for _, fields in records:
            item = dict(zip(header, fields, strict=False))
            item.setdefault("explanation", "")
            item.setdefault("answer", "")
            rows.append(item)
        if rows:
            splits[split] = from_list(rows, str(file))
    return splits


_ROTATIONS = ("ABCD", "BCDA", "CDAB", "DABC")


def _gpqa(files: list[Path], path: str, name: str, **kwargs: Any) -> Splits:
    """``GPQADataset``: the question (field 7) and four options (fields 8-11, the first
    correct), the options rotated by the row's count (1-based) and ``answer`` the letter
    where the correct one landed; the header row (field 7 ``Question``) is skipped."""
    rows: list[Row] = []
    (file,) = files
    for line, fields in csv_records(file):
        if len(fields) < 12:
            raise DataError(f"{file}: line {line}: {len(fields)} fields, GPQA's loader reads "
                            "fields 7 to 11")
        if fields[7] == "Question":
            continue
        options = fields[8:12]
        order = _ROTATIONS[(len(rows) + 1) % 4]
        row: Row = {"question": fields[7]}
        for letter, source in zip("ABCD", order, strict=True):
            row[letter] = options["ABCD".index(source)]
        answer = next((letter for letter in "ABCD" if row[letter] == options[0]), None)
        if answer is not None:
            row["answer"] = answer
        rows.append(row)
    return rows


READERS = (
    NativeReader("MMLUDataset", _mmlu, ("dev/{name}_dev.csv", "test/{name}_test.csv"),
                 text_only=True),
    NativeReader("CMMLUDataset", _cmmlu, ("dev/{name}.csv", "test/{name}.csv"),
                 text_only=True),
    NativeReader("CEvalDataset", _ceval,
                 ("dev/{name}_dev.csv", "val/{name}_val.csv", "test/{name}_test.csv"),
                 local_mode=None),
    NativeReader("GPQADataset", _gpqa, ("{name}",), local_mode=True, text_only=True),
)
