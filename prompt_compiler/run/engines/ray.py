"""``compile-prompts --engine ray``: the pairs of a suite as Ray tasks, and each large pair
as a Ray Data pipeline over its row blocks; the output folder is the local engine's, byte for
byte.

The driver (the ``compile-prompts`` process) plans the work as ``--jobs`` does: a small
pair is one task (:func:`~prompt_compiler.run.pairs.pair_lines`, the local engine's function); a
gen or ppl pair with many test rows becomes a Dataset of row blocks mapped by one
``map_batches`` stage (:func:`_compile_blocks`, which compiles a block with
:func:`~prompt_compiler.run.pairs.range_lines`) and read back in order. The driver writes the
results in order into the same :class:`~prompt_compiler.emit.outdir.OutputDir` staging
folder, so a failed run leaves OUT as it was. A task or block whose worker dies is run again
by Ray; its result depends on its arguments alone, so the retry returns the same bytes.

A worker process builds the pair's job once (reading the configs and indexing the rows file)
and reuses it for the pair's other blocks. In-context examples: for ZeroRetriever,
FixKRetriever, stateless RandomRetriever, BM25Retriever and TopkRetriever the worker finds
them for its own rows (the BM25 index or the training embeddings, built once by the driver,
travel once through the object store); for any other retriever the driver retrieves once and
each block carries the ids of its rows.

Workers read the configs and data files at the paths the driver sees them at: on a cluster,
ship them in the job's runtime environment (``working_dir``) or keep them on shared storage
(see docs/ray.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from ..._version import install_hint
from ...emit.blockfile import write_blocks
from ...emit.shards import (
    Shard,
    ShardPlan,
    ShardSink,
    pair_entry,
    pair_folder,
    shard_tasks,
    write_shards,
)
from ...errors import ConfigError, PromptCompilerError, UnsupportedError
from ...retrieve.basic import BlockIndex
from ..pairs import Counts, PreparedJob, locate, pair_lines, range_lines
from ..settings import CompileSettings
from .relay import Caught, catching, relay

__all__ = ["RANGE_ROWS", "Offset", "RayEngine", "block_ids", "block_index", "compile_pairs",
           "portable", "ray_session", "require_ray"]

RANGE_ROWS = 20_000
"""Test rows of one row block (fewer where that gives each CPU at least two blocks)."""
MIN_RANGE_ROWS = 2_000

_JOBS: dict[tuple[Any, ...], tuple[Any, str, dict[str, Any], Any]] = {}
"""Jobs built by this worker process, by (pair, data dir, mode)."""


def require_ray(what: str = "the Ray engine") -> Any:
    """The ``ray`` module with ``ray.data``, or a one-line error naming the extra."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise ConfigError(f"{what} needs the 'ray' package (Ray Data)",
                          hint="install the extra: " + install_hint("ray")) from None
    return ray


def block_index(job: Any, train: Sequence[Any]) -> BlockIndex:
    """The job's retriever with what it needs to retrieve for any block of test rows
    (:class:`~prompt_compiler.retrieve.basic.BlockIndex`), built once from ``train``."""
    found = BlockIndex.of(job.retriever, train, job.reader, job.policy)
    if found is None:
        raise UnsupportedError(
            f"{type(job.retriever).__name__} is not supported on Ray (supported: ZeroRetriever, "
            "FixKRetriever, RandomRetriever with stateless=True, BM25Retriever, "
            "TopkRetriever)", key_path="infer_cfg.retriever")
    return found


def block_ids(job: Any, index: BlockIndex, rows: Sequence[Any], base: int) -> Offset:
    """The example ids of ``rows``, the test rows ``base`` to ``base + len(rows) - 1``,
    indexed by test row."""
    return Offset(index.ids(rows, base, job.reader, job.policy), base)


