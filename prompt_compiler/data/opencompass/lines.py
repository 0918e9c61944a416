"""Loaders of JSON Lines files: GSM8K, HumanEval, ARC, AIME 2024, MBPP, sanitized MBPP."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from ...errors import ConfigError, DataError
from ..rows import Row
from .arrow import from_json_rows, from_list
from .files import json_lines
from .registry import NativeReader, Splits

__all__ = ["READERS", "hf_slice"]


def _gsm8k(files: list[Path], path: str) -> Splits:
    """``GSM8KDataset``: ``train.jsonl`` and ``test.jsonl`` as they are."""
    return {split: from_list(list(json_lines(file)), str(file))
            for split, file in zip(("train", "test"), files, strict=True)}


def _humaneval(files: list[Path], path: str, num_repeats: int = 1,
               local_mode: bool = False) -> Splits:
    """``HumanevalDataset``: the file's rows, each repeated ``num_repeats`` times in place."""
    (file,) = files
    return from_list([row for row in json_lines(file) for _ in range(num_repeats)], str(file))


def _arc(files: list[Path], path: str, name: str) -> Splits:
    """``ARCDataset``: questions with exactly four choices as ``question``, ``answerKey``
    (the letter of the labelled answer's position) and ``textA``..``textD``; undecodable
    bytes are dropped, as the loader opens the file with ``errors='ignore'``."""
    (file,) = files
    rows: list[Row] = []
    for n, item in enumerate(json_lines(file, errors="ignore")):
        try:
            question = item["question"]
            choices = question["choices"]
            if len(choices) != 4:
                continue
            labels = [c["label"] for c in choices]
            rows.append({"question": question["stem"],
                         "answerKey": "ABCD"[labels.index(item["answerKey"])],
                         **{f"text{letter}": c["text"] for letter, c in zip("ABCD", choices,
                                                                          strict=True)}})
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{file}: row {n}: not an ARC question ({type(exc).__name__}: "
                            f"{exc})") from None
    return from_list(rows, str(file))


def _aime2024(files: list[Path], path: str, **kwargs: Any) -> Splits:
    """``Aime2024Dataset``: each row as it is, plus ``question`` (``origin_prompt``) and
    ``answer`` (``gold_answer``)."""
    (file,) = files
    rows: list[Row] = []
    for n, row in enumerate(json_lines(file)):
        try:
            row["question"] = copy.copy(row["origin_prompt"])
            row["answer"] = row["gold_answer"]
        except KeyError as exc:
            raise DataError(f"{file}: row {n}: an AIME row needs {exc}") from None
        rows.append(row)
    return from_list(rows, str(file))


_SLICE = re.compile(r"train\[(-?\d*):(-?\d*)\]")


def hf_slice(rows: list[Row], split: str) -> list[Row]:
    """The rows a ``load_dataset`` split such as ``train[:10]`` or ``train[10:510]`` picks."""
    found = _SLICE.fullmatch(split)
    if found is None:
        raise ConfigError(f"split {split!r}: only train[a:b] slices are read natively")
    start, stop = (int(b) if b else None for b in found.groups())
    return rows[start:stop]


def _mbpp_rows(file: Path, split: str, process: Any) -> list[Row]:
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


READERS = (
    NativeReader("GSM8KDataset", _gsm8k, ("train.jsonl", "test.jsonl")),
    NativeReader("HumanevalDataset", _humaneval, local_mode=None),
    NativeReader("ARCDataset", _arc),
    NativeReader("Aime2024Dataset", _aime2024),
    NativeReader("MBPPDataset", _mbpp, local_mode=None),
    NativeReader("SanitizedMBPPDataset", _sanitized_mbpp),
)
