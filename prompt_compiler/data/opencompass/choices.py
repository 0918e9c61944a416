"""Multiple choice read from JSON Lines: RACE, CommonsenseQA, MathBench."""

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


def _shape_error(file: Path, n: int, exc: Exception, what: str) -> DataError:
    return DataError(f"{file}: row {n}: not {what} ({type(exc).__name__}: {exc})")


def _race(files: list[Path], path: str, name: str) -> Splits:
    """``RaceDataset``: ``validation`` and ``test``, the four options as ``A``..``D``."""
    found: dict[str, list[Row]] = {}
    for split, file in zip(("validation", "test"), files, strict=True):
        rows: list[Row] = []
        for n, line in enumerate(json_lines(file)):
            try:
                rows.append({"article": line["article"], "question": line["question"],
                             **{letter: line["options"][i] for i, letter in enumerate("ABCD")},
                             "answer": line["answer"]})
            except (KeyError, TypeError, IndexError) as exc:
                raise _shape_error(file, n, exc, "a RACE question") from None
        found[split] = from_list(rows, str(file))
    return found


def _commonsenseqa(files: list[Path], path: str) -> Splits:
    """``commonsenseqaDataset``: ``train`` and ``validation``, five choices ``A``..``E``."""
    found: dict[str, list[Row]] = {}
    for split, file in zip(("train", "validation"), files, strict=True):
        rows: list[Row] = []
        for n, line in enumerate(json_lines(file)):
            try:
                question = line["question"]
                rows.append({"question": question["stem"],
                             **{letter: question["choices"][i]["text"]
                                for i, letter in enumerate("ABCDE")},
                             "answerKey": line["answerKey"]})
            except (KeyError, TypeError, IndexError) as exc:
                raise _shape_error(file, n, exc, "a CommonsenseQA question") from None
        found[split] = from_list(rows, str(file))
    return found


def _numbered(options: list[Any]) -> str:
    return "".join(f"{chr(ord('A') + i)}. {option}\n" for i, option in enumerate(options))


_CIRCULAR = ("ABCD", "BCDA", "CDAB", "DABC")


def _circular(entry: Row, number: int) -> list[Row]:
    """The four rotations of a four-option question (MathBench's circular evaluation):
    options rotated, ``answer`` = ``<line>--<new letter>--<rotation>``, the options listed
    under the question."""
    rows = []
    for order in _CIRCULAR:
        row = copy.deepcopy(entry)
        row["options"] = [entry["options"]["ABCD".index(c)] for c in order]
        letter = "ABCD"[order.index(entry["answer"])]
        row["answer"] = f"{number}--{letter}--{order}"
        row["question"] = entry["question"].strip() + "\n" + _numbered(row["options"])
        rows.append(row)
    return rows


def _mathbench(files: list[Path], path: str, name: str, with_circular: bool = True) -> Splits:
    """``MathBenchDataset``: a ``cloze`` subset's stripped question and answer; otherwise
    each question four times rotated (``with_circular``) or once with its options listed."""
    (file,) = files
    rows: list[Row] = []
    for n, entry in enumerate(json_lines(file)):
        try:
            if "cloze" in name:
                rows.append({"question": entry["question"].strip(),
                             "answer": entry["answer"].strip()})
            elif with_circular:
                rows.extend(_circular(entry, n))
            else:
                rows.append({"question": entry["question"].strip() + "\n"
                             + _numbered(entry["options"]),
                             "answer": entry["answer"].strip()})
        except (KeyError, TypeError, IndexError, ValueError, AttributeError) as exc:
            raise _shape_error(file, n, exc, "a MathBench question") from None
    return from_list(rows, str(file))


READERS = (
    NativeReader("RaceDataset", _race, ("validation/{name}.jsonl", "test/{name}.jsonl")),
    NativeReader("commonsenseqaDataset", _commonsenseqa,
                 ("train_rand_split.jsonl", "dev_rand_split.jsonl")),
    NativeReader("MathBenchDataset", _mathbench, ("{name}.jsonl",), local_mode=True),
)