class Sized(Sequence[Any]):
    """A sequence of ``n`` unread rows (all a FixK or Zero retriever asks is the length)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: Any) -> Any:
        raise IndexError(index)


class Offset(Sequence[Any]):
    """``items`` seen at positions ``base`` to ``base + len(items) - 1`` of a longer
    sequence (test rows, or their example ids), with sequential reads for a row range."""

    def __init__(self, items: Sequence[Any], base: int) -> None:
        self.items, self.base = items, base

    def __len__(self) -> int:
        return self.base + len(self.items)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < self.base:
            raise IndexError(f"row {index} is not in this batch")
        return self.items[index - self.base]

    def iter_range(self, start: int, stop: int) -> Iterator[Any]:
        for i in range(start, stop):
            yield self[i]


class ray_session:  # noqa: N801 - used as a context manager, like open()
    """Ray for one run: join ``address``, or start a local instance with ``cpus`` CPUs
    (stopped at the end)."""

    def __init__(self, address: str | None, cpus: int) -> None:
        self.address, self.cpus, self.started = address, cpus, False

    def __enter__(self) -> Any:
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
            from ...errors import ConfigError

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
        from ...errors import ConfigError

        raise ConfigError(f"cannot reach the Ray cluster at --ray-address {address}: "
                          f"{exc.strerror or exc}",
                          hint="give the head node's GCS address (HOST:6379), or 'auto' "
                               "inside a Ray job") from None


def _worker_job(pair: Any, settings: CompileSettings, fresh: bool = False
                ) -> tuple[Any, str, dict[str, Any], Any]:
    """The pair's job, built once in this worker process (rows stream from their file);
    ``fresh``: built for this call alone (its rows are a window of the file)."""
    key = (pair.out_name, pair.dataset.config_path, pair.dataset.key_path, settings.data_dir,
           settings.mode)
    found = None if fresh else _JOBS.get(key)
    if found is None:
        from ...data.sources import attach_rows

        dataset = attach_rows(pair.dataset, settings.data_dir,
                                  settings.opencompass_python, no_rows=settings.no_rows)
        job, kind, params = settings.compiler().job(
            dataset.spec, pair.model.model_dict(), pair.options, lean=True)
        found = (job, kind, params, None)
        if not fresh:
            if len(_JOBS) > 8:
                _JOBS.clear()
            _JOBS[key] = found
    return found


def portable(pairs: Sequence[Any], settings: CompileSettings
             ) -> tuple[list[Any], CompileSettings]:
    """``pairs`` and ``settings`` as workers get them: ``--data-dir``, the OpenCompass
    interpreter and each config file made absolute against this process's folder (an
    ``s3://`` URI as it is), so that a worker on another node, whose working folder is not
    this one (:func:`_chdir` cannot follow), reads the files this process would: a relative
    ``./data`` would be read from the worker's own folder. A dataset's ``path:`` is found
    beside its (now absolute) config file, as locally."""
    import dataclasses

    from ...storage import object_uri

    def absolute(path: Path | None) -> Path | None:
        if path is None or object_uri(path) is not None:
            return path
        return Path(os.path.abspath(path))

    settings = dataclasses.replace(settings, data_dir=absolute(settings.data_dir),
                                   opencompass_python=absolute(settings.opencompass_python))

    def config(where: Any) -> Any:
        if isinstance(where, str) and where and os.path.isfile(where):
            return os.path.abspath(where)
        return where

    found = []
    for pair in pairs:
        dataset = dataclasses.replace(pair.dataset, config_path=config(pair.dataset.config_path))
        model = dataclasses.replace(pair.model, config_path=config(pair.model.config_path))
        found.append(dataclasses.replace(pair, dataset=dataset, model=model))
    return found, settings


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
        return None, write_blocks(Path(target[0], target[1]), blocks, shown=shown,
                                  digest=digest)
    return b"".join(blocks), ""


def _whole_pair(cwd: str, pair: Any, settings: CompileSettings, target: tuple[str, str],
                shown: str) -> tuple[bytes | None, int, int, str, Caught]:
    """Task: one pair, as the local engine compiles it: (its lines, or None when written to
    ``target``; the line count; lines over_limit; sha256 when written; its warnings)."""
    _chdir(cwd)
    counts = Counts()
    with catching() as caught:
        data, digest = _emit(pair_lines(pair, settings, counts), target, shown)
    return data, counts.count, counts.over_limit, digest, caught


def _compile_blocks(batch: dict[str, Any], cwd: str, pair: Any, settings: CompileSettings,
                    shots: Any, target: tuple[str, str], shown: str) -> dict[str, list[Any]]:
    """The ``map_batches`` function of a large pair's Ray Data pipeline: row blocks
    ``{"block", "start", "stop", "ids"}`` in, ``{"block", "part", "data", "count", "over",
    "error", "warnings"}`` out (``part``: the file a block was written to in the run's staging
    folder, when that folder is on this node; else ``data``: its lines; ``error``: the block's
    error, pickled, raised by the driver when the block's turn comes, so that a run fails on
    the first bad row in file order, as locally; ``warnings``: those it raised, pickled,
    raised by the driver in block order). Each worker process builds the pair's job once
    (configs read, rows file indexed) and takes the shots from the object store once, and
    reuses them for every block it is given."""
    out: dict[str, list[Any]] = {"block": [], "part": [], "data": [], "count": [], "over": [],
                                 "error": [], "warnings": []}
    for k, start, stop, ids in zip(batch["block"], batch["start"], batch["stop"],
                                   batch["ids"], strict=True):
        part, data, counts, error = "", b"", Counts(), b""
        with catching() as caught:
            try:
                part, data = _compile_block(int(k), range(int(start), int(stop)), ids, cwd,
                                            pair, settings, shots, target, shown, counts)
            except PromptCompilerError as err:
                error = pickle.dumps(err)
        for key, value in (("block", int(k)), ("part", part), ("data", data),
                           ("count", counts.count), ("over", counts.over_limit),
                           ("error", error), ("warnings", pickle.dumps(caught))):
            out[key].append(value)
    return out


def _compile_block(k: int, rows: range, ids: bytes, cwd: str, pair: Any,
                   settings: CompileSettings, shots: Any, target: tuple[str, str], shown: str,
                   counts: Counts) -> tuple[str, bytes]:
    """One row block: (the part file it was written to, "") or ("", its lines)."""
    from ...emit.names import on_disk

    _chdir(cwd)
    prepared = _block_job(rows, ids, pair, settings, shots)
    rel = on_disk(f"{target[1]}.part{k}")
    data, _ = _emit(range_lines(pair, prepared, rows, counts), (target[0], rel), shown,
                    digest=False)
    return (rel, b"") if data is None else ("", data)


def _block_job(rows: range, ids: bytes, pair: Any, settings: CompileSettings, shots: Any,
               fresh: bool = False) -> PreparedJob:
    """The pair's job in this worker, with the example ids of ``rows`` (carried in ``ids``,
    or found here from the shots); ``fresh``: see :func:`_worker_job`."""
    import orjson

    job, kind, params, _ = _worker_job(pair, settings, fresh)
    if ids:
        retrieved: Sequence[Any] = Offset(orjson.loads(ids), rows.start)
    else:
        shots = _from_store(shots)
        try:
            test = job.rows.test
            mine = [test[i] for i in rows] if shots.reads_rows else Sized(len(rows))
            retrieved = block_ids(job, shots, mine, rows.start)
        except PromptCompilerError as err:
            raise locate(pair, err) from None
    return PreparedJob(job, kind, params, retrieved)


_STORED: dict[Any, Any] = {}
"""Objects this worker process took from the object store, by reference."""


def _from_store(ref: Any) -> Any:
    import ray

    if not isinstance(ref, ray.ObjectRef):
        return ref
    key = ref.hex()
    if key not in _STORED:
        if len(_STORED) > 8:
            _STORED.clear()
        _STORED[key] = ray.get(ref)
    return _STORED[key]


def _plan(pair: Any, settings: CompileSettings, cpus: int, shard: ShardPlan | None = None,
          keep: list[Any] | None = None) -> tuple[list[Any], Any, Any] | None:
    """A large planned pair's row ranges (with ``shard``: ``(rows, shards, first record)``
    of each shard, :func:`~prompt_compiler.emit.shards.shard_tasks`), its shots (found by
    each task) or retrieved ids (found here once); None for a pair compiled as one task.
    ``keep``: the job is appended to it."""
    from ...data.sources import NotPeekable, attach_rows, peeking
    from ...plan import plannable

    compiler = settings.compiler()
    try:
        with peeking():
            dataset = attach_rows(pair.dataset, settings.data_dir,
                                  settings.opencompass_python, no_rows=settings.no_rows)
        job, kind, params = compiler.job(
            dataset.spec, pair.model.model_dict(), pair.options, lean=True)
    except (PromptCompilerError, NotPeekable):
        return None  # the task raises it again, located as the local engine does
    if keep is not None:
        keep.append(job)
    n = len(job.rows.test)
    if settings.spans or kind not in ("gen", "ppl") or n < 2 * MIN_RANGE_ROWS or not plannable(
            job, kind, params):
        return None
    ranges: list[Any]
    if shard is not None:
        from ...plan.core import job_labels

        per_row = 1 if kind == "gen" else len(job_labels(job, params))
        if per_row < 1:
            return None
        ranges = shard_tasks(n, per_row, shard.size, n)
    else:
        size = max(MIN_RANGE_ROWS, min(RANGE_ROWS, -(-n // (2 * cpus))))
        ranges = [range(a, min(a + size, n)) for a in range(0, n, size)]
    try:
        try:
            return ranges, block_index(job, job.rows.train), None
        except PromptCompilerError:
            return ranges, None, compiler.retrieve(job)
    except PromptCompilerError:
        return None


def compile_pairs(pairs: Sequence[Any], writer: Any, outputs: dict[str, dict[str, Any]],
                  settings: CompileSettings, progress: Any,
                  shards: dict[str, ShardPlan] | None = None,
                  digests: dict[str, str] | None = None) -> None:
    """Compile ``pairs`` on the Ray instance this process is connected to, writing each
    pair's file into ``writer`` and its manifest entry into ``outputs``; with ``shards`` (the
    plan of each pair by its ``out_name``), the workers write the shards themselves, and a
    worker plans each pair (reads its rows, hashes its row files into ``digests`` by real
    path), so that this process reads no row and no record.

    The workers' warnings are raised here, in pair order, when the pairs are done (or one
    fails); they and an error name each config file as this process was given it (the
    workers read it by its absolute path, :func:`portable`)."""
    shown = {os.path.abspath(where): where for pair in pairs
             for where in (pair.dataset.config_path, pair.model.config_path)
             if isinstance(where, str) and where and os.path.isfile(where)}
    held: Caught = []
    try:
        with catching() as held:
            _compile_pairs(pairs, writer, outputs, settings, progress, shards, digests)
    except PromptCompilerError as err:
        if err.config_path in shown:
            err.config_path = shown[err.config_path]
        raise
    finally:
        relay([(category, next((shown[a] + text[len(a):] for a in shown
                                if text.startswith(a + ":")), text))
               for category, text in held])


def _compile_pairs(pairs: Sequence[Any], writer: Any, outputs: dict[str, dict[str, Any]],
                   settings: CompileSettings, progress: Any,
                   shards: dict[str, ShardPlan] | None, digests: dict[str, str] | None
                   ) -> None:
    import ray

    from ...emit.names import on_disk

    pairs, settings = portable(pairs, settings)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))  # type: ignore[no-untyped-call]
    if shards is not None:
        _shard_pairs(pairs, writer, outputs, settings, shards, progress, cpus,
                     {} if digests is None else digests)
        return
    whole = ray.remote(max_retries=3, retry_exceptions=False)(_whole_pair)
    plans = [_plan(pair, settings, cpus) for pair in pairs]
    staging, cwd = writer.staging, os.getcwd()
    # small pairs all start at once; a large pair's row blocks go through its Ray Data pipeline
    singles = {k: whole.remote(cwd, pair, settings, (str(staging), on_disk(pair.out_name)),
                               writer.shown_path(pair.out_name))
               for k, (pair, plan) in enumerate(zip(pairs, plans, strict=True)) if plan is None}
    try:
        for k, (pair, plan) in enumerate(zip(pairs, plans, strict=True)):
            if progress:
                progress(k, len(pairs), pair)
            counts = Counts()
            if plan is None:
                data, counts.count, counts.over_limit, digest, caught = _get(singles[k])
                relay(caught)
                if data is None:
                    writer.adopt(pair.out_name)
                else:
                    digest = writer.write_blocks(pair.out_name, iter([data]))
            else:
                digest = _ranges(pair, settings, plan, cpus, counts, writer, progress)
            outputs[pair.out_name] = counts.entry(pair, digest)
    except BaseException:
        for ref in singles.values():
            ray.cancel(ref, force=True)
        raise


def _own_error(exc: BaseException) -> BaseException | None:
    """The error a task or a block raised, inside Ray's wrappers of it: this package's own
    error where there is one, else the task's cause (None when there is neither)."""
    import ray

    seen: set[int] = set()
    todo, first = [exc], getattr(exc, "cause", None)
    while todo:
        err = todo.pop()
        if id(err) in seen:
            continue
        seen.add(id(err))
        # Ray's wrapper may also be an instance of the cause's class; its text is the
        # task's traceback, so the cause inside it is the error
        if isinstance(err, PromptCompilerError) and not isinstance(err, ray.exceptions.RayError):
            return err
        todo.extend(e for e in (getattr(err, "cause", None), err.__cause__, err.__context__)
                    if isinstance(e, BaseException))
    return first if isinstance(first, BaseException) else None


