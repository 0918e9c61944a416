"""``compile-prompts --engine ray``: the pairs of a suite, and the row ranges of a large
pair, as Ray tasks; the output folder is the local engine's, byte for byte.

The driver (the ``compile-prompts`` process) plans the work as ``--jobs`` does: a small
pair is one task, a gen or ppl pair with many test rows is cut into row ranges. Each task
compiles its pair, or its range, with the function the local engine uses
(:func:`~prompt_compiler.suite.pair_lines` for a whole pair,
:func:`~prompt_compiler.suite._prepared_lines` for a range), so the bytes are the same by
construction; the driver writes the returned blocks in order into the same
:class:`~prompt_compiler.emit.outdir.OutputDir` staging folder, so a failed run leaves OUT
as it was. A task whose worker dies is run again by Ray (``max_retries``); its result
depends on its arguments alone, so the retry returns the same bytes.

A range task builds the pair's job once per worker process (reading the configs and
indexing the rows file) and reuses it for the pair's other ranges. Its in-context examples:
for ZeroRetriever, FixKRetriever, stateless RandomRetriever and BM25Retriever the task
finds them for its own rows (the BM25 index, built once by the driver, travels once
through the object store); for any other retriever the driver retrieves once and each task
gets the ids of its rows.

Workers read the configs and data files at the paths the driver sees them at: on a cluster,
ship them in the job's runtime environment (``working_dir``) or keep them on shared storage
(see docs/ray.md).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .errors import PromptCompilerError

__all__ = ["RANGE_ROWS", "compile_pairs", "ray_session"]

RANGE_ROWS = 20_000
"""Test rows of one range task (fewer where that gives each CPU at least two ranges)."""
MIN_RANGE_ROWS = 2_000
WINDOW = 2
"""Range tasks in flight per CPU: bounds the driver's memory of results not yet written."""

_JOBS: dict[tuple[Any, ...], tuple[Any, str, dict[str, Any], Any]] = {}
"""Jobs built by this worker process, by (pair, data dir, mode)."""


class ray_session:  # noqa: N801 - used as a context manager, like open()
    """Ray for one run: join ``address``, or start a local instance with ``cpus`` CPUs
    (stopped at the end)."""

    def __init__(self, address: str | None, cpus: int) -> None:
        self.address, self.cpus, self.started = address, cpus, False

    def __enter__(self) -> Any:
        from .ray import require_ray

        ray = require_ray()
        if ray.is_initialized():
            return ray
        if self.address:
            _reachable(self.address)
        try:
            if self.address:
                ray.init(address=self.address, log_to_driver=False, logging_level="ERROR")
            else:
                # workers at the niceness of this process (Ray's default, 15, starves them
                # on a machine other work shares)
                ray.init(num_cpus=self.cpus, include_dashboard=False, log_to_driver=False,
                         logging_level="ERROR", _system_config={"worker_niceness": 0})
        except Exception as exc:  # ConnectionError and others from a bad address
            from .errors import ConfigError

            where = f"--ray-address {self.address}" if self.address else "a local instance"
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ConfigError(f"cannot start Ray ({where}): {reason}") from None
        self.started = True
        return ray

    def __exit__(self, *exc: Any) -> None:
        if self.started:
            import ray

            ray.shutdown()


def _reachable(address: str) -> None:
    """Fail at once, in one line, if ``HOST:PORT`` takes no connection (Ray itself retries
    for minutes); ``auto``, ``local`` and ``ray://`` addresses are left to Ray."""
    import socket

    host, _, port = address.rpartition(":")
    if "://" in address or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as exc:
        from .errors import ConfigError

        raise ConfigError(f"cannot reach the Ray cluster at --ray-address {address}: "
                          f"{exc.strerror or exc}",
                          hint="give the head node's GCS address (HOST:6379), or 'auto' "
                               "inside a Ray job") from None


