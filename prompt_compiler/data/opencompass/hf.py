"""``HFDataset``: OpenCompass's call of Hugging Face ``load_dataset(**kwargs)``.

Read natively when it reads one local JSON file (``path='json'``, a ``data_files`` path,
``split`` absent, ``train`` or a ``train[a:b]`` slice), as 35 of its 37 uses in OpenCompass's
configs do: the file is JSON Lines (blank lines skipped) or one JSON list of objects, every key a
column (first seen first) with one type each. Any other call (a hub dataset such as ``glue``,
other builders or arguments), and a file where Arrow would read a string as a timestamp
(``2020-01-01``: ``load_dataset`` returns a ``datetime`` there), goes to OpenCompass's own
loader.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import DataError
from ..rows import Row
from .arrow import from_json_rows
from .code import hf_slice
from .files import json_document, json_lines
from .registry import NativeReader, NotNative, Splits

__all__ = ["READERS"]

_SPLIT = re.compile(r"train(\[-?\d*:-?\d*\])?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _refuse(arguments: Mapping[str, Any]) -> str | None:
    if arguments.get("path") != "json":
        return "only path='json' (a local JSON file) is read natively"
    if not isinstance(arguments.get("data_files"), str):
        return "only one data_files path is read natively"
    extra = sorted(set(arguments) - {"path", "data_files", "split"})
    if extra:
        return f"the arguments {', '.join(extra)} are not read natively"
    split = arguments.get("split")
    if split is not None and not (isinstance(split, str) and _SPLIT.fullmatch(split)):
        return f"split {split!r} is not read natively"
    return None


def _dated(value: Any) -> bool:
    """Whether ``value`` holds a string Arrow's JSON reader could take for a timestamp."""
    if isinstance(value, str):
        return _DATE.match(value) is not None
    if isinstance(value, dict):
        return any(map(_dated, value.values()))
    if isinstance(value, list):
        return any(map(_dated, value))
    return False


def _hf_json(files: list[Path], **arguments: Any) -> Splits:
    (file,) = files
    with open(file, "rb") as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"["):
        data = json_document(file)
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise DataError(f"{file}: expected JSON Lines or a list of objects")
        parsed: list[Row] = data
    else:
        parsed = list(json_lines(file, blank_ok=True))
    if any(_dated(row) for row in parsed):
        raise NotNative(f"{file}: a string Arrow may read as a timestamp")
    rows = from_json_rows(parsed, str(file))
    split = arguments.get("split")
    if split is None:
        return {"train": rows}
    return rows if split == "train" else hf_slice(rows, split)


READERS = (
    NativeReader("HFDataset", _hf_json, refuse=_refuse, path_key="data_files", local_mode=True),
)
