"""``--jobs N``: the pairs of a run in N processes, a large pair in row ranges.

Small pairs are one task each. A gen or ppl pair with at least ``2 * SPLIT_ROWS`` test rows
is cut into up to N row ranges (:func:`row_ranges`, by bytes of its JSON Lines file where it
streams from one); the parent prepares its job once (:func:`..pairs.prepare`: built and
retrieved; the forked workers inherit it), compiles the first range itself straight into the
pair's file and appends the workers' parts in order, so every file is byte-identical to
``--jobs 1``. Every task is :func:`..pairs.pair_lines` or :func:`..pairs.range_lines` under
the run's one :class:`~prompt_compiler.run.settings.CompileSettings`, as another engine runs
them (:mod:`.ray`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...emit.blockfile import write_blocks
from ...emit.names import on_disk
from ...emit.outdir import OutputDir
from ...emit.shards import (
    Shard,
    ShardPlan,
    ShardSink,
    pair_entry,
    pair_folder,
    shard_tasks,
    write_shards,
)
from ...errors import PromptCompilerError
from ..pairs import Counts, Pair, PreparedJob, pair_lines, prepare, range_lines
from ..settings import CompileSettings
from .relay import catching, relay

__all__ = ["PARENT_SHARE", "SPLIT_ROWS", "PoolEngine", "compile_parallel",
           "compile_parallel_shards", "row_ranges", "shard_split"]

SPLIT_ROWS = 2_000
"""A gen or ppl pair with at least twice this many test rows is split into row ranges."""
PARENT_SHARE = 0.5
"""The parent's range of a split pair, relative to a worker's: it also hashes the whole file
(measured on the benchmark's jobs: hashing costs about a third of building the lines)."""

_PREPARED: dict[int, PreparedJob] = {}
"""Prepared jobs by pair number, for the duration of one :func:`compile_parallel` (forked
workers inherit them)."""


@dataclass(frozen=True, slots=True)
class _Task:
    """One unit of work for the pool: a pair, or one row range of it, into ``rel``."""

    key: int
    """The pair's number in the run (its prepared job, if any)."""
    pair: Pair
    settings: CompileSettings
    rows: range | None
    staging: Path
    rel: str
    """The file in the staging folder: the pair's, or a part of it."""
    shown: str
    """The output folder's name for messages."""

    @property
    def shown_file(self) -> str:
        return f"{self.shown}/{self.pair.out_name}"


def row_ranges(pair: Pair, settings: CompileSettings, jobs: int
               ) -> tuple[list[range | None], PreparedJob | None]:
    """How a pair's test rows are shared among ``jobs`` processes (``[None]``: one does all),
    and the job, prepared once, when the ranges can be built from plans.

    The first range is the parent's; ranges are cut by bytes of the test file where the
    rows stream from one (rows differ in length), else by rows."""
    from ...data.sources import NotPeekable

    try:
        job, kind, _, prepared = prepare(pair, settings)
    except (PromptCompilerError, NotPeekable):
        return [None], None  # a worker raises it again, located as a whole-pair compile does
    n = len(job.rows.test)
    if kind not in ("gen", "ppl") or n < 2 * SPLIT_ROWS:
        return [None], None
    parts = min(jobs, n // SPLIT_ROWS)
    weights = [PARENT_SHARE] + [1.0] * (parts - 1)
    cuts = [sum(weights[:k]) / sum(weights) for k in range(parts + 1)]
    bounds = _byte_bounds(job.rows.test, cuts) or [round(n * c) for c in cuts]
    ranges: list[range | None] = [range(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
    return ranges, prepared


def _byte_bounds(rows: Sequence[Any], cuts: Sequence[float]) -> list[int] | None:
    """Row bounds at those fractions of the rows' bytes in their JSON Lines file, or None."""
    from ...data.reader import RowView
    from ...data.sources import JsonlRows

    if not isinstance(rows, RowView) or not isinstance(rows.source, JsonlRows):
        return None
    positions = rows.positions
    if not isinstance(positions, range) or positions.step != 1 or not positions:
        return None
    return rows.source.byte_cuts(positions.start, positions.stop, cuts)


def _compile_one(task: _Task) -> tuple[int, str, int]:
    """Worker: one pair (or a range of its test rows) into the parent's staging folder."""
    counts = Counts()
    blocks = pair_lines(task.pair, task.settings, counts, rows=task.rows)
    digest = write_blocks(task.staging / on_disk(task.rel), blocks, shown=task.shown_file)
    return counts.count, digest, counts.over_limit


def _compile_range(task: _Task) -> tuple[int, str, int]:
    """Worker: one row range of a split pair, from the job the parent prepared before the
    pool forked (or, in a process that did not inherit it, from the configs again)."""
    prepared = _PREPARED.get(task.key)
    if prepared is None:
        return _compile_one(task)
    counts = Counts()
    write_blocks(task.staging / on_disk(task.rel),
                 range_lines(task.pair, prepared, task.rows, counts),
                 shown=task.shown_file, digest=False)
    return counts.count, "", counts.over_limit


def compile_parallel(pairs: list[Pair], writer: OutputDir, outputs: dict[str, dict[str, Any]],
                     settings: CompileSettings, progress: Any) -> None:
    """Compile ``pairs`` in ``settings.jobs`` processes into ``writer``'s staging folder,
    each pair's manifest entry into ``outputs``."""
    from concurrent.futures import ProcessPoolExecutor

    from ...safety.interrupts import deferred
    from .workers import Watch, init_worker, labelled, pool_context, result, stop_workers

    jobs = settings.jobs
    split = [row_ranges(pair, settings, jobs) for pair in pairs]
    for key, (_, prepared) in enumerate(split):
        if prepared is not None:
            _PREPARED[key] = prepared
    pool_tasks = sum(len(ranges) - (len(ranges) > 1) for ranges, _ in split)
    workers = max(1, min(jobs if len(pairs) > 1 else jobs - 1, pool_tasks))
    futures: list[list[tuple[str, Any]]] = []
    try:
        with ProcessPoolExecutor(max_workers=workers, initializer=init_worker,
                                 initargs=(os.getpid(),), mp_context=pool_context()) as pool:
            staging = str(writer.staging)
            watch = Watch(pool, staging)
            try:
                with deferred():  # forks, and the pool's locks: no stop signal in between
                    for key, (pair, (ranges, _)) in enumerate(zip(pairs, split, strict=True)):
                        label = f"dataset {pair.dataset.abbr!r} x model {pair.model.abbr!r}"
                        tasks = [_Task(key, pair, settings, rows, writer.staging,
                                       pair.out_name if len(ranges) == 1 else
                                       f"{pair.out_name}.part{k}", writer.shown)
                                 for k, rows in enumerate(ranges)]
                        if len(tasks) == 1:
                            futures.append([(tasks[0].rel, pool.submit(
                                labelled, staging, label, _compile_one, tasks[0]))])
                        else:  # the first range is the parent's (see _join)
                            futures.append([(t.rel, pool.submit(
                                labelled, staging, label + (
                                    f" (rows {t.rows.start}-{t.rows.stop - 1})" if t.rows
                                    else ""), _compile_range, t)) for t in tasks[1:]])
                    watch.start()
                for key, (pair, parts) in enumerate(zip(pairs, futures, strict=True)):
                    if progress:
                        progress(key, len(pairs), pair)
                    ranges = split[key][0]
                    if len(ranges) == 1:
                        count, digest, over = result(parts[0][1], watch)
                    else:
                        first = _Task(key, pair, settings, ranges[0], writer.staging,
                                      pair.out_name, writer.shown)
                        count, digest, over = _join(first, parts,
                                                    lambda fut: result(fut, watch))
                    writer.adopt(pair.out_name)
                    outputs[pair.out_name] = Counts(count, over).entry(pair, digest)
            except BaseException:
                stop_workers(pool, [fut for parts in futures for _, fut in parts])
                raise
        for stray in writer.staging.glob(".worker-*"):  # a worker ended between tasks
            stray.unlink(missing_ok=True)
    finally:
        _PREPARED.clear()


def _join(first: _Task, parts: list[tuple[str, Any]], wait: Callable[[Any], Any]
          ) -> tuple[int, str, int]:
    """A split pair's file: its first range compiled here, then the workers' parts appended
    in order (deleted once appended); (lines, sha256, lines over the limit)."""
    counts = Counts()
    prepared = _PREPARED.get(first.key)
    if prepared is not None:
        blocks = range_lines(first.pair, prepared, first.rows, counts)
    else:
        blocks = pair_lines(first.pair, first.settings, counts, rows=first.rows)
    total = Counts()

    def appended() -> Iterator[Path]:
        total.add(counts)  # the first range is written by now
        for rel, fut in parts:
            n, _, n_over = wait(fut)  # the first failing range raises
            total.add(Counts(n, n_over))
            yield first.staging / on_disk(rel)

    with catching() as caught:  # this range's and the workers', in row order
        digest = write_blocks(first.staging / on_disk(first.rel), blocks,
                              shown=first.shown_file, parts=appended())
    relay(caught, seen=set())
    return total.count, digest, total.over_limit


# -- sharded output (--shard-rows): every task writes its own shards ------------------------


@dataclass(frozen=True, slots=True)
class _ShardTask:
    """One unit of sharded work: the shards ``shards`` of a pair (None: all of them), from
    its test rows ``rows`` (None: all), whose first record is number ``first``."""

    key: int
    pair: Pair
    settings: CompileSettings
    plan: ShardPlan
    rows: range | None
    shards: range | None
    first: int
    sink: ShardSink


def shard_split(pair: Pair, settings: CompileSettings, plan: ShardPlan, parts: int
                ) -> tuple[list[tuple[range | None, range | None, int]], PreparedJob | None]:
    """How a pair's shards are shared among ``parts`` tasks: ``(rows, shards, first record)``
    per task (``[(None, None, 0)]``: one task writes them all), and the prepared job."""
    from ...data.sources import NotPeekable
    from ...plan.core import job_labels

    whole: list[tuple[range | None, range | None, int]] = [(None, None, 0)]
    try:
        job, kind, params, prepared = prepare(pair, settings)
    except (PromptCompilerError, NotPeekable):
        return whole, None
    n = len(job.rows.test)
    if prepared is None or kind not in ("gen", "ppl") or n < 2 * SPLIT_ROWS or parts < 2:
        return whole, None
    per_row = 1 if kind == "gen" else len(job_labels(job, params))
    if per_row < 1:
        return whole, None
    tasks = shard_tasks(n, per_row, plan.size, parts)
    if len(tasks) < 2:
        return whole, None
    return [(rows, shards, first) for rows, shards, first in tasks], prepared


def _compile_shards(task: _ShardTask) -> list[dict[str, Any]]:
    """Worker: a pair's shards (or some of them) written into the staging folder; their
    manifest entries."""
    counts = Counts()
    prepared = _PREPARED.get(task.key) if task.rows is not None else None
    if prepared is not None:
        blocks = range_lines(task.pair, prepared, task.rows, counts)
    else:
        blocks = pair_lines(task.pair, task.settings, counts, rows=task.rows)
    shards = write_shards(task.sink, pair_folder(task.pair.out_name), blocks, task.plan,
                          start=task.first, shards=task.shards)
    return [s.entry() for s in shards]


def compile_parallel_shards(pairs: list[Pair], writer: Any,
                            outputs: dict[str, dict[str, Any]], settings: CompileSettings,
                            plans: dict[str, ShardPlan], progress: Any) -> None:
    """``--jobs N`` with ``--shard-rows``: every task (a pair, or a run of shards of a large
    one) writes its shards into the staging folder itself; this process only gathers their
    entries (no record byte passes through it)."""
    from concurrent.futures import ProcessPoolExecutor

    from ...safety.interrupts import deferred
    from .workers import Watch, init_worker, labelled, pool_context, result, stop_workers

    jobs = settings.jobs
    split = [shard_split(pair, settings, plans[pair.out_name], jobs) for pair in pairs]
    for key, (_, prepared) in enumerate(split):
        if prepared is not None:
            _PREPARED[key] = prepared
    futures: list[list[Any]] = []
    try:
        with ProcessPoolExecutor(max_workers=jobs, initializer=init_worker,
                                 initargs=(os.getpid(),), mp_context=pool_context()) as pool:
            staging = str(writer.staging)
            watch = Watch(pool, staging)
            try:
                with deferred():
                    for key, (pair, (tasks, _)) in enumerate(zip(pairs, split, strict=True)):
                        label = f"dataset {pair.dataset.abbr!r} x model {pair.model.abbr!r}"
                        futures.append([pool.submit(
                            labelled, staging, label + (
                                f" (shards {shards.start}-{shards.stop - 1})" if shards
                                else ""), _compile_shards,
                            _ShardTask(key, pair, settings, plans[pair.out_name], rows, shards,
                                       first, writer.sink()))
                            for rows, shards, first in tasks])
                    watch.start()
                for key, (pair, futs) in enumerate(zip(pairs, futures, strict=True)):
                    if progress:
                        progress(key, len(pairs), pair)
                    with catching() as caught:
                        shards = [Shard.of(e) for fut in futs for e in result(fut, watch)]
                    relay(caught, seen=set())
                    for shard in shards:
                        writer.adopt(shard.name)
                    outputs[pair_folder(pair.out_name)] = pair_entry(
                        pair.dataset.abbr, pair.model.abbr, shards, plans[pair.out_name])
            except BaseException:
                stop_workers(pool, [fut for futs in futures for fut in futs])
                raise
        for stray in writer.staging.glob(".worker-*"):
            stray.unlink(missing_ok=True)
    finally:
        _PREPARED.clear()


class PoolEngine:
    """``--jobs N``: the pairs (and row ranges of a large one) in N processes
    (:class:`prompt_compiler.run.engines.Engine`)."""

    def run(self, pairs: Sequence[Pair], writer: OutputDir | None,
            outputs: dict[str, dict[str, Any]], settings: CompileSettings, *,
            shards: Mapping[str, ShardPlan] | None = None, progress: Any = None,
            digests: dict[str, str] | None = None) -> None:
        """See :meth:`prompt_compiler.run.engines.Engine.run` (``writer`` is required)."""
        assert writer is not None, "the process pool writes OUT; a check runs locally"
        if shards is None:
            compile_parallel(list(pairs), writer, outputs, settings, progress)
        else:
            compile_parallel_shards(list(pairs), writer, outputs, settings, dict(shards),
                                    progress)
