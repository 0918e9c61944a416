"""Parquet files of records: one Arrow table, a column per record field.

:func:`write_parquet` writes a pair's records (``--format parquet``) with column types read
from the rows; :func:`shard_schema` is the one schema of every shard of a pair
(``--shard-rows``), fixed by the record schema alone. Needs the ``parquet`` extra
(``pyarrow``): :func:`pyarrow_module` says how to install it when it is missing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from .._version import install_hint
from ..errors import DataError, UnsupportedError

__all__ = ["ROW_GROUP", "ParquetSpool", "parquet_table", "pyarrow_module", "shard_schema",
           "write_parquet"]


def pyarrow_module() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UnsupportedError("--format parquet needs the 'pyarrow' package, which is not "
                               "installed", hint=install_hint("parquet")
                               ) from None
    return pyarrow


ROW_GROUP = 16_384
"""Rows per Parquet row group, and per batch held in memory while writing."""


def parquet_table(rows: Iterable[Any]) -> Any:
    """One ``pyarrow.Table`` of record objects: a column per field, in first-seen order.

    A field missing from a record is null there. A column whose values have no common
    Arrow type (a ``gold`` that is a number in one row and a string in another) holds
    each value's JSON text instead; the schema metadata ``prompt_compiler.json_columns``
    lists those columns. (:func:`write_parquet` writes the same columns without holding
    every row.)
    """
    pa = pyarrow_module()
    chunk = list(_objects(rows))
    schema, json_columns = _plan(pa, [chunk])
    return _batch(pa, chunk, schema, json_columns)


def _objects(rows: Iterable[Any]) -> Iterator[Mapping[str, Any]]:
    from ..assemble.base import Record
    from .records import record_json

    for row in rows:
        yield record_json(row) if isinstance(row, Record) else row


def _chunked(rows: Iterable[Any]) -> Iterator[list[Mapping[str, Any]]]:
    chunk: list[Mapping[str, Any]] = []
    for row in _objects(rows):
        chunk.append(row)
        if len(chunk) >= ROW_GROUP:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


_FAILED = ("ArrowInvalid", "ArrowTypeError", "ArrowNotImplementedError")


def _plan(pa: Any, chunks: Iterable[list[Mapping[str, Any]]]) -> tuple[Any, set[str]]:
    """(the schema, the JSON-text columns) of rows given batch by batch.

    A column's type is the one every batch's values give it (batches whose values say
    nothing, all null or all empty, do not count); none, or two different ones: JSON text.
    """
    failed = tuple(getattr(pa, name) for name in _FAILED) + (OverflowError,)
    names: dict[str, None] = {}
    types: dict[str, set[Any]] = {}
    json_columns: set[str] = set()
    for chunk in chunks:
        for row in chunk:
            names.update(dict.fromkeys(row))
        for name in names:
            if name in json_columns:
                continue
            values = [row.get(name) for row in chunk]
            fixed = _field_type(pa, name, values)
            if fixed is not None and not any(v is not None and not isinstance(v, (str, int, list))
                                             for v in values):
                types.setdefault(name, set()).add(fixed)  # the record schema's type
                continue
            try:
                array = pa.array(values, type=fixed)
            except failed:
                json_columns.add(name)
                continue
            if not _unusable(pa, array.type):
                types.setdefault(name, set()).add(array.type)
    fields = []
    for name in names:
        found = types.get(name, set())
        if name in json_columns or len(found) != 1:
            json_columns.add(name)
            fields.append(pa.field(name, pa.string()))
        else:
            fields.append(pa.field(name, next(iter(found))))
    ordered = [n for n in names if n in json_columns]
    meta = {b"prompt_compiler.json_columns": json.dumps(ordered).encode()}
    return pa.schema(fields, metadata=meta), json_columns


def _batch(pa: Any, chunk: list[Mapping[str, Any]], schema: Any, json_columns: set[str]) -> Any:
    failed = tuple(getattr(pa, name) for name in _FAILED) + (OverflowError,)
    arrays = []
    for field in schema:
        values = [row.get(field.name) for row in chunk]
        if field.name in json_columns:
            values = [None if v is None else json.dumps(v, ensure_ascii=False) for v in values]
        try:
            arrays.append(pa.array(values, type=field.type))
        except failed as exc:
            raise DataError(f"the {field.name!r} values do not fit the record schema's type "
                            f"{field.type}: {exc}") from None
    return pa.Table.from_arrays(arrays, schema=schema)


_STRING = ("dataset", "model", "mode", "prompt_sha256")
_INT = ("index", "row", "turn", "token_len_before", "token_len_after", "max_out_len")
_INT_LIST = ("ice_ids", "dropped_ice_ids", "input_ids", "stop_token_ids")


def _field_type(pa: Any, name: str, values: list[Any]) -> Any:
    """The Arrow type of a record field whose type is fixed by the record schema (so an
    all-empty ``ice_ids`` is still ``list<int64>``); ``None``: inferred from the values."""
    if name in _STRING:
        return pa.string()
    if name in _INT:
        return pa.int64()
    if name in _INT_LIST:
        return pa.list_(pa.int64())
    if name == "over_limit":
        return pa.bool_()
    if name == "stop":
        return pa.list_(pa.string())
    if name == "prompt":
        if all(v is None or isinstance(v, str) for v in values):
            return pa.string()
        if all(isinstance(v, list) and all(
                isinstance(m, Mapping) and set(m) == {"role", "content"}
                and isinstance(m["role"], str) and isinstance(m["content"], str) for m in v)
               for v in values):
            return pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    return None


def _unusable(pa: Any, tp: Any) -> bool:
    """Types a reader cannot use: null, and structs without fields, at any depth."""
    if pa.types.is_null(tp):
        return True
    if pa.types.is_struct(tp):
        return tp.num_fields == 0 or any(_unusable(pa, f.type) for f in tp)
    if pa.types.is_list(tp) or pa.types.is_large_list(tp):
        return _unusable(pa, tp.value_type)
    return False


def write_parquet(rows: Iterable[Any] | Callable[[], Iterable[Any]],
                  path: str | os.PathLike[str], schema: tuple[Any, set[str]] | None = None
                  ) -> str:
    """Write records to a Parquet file; returns its sha256.

    ``rows``: :class:`~prompt_compiler.assemble.base.Record` objects (written as their JSON
    objects, :func:`~prompt_compiler.emit.records.record_json`), record objects as read from
    a records file, or any flat dicts; or a function returning them afresh each call, which
    lets the rows be read twice (once for the column types, once to write) without holding
    more than :data:`ROW_GROUP` of them. A list is read twice as it is; any other iterable
    is gathered into one first.

    ``schema``: ``(the Arrow schema, its JSON-text columns)`` to write instead of the one read
    from the rows (a shard's: :func:`shard_schema`).

    The bytes depend only on the rows and the pyarrow version: fixed writer options
    (zstd level 3, dictionary encoding, statistics, 16,384-row groups, format 2.6), no
    timestamps and no pandas metadata.
    """
    pa = pyarrow_module()
    if callable(rows):
        source: Callable[[], Iterable[Any]] = rows
    else:
        held = rows if isinstance(rows, (list, tuple)) else list(rows)

        def source() -> Iterable[Any]:
            return held
    table_schema, json_columns = schema or _plan(pa, _chunked(source()))
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with pa.parquet.ParquetWriter(target, table_schema, compression="zstd", compression_level=3,
                                  use_dictionary=True, write_statistics=True, version="2.6",
                                  store_schema=True) as writer:
        for chunk in _chunked(source()):
            writer.write_table(_batch(pa, chunk, table_schema, json_columns),
                               row_group_size=ROW_GROUP)
    digest = hashlib.sha256()
    with target.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()




def shard_schema(messages: bool) -> tuple[Any, set[str]]:
    """``(the Arrow schema, its JSON-text columns)`` of every Parquet shard of a pair, fixed
    by the record schema alone so that the shards of one pair (written by different workers,
    from rows that may lack a key or hold nulls) have one schema and read as one table
    (``pyarrow.dataset``): every field a record may have, in the records' order (null where
    a record has none); the types the record schema fixes (ids, counts, ``stop``, ...); JSON
    text for the fields whose type comes from the data (``label``, ``continuation``,
    ``gold``, ``spans``), and for ``prompt`` when the pair's prompts are chat messages
    (``messages``), listed in the metadata ``prompt_compiler.json_columns``."""
    from .records import record_object

    pa = pyarrow_module()
    names = record_object("", "", "ll", 0, 0, ice_ids=[], prompt="", prompt_sha256="",
                          max_out_len=0, stop=[], stop_token_ids=[], gold=None, turn=0,
                          dropped=[0], over_limit=True, input_ids=[], spans=[])
    fields, json_columns = [], set()
    for name in names:
        fixed = pa.int64() if name == "mask_length" else _field_type(pa, name, [])
        if fixed is None or (name == "prompt" and messages):
            json_columns.add(name)
            fixed = pa.string()
        fields.append(pa.field(name, fixed))
    meta = {b"prompt_compiler.json_columns": json.dumps(
        [n for n in names if n in json_columns]).encode()}
    return pa.schema(fields, metadata=meta), json_columns


class ParquetSpool:
    """Record objects held in a temporary JSON Lines file until their table is written: one
    pass over the records, however many the table's schema needs over the spool."""

    def __init__(self) -> None:
        fd, name = tempfile.mkstemp(prefix="compile-prompts-parquet-", suffix=".jsonl")
        self.path = Path(name)
        self.fh = os.fdopen(fd, "wb", buffering=1 << 20)
        self.messages = False
        """Whether the prompts are chat messages (a pair's are all text or all messages)."""

    def add(self, obj: Mapping[str, Any]) -> None:
        if not self.fh.tell():
            self.messages = not isinstance(obj.get("prompt"), str)
        self.fh.write(orjson.dumps(obj) + b"\n")

    def _read(self) -> Iterator[dict[str, Any]]:
        with self.path.open("rb") as fh:
            for line in fh:
                yield orjson.loads(line)

    def table_bytes(self, schema: tuple[Any, set[str]] | None = None) -> Iterator[bytes]:
        """The Parquet file of the spooled records, in blocks (``schema``: as
        :func:`write_parquet`'s; None: read from the records)."""
        self.fh.close()
        table = self.path.with_suffix(".parquet")
        try:
            write_parquet(self._read, table, schema)
            with table.open("rb") as fh:
                yield from iter(lambda: fh.read(1 << 20), b"")
        finally:
            table.unlink(missing_ok=True)

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.fh.close()
        self.path.unlink(missing_ok=True)