def _get(ref: Any) -> Any:
    """A task's result; a task's own error is raised as itself (not Ray's wrapper)."""
    import ray

    try:
        return ray.get(ref)
    except ray.exceptions.RayError as exc:
        cause = _own_error(exc)
        if cause is not None:
            raise cause from None
        raise


def _ranges(pair: Any, settings: CompileSettings, plan: Any, cpus: int, counts: Counts,
            writer: Any, progress: Any = None) -> str:
    """Write a large pair's file from a Ray Data pipeline over its row blocks (in order):
    a block written by its worker into the staging folder (a worker on this node) is
    appended and removed, one returned is written; its sha256. ``progress.rows(n)`` and
    ``progress.advance(n)`` (when present) hear of the test rows and of each block's."""
    import orjson
    import ray

    from ...emit.names import on_disk

    ranges, shots, retrieved = plan
    name, staging = pair.out_name, writer.staging
    advance = getattr(progress, "advance", None)
    if advance is not None and hasattr(progress, "rows"):
        progress.rows(ranges[-1].stop - ranges[0].start)
    shown = writer.shown_path(name)
    items = [{"block": k, "start": rows.start, "stop": rows.stop,
              "ids": b"" if retrieved is None else orjson.dumps([list(retrieved[i])
                                                                 for i in rows])}
             for k, rows in enumerate(ranges)]
    with _data_context():
        blocks = ray.data.from_items(items, override_num_blocks=len(items))
        compiled = blocks.map_batches(
            cast(Any, _compile_blocks), batch_size=1, batch_format="numpy", num_cpus=1,
            zero_copy_batch=True,
            fn_args=(os.getcwd(), pair, settings, ray.put(shots),
                     (str(staging), on_disk(name)), shown))

        seen: set[type[Warning]] = set()

        def pieces() -> Iterator[Path | bytes]:
            done = 0
            for batch in compiled.iter_batches(batch_size=None, batch_format="numpy",
                                               prefetch_batches=0):
                for k, part, data, n, over, error, caught in zip(
                        batch["block"], batch["part"], batch["data"], batch["count"],
                        batch["over"], batch["error"], batch["warnings"], strict=True):
                    if int(k) != done:  # Ray Data keeps the order (preserve_order)
                        raise PromptCompilerError(
                            f"internal error: row block {int(k)} arrived where block {done} "
                            f"was expected ({shown})")
                    relay(pickle.loads(bytes(caught)), seen)
                    if error:
                        raise pickle.loads(bytes(error))
                    done += 1
                    counts.count += int(n)
                    counts.over_limit += int(over)
                    if advance is not None:
                        advance(len(ranges[int(k)]))
                    yield staging / str(part) if part else bytes(data)
            if done != len(items):
                raise PromptCompilerError(f"internal error: {done} of {len(items)} row blocks "
                                          f"came back ({shown})")

        try:
            digest = write_blocks(staging / on_disk(name), (), shown=shown, parts=pieces())
        except ray.exceptions.RayError as exc:  # a block's error, inside Ray's wrappers
            cause = _own_error(exc)
            if cause is not None:
                raise cause from None
            raise
    writer.adopt(name)
    return digest


