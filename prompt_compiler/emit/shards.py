"""Sharded output (``--shard-rows N``): a pair's records as ``part-NNNNN`` files of N records.

With shards, each dataset x model pair is a folder ``<model>/<dataset>/`` of files
``part-00000.<ext>``, ``part-00001.<ext>``, ...: shard ``k`` holds the pair's records
``k * N`` to ``k * N + N - 1`` (the last shard fewer; a pair without records has none), in
the format of the run (``.jsonl`` records, ``.vllm.jsonl``, ``.batch.jsonl`` OpenAI batch
requests, of at most 50,000 each whatever N, or ``.parquet``). Which records a shard holds
depends on N alone, so every engine, and any number of workers, writes the same shard set:
a worker given shards ``k0`` to ``k1 - 1`` compiles the test rows that hold their records
and writes exactly those shards (:func:`write_shards`, :func:`shard_tasks`).

The manifest's entry of a sharded pair is keyed by its folder (``<model>/<dataset>``) and
lists every shard (:meth:`Shard.entry`: name, first and last record, count, sha256) in
order; its ``sha256`` is the *pair digest*: the sha256 of the shard digests, each as 64 hex
digits and a newline, in shard order (:func:`pair_digest`). Readers trust the shards the
manifest names and nothing else (:func:`prompt_compiler.emit.manifest.listed_files`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..errors import ConfigError, OutputError, PromptCompilerError
from .blockfile import BlockFile
from .formats import OUTPUT_FORMATS, FileSet, FormatPlan, OutputFile, Sink
from .names import on_disk
from .requests import record_ids

__all__ = ["LocalSink", "Shard", "ShardFile", "ShardPlan", "ShardSink",
           "check_shard_rows", "pair_digest", "plan_for", "pair_entry", "pair_folder", "shard_name",
           "shard_stem", "shard_tasks", "write_shards"]

_OVER = b'"over_limit": true'
"""How a record line flags ``over_limit`` (a key: inside a JSON string its quotes are escaped)."""


def check_shard_rows(value: Any, *, where: str = "--shard-rows") -> int | None:
    """``value`` as a shard size (None: no shards), or a ConfigError saying what is expected."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where} must be a positive number of records, got {value!r}",
                          key_path=where, hint="e.g. --shard-rows 100000")
    return value


def pair_folder(out_name: str) -> str:
    """The folder of a pair's shards in OUT: its record file's name without ``.jsonl``."""
    return out_name[:-len(".jsonl")] if out_name.endswith(".jsonl") else out_name


def shard_stem(folder: str, k: int) -> str:
    """The name in OUT of shard ``k`` of the pair whose folder is ``folder``, without the
    format's extension."""
    return f"{folder}/part-{k:05d}"


def shard_name(folder: str, k: int, fmt: str = "records") -> str:
    """The name in OUT of shard ``k`` of the pair whose folder is ``folder``."""
    return shard_stem(folder, k) + OUTPUT_FORMATS.get(fmt).shard_suffix


@dataclass(frozen=True, slots=True)
class ShardPlan:
    """How one pair's records are cut and written (it pickles: a worker gets it)."""

    rows: int
    """Records per shard (``--shard-rows``)."""
    form: FormatPlan = FormatPlan()
    """The run's format and what the pair's files in it need."""

    @property
    def fmt(self) -> str:
        """The run's ``--format``."""
        return self.form.fmt

    @property
    def size(self) -> int:
        """Records per shard: ``rows``, or fewer where the format caps a file (openai-batch:
        the API's line limit)."""
        return OUTPUT_FORMATS.get(self.fmt).records_per_file(self.form, self.rows)


def plan_for(pair: Any, rows: int, fmt: str = "records", **limits: int) -> ShardPlan:
    """The shard plan of one pair of the run (``limits``: ``batch_lines``, ``batch_bytes``)."""
    return ShardPlan(rows, FormatPlan.of(pair, fmt, **limits))


