"""Loaders of whole JSON files: MATH, BIG-Bench Hard, GAOKAO-Bench, FOFO."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import DataError
from ..rows import Row
from .arrow import from_list
from .files import json_document
from .registry import NativeReader, Splits

__all__ = ["READERS", "last_boxed"]


def last_boxed(text: str) -> str | None:
    r"""What the last ``\boxed{...}`` of ``text`` holds (braces balanced), as OpenCompass's
    ``extract_boxed_answer`` finds it; None when there is none, when the last one is an
    ``\fbox`` or when its braces do not close."""
    start = text.rfind("\\boxed")
    if start < 0:
        return None  # OpenCompass then looks for \fbox, whose answer it cannot read either
    depth = 0
    for end in range(start, len(text)):
        char = text[end]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                boxed = text[start:end + 1]
                prefix = "\\boxed{"
                return boxed[len(prefix):-1] if boxed.startswith(prefix) else None
    return None


def _math(files: list[Path], path: str, file_name: str = "math.json", **kwargs: Any) -> Splits:
    """``MATHDataset``: every entry's ``problem`` and the last ``\\boxed{}`` answer of its
    ``solution``; the same rows are ``train`` and ``test``."""
    (file,) = files
    data = json_document(file)
    if not isinstance(data, dict):
        raise DataError(f"{file}: expected an object of problems, got {type(data).__name__}")
    rows: list[Row] = []
    for key, item in data.items():
        if not isinstance(item, dict) or not isinstance(item.get("solution"), str) or (
                "problem" not in item):
            raise DataError(f"{file}: entry {key!r}: expected an object with 'problem' and a "
                            "string 'solution'")
        rows.append({"problem": item["problem"], "solution": last_boxed(item["solution"])})
    table = from_list(rows, str(file))
    return {"test": table, "train": list(table)}


def _bbh(files: list[Path], path: str, name: str) -> Splits:
    """``BBHDataset``: the ``examples`` of ``<name>.json``."""
    (file,) = files
    data = json_document(file)
    examples = data.get("examples") if isinstance(data, dict) else None
    if not isinstance(examples, list) or not all(isinstance(e, dict) for e in examples):
        raise DataError(f"{file}: expected an object whose 'examples' is a list of objects")
    return from_list(examples, str(file))


def _gaokao(files: list[Path], path: str, filename: str, name: str) -> Splits:
    """``GaokaoBenchDataset``: the ``example`` list of the file at ``path + filename``."""
    (file,) = files
    data = json_document(file)
    examples = data.get("example") if isinstance(data, dict) else None
    if not isinstance(examples, list) or not all(isinstance(e, dict) for e in examples):
        raise DataError(f"{file}: expected an object whose 'example' is a list of objects")
    return from_list(examples, str(file))


_FOFO_KEYS = ("id", "domain", "sub_domain", "format", "format_type")


def _fofo(files: list[Path], path: str, name: str, *args: Any, **kwargs: Any) -> Splits:
    """``FofoDataset``: each problem's ``instruction`` as ``question``, and ``judge``: the
    language (``cn`` when the name holds it, else ``en``), the problem's id, domain,
    sub-domain, format, format type and the question."""
    (file,) = files
    data = json_document(file)
    if not isinstance(data, list):
        raise DataError(f"{file}: expected a list of problems, got {type(data).__name__}")
    rows: list[Row] = []
    for n, problem in enumerate(data):
        try:
            question = problem["instruction"]
            judge = {"lan": "cn" if "cn" in name else "en",
                     **{key: problem[key] for key in _FOFO_KEYS}, "question": question}
        except (KeyError, TypeError) as exc:
            raise DataError(f"{file}: problem {n}: a FOFO problem needs {exc}") from None
        rows.append({"question": question, "judge": judge})
    return from_list(rows, str(file))


READERS = (
    NativeReader("MATHDataset", _math, ("{file_name}",)),
    NativeReader("BBHDataset", _bbh, ("{name}.json",)),
    NativeReader("GaokaoBenchDataset", _gaokao, ("{filename}",), appended=True),
    NativeReader("FofoDataset", _fofo, ("{name}.json",), local_mode=True),
)