@contextlib.contextmanager
def _data_context() -> Iterator[None]:
    """Ray Data settings of this run's pipelines (the caller's are put back): blocks come
    out in order, and nothing is printed."""
    import ray.data

    ctx = ray.data.DataContext.get_current()
    log = logging.getLogger("ray.data")
    saved = (ctx.execution_options.preserve_order, ctx.enable_progress_bars,
             ctx.print_on_execution_start, ctx.op_resource_reservation_enabled, log.level)
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    ctx.op_resource_reservation_enabled = False  # one map stage: no CPUs held back for others
    log.setLevel(logging.CRITICAL)  # a failure is reported once, by the CLI
    try:
        yield
    finally:
        (ctx.execution_options.preserve_order, ctx.enable_progress_bars,
         ctx.print_on_execution_start, ctx.op_resource_reservation_enabled, level) = saved
        log.setLevel(level)


# -- sharded output: the workers write, this process only gathers names and digests ---------


def _whole_pair_shards(cwd: str, pair: Any, settings: CompileSettings, plan: ShardPlan,
                       sink: ShardSink) -> tuple[list[dict[str, Any]], Caught]:
    """Task: every shard of one pair, as the local engine writes them; their entries, and
    the warnings raised."""
    _chdir(cwd)
    with catching() as caught:
        shards = write_shards(sink, pair_folder(pair.out_name),
                              pair_lines(pair, settings, Counts()), plan)
    return [s.entry() for s in shards], caught