@dataclass(frozen=True, slots=True)
class Shard:
    """One written shard: what the manifest says of it."""

    name: str
    """Its path in OUT (``<model>/<dataset>/part-00000.jsonl``)."""
    first: int
    """The pair's record number of its first record."""
    records: int
    sha256: str
    over_limit: int = 0
    """Its records flagged ``over_limit``."""

    def entry(self) -> dict[str, Any]:
        """The shard's entry in the manifest."""
        out: dict[str, Any] = {"name": self.name, "first": self.first,
                               "last": self.first + self.records - 1, "records": self.records,
                               "sha256": self.sha256}
        if self.over_limit:
            out["over_limit"] = self.over_limit
        return out

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> Shard:
        """The shard an :meth:`entry` describes (as a worker returns it)."""
        return cls(str(entry["name"]), int(entry["first"]), int(entry["records"]),
                   str(entry["sha256"]), int(entry.get("over_limit", 0)))


def pair_digest(shards: Sequence[Shard]) -> str:
    """The pair digest: sha256 of the shard digests (hex, one per line) in shard order."""
    return hashlib.sha256("".join(f"{s.sha256}\n" for s in shards).encode()).hexdigest()


def pair_entry(dataset: str, model: str, shards: Iterable[Shard], plan: ShardPlan
               ) -> dict[str, Any]:
    """A sharded pair's manifest entry; the shards in order, checked to be all there.

    Raises:
        PromptCompilerError: A shard is missing or two overlap (a bug, never the data's).
    """
    ordered = sorted(shards, key=lambda s: s.first)
    for k, shard in enumerate(ordered):
        if shard.first != k * plan.size or (shard.records != plan.size
                                            and k != len(ordered) - 1):
            raise PromptCompilerError(f"internal error: shard {shard.name} holds records "
                                      f"{shard.first} to {shard.first + shard.records - 1}, "
                                      f"where shard {k} of {plan.size} records was expected")
    out: dict[str, Any] = {"dataset": dataset, "model": model}
    if plan.fmt != "records":
        out["format"] = plan.fmt
    out["records"] = sum(s.records for s in ordered)
    out["sha256"] = pair_digest(ordered)
    over = sum(s.over_limit for s in ordered)
    if over:
        out["over_limit"] = over
    out["shard_rows"] = plan.size
    out["shards"] = [s.entry() for s in ordered]
    return out


