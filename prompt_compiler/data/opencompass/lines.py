"""Loaders of JSON Lines files: GSM8K, ARC, AIME 2024, DROP (simple-evals)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from ...errors import DataError
from ..rows import Row
from .arrow import from_list
from .files import json_lines
from .registry import NativeReader, Splits

__all__ = ["READERS"]


def _gsm8k(files: list[Path], path: str) -> Splits:
    """``GSM8KDataset``: ``train.jsonl`` and ``test.jsonl`` as they are."""
    return {split: from_list(list(json_lines(file)), str(file))
            for split, file in zip(("train", "test"), files, strict=True)}


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


def _drop(files: list[Path], path: str) -> Splits:
    """``DropOpenAIDataset``: one ``validation`` split of ``prompt`` (the line's ``context``)
    and ``answers`` (its ``ref_text``)."""
    (file,) = files
    rows: list[Row] = []
    for n, line in enumerate(json_lines(file)):
        try:
            rows.append({"prompt": line["context"], "answers": line["ref_text"]})
        except KeyError as exc:
            raise DataError(f"{file}: row {n}: a DROP row needs {exc}") from None
    return {"validation": from_list(rows, str(file))}


READERS = (
    NativeReader("GSM8KDataset", _gsm8k, ("train.jsonl", "test.jsonl")),
    NativeReader("ARCDataset", _arc),
    NativeReader("Aime2024Dataset", _aime2024),
    NativeReader("DropOpenAIDataset", _drop, local_mode=True),
)