def _shard_batches(batch: dict[str, Any], cwd: str, pair: Any, settings: CompileSettings,
                   shots: Any, plan: ShardPlan, sink: ShardSink, lines: Any
                   ) -> dict[str, list[Any]]:
    """The ``map_batches`` function of a large sharded pair: one item per shard (its rows,
    its number, the record number of its first row, the ids of its rows or none, the rows
    of the test file it reads when ``lines`` counted them) in, the shard's manifest entries
    (JSON) or its error (pickled), and its warnings (pickled), out."""
    import orjson

    from ...data.windows import row_windows

    out: dict[str, list[Any]] = {"block": [], "entries": [], "error": [], "warnings": []}
    for k, start, stop, k0, k1, first, ids, w0, w1 in zip(
            batch["block"], batch["start"], batch["stop"], batch["k0"], batch["k1"],
            batch["first"], batch["ids"], batch["w0"], batch["w1"], strict=True):
        entries, error = b"", b""
        with catching() as caught:
            try:
                _chdir(cwd)
                rows = range(int(start), int(stop))
                if lines is not None:  # this worker finds its own rows in the file
                    with row_windows({lines.file: (lines, range(int(w0), int(w1)))}):
                        prepared = _block_job(rows, bytes(ids), pair, settings, shots,
                                              fresh=True)
                else:
                    prepared = _block_job(rows, bytes(ids), pair, settings, shots)
                shards = write_shards(sink, pair_folder(pair.out_name),
                                      range_lines(pair, prepared, rows, Counts()), plan,
                                      start=int(first), shards=range(int(k0), int(k1)))
                entries = orjson.dumps([s.entry() for s in shards])
            except PromptCompilerError as err:
                error = pickle.dumps(err)
        out["block"].append(int(k))
        out["entries"].append(entries)
        out["error"].append(error)
        out["warnings"].append(pickle.dumps(caught))
    return out


