"""Open-domain question answering: Natural Questions, NQ-Open, TriviaQA.

The tab-separated files hold a question and its answers written as a Python list literal;
OpenCompass ``eval``\\ s that text, this project reads it with :func:`ast.literal_eval` (a
value that is not a literal is refused, naming the file and line).
"""

from __future__ import annotations

import ast
import csv
from pathlib import Path
from typing import Any

from ...errors import DataError
from ..rows import Row
from .arrow import from_list
from .files import csv_records, json_lines
from .registry import NativeReader, Splits

__all__ = ["READERS"]


class _Tabs(csv.Dialect):
    delimiter = "\t"
    quotechar = '"'
    doublequote = True
    skipinitialspace = False
    lineterminator = "\r\n"
    quoting = csv.QUOTE_MINIMAL


def _literal(text: str, file: Path, line: int) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise DataError(f"{file}: line {line}: the answers are not a Python literal "
                        f"({type(exc).__name__}); OpenCompass evaluates this text as code, "
                        "this project reads literals only") from None


def _tab_qa(files: list[Path], splits: tuple[str, str], first_only: str) -> Splits:
    found: dict[str, list[Row]] = {}
    for split, file in zip(splits, files, strict=True):
        rows: list[Row] = []
        for line, fields in csv_records(file, width=2, dialect=_Tabs):
            answers = _literal(fields[1], file, line)
            if split == first_only:
                try:
                    answers = answers[0]
                except (TypeError, IndexError, KeyError):
                    raise DataError(f"{file}: line {line}: expected a list of answers") from None
            rows.append({"question": fields[0], "answer": answers})
        found[split] = from_list(rows, str(file))
    return found


def _natural_question(files: list[Path], path: str) -> Splits:
    """``NaturalQuestionDataset``: ``nq-dev.qa.csv`` (the first answer) and
    ``nq-test.qa.csv`` (the list)."""
    return _tab_qa(files, ("dev", "test"), "dev")


def _trivia_qa(files: list[Path], path: str) -> Splits:
    """``TriviaQADataset``: ``trivia-dev.qa.csv`` (the list) and ``trivia-test.qa.csv`` (the
    first answer)."""
    return _tab_qa(files, ("dev", "test"), "test")


def _nq_open(files: list[Path], path: str) -> Splits:
    """``NQOpenDataset``: ``validation`` as it is, ``train`` with the first answer only."""
    found: dict[str, list[Row]] = {}
    for split, file in zip(("validation", "train"), files, strict=True):
        rows = list(json_lines(file))
        if split == "train":
            for n, row in enumerate(rows):
                try:
                    row["answer"] = row["answer"][0]
                except (KeyError, TypeError, IndexError):
                    raise DataError(f"{file}: row {n}: expected a list 'answer'") from None
        found[split] = from_list(rows, str(file))
    return found


READERS = (
    NativeReader("NaturalQuestionDataset", _natural_question,
                 ("nq-dev.qa.csv", "nq-test.qa.csv")),
    NativeReader("TriviaQADataset", _trivia_qa, ("trivia-dev.qa.csv", "trivia-test.qa.csv")),
    NativeReader("NQOpenDataset", _nq_open,
                 ("nq-open-validation.jsonl", "nq-open-train.jsonl")),
)
