"""One dataset x model pair: its job, its warnings, its records or its lines, its errors located.

Everything here works on one :class:`Pair` under one :class:`CompileSettings`, the same in
every process: the suite (:mod:`.suite`) and the ``--jobs`` pool (:mod:`.engines.pool`)
call it, and another engine (Ray) calls it the same way, so the bytes are the same by
construction.

* :func:`pair_records`: the pair's records (the library's path; ``--show``);
* :func:`pair_lines`: the pair's lines as written to its file (a row range of it, too);
  planned jobs through :mod:`prompt_compiler.plan.lines`, the others through :func:`pair_records`;
* :func:`prepare` and :func:`range_lines`: a planned pair's job built and retrieved once,
  then any row range of it; :func:`compile_range` is the picklable task an engine sends;
* :func:`locate`: an error located in the pair's config files (file, key path, row).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..assemble.base import Job, Record
from ..compiler import Compiler
from ..config import DatasetConfig, ModelConfig
from ..config.origins import is_under, relocate
from ..data.sources import attach_rows
from ..emit.names import output_name
from ..emit.records import record_bytes, record_json
from ..errors import ConfigError, DataError, PromptCompilerError, PromptCompilerWarning
from .settings import CompileSettings

__all__ = ["BLOCK_RECORDS", "Counts", "Pair", "PreparedJob", "at_origin",
           "compile_range", "dataset_warnings", "locate", "pair_job", "pair_lines",
           "pair_records", "prefetch_rows", "prepare", "range_lines"]

BLOCK_RECORDS = 256
"""Records joined into one block of lines on the generic path."""


@dataclass(frozen=True, slots=True)
class Pair:
    """One dataset compiled for one model."""

    dataset: DatasetConfig
    model: ModelConfig
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def out_name(self) -> str:
        """The record file in OUT (see :mod:`prompt_compiler.emit.names`)."""
        return output_name(self.model.abbr, self.dataset.abbr)


class Counts:
    """Lines written for one pair, and how many of them are flagged ``over_limit``."""

    def __init__(self, count: int = 0, over_limit: int = 0) -> None:
        self.count = count
        self.over_limit = over_limit

    def add(self, other: Counts) -> None:
        self.count += other.count
        self.over_limit += other.over_limit

    def entry(self, pair: Pair, digest: str) -> dict[str, Any]:
        """The manifest's output entry (``over_limit`` only when some prompt is)."""
        out: dict[str, Any] = {"dataset": pair.dataset.abbr, "model": pair.model.abbr,
                               "records": self.count, "sha256": digest}
        if self.over_limit:
            out["over_limit"] = self.over_limit
        return out


@dataclass(frozen=True, slots=True)
class PreparedJob:
    """A planned pair's job, built and retrieved once; every row range is compiled from it
    (forked workers inherit it; :func:`range_lines`)."""

    job: Job
    kind: str
    params: dict[str, Any]
    retrieved: Sequence[Sequence[int]]


# -- errors and warnings -----------------------------------------------------------------


def at_origin(err: PromptCompilerError, pair: Pair) -> PromptCompilerError:
    """``err`` named where the pair's model (an error at its key path) or else its dataset is
    defined: the base config that defines it (recorded when the config loaded), imported by
    the config read."""
    model = pair.model
    if err.key_path and is_under(err.key_path, model.key_path):
        return relocate(err, model.origin, model.config_path, model.key_path)
    return relocate(err, pair.dataset.origin, pair.dataset.config_path, pair.dataset.key_path)


def locate(pair: Pair, err: PromptCompilerError) -> PromptCompilerError:
    """``err`` located in the pair's config files (dataset and model key paths)."""
    own = pair.dataset.key_path
    if err.key_path and own and not err.key_path.startswith((own, pair.model.key_path)):
        if err.key_path.startswith("model"):
            # the model's own config file and key path
            err.key_path = pair.model.key_path + err.key_path[len("model"):]
            err.located(config_path=pair.model.config_path, model=pair.model.abbr)
        elif not err.key_path.startswith("meta_template"):
            err.key_path = f"{pair.dataset.key_path}.{err.key_path}"
    return at_origin(err.located(config_path=pair.dataset.config_path,
                                 dataset=pair.dataset.abbr, model=pair.model.abbr), pair)