def _remote_plan(cwd: str, pair: Any, settings: CompileSettings, cpus: int, shard: ShardPlan,
                 range_bytes: int | None = None) -> tuple[Any, dict[str, str]]:
    """Task: :func:`_plan` of one sharded pair, and the sha256 of its row files (the
    manifest's inputs) by real path. (Its shots come back by value: an object this task
    put in the store would be lost with its worker process.)"""
    from ...data.sources import row_files
    from ...emit.records import sha256_file
    from ...storage import object_digests

    _chdir(cwd)
    found_files = row_files(pair.dataset, settings.data_dir)
    files = [f for f in found_files if isinstance(f, Path) and f.is_file()]
    digests = {os.path.realpath(f): sha256_file(f) for f in files}
    digests.update(object_digests(found_files))
    found: Any = None
    lines = _count_rows(files, range_bytes)
    if lines is not None:  # plan with only row 0 of the test file read
        from ...data.windows import row_windows

        keep: list[Any] = []
        with row_windows({lines.file: (lines, range(0))}):
            found = _plan(pair, settings, cpus, shard, keep)
        offset = _window_offset(keep[0], lines) if keep else None
        if found is not None and offset is not None:
            found = (*found, lines, offset)
        else:
            found = None
    if found is None:
        found = _plan(pair, settings, cpus, shard)
        found = None if found is None else (*found, None, 0)
    return found, digests


