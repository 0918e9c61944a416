"""Engine-ready files: the records of a pair as vLLM, an OpenAI batch or Parquet take them.

``compile-prompts --format FORMAT`` (and ``compile_to_dir(..., format=FORMAT)``) writes, for
each dataset x model pair, instead of ``<model>/<dataset>.jsonl``:

``vllm`` -> ``<model>/<dataset>.vllm.jsonl``
    One JSON object per prompt: the prompt as vLLM's offline API takes it (``prompt`` for a
    ``TextPrompt``, ``prompt_token_ids`` for a ``TokensPrompt`` when the records carry
    ``input_ids``, or ``messages`` for ``LLM.chat`` with its ``add_generation_prompt`` and
    ``continue_final_message``), ``sampling_params`` (keyword arguments
    of ``SamplingParams``) and ``id``. Generation records get ``max_tokens`` (the record's
    ``max_out_len``), ``stop`` and ``stop_token_ids``
    where known; scoring records (ppl, ll,
    clp, loss) get ``{"max_tokens": 1, "prompt_logprobs": 0}``: the log-probability of every
    prompt token, which is what those modes score.
``openai-batch`` -> ``<model>/<dataset>.batch-00001.jsonl``, ``-00002``, ...
    Request lines of the OpenAI Batch API: ``{"custom_id", "method": "POST", "url", "body"}``;
    messages go to ``/v1/chat/completions``, text and token ids to ``/v1/completions``.
    A file holds at most :data:`BATCH_MAX_LINES` lines and :data:`BATCH_MAX_BYTES` bytes
    (the API's limits); more start the next file. ``body.model`` is the model config's
    ``path`` (the name an OpenAI-compatible server knows), else its abbr.
``parquet`` -> ``<model>/<dataset>.parquet``
    One Arrow table of the records' fields (:func:`write_parquet`; extra ``parquet``).

The ``id`` / ``custom_id`` of a record is ``<model>/<dataset>/<row>`` (the test split's row
id, as the record's ``row``; its ``index`` for records without one), with ``/turn<n>``
for chat and multiround turns and ``/<k>`` for the k-th record of the same row otherwise
(a ppl label, a CLP choice): unique within a file and stable from run to run.

Every converter reads the records' JSON objects (:func:`prompt_compiler.emit.records.record_json`),
so any compile path feeds them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from .._version import install_hint
from ..errors import ConfigError, DataError, UnsupportedError

__all__ = ["BATCH_MAX_BYTES", "BATCH_MAX_LINES", "FORMATS", "ROW_GROUP", "SCORING_MODES",
           "check_format", "convert_pair", "openai_batch_line", "parquet_table", "record_ids",
           "engine_chat_args", "request_model", "sampling_params", "vllm_line",
           "write_parquet"]

FORMATS = ("records", "vllm", "openai-batch", "parquet")
"""The values of ``--format`` (``records``: the JSONL records, as without the flag)."""

SCORING_MODES = frozenset({"ppl", "ll", "clp", "loss"})
"""Record modes that score a text rather than generate a reply."""

BATCH_MAX_LINES = 50_000
"""Request lines per OpenAI batch input file (the Batch API's limit)."""

BATCH_MAX_BYTES = 200 * 1024 * 1024
"""Bytes per OpenAI batch input file (the Batch API's 200 MB limit)."""


def check_format(value: Any, *, where: str = "--format") -> str:
    """``value`` if it is one of :data:`FORMATS`, else a ConfigError with a did-you-mean."""
    if value in FORMATS:
        return str(value)
    import difflib

    close = difflib.get_close_matches(str(value), FORMATS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(f"unknown format {value!r}{hint}; expected one of "
                      f"{', '.join(FORMATS)}", key_path=where)


def record_ids(objs: Iterable[Mapping[str, Any]]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(id, record)`` for each record object, in order (see the module docstring)."""
    last: Any = None
    k = 0
    for obj in objs:
        key = obj["row"] if obj.get("row") is not None else obj["index"]
        base = f"{obj['model']}/{obj['dataset']}/{key}"
        if obj.get("turn") is not None:
            yield f"{base}/turn{obj['turn']}", obj
            continue
        k = k + 1 if key == last else 0
        last = key
        yield (f"{base}/{k}" if obj["mode"] in SCORING_MODES else base), obj


def _stops(obj: Mapping[str, Any], max_out_len: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if obj.get("max_out_len") is not None:
        out["max_tokens"] = obj["max_out_len"]
    elif max_out_len is not None:
        out["max_tokens"] = max_out_len
    if obj.get("stop"):
        out["stop"] = list(obj["stop"])
    if obj.get("stop_token_ids"):
        out["stop_token_ids"] = list(obj["stop_token_ids"])
    return out


def sampling_params(obj: Mapping[str, Any], user: Mapping[str, Any] | None = None, *,
                    max_out_len: int | None = None, every_key: bool = False
                    ) -> dict[str, Any]:
    """The keyword arguments of vLLM's ``SamplingParams`` for one record object.

    A scoring record (ppl, ll, clp, loss) gets ``{"max_tokens": 1, "prompt_logprobs": 0}``;
    a generating one its ``max_tokens`` (``max_out_len``, else ``max_out_len`` given here),
    ``stop`` and ``stop_token_ids``, where known. ``every_key`` writes ``stop`` and
    ``stop_token_ids`` even when empty (``[]``), so that every row of a table has the same
    keys and none is null (Ray Data turns a key missing from one row into a null, and
    ``SamplingParams(stop_token_ids=None)`` differs from the record). ``user``'s keys then
    replace those of the record one by one (``compile_dataset(sampling_params=...)``).
    """
    if obj.get("mode") in SCORING_MODES:
        out: dict[str, Any] = {"max_tokens": 1, "prompt_logprobs": 0}
        if every_key:
            out.update(stop=[], stop_token_ids=[])
    else:
        out = _stops(obj, max_out_len)
        if every_key:
            out.setdefault("stop", [])
            out.setdefault("stop_token_ids", [])
    if user:
        out.update(user)
    return out


def _is_messages(prompt: Any) -> bool:
    return isinstance(prompt, list) and all(
        isinstance(m, Mapping) and isinstance(m.get("role"), str) and "content" in m
        for m in prompt) and bool(prompt)


def _where(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"dataset": obj.get("dataset"), "model": obj.get("model"), "row": obj.get("index")}


def _no_scored_messages(obj: Mapping[str, Any], fmt: str) -> None:
    """A scoring record whose prompt is chat messages has no line in an engine format:
    ``LLM.chat`` and the chat completions endpoint generate, they return no log-probability
    of the prompt's tokens (one error for ``vllm`` and ``openai-batch`` alike)."""
    if obj["mode"] in SCORING_MODES and obj.get("input_ids") is None \
            and _is_messages(obj["prompt"]):
        raise UnsupportedError(
            f"--format {fmt}: the {obj['mode']} records of {obj.get('dataset')} x "
            f"{obj.get('model')} score their text, but their prompt is chat messages, which "
            "vLLM's LLM.chat and the chat completions endpoint do not score (they return no "
            "log-probability of the prompt's tokens)",
            hint="give the model its tokenizer folder (with its chat template) or a "
                 "chat_template, so the records hold the template's text (add --tokenize for "
                 "its token ids; examples/ppl-chat/suite.yaml shows one), or compile this pair "
                 "with --format records", **_where(obj))


def vllm_line(rid: str, obj: Mapping[str, Any], max_out_len: int | None = None,
              chat: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The vLLM line of one record object (see the module docstring); ``max_out_len``
    stands in where the record has none; ``chat`` goes on a messages line
    (:func:`engine_chat_args`)."""
    prompt = obj["prompt"]
    _no_scored_messages(obj, "vllm")
    line: dict[str, Any] = {"id": rid}
    if obj.get("input_ids") is not None:
        line["prompt_token_ids"] = list(obj["input_ids"])
    elif isinstance(prompt, str):
        line["prompt"] = prompt
    elif _is_messages(prompt):
        line["messages"] = prompt
        # what LLM.chat needs to render the compiled turns: a reply to start, or the last
        # (assistant) message to go on (an assistant_prefix)
        go_on = prompt[-1].get("role") == "assistant"
        line["add_generation_prompt"] = not go_on
        line["continue_final_message"] = go_on
        line.update(chat or {})
    else:
        raise UnsupportedError(
            "--format vllm takes a prompt text, token ids or OpenAI-style messages; this "
            f"record's prompt is {type(prompt).__name__} of another shape (an api_format "
            "request?)", hint="compile this model with --format records", **_where(obj))
    line["sampling_params"] = sampling_params(obj, max_out_len=max_out_len)
    return line


def openai_batch_line(rid: str, obj: Mapping[str, Any], model_name: str,
                      max_out_len: int | None = None, chat: Mapping[str, Any] | None = None
                      ) -> dict[str, Any]:
    """The OpenAI Batch API request line of one record object (``chat``: see
    :func:`engine_chat_args`, on a chat completions request)."""
    prompt = obj["prompt"]
    stops = _stops(obj, max_out_len)
    scoring = obj["mode"] in SCORING_MODES
    body: dict[str, Any] = {"model": model_name}
    _no_scored_messages(obj, "openai-batch")
    if _is_messages(prompt) and obj.get("input_ids") is None:
        url = "/v1/chat/completions"
        body["messages"] = prompt
        body.update(chat or {})
        if "max_tokens" in stops:
            body["max_completion_tokens"] = stops["max_tokens"]
    elif isinstance(prompt, str) or obj.get("input_ids") is not None:
        url = "/v1/completions"
        body["prompt"] = list(obj["input_ids"]) if obj.get("input_ids") is not None else prompt
        if scoring:
            body.update({"max_tokens": 1, "echo": True, "logprobs": 0})
        elif "max_tokens" in stops:
            body["max_tokens"] = stops["max_tokens"]
    else:
        raise UnsupportedError(
            "--format openai-batch takes a prompt text, token ids or OpenAI-style messages; "
            f"this record's prompt is {type(prompt).__name__} of another shape (an api_format "
            "request?)", hint="compile this model with --format records", **_where(obj))
    if "stop" in stops and not scoring:
        body["stop"] = stops["stop"]
    return {"custom_id": rid, "method": "POST", "url": url, "body": body}


# -- Parquet ----------------------------------------------------------------------------


def _pyarrow() -> Any:
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
    pa = _pyarrow()
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
    from the rows (a shard's: :func:`~prompt_compiler.emit.shards.shard_schema`).

    The bytes depend only on the rows and the pyarrow version: fixed writer options
    (zstd level 3, dictionary encoding, statistics, 16,384-row groups, format 2.6), no
    timestamps and no pandas metadata.
    """
    pa = _pyarrow()
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


# -- converting a pair's records file ---------------------------------------------------


def _read_records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as fh:
        for line in fh:
            yield orjson.loads(line)


def _dumps(obj: Mapping[str, Any]) -> bytes:
    try:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False).encode("utf-8") + b"\n"
    except (ValueError, UnicodeEncodeError) as exc:
        raise DataError(f"a request cannot be written as strict JSON in UTF-8: {exc}") from None


def convert_pair(staging: Path, rel: str, fmt: str, entry: Mapping[str, Any], *,
                 model_name: str, max_out_len: int | None = None,
                 chat: Mapping[str, Any] | None = None,
                 batch_lines: int = BATCH_MAX_LINES,
                 batch_bytes: int = BATCH_MAX_BYTES) -> dict[str, dict[str, Any]]:
    """Turn the records file ``staging/rel`` into the files of ``fmt`` beside it.

    Returns the manifest output entries of the new files (by path relative to
    ``staging``): ``entry``'s dataset and model, ``format``, their line (or row) count as
    ``records`` and sha256. The records file itself is left for the caller to remove.
    """
    source = staging / rel
    stem = rel[:-len(".jsonl")] if rel.endswith(".jsonl") else rel
    head = {"dataset": entry["dataset"], "model": entry["model"], "format": fmt}
    ids = record_ids(_read_records(source))
    if fmt == "parquet":
        name = f"{stem}.parquet"
        count = sum(1 for _ in _read_records(source))
        digest = write_parquet(lambda: _read_records(source), staging / name)
        return {name: {**head, "records": count, "sha256": digest}}
    if fmt == "vllm":
        name = f"{stem}.vllm.jsonl"
        lines = (_dumps(vllm_line(r, o, max_out_len, chat)) for r, o in ids)
        return {name: {**head, **_write_lines(staging / name, lines)}}
    if fmt != "openai-batch":
        raise ConfigError(f"unknown format {fmt!r}", key_path="--format")
    if batch_lines < 1 or batch_bytes < 1:
        raise ConfigError("the batch file limits must be positive")
    out: dict[str, dict[str, Any]] = {}
    part: list[bytes] = []
    size = 0

    def flush() -> None:
        name = f"{stem}.batch-{len(out) + 1:05d}.jsonl"
        out[name] = {**head, **_write_lines(staging / name, iter(part))}

    for rid, obj in ids:
        line = _dumps(openai_batch_line(rid, obj, model_name, max_out_len, chat))
        if len(line) > batch_bytes:
            raise DataError(f"one batch request is {len(line)} bytes, over the "
                            f"{batch_bytes}-byte file limit", **_where(obj))
        if part and (len(part) >= batch_lines or size + len(line) > batch_bytes):
            flush()
            part, size = [], 0
        part.append(line)
        size += len(line)
    if part or not out:
        flush()
    return out


def _write_lines(path: Path, lines: Iterator[bytes]) -> dict[str, Any]:
    digest = hashlib.sha256()
    count = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        for line in lines:
            fh.write(line)
            digest.update(line)
            count += 1
    return {"records": count, "sha256": digest.hexdigest()}


def convert_outputs(writer: Any, outputs: Mapping[str, Mapping[str, Any]],
                    pairs: Mapping[str, Any], fmt: str, **limits: int
                    ) -> dict[str, dict[str, Any]]:
    """Replace each records file the writer staged by the files of ``fmt``.

    ``outputs``: the manifest's output entries of the records files (by path); ``pairs``:
    the pair of each of those paths (its model config's ``path`` names the model in batch
    requests; its ``max_out_len`` stands in where the records carry none). Returns the
    entries of the files written in their place. ``limits``: ``batch_lines`` /
    ``batch_bytes`` for ``openai-batch``.
    """
    converted: dict[str, dict[str, Any]] = {}
    for rel, entry in outputs.items():
        pair = pairs.get(rel)
        made = convert_pair(writer.staging, rel, fmt, entry,
                            model_name=request_model(pair, entry["model"]),
                            max_out_len=_max_out_len(pair), chat=engine_chat_args(pair),
                            **limits)
        for new in made:
            writer.adopt(new)
        if entry.get("over_limit"):
            first = next(iter(made))
            made[first] = {**made[first], "over_limit": entry["over_limit"]}
        writer.discard(rel)
        converted.update(made)
    return converted


def request_model(pair: Any, abbr: str) -> str:
    """``body.model`` of a pair's batch requests: its model config's ``path`` (the name an
    OpenAI-compatible server knows), else the model's abbr."""
    spec = pair.model.spec if pair is not None else {}
    return str(spec["path"]) if isinstance(spec.get("path"), str) else abbr


def engine_chat_args(pair: Any) -> dict[str, Any]:
    """What an engine needs beside a pair's messages lines to render the turns as compiled:
    the model's ``chat_template_kwargs`` (older name ``template_kwargs``; e.g. Qwen3's
    ``enable_thinking: false``), passed by ``LLM.chat`` and vLLM's chat completions endpoint
    to the chat template, and for a chat-template model its pinned ``date`` as
    ``date_string`` (what Llama 3.x templates print instead of the engine's clock; vLLM
    drops a variable the template does not read). Empty when there is none (a record
    rendered to text or token ids needs nothing: its line carries ``prompt`` or
    ``prompt_token_ids``)."""
    from ..model.chat_controls import date_string

    spec = pair.model.spec if pair is not None else {}
    kwargs = spec.get("chat_template_kwargs") or spec.get("template_kwargs")
    out = dict(kwargs) if isinstance(kwargs, Mapping) else {}
    pinned = date_string(spec.get("date")) if spec.get("parser") == "hf_chat" else None
    if pinned is not None:
        out = {"date_string": pinned, **out}  # the config's own date_string wins
    return {"chat_template_kwargs": out} if out else {}


def _max_out_len(pair: Any) -> int | None:
    """The pair's ``max_out_len`` as OpenCompass resolves it: the dataset inferencer's, else
    the model config's (for records written without one)."""
    if pair is None:
        return None
    infer = pair.dataset.spec.get("infer_cfg")
    inferencer = infer.get("inferencer") if isinstance(infer, Mapping) else None
    value = inferencer.get("max_out_len") if isinstance(inferencer, Mapping) else None
    if value is None:
        value = pair.model.spec.get("max_out_len")
    return value if isinstance(value, int) and not isinstance(value, bool) else None
