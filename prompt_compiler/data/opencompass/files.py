"""Reading a native file the way OpenCompass's loaders open it.

The loaders open text files in Python's text mode without ``newline=''``, so every line end
(``\\r\\n``, ``\\r``) reads as ``\\n``, inside quoted CSV fields too; these helpers do the same
so the values are the ones OpenCompass sees. Every error names the file and the line.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import DataError
from ...safety.values import describe_load_error
from ..rows import Row

__all__ = ["csv_fields", "csv_records", "json_document", "json_lines"]


def _open(file: Path, errors: str = "strict") -> Any:
    try:
        return open(file, encoding="utf-8", errors=errors)  # noqa: SIM115 (closed by callers)
    except OSError as exc:
        raise DataError(f"{file}: cannot read: {exc.strerror or exc}") from None


def _decode_error(file: Path, exc: UnicodeDecodeError, line: int) -> DataError:
    return DataError(f"{file}: line {line}: not UTF-8 text ({exc.reason})")


def json_lines(file: Path, *, errors: str = "strict", blank_ok: bool = False) -> Iterator[Row]:
    """Each line of ``file`` parsed as one JSON object (``json.loads(line.strip())``); a
    blank line is malformed, as it is for the loaders (``blank_ok``: skipped, as Arrow's
    JSON reader skips it).

    Raises:
        DataError: A line is not a JSON object (file and line named).
    """
    with _open(file, errors) as fh:
        lineno = 0
        try:
            for lineno, line in enumerate(fh, 1):  # noqa: B007 (read after the loop on errors)
                if blank_ok and not line.strip():
                    continue
                try:
                    value = json.loads(line.strip())
                except json.JSONDecodeError as exc:
                    raise DataError(f"{file}: line {lineno}: malformed JSON: {exc.msg} "
                                    f"(column {exc.colno})") from None
                except (ValueError, RecursionError) as exc:
                    why = describe_load_error(exc) or f"invalid JSON value: {exc}"
                    raise DataError(f"{file}: line {lineno}: {why}") from None
                if not isinstance(value, dict):
                    raise DataError(f"{file}: line {lineno}: a row must be a JSON object, got "
                                    f"{type(value).__name__}")
                yield value
        except UnicodeDecodeError as exc:
            raise _decode_error(file, exc, lineno + 1) from None


def json_document(file: Path) -> Any:
    """The JSON value ``file`` holds (``json.load``).

    Raises:
        DataError: Malformed JSON (line and column named).
    """
    with _open(file) as fh:
        try:
            return json.load(fh)
        except json.JSONDecodeError as exc:
            raise DataError(f"{file}: line {exc.lineno}, column {exc.colno}: malformed JSON: "
                            f"{exc.msg}") from None
        except UnicodeDecodeError as exc:
            raise DataError(f"{file}: not UTF-8 text ({exc.reason})") from None
        except (ValueError, RecursionError) as exc:
            raise DataError(f"{file}: {describe_load_error(exc) or exc}") from None


def csv_records(file: Path, *, width: int | None = None,
                dialect: type[csv.Dialect] | str = "excel") -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` for each record of a CSV file (``line``: where the record ends).

    Args:
        file: The CSV file.
        width: The number of fields every record must have (the loader's ``assert``).
        dialect: The ``csv`` dialect (the loaders' default, or tab-separated).

    Raises:
        DataError: Malformed CSV, or a record of another width (file and line named).
    """
    with _open(file) as fh:
        reader = csv.reader(fh, dialect)
        try:
            for fields in reader:
                if width is not None and len(fields) != width:
                    raise DataError(f"{file}: line {reader.line_num}: {len(fields)} fields, "
                                    f"expected {width} (OpenCompass's loader asserts it)")
                yield reader.line_num, fields
        except csv.Error as exc:
            raise DataError(f"{file}: line {reader.line_num}: malformed CSV: {exc}") from None
        except UnicodeDecodeError as exc:
            raise _decode_error(file, exc, reader.line_num + 1) from None


def csv_fields(file: Path, width: int) -> list[list[str]]:
    """Every record of a CSV file, each of ``width`` fields (the loader's ``assert``): read in
    one pass; on an error the file is read again record by record to name the line.

    Raises:
        DataError: Malformed CSV, or a record of another width (file and line named).
    """
    records: list[list[str]] | None
    try:
        with _open(file) as fh:
            text = fh.read()  # text mode: line ends already read as "\n"
        records = list(csv.reader(io.StringIO(text)))
    except (csv.Error, UnicodeDecodeError):
        records = None
    if records is not None and all(len(r) == width for r in records):
        return records
    for _ in csv_records(file, width=width):
        pass
    raise AssertionError(f"{file}: csv_records found no error")  # pragma: no cover