WINDOW_BYTES = 8 << 20
"""A test file of JSON Lines this large is counted by tasks, and each shard task indexes only
its own rows (smaller ones are indexed whole by each worker)."""


def _count_rows(files: Sequence[Any], range_bytes: int | None = None) -> Any:
    """The :class:`~prompt_compiler.data.windows.LineRanges` of a pair's one large JSON
    Lines file, its byte ranges counted by Ray tasks; None when there is not exactly one."""
    import ray

    from ...data.windows import byte_ranges, count_range, line_ranges

    large = [os.path.realpath(f) for f in files
             if str(f).endswith(".jsonl") and os.path.getsize(f) >= WINDOW_BYTES]
    if len(large) != 1:
        return None
    counter = ray.remote(max_retries=3)(count_range)
    cuts = byte_ranges(large[0], range_bytes) if range_bytes else byte_ranges(large[0])
    counted = ray.get([counter.remote(large[0], lo, hi) for lo, hi in cuts])
    return line_ranges(large[0], counted)


def _window_offset(job: Any, lines: Any) -> int | None:
    """Where the job's test row 0 lies in the counted file, when each shard task can read a
    window of it (the test split is that file, rows in file order, and the training split is
    another file); else None."""
    from ...data.reader import RowView
    from ...data.windows import JsonlWindow

    test, train = job.rows.test, job.rows.train
    if not (isinstance(test, RowView) and isinstance(test.source, JsonlWindow)
            and isinstance(test.positions, range) and test.positions.step == 1):
        return None
    if isinstance(train, RowView) and isinstance(train.source, JsonlWindow):
        return None  # examples are read by id from the same file
    return test.positions.start