def dataset_warnings(job: Any, spec: Mapping[str, Any]) -> list[PromptCompilerError]:
    """What a user should hear about a dataset that still compiles.

    A test split with no rows (nothing is compiled), an ``output_column`` no row has
    (every ``gold`` is null), and ``{placeholders}`` naming no column of the rows
    (:func:`prompt_compiler.template.placeholders.unknown_placeholders`: they
    stay in the prompt verbatim). Each is an error object carrying its key path, so a
    caller can print it as a warning or raise it (``--strict``).
    """
    from ..template.placeholders import unknown_placeholders

    if not job.rows.test:
        return [DataError("the test split has no rows, so nothing is compiled for this "
                          "dataset", key_path="reader_cfg.test_split")]
    infer = spec.get("infer_cfg")
    infer = infer if isinstance(infer, Mapping) else {}  # (a custom dataset's is derived)
    test_cols = list(job.rows.test[0])
    train_cols = list(job.rows.train[0]) if job.rows.train else test_cols
    found: list[PromptCompilerError] = []
    for key, cols in (("ice_template", train_cols), ("prompt_template", test_cols)):
        for hit in unknown_placeholders(infer.get(key), cols, f"infer_cfg.{key}"):
            found.append(ConfigError(hit.message, key_path=hit.key_path))
    output = job.reader.output_column  # the reader in effect (a custom dataset's derived)
    if isinstance(output, str) and output and output not in test_cols:
        import difflib

        close = difflib.get_close_matches(output, [str(c) for c in test_cols], n=1, cutoff=0.6)
        mean = f" (did you mean {close[0]!r}?)" if close else ""
        found.append(DataError(f"output_column {output!r} names no column of the rows{mean}, so "
                               "every record's gold is null", key_path="reader_cfg.output_column"))
    return found


# -- the job of a pair -------------------------------------------------------------------


def prefetch_rows(pairs: Sequence[Pair], settings: CompileSettings) -> None:
    """Rows that OpenCompass's own loader gives, for every dataset of ``pairs`` that needs
    them, loaded in one OpenCompass process before the pairs run (each pair then reads the
    cache; without this, a first run starts one process per dataset). Does nothing with
    ``no_rows``; a dataset that fails here reports its error when its pair loads it."""
    if settings.no_rows:
        return
    from ..data.opencompass.bridge import prefetch
    from ..data.sources import bridge_calls

    datasets = {p.dataset.abbr: p.dataset for p in pairs}
    prefetch(bridge_calls(list(datasets.values()), settings.data_dir),
             settings.opencompass_python)


def pair_job(pair: Pair, settings: CompileSettings, compiler: Compiler, *, lean: bool,
             rows: range | None = None, on_rows: Callable[[int], None] | None = None
             ) -> tuple[Job, str, dict[str, Any]]:
    """The compile job of one pair, after its warnings (raised with ``strict``; the first
    range of a pair split across processes reads them, the others do not)."""
    compat = compiler.policy.name == "opencompass"
    for note in (*pair.model.notes, *pair.dataset.notes):  # (named at their origin)
        if settings.strict or (compat and note.reference is not None):
            raise note
        warnings.warn(PromptCompilerWarning(str(note)), stacklevel=3)
    dataset = attach_rows(pair.dataset, settings.data_dir, settings.opencompass_python,
                          no_rows=settings.no_rows)
    job, kind, params = compiler.job(dataset.spec, pair.model.model_dict(),
                                     pair.options, lean=lean,
                                     opencompass_root=pair.dataset.opencompass_root)
    eager = isinstance(job.rows.test, (list, tuple))
    # the checks read the first row (streamed rows too); a range after the first skips them
    for problem in (dataset_warnings(job, dataset.spec) if not rows or not rows.start else []):
        problem.key_path = f"{pair.dataset.key_path}.{problem.key_path}"
        problem.located(config_path=pair.dataset.config_path, dataset=pair.dataset.abbr)
        if settings.strict:
            raise at_origin(problem, pair)
        warnings.warn(PromptCompilerWarning(str(at_origin(problem, pair))), stacklevel=3)
    if on_rows is not None and eager:
        on_rows(len(job.rows.test))
    return job, kind, params


def prepare(pair: Pair, settings: CompileSettings, compiler: Compiler | None = None
            ) -> tuple[Job, str, dict[str, Any], PreparedJob | None]:
    """A pair's job without its warnings (rows from a pipe are not read ahead), and, when
    plans build its lines (:func:`prompt_compiler.plan.plannable`, no ``spans``), the job with
    every row's example ids retrieved once.

    Raises:
        PromptCompilerError: The job cannot be built (not located: a whole-pair compile
            raises it again, located).
        NotPeekable: The rows come from a pipe.
    """
    from ..data.sources import peeking
    from ..plan import plannable

    compiler = compiler or settings.compiler()
    with peeking():  # rows from a pipe are left for the worker
        dataset = attach_rows(pair.dataset, settings.data_dir, settings.opencompass_python,
                          no_rows=settings.no_rows)
    job, kind, params = compiler.job(dataset.spec, pair.model.model_dict(),
                                     pair.options, lean=True,
                                     opencompass_root=pair.dataset.opencompass_root)
    if settings.spans or not plannable(job, kind, params):
        return job, kind, params, None
    try:
        retrieved = compiler.retrieve(job)
    except PromptCompilerError:
        return job, kind, params, None  # each range raises it again
    return job, kind, params, PreparedJob(job, kind, params, retrieved)


# -- records and lines ---------------------------------------------------------------------


