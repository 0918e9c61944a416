"""Output formats: what ``--format`` writes for each dataset x model pair, one registry.

Each value of ``compile-prompts --format`` (and ``compile_to_dir(..., format=...)``) is an
:class:`OutputFormat` in :data:`OUTPUT_FORMATS`, the one list the CLI reads its choices and
help from. A format names its files and writes them from the pair's record objects, one
record at a time, whether the pair is one file set or ``--shard-rows`` shards
(:mod:`prompt_compiler.emit.shards` opens one file set per shard):

``records`` -> ``<model>/<dataset>.jsonl``
    The JSONL records as compiled (the default; written as the engines make them).
``vllm`` -> ``<model>/<dataset>.vllm.jsonl``
    vLLM offline inputs, one line per record (:func:`~.requests.vllm_line`).
``openai-batch`` -> ``<model>/<dataset>.batch-00001.jsonl``, ``-00002``, ...
    OpenAI Batch API request lines (:func:`~.requests.openai_batch_line`). A file holds at
    most :data:`BATCH_MAX_LINES` lines and :data:`BATCH_MAX_BYTES` bytes (the API's limits);
    more start the next file. A shard is one file of at most that many lines.
``parquet`` -> ``<model>/<dataset>.parquet``
    One Arrow table of the records' fields (:mod:`.parquet`; extra ``parquet``). A pair's
    file takes its column types from the rows; every shard of a pair has one fixed schema.

A new format is a subclass of :class:`OutputFormat` (or of :class:`LineFormat`, for one JSON
line per record) registered in :data:`OUTPUT_FORMATS`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from ..errors import ConfigError, DataError, PromptCompilerError, RegistryError
from . import requests as req
from .parquet import ParquetSpool, shard_schema

__all__ = ["BATCH_MAX_BYTES", "BATCH_MAX_LINES", "FORMATS", "OUTPUT_FORMATS", "FileSet",
           "FormatPlan", "LineFormat", "OutputFile", "OutputFormat", "OutputFormats", "Sink",
           "Written",
           "check_format", "convert_outputs", "convert_pair"]

BATCH_MAX_LINES = 50_000
"""Request lines per OpenAI batch input file (the Batch API's limit)."""

BATCH_MAX_BYTES = 200 * 1024 * 1024
"""Bytes per OpenAI batch input file (the Batch API's 200 MB limit)."""


@dataclass(frozen=True, slots=True)
class FormatPlan:
    """What one pair's files in a format need beside its records (it pickles: a worker
    gets it)."""

    fmt: str = "records"
    """The format's name (``--format``)."""
    model_name: str = ""
    """``body.model`` of batch requests (the model config's ``path``, else its abbr)."""
    max_out_len: int | None = None
    """Stands in where a record carries no ``max_out_len`` (vllm, openai-batch)."""
    chat: Mapping[str, Any] = field(default_factory=dict)
    """What messages lines carry for the engine (:func:`~.requests.engine_chat_args`)."""
    batch_lines: int = BATCH_MAX_LINES
    batch_bytes: int = BATCH_MAX_BYTES

    @classmethod
    def of(cls, pair: Any, fmt: str, **limits: int) -> FormatPlan:
        """The plan of one pair of a run (``limits``: ``batch_lines``, ``batch_bytes``)."""
        if min(limits.values(), default=1) < 1:
            raise ConfigError("the batch file limits must be positive")
        return cls(fmt, req.request_model(pair, pair.model.abbr), req.pair_max_out_len(pair),
                   req.engine_chat_args(pair), **limits)


@dataclass(frozen=True, slots=True)
class Written:
    """One file a format wrote: what the manifest says of it."""

    name: str
    """Its path in OUT."""
    records: int
    """Its lines (or table rows): one per record."""
    sha256: str
    over_limit: int = 0
    """Its records flagged ``over_limit``."""


class OutputFile(Protocol):
    """A file being written: whole bytes in, its sha256 out."""

    def write(self, data: bytes) -> None: ...

    def close(self) -> str: ...

    def abort(self) -> None: ...


class Sink(Protocol):
    """Where a run's files go (its staging folder:
    :class:`~prompt_compiler.emit.shards.LocalSink`; an object store prefix)."""

    def create(self, rel: str) -> OutputFile:
        """A new file at ``rel`` (a name in OUT), replacing one left by a failed attempt."""
        ...

    def shown(self, rel: str) -> str:
        """How ``rel`` is named in messages."""
        ...


class FileSet(Protocol):
    """The files of one pair (or one shard) in a format, written record by record."""

    def add(self, rid: str, obj: Mapping[str, Any]) -> None:
        """Write one record object, ``rid`` its id (:func:`~.requests.record_ids`)."""

    def close(self) -> list[Written]:
        """Finish every file (at least one, even without records); the files in order."""

    def abort(self) -> None:
        """Drop the file being written."""


class OutputFormat:
    """One value of ``--format``: how a pair's records become its files."""

    name = ""
    suffix = ""
    """The end of a pair's file name, in place of the records' ``.jsonl``."""
    shard_suffix = ""
    """The end of a shard's file name (``part-00000`` and this)."""
    summary = ""
    """What it writes, for ``--help``."""
    raw = False
    """Whether its files are the record lines as compiled (nothing to convert)."""

    def check_available(self) -> None:
        """Raise before anything is compiled if the format cannot be written here."""

    def records_per_file(self, plan: FormatPlan, rows: int) -> int:
        """Records per shard for ``--shard-rows rows``."""
        return rows

    def open(self, sink: Sink, stem: str, plan: FormatPlan, shard_rows: int | None = None
             ) -> FileSet:
        """The file set of a pair (``stem``: its records file's name without ``.jsonl``)
        or, with ``shard_rows``, of one shard (``stem``: ``<folder>/part-NNNNN``)."""
        raise PromptCompilerError(f"internal error: --format {self.name} has no converter")


class RecordsFormat(OutputFormat):
    """The JSONL records as the engines write them."""

    name, suffix, shard_suffix, raw = "records", ".jsonl", ".jsonl", True
    summary = "the JSONL records (default)"


class LineFormat(OutputFormat):
    """One JSON line per record, in one file (a subclass may cut it into several)."""

    def line(self, rid: str, obj: Mapping[str, Any], plan: FormatPlan) -> dict[str, Any]:
        """The line of one record object."""
        raise NotImplementedError

    def file_name(self, stem: str, part: int, shard_rows: int | None) -> str:
        """The name of the ``part``-th file (from 1) of a file set."""
        return stem + (self.shard_suffix if shard_rows is not None else self.suffix)

    def fits(self, files: LineFiles, line: bytes, obj: Mapping[str, Any]) -> bool:
        """Whether ``line`` goes into the file being written (False: start the next)."""
        return True

    def open(self, sink: Sink, stem: str, plan: FormatPlan, shard_rows: int | None = None
             ) -> FileSet:
        return LineFiles(self, sink, stem, plan, shard_rows)


class VllmFormat(LineFormat):
    name, suffix, shard_suffix = "vllm", ".vllm.jsonl", ".vllm.jsonl"
    summary = "vLLM offline inputs (.vllm.jsonl)"

    def line(self, rid: str, obj: Mapping[str, Any], plan: FormatPlan) -> dict[str, Any]:
        return req.vllm_line(rid, obj, plan.max_out_len, plan.chat)


class OpenAIBatchFormat(LineFormat):
    name, suffix, shard_suffix = "openai-batch", ".batch-NNNNN.jsonl", ".batch.jsonl"
    summary = "OpenAI Batch API request files (.batch-NNNNN.jsonl)"

    def line(self, rid: str, obj: Mapping[str, Any], plan: FormatPlan) -> dict[str, Any]:
        return req.openai_batch_line(rid, obj, plan.model_name, plan.max_out_len, plan.chat)

    def records_per_file(self, plan: FormatPlan, rows: int) -> int:
        return min(rows, plan.batch_lines)

    def file_name(self, stem: str, part: int, shard_rows: int | None) -> str:
        return stem + self.shard_suffix if shard_rows is not None \
            else f"{stem}.batch-{part:05d}.jsonl"

    def fits(self, files: LineFiles, line: bytes, obj: Mapping[str, Any]) -> bool:
        limit = files.plan.batch_bytes
        if len(line) > limit:
            raise DataError(f"one batch request is {len(line)} bytes, over the {limit}-byte "
                            "file limit", dataset=obj.get("dataset"), model=obj.get("model"),
                            row=obj.get("index"))
        fits = files.size + len(line) <= limit and files.lines < files.plan.batch_lines
        if not fits and files.shard_rows is not None:  # a shard is one file
            raise DataError(f"the batch file {files.shown} would be over the {limit}-byte "
                            "limit of the Batch API",
                            hint=f"give a smaller --shard-rows (now {files.shard_rows})")
        return fits


class ParquetFormat(OutputFormat):
    name, suffix, shard_suffix = "parquet", ".parquet", ".parquet"
    summary = "a Parquet table (.parquet; extra 'parquet')"

    def check_available(self) -> None:
        from .parquet import pyarrow_module

        pyarrow_module()

    def open(self, sink: Sink, stem: str, plan: FormatPlan, shard_rows: int | None = None
             ) -> FileSet:
        return ParquetFiles(sink, stem + (self.suffix if shard_rows is None
                                          else self.shard_suffix), fixed=shard_rows is not None)


class LineFiles:
    """The files of a :class:`LineFormat`: each record's line written as it comes."""

    def __init__(self, fmt: LineFormat, sink: Sink, stem: str, plan: FormatPlan,
                 shard_rows: int | None) -> None:
        self.fmt, self.sink, self.stem, self.plan = fmt, sink, stem, plan
        self.shard_rows = shard_rows
        self.done: list[Written] = []
        self.file: OutputFile | None = None
        self.name = ""
        self.lines = self.size = self.over = 0
        self._held: list[bytes] = []  # lines not yet handed to the file, about _BLOCK bytes
        self._held_bytes = 0

    @property
    def shown(self) -> str:
        """The file being written, as messages name it."""
        return self.sink.shown(self.name)

    def _next(self) -> None:
        self._finish()
        self.name = self.fmt.file_name(self.stem, len(self.done) + 1, self.shard_rows)
        self.file = self.sink.create(self.name)
        self.lines = self.size = self.over = 0

    def add(self, rid: str, obj: Mapping[str, Any]) -> None:
        line = req.request_bytes(self.fmt.line(rid, obj, self.plan))
        if self.file is None:
            self._next()
        if not self.fmt.fits(self, line, obj) and self.lines:  # (a line over any file raises)
            self._next()
        self._held.append(line)
        self._held_bytes += len(line)
        if self._held_bytes >= _BLOCK:
            self._hand_over()
        self.lines += 1
        self.size += len(line)
        self.over += 1 if obj.get("over_limit") else 0

    def _hand_over(self) -> None:
        """The held lines to the file, as one block (a file's writes are whole blocks)."""
        if self._held and self.file is not None:
            self.file.write(b"".join(self._held))
            self._held, self._held_bytes = [], 0

    def _finish(self) -> None:
        if self.file is not None:
            self._hand_over()
        file, self.file = self.file, None
        if file is not None:
            self.done.append(Written(self.name, self.lines, file.close(), self.over))

    def close(self) -> list[Written]:
        if self.file is None and not self.done:
            self._next()
        self._finish()
        return self.done

    def abort(self) -> None:
        self._held = []
        file, self.file = self.file, None
        if file is not None:
            file.abort()


_BLOCK = 1 << 20
"""Bytes of lines handed to a file at a time."""


class ParquetFiles:
    """One Parquet file: the records spooled as they come, the table written at the end."""

    def __init__(self, sink: Sink, name: str, *, fixed: bool) -> None:
        self.sink, self.name, self.fixed = sink, name, fixed
        self.spool: ParquetSpool | None = ParquetSpool()
        self.count = self.over = 0

    def add(self, rid: str, obj: Mapping[str, Any]) -> None:
        assert self.spool is not None
        self.spool.add(obj)
        self.count += 1
        self.over += 1 if obj.get("over_limit") else 0

    def close(self) -> list[Written]:
        spool, self.spool = self.spool, None
        assert spool is not None
        try:
            file = self.sink.create(self.name)
            try:
                for chunk in spool.table_bytes(shard_schema(spool.messages) if self.fixed
                                               else None):
                    file.write(chunk)
            except BaseException:
                file.abort()
                raise
            return [Written(self.name, self.count, file.close(), self.over)]
        finally:
            spool.discard()

    def abort(self) -> None:
        spool, self.spool = self.spool, None
        if spool is not None:
            spool.discard()


class OutputFormats:
    """The output formats by name: the choices of ``--format``."""

    def __init__(self, *formats: OutputFormat) -> None:
        self._formats: dict[str, OutputFormat] = {}
        for fmt in formats:
            self.register(fmt)

    def register(self, fmt: OutputFormat) -> None:
        """Add a format; a taken name raises :class:`RegistryError`."""
        if fmt.name in self._formats:
            raise RegistryError(f"an output format named {fmt.name!r} is already registered")
        self._formats[fmt.name] = fmt

    def names(self) -> tuple[str, ...]:
        return tuple(self._formats)

    def __iter__(self) -> Iterator[OutputFormat]:
        return iter(self._formats.values())

    def get(self, name: Any, *, where: str = "--format") -> OutputFormat:
        """The format named ``name``, else a ConfigError with a did-you-mean."""
        if isinstance(name, str) and name in self._formats:
            return self._formats[name]
        close = difflib.get_close_matches(str(name), self._formats, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown format {name!r}{hint}; expected one of "
                          f"{', '.join(self._formats)}", key_path=where)

    def help(self) -> str:
        """What ``--format`` writes, one phrase per format."""
        parts = [fmt.summary for fmt in self]
        return ", ".join(parts[:-1]) + " or " + parts[-1]


OUTPUT_FORMATS = OutputFormats(RecordsFormat(), VllmFormat(), OpenAIBatchFormat(),
                               ParquetFormat())
"""The built-in output formats, in ``--help`` order."""

FORMATS = OUTPUT_FORMATS.names()
"""The values of ``--format`` (``records``: the JSONL records, as without the flag)."""


def check_format(value: Any, *, where: str = "--format") -> str:
    """``value`` if it names an output format, else a ConfigError with a did-you-mean."""
    return OUTPUT_FORMATS.get(value, where=where).name


# -- a pair's records file into its format ------------------------------------------------


def write_records(files: FileSet, objects: Iterable[Mapping[str, Any]]) -> list[Written]:
    """Write record objects (a pair's, from its first) into ``files``; the files written."""
    try:
        for rid, obj in req.record_ids(objects):
            files.add(rid, obj)
        return files.close()
    except BaseException:
        files.abort()
        raise


def _read_records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as fh:
        for line in fh:
            yield orjson.loads(line)


def convert_pair(sink: Sink, source: Path, rel: str, plan: FormatPlan,
                 entry: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Write the records file ``source`` (``rel`` in OUT) as the files of ``plan.fmt`` beside
    it, reading it once.

    Returns the manifest output entries of the new files (by path in OUT): ``entry``'s
    dataset and model, ``format``, their line (or row) count as ``records`` and sha256; the
    first also carries ``entry``'s ``over_limit``. The records file is left for the caller.
    """
    fmt = OUTPUT_FORMATS.get(plan.fmt)
    stem = rel[:-len(".jsonl")] if rel.endswith(".jsonl") else rel
    written = write_records(fmt.open(sink, stem, plan), _read_records(source))
    head = {"dataset": entry["dataset"], "model": entry["model"], "format": fmt.name}
    out = {w.name: {**head, "records": w.records, "sha256": w.sha256} for w in written}
    if entry.get("over_limit"):
        first = written[0].name
        out[first] = {**out[first], "over_limit": entry["over_limit"]}
    return out


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
    from .names import on_disk

    sink = writer.sink()
    converted: dict[str, dict[str, Any]] = {}
    for rel, entry in outputs.items():
        made = convert_pair(sink, writer.staging / on_disk(rel), rel,
                            FormatPlan.of(pairs[rel], fmt, **limits), entry)
        for new in made:
            writer.adopt(new)
        writer.discard(rel)
        converted.update(made)
    return converted


def __getattr__(name: str) -> Any:
    """The request lines and Parquet writing lived here before (:mod:`.requests`,
    :mod:`.parquet`): their old names still work, with a DeprecationWarning."""
    import warnings

    from . import parquet, requests

    for module in (requests, parquet):
        if name in module.__all__:
            warnings.warn(f"{__name__}.{name} is now {module.__name__}.{name}",
                          DeprecationWarning, stacklevel=2)
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