def _worker_job(pair: Any, data_dir: Path | None, mode: str
                ) -> tuple[Any, str, dict[str, Any], Any]:
    """The pair's job, built once in this worker process (rows stream from their file)."""
    key = (pair.out_name, pair.dataset.config_path, pair.dataset.key_path, data_dir, mode)
    found = _JOBS.get(key)
    if found is None:
        from .compiler import Compiler
        from .data.sources import attach_rows

        dataset = attach_rows(pair.dataset, data_dir)
        job, kind, params = Compiler(mode=mode).job(
            dataset.spec, {**pair.model.spec, "abbr": pair.model.abbr}, pair.options, lean=True)
        if len(_JOBS) > 8:
            _JOBS.clear()
        found = _JOBS[key] = (job, kind, params, None)
    return found


def _chdir(cwd: str) -> None:
    """Work in the driver's folder, where relative config and data paths start (a folder
    that is not on this node is left alone: the runtime environment placed the files)."""
    if os.getcwd() != cwd and os.path.isdir(cwd):
        os.chdir(cwd)


def _emit(blocks: Iterator[bytes], target: tuple[str, str], shown: str, digest: bool = True
          ) -> tuple[bytes | None, str]:
    """Write ``blocks`` to ``target`` (the run's staging folder, a file name in it) when
    that folder is on this node: (None, sha256 or "" without ``digest``); else return
    them: (the bytes, "")."""
    if os.path.isdir(target[0]):
        from .emit.outdir import BlockFile

        out = BlockFile(Path(target[0], target[1]), shown=shown, digest=digest)
        try:
            for block in blocks:
                out.write(block)
        except BaseException:
            out.abort()
            raise
        return None, out.close()
    return b"".join(blocks), ""


def _whole_pair(cwd: str, pair: Any, data_dir: Path | None, mode: str, spans: bool,
                strict: bool, target: tuple[str, str], shown: str
                ) -> tuple[bytes | None, int, int, str]:
    """Task: one pair, as the local engine compiles it: (its lines, or None when written to
    ``target``; the line count; lines over_limit; sha256 when written)."""
    from .suite import _Counts, pair_lines

    _chdir(cwd)
    counts = _Counts()
    data, digest = _emit(pair_lines(pair, counts, data_dir=data_dir, mode=mode, spans=spans,
                                    strict=strict), target, shown)
    return data, counts.count, counts.over_limit, digest


def _range(cwd: str, pair: Any, data_dir: Path | None, mode: str, rows: range, shots: Any,
           ids: Sequence[Any] | None, target: tuple[str, str], shown: str
           ) -> tuple[bytes | None, int, int, str]:
    """Task: one row range of a planned pair (as :func:`_whole_pair`)."""
    from .ray import _Offset
    from .suite import _Counts, _Prepared, _prepared_lines

    _chdir(cwd)
    job, kind, params, _ = _worker_job(pair, data_dir, mode)
    if ids is not None:
        retrieved: Sequence[Any] = _Offset(ids, rows.start)
    else:
        try:
            test = job.rows.test
            mine = [test[i] for i in rows] if shots.kind == "BM25Retriever" or (
                shots.kind in ("RandomRetriever", "TopkRetriever")) else []
            retrieved = shots.ids(job, mine, rows.start, len(test))
        except PromptCompilerError as err:
            from .suite import _pair_located

            raise _pair_located(pair, err) from None
    counts = _Counts()
    data, digest = _emit(_prepared_lines(pair, _Prepared(job, kind, params, retrieved), rows,
                                         counts), target, shown, digest=False)
    return data, counts.count, counts.over_limit, digest