def shard_tasks(rows: int, per_row: int, size: int, parts: int
                ) -> list[tuple[range, range, int]]:
    """A pair of ``rows`` test rows of ``per_row`` records each, cut into at most ``parts``
    tasks of whole shards of ``size`` records: ``(test rows, shards, record number of the
    first row)`` per task. A task's rows are those holding any record of its shards (a row
    cut by a shard boundary is compiled by both tasks; each writes only its shards)."""
    total = rows * per_row
    count = -(-total // size)
    parts = max(1, min(parts, count))
    out = []
    for j in range(parts):
        k0, k1 = count * j // parts, count * (j + 1) // parts
        r0 = k0 * size // per_row
        r1 = min(rows, -(-(k1 * size) // per_row))
        out.append((range(r0, r1), range(k0, k1), r0 * per_row))
    return out


# -- where shards are written --------------------------------------------------------------


ShardFile = OutputFile
"""A shard being written (:class:`~.formats.OutputFile`)."""
ShardSink = Sink
"""Where a run's shards go (:class:`~.formats.Sink`: a staging folder, an object store
prefix)."""


class LocalSink:
    """Shards in a folder (the run's staging folder), written by a helper thread."""

    def __init__(self, root: str | os.PathLike[str], shown: str) -> None:
        self.root, self._shown = Path(root), shown

    def create(self, rel: str) -> ShardFile:
        if not self.root.is_dir():
            raise OutputError(f"the staging folder of {self._shown} ({self.root}) is not on this "
                              "machine: every worker writes its shards there",
                              hint="put OUT on storage every node mounts (NFS), or write to "
                                   "s3://")
        return BlockFile(self.root / on_disk(rel), shown=self.shown(rel))

    def shown(self, rel: str) -> str:
        return f"{self._shown}/{rel}"


# -- writing -------------------------------------------------------------------------------


def _nth_newline(block: bytes, n: int) -> int:
    """The offset just past the ``n``-th newline of ``block`` (``n`` >= 1)."""
    at = -1
    for _ in range(n):
        at = block.index(b"\n", at + 1)
    return at + 1


class _Writer:
    """The shards of one task, opened and closed as the record count crosses boundaries."""

    def __init__(self, sink: ShardSink, folder: str, plan: ShardPlan) -> None:
        self.sink, self.folder, self.plan = sink, folder, plan
        self.done: list[Shard] = []
        self.file: ShardFile | None = None
        self.name = ""
        self.first = self.count = self.over = self.bytes = 0

    def open(self, k: int) -> None:
        self.name = shard_name(self.folder, k, self.plan.fmt)
        self.file = self.sink.create(self.name)
        self.first, self.count, self.over, self.bytes = k * self.plan.size, 0, 0, 0

    def write(self, data: bytes, records: int, over: int) -> None:
        assert self.file is not None
        self.file.write(data)
        self.count += records
        self.over += over
        self.bytes += len(data)

    def close(self) -> None:
        file, self.file = self.file, None
        if file is not None:
            self.done.append(Shard(self.name, self.first, self.count, file.close(), self.over))

    def abort(self) -> None:
        file, self.file = self.file, None
        if file is not None:
            file.abort()


def write_shards(sink: ShardSink, folder: str, blocks: Iterable[bytes], plan: ShardPlan, *,
                 start: int = 0, shards: range | None = None) -> list[Shard]:
    """Write record lines as shards; returns them in order.

    Args:
        sink: Where the files go.
        folder: The pair's folder in OUT (:func:`pair_folder`).
        blocks: The pair's record lines (JSON lines as the records file holds them), in
            blocks of whole lines, starting at a test row's first record.
        plan: Shard size and format.
        start: The record number of the first line of ``blocks``.
        shards: Which shards to write (the lines before the first are skipped, those after
            the last not read); None: from the shard ``start`` begins, to the end.
    """
    size = plan.size
    first = shards.start if shards is not None else start // size
    lo = first * size
    hi = shards.stop * size if shards is not None else None
    out = _Writer(sink, folder, plan)
    try:
        if OUTPUT_FORMATS.get(plan.fmt).raw:
            _write_lines(out, blocks, start, lo, hi)
        else:
            _write_converted(out, blocks, start, lo, hi)
    except BaseException:
        out.abort()
        raise
    finally:
        close = getattr(blocks, "close", None)
        if close is not None:
            close()
    return out.done


def _write_lines(out: _Writer, blocks: Iterable[bytes], pos: int, lo: int, hi: int | None
                 ) -> None:
    """Record lines into shards as they are: whole blocks, cut only at shard boundaries."""
    size = out.plan.size
    for data in blocks:
        block = bytes(data)
        while block:
            n = block.count(b"\n")
            if pos < lo:
                if pos + n <= lo:
                    pos += n
                    break
                block = block[_nth_newline(block, lo - pos):]
                pos = lo
                continue
            if hi is not None and pos >= hi:
                out.close()
                return
            if out.file is None:
                out.open(pos // size)
            end = (pos // size + 1) * size
            if hi is not None:
                end = min(end, hi)
            room = end - pos
            head = block if n <= room else block[:_nth_newline(block, room)]
            block = b"" if n <= room else block[len(head):]
            out.write(head, min(n, room), head.count(_OVER) if _OVER in head else 0)
            pos += min(n, room)
            if pos == end:
                out.close()
                if hi is not None and pos >= hi:
                    return
    out.close()


def _write_converted(out: _Writer, blocks: Iterable[bytes], pos: int, lo: int, hi: int | None
                     ) -> None:
    """Record lines into shards of another format: each shard one file set of the format
    (:meth:`~.formats.OutputFormat.open`), written record by record (record ids count from
    the first line, a row's first record, so a row cut by a shard boundary keeps its ids)."""
    plan, size = out.plan, out.plan.size
    fmt = OUTPUT_FORMATS.get(plan.fmt)
    files: FileSet | None = None
    first = 0

    def objects() -> Iterator[dict[str, Any]]:
        for block in blocks:
            for line in bytes(block).splitlines():
                yield orjson.loads(line)

    def finish() -> None:
        nonlocal files
        done, files = files, None
        if done is not None:
            (written,) = done.close()  # a shard is one file
            out.done.append(Shard(written.name, first, written.records, written.sha256,
                                  written.over_limit))

    try:
        for rid, obj in record_ids(objects()):
            if pos < lo:
                pos += 1
                continue
            if hi is not None and pos >= hi:
                break
            if files is None:
                first = pos // size * size
                files = fmt.open(out.sink, shard_stem(out.folder, pos // size), plan.form,
                                 plan.rows)
            files.add(rid, obj)
            pos += 1
            if pos % size == 0 or (hi is not None and pos >= hi):
                finish()
        finish()
    finally:
        if files is not None:
            files.abort()
