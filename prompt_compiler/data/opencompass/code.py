"""Code generation sets: HumanEval, HumanEval-X, MBPP, sanitized MBPP, LCBench.

MBPP, sanitized MBPP and LCBench read their file with ``load_dataset("json")`` (every key a
column, first seen first), take ``train[a:b]`` slices and ``map()`` each row: a popped key
leaves its column, an assigned one keeps its place, a new one comes last.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import ConfigError, DataError
from ..rows import Row
from .arrow import from_json_rows, from_list
from .files import json_lines
from .registry import NativeReader, Splits

__all__ = ["READERS", "hf_slice"]


def _humaneval(files: list[Path], path: str, num_repeats: int = 1,
               local_mode: bool = False) -> Splits:
    """``HumanevalDataset``: the file's rows, each repeated ``num_repeats`` times in place."""
    (file,) = files
    return from_list([row for row in json_lines(file) for _ in range(num_repeats)], str(file))


_LANGUAGES = ("cpp", "go", "java", "js", "python", "rust")


def _humanevalx(files: list[Path], path: str, language: str, **kwargs: Any) -> Splits:
    """``HumanevalXDataset``: the rows of ``humanevalx_<language>.jsonl.gz`` (lines of only
    white space skipped)."""
    if language not in _LANGUAGES:
        raise ConfigError(f"HumanevalXDataset: language must be one of {', '.join(_LANGUAGES)}, "
                          f"got {language!r}")
    (file,) = files
    try:
        with gzip.open(file, "rt") as fh:
            lines = [(n, line) for n, line in enumerate(fh, 1) if not line.isspace() and line]
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataError(f"{file}: not a gzip file of UTF-8 JSON lines ({exc})") from None
    rows: list[Row] = []
    for n, line in lines:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DataError(f"{file}: line {n}: malformed JSON: {exc.msg}") from None
    return from_list(rows, str(file))


_SLICE = re.compile(r"train\[(-?\d*):(-?\d*)\]")


def hf_slice(rows: list[Row], split: str) -> list[Row]:
    """The rows a ``load_dataset`` split such as ``train[:10]`` or ``train[10:510]`` picks."""
    found = _SLICE.fullmatch(split)
    if found is None:
        raise ConfigError(f"split {split!r}: only train[a:b] slices are read natively")
    start, stop = (int(b) if b else None for b in found.groups())
    return rows[start:stop]


def _mbpp_rows(file: Path, split: str, process: Callable[[Row], Row]) -> list[Row]:
    rows = hf_slice(from_json_rows(list(json_lines(file)), str(file)), split)
    try:
        return from_list([process(dict(row)) for row in rows], str(file))
    except (KeyError, TypeError) as exc:
        raise DataError(f"{file}: not an MBPP row ({type(exc).__name__}: {exc})") from None


def _mbpp(files: list[Path], path: str, local_mode: bool = False) -> Splits:
    """``MBPPDataset``: rows 0-9 train, 10-509 test; ``test_case`` keeps the list,
    ``test_list`` and ``test_list_2`` the tests joined by newlines."""
    def process(row: Row) -> Row:
        row["test_case"] = row["test_list"]
        row["test_list"] = "\n".join(row["test_list"])
        row["test_list_2"] = row["test_list"]
        return row

    (file,) = files
    return {"train": _mbpp_rows(file, "train[:10]", process),
            "test": _mbpp_rows(file, "train[10:510]", process)}


def _sanitized_mbpp(files: list[Path], path: str, num_repeats: int = 1) -> Splits:
    """``SanitizedMBPPDataset``: rows 0-6 train, 7-263 test (repeated ``num_repeats``
    times); ``prompt`` becomes ``text`` (last), tests joined as in MBPP, and ``test_column``
    holds ``task_id`` and ``test_list_2``."""
    def process(row: Row) -> Row:
        row["text"] = row.pop("prompt")
        row["test_list"] = "\n".join(row["test_list"])
        row["test_list_2"] = row["test_list"]
        row["test_column"] = {"test_list_2": row["test_list"], "task_id": row["task_id"]}
        return row

    (file,) = files
    return {"train": _mbpp_rows(file, "train[:7]", process),
            "test": _mbpp_rows(file, "train[7:264]", process) * num_repeats}


def _lcbench(files: list[Path], path: str, num_repeats: int = 1, difficulty: str = "ALL",
             local_mode: bool = False) -> Splits:
    """``LCDataset``: rows 0-4 train, the rest test (repeated ``num_repeats`` times), tests
    joined as in MBPP, ``test_column`` of ``task_id`` (the ``Contest id``) and
    ``test_list_2``; only rows of ``difficulty`` unless it is ``ALL``."""
    def process(row: Row) -> Row:
        row["test_case"] = row["test_list"]
        row["test_list"] = "\n".join(row["test_list"])
        row["test_column"] = {"test_list_2": row["test_list"], "task_id": row["Contest id"]}
        return row

    def keep(rows: list[Row]) -> list[Row]:
        return rows if difficulty == "ALL" else [r for r in rows if r.get("Difficulty")
                                                  == difficulty]

    (file,) = files
    return {"train": keep(_mbpp_rows(file, "train[:5]", process)),
            "test": keep(_mbpp_rows(file, "train[5:]", process)) * num_repeats}


READERS = (
    NativeReader("HumanevalDataset", _humaneval, local_mode=None),
    NativeReader("HumanevalXDataset", _humanevalx, ("humanevalx_{language}.jsonl.gz",),
                 local_mode=True),
    NativeReader("MBPPDataset", _mbpp, local_mode=None),
    NativeReader("SanitizedMBPPDataset", _sanitized_mbpp),
    NativeReader("LCDataset", _lcbench, local_mode=None),
)