def _plan(pair: Any, data_dir: Path | None, mode: str, cpus: int, spans: bool
          ) -> tuple[list[range], Any, Any] | None:
    """A large planned pair's row ranges, its shots (found by each task) or retrieved ids
    (found here once); None for a pair compiled as one task."""
    from .compiler import Compiler
    from .data.sources import NotPeekable, attach_rows, peeking
    from .plan import plannable
    from .ray import _Shots

    try:
        with peeking():
            dataset = attach_rows(pair.dataset, data_dir)
        job, kind, params = Compiler(mode=mode).job(
            dataset.spec, {**pair.model.spec, "abbr": pair.model.abbr}, pair.options, lean=True)
    except (PromptCompilerError, NotPeekable):
        return None  # the task raises it again, located as the local engine does
    n = len(job.rows.test)
    if spans or kind not in ("gen", "ppl") or n < 2 * MIN_RANGE_ROWS or not plannable(
            job, kind, params):
        return None
    size = max(MIN_RANGE_ROWS, min(RANGE_ROWS, -(-n // (2 * cpus))))
    ranges = [range(a, min(a + size, n)) for a in range(0, n, size)]
    try:
        try:
            return ranges, _Shots(job, job.rows.train), None
        except PromptCompilerError:
            retrieved = job.retriever.retrieve(job.rows.train, job.rows.test, job.reader,
                                               job.policy)
            return ranges, None, retrieved
    except PromptCompilerError:
        return None


def compile_pairs(pairs: Sequence[Any], writer: Any, outputs: dict[str, dict[str, Any]],
                  data_dir: Path | None, mode: str, progress: Any,
                  spans: bool = False, strict: bool = False) -> None:
    """Compile ``pairs`` on the Ray instance this process is connected to, writing each
    pair's file into ``writer`` and its manifest entry into ``outputs``."""
    import ray

    from .emit.names import on_disk
    from .suite import _Counts

    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))  # type: ignore[no-untyped-call]
    whole = ray.remote(max_retries=3, retry_exceptions=False)(_whole_pair)
    part = ray.remote(max_retries=3, retry_exceptions=False)(_range)
    plans = [_plan(pair, data_dir, mode, cpus, spans) for pair in pairs]
    staging, cwd = writer.staging, os.getcwd()
    # small pairs all start at once; a large pair's ranges stream through a window
    singles = {k: whole.remote(cwd, pair, data_dir, mode, spans, strict,
                               (str(staging), on_disk(pair.out_name)),
                               writer.shown_path(pair.out_name))
               for k, (pair, plan) in enumerate(zip(pairs, plans, strict=True)) if plan is None}
    try:
        for k, (pair, plan) in enumerate(zip(pairs, plans, strict=True)):
            if progress:
                progress(k, len(pairs), pair)
            counts = _Counts()
            if plan is None:
                data, counts.count, counts.over_limit, digest = _get(singles[k])
                if data is None:
                    writer.adopt(pair.out_name)
                else:
                    digest = writer.write_blocks(pair.out_name, iter([data]))
            else:
                digest = _ranges(part, pair, data_dir, mode, plan, cpus, counts, writer)
            outputs[pair.out_name] = counts.entry(pair, digest)
    except BaseException:
        for ref in singles.values():
            ray.cancel(ref, force=True)
        raise


def _get(ref: Any) -> Any:
    """A task's result; a task's own error is raised as itself (not Ray's wrapper)."""
    import ray

    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise


def _ranges(part: Any, pair: Any, data_dir: Path | None, mode: str, plan: Any, cpus: int,
            counts: Any, writer: Any) -> str:
    """Write a large pair's file from its ranges, in order, with at most ``WINDOW * cpus``
    tasks in flight; its sha256. A range written by its task into the staging folder (a
    worker on this node) is appended, and removed; one returned is written."""
    import ray

    from .emit.names import on_disk
    from .emit.outdir import BlockFile

    ranges, shots, retrieved = plan
    shots_ref = ray.put(shots)
    cwd, staging, name = os.getcwd(), writer.staging, pair.out_name
    shown = writer.shown_path(name)
    out = BlockFile(staging / on_disk(name), shown=shown)
    pending: deque[tuple[Path, Any]] = deque()
    todo = enumerate(ranges)
    try:
        while True:
            while len(pending) < WINDOW * cpus:
                k, rows = next(todo, (0, None))
                if rows is None:
                    break
                ids = None if retrieved is None else [list(retrieved[i]) for i in rows]
                rel = on_disk(f"{name}.part{k}")
                pending.append((staging / rel, part.remote(cwd, pair, data_dir, mode, rows,
                                                           shots_ref, ids, (str(staging), rel),
                                                           shown)))
            if not pending:
                break
            target, ref = pending.popleft()
            data, n, over, _ = _get(ref)
            counts.count += n
            counts.over_limit += over
            if data is None:
                out.append(target)
            else:
                out.write(data)
    except BaseException:
        out.abort()
        for _, ref in pending:
            ray.cancel(ref, force=True)
        raise
    digest = out.close()
    writer.adopt(name)
    return digest