def pair_records(pair: Pair, settings: CompileSettings, *, compiler: Compiler | None = None,
                 lean: bool = False, rows: range | None = None,
                 on_rows: Callable[[int], None] | None = None) -> Iterator[Record]:
    """Stream the records of one pair; errors name the config file and key path.

    Args:
        lean: Records as written to files (see :meth:`Compiler.iter_records`).
        rows: Only those test rows (a pair split across processes).
        on_rows: Called once with the number of test rows, before the first record.

    Warns:
        PromptCompilerWarning: The dataset has no test rows, or a template placeholder
            names no column (see :func:`dataset_warnings`); errors with ``strict``.
    """
    compiler = compiler or settings.compiler()
    try:
        job, kind, params = pair_job(pair, settings, compiler, lean=lean, rows=rows,
                                     on_rows=on_rows)
        yield from _job_records(compiler, job, kind, params, lean=lean, spans=settings.spans,
                                rows=rows)
    except PromptCompilerError as err:
        raise locate(pair, err) from None


def _job_records(compiler: Compiler, job: Job, kind: str, params: Mapping[str, Any], *,
                 lean: bool, spans: bool, rows: range | None) -> Iterator[Record]:
    """A job's records; with ``spans``, each with its span provenance (the generic path,
    re-rendered with tagged values: :func:`prompt_compiler.assemble.spans.add_spans`)."""
    if not spans:
        yield from compiler.job_records(job, kind, params, lean=lean, rows=rows)
        return
    from ..assemble.spans import add_spans

    run = compiler.run(job, kind, params, rows=rows)
    yield from add_spans(job, kind, params, run.records, run.labels,
                         lambda rec: record_json(rec)["prompt"])


def pair_lines(pair: Pair, settings: CompileSettings, counts: Counts, *,
               rows: range | None = None, progress: Any = None) -> Iterator[bytes]:
    """The record lines of one pair (or of its ``rows``) as written to its file, in blocks
    of whole lines.

    Planned jobs go through :mod:`prompt_compiler.plan.lines` (no Record objects); others through
    :func:`pair_records`. ``counts`` holds the totals once the blocks are consumed;
    ``progress.rows(n)`` and ``progress.row()`` (when present) hear of the rows.
    """
    from ..plan import plannable

    compiler = settings.compiler()
    tick = getattr(progress, "row", None)
    try:
        job, kind, params = pair_job(pair, settings, compiler, lean=True, rows=rows,
                                     on_rows=getattr(progress, "rows", None))
        if not settings.spans and plannable(job, kind, params):
            try:
                prepared = PreparedJob(job, kind, params, compiler.retrieve(job))
                yield from _planned_lines(prepared, rows, counts, tick)
            except PromptCompilerError as err:
                raise err.located(dataset=job.abbr, model=job.model.abbr, row=job.row) from None
            return
        records = _row_ticks(_job_records(compiler, job, kind, params, lean=True,
                                          spans=settings.spans, rows=rows), tick)
        block: list[bytes] = []
        for rec in records:
            obj = record_json(rec)
            if obj.get("over_limit"):
                counts.over_limit += 1
            block.append(record_bytes(obj))
            if len(block) >= BLOCK_RECORDS:
                counts.count += len(block)
                yield b"".join(block)
                block = []
        counts.count += len(block)
        if block:
            yield b"".join(block)
    except PromptCompilerError as err:
        raise locate(pair, err) from None


def _planned_lines(prepared: PreparedJob, rows: range | None, counts: Counts,
                   tick: Callable[[], None] | None = None) -> Iterator[bytes]:
    from ..plan import Lines

    lines = Lines(prepared.job, prepared.kind, prepared.params, prepared.retrieved, rows=rows,
                  tick=tick)
    try:
        yield from lines
    finally:
        counts.count, counts.over_limit = lines.count, lines.over_limit


def range_lines(pair: Pair, prepared: PreparedJob, rows: range | None, counts: Counts
                ) -> Iterator[bytes]:
    """The lines of ``rows`` from a prepared job; errors located as :func:`pair_lines` does."""
    job = prepared.job
    try:
        yield from _planned_lines(prepared, rows, counts)
    except PromptCompilerError as err:
        err.located(dataset=job.abbr, model=job.model.abbr, row=job.row)
        raise locate(pair, err) from None


def compile_range(pair: Pair, settings: CompileSettings, rows: range | None = None,
                  prepared: PreparedJob | None = None) -> tuple[bytes, Counts]:
    """The task an engine runs: the lines of one pair's ``rows`` (``None``: the whole pair)
    as the local engine writes them, and their counts. A module-level function of picklable
    arguments; ``prepared`` (the job, retrieved once) may be left out (the task builds the
    job from the configs)."""
    counts = Counts()
    if prepared is not None:
        blocks = range_lines(pair, prepared, rows, counts)
    else:
        blocks = pair_lines(pair, settings, counts, rows=rows)
    data = b"".join(blocks)
    return data, counts


def _row_ticks(records: Iterator[Record], tick: Callable[[], None] | None) -> Iterator[Record]:
    """Pass records through, calling ``tick()`` each time a test row is done."""
    if tick is None:
        yield from records
        return
    last = None
    for rec in records:
        if last is not None and rec.index != last:
            tick()
        last = rec.index
        yield rec
    if last is not None:
        tick()