def _shard_pairs(pairs: Sequence[Any], writer: Any, outputs: dict[str, dict[str, Any]],
                 settings: CompileSettings, plans: dict[str, ShardPlan], progress: Any,
                 cpus: int, digests: dict[str, str]) -> None:
    """Every pair's shards written by Ray workers into ``writer``'s sink: a small pair by
    one task, a large one by a Ray Data stage of one item per shard. Only names, counts and
    digests come back; the pairs are planned by tasks too."""
    import ray

    whole = ray.remote(max_retries=3, retry_exceptions=False)(_whole_pair_shards)
    planner = ray.remote(max_retries=3, retry_exceptions=False)(_remote_plan)
    cwd = os.getcwd()
    found = []
    # test hook: the byte ranges a large rows file is counted in (PROMPT_COMPILER_TEST_RANGE_BYTES)
    cut = int(os.environ.get("PROMPT_COMPILER_TEST_RANGE_BYTES") or 0) or None
    for plan, hashed in _get([planner.remote(cwd, pair, settings, cpus, plans[pair.out_name],
                                             cut) for pair in pairs]):
        found.append(plan)
        digests.update(hashed)
    singles = {k: whole.remote(cwd, pair, settings, plans[pair.out_name], writer.sink())
               for k, (pair, plan) in enumerate(zip(pairs, found, strict=True)) if plan is None}
    try:
        for k, (pair, plan) in enumerate(zip(pairs, found, strict=True)):
            if progress:
                progress(k, len(pairs), pair)
            if plan is None:
                entries, caught = _get(singles[k])
                relay(caught)
            else:
                entries = _shard_stage(pair, settings, plan, plans[pair.out_name], writer, cwd)
            shards = [Shard.of(e) for e in entries]
            for shard in shards:
                writer.adopt(shard.name)
            outputs[pair_folder(pair.out_name)] = pair_entry(
                pair.dataset.abbr, pair.model.abbr, shards, plans[pair.out_name])
    except BaseException:
        for ref in singles.values():
            ray.cancel(ref, force=True)
        raise


def _shard_stage(pair: Any, settings: CompileSettings, found: Any, plan: ShardPlan,
                 writer: Any, cwd: str) -> list[dict[str, Any]]:
    """A large pair's shards, one Ray Data item each; the entries, in shard order (the
    error of the first failing shard is raised, as the local engine would meet it)."""
    import orjson
    import ray

    tasks, shots, retrieved, lines, offset = found
    items = [{"block": j, "start": rows.start, "stop": rows.stop, "k0": ks.start,
              "k1": ks.stop, "first": first, "w0": rows.start + offset,
              "w1": rows.stop + offset,
              "ids": b"" if retrieved is None else orjson.dumps([list(retrieved[i])
                                                                 for i in rows])}
             for j, (rows, ks, first) in enumerate(tasks)]
    results: dict[int, tuple[bytes, bytes, bytes]] = {}
    with _data_context():
        stage = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
            cast(Any, _shard_batches), batch_size=1, batch_format="numpy", num_cpus=1,
            zero_copy_batch=True,
            fn_args=(cwd, pair, settings, ray.put(shots), plan, writer.sink(), lines))
        try:
            for batch in stage.iter_batches(batch_size=None, batch_format="numpy",
                                            prefetch_batches=0):
                for j, entries, error, caught in zip(batch["block"], batch["entries"],
                                                     batch["error"], batch["warnings"],
                                                     strict=True):
                    results[int(j)] = (bytes(entries), bytes(error), bytes(caught))
        except ray.exceptions.RayError as exc:
            cause = _own_error(exc)
            if cause is not None:
                raise cause from None
            raise
    out: list[dict[str, Any]] = []
    seen: set[type[Warning]] = set()
    for j in range(len(items)):
        if j not in results:
            raise PromptCompilerError(f"internal error: shard task {j} of "
                                      f"{writer.shown_path(pair_folder(pair.out_name))} "
                                      "never came back")
        entries, error, caught = results[j]
        relay(pickle.loads(caught), seen)
        if error:
            raise pickle.loads(error)
        out += orjson.loads(entries)
    return out


class RayEngine:
    """``--engine ray``: the pairs as Ray tasks, a large pair's row blocks as Ray Data, on
    the cluster at ``settings.ray_address`` or a local instance of ``settings.jobs`` CPUs
    (:class:`prompt_compiler.run.engines.Engine`)."""

    def run(self, pairs: Sequence[Any], writer: Any, outputs: dict[str, dict[str, Any]],
            settings: CompileSettings, *, shards: Mapping[str, ShardPlan] | None = None,
            progress: Any = None, digests: dict[str, str] | None = None) -> None:
        """See :meth:`prompt_compiler.run.engines.Engine.run` (``writer`` is required)."""
        assert writer is not None, "Ray writes OUT; a check runs locally"
        with ray_session(settings.ray_address, settings.jobs):
            compile_pairs(list(pairs), writer, outputs, settings, progress,
                          shards=None if shards is None else dict(shards), digests=digests)
