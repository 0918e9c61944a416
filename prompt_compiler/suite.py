"""Suite-level compiling: config files -> dataset x model pairs -> records or files.

This is what the ``compile-prompts`` CLI calls; pipelines can call it directly::

    suite = load(["configs/"])
    for rec in compile(suite):
        send(rec.prompt)

Which datasets meet which models (:func:`load`):

* an *eval config* (a file that defines both datasets and models) pairs its own datasets
  with its own models; several eval configs give the union of their pairs;
* *dataset-only* and *model-only* files pair with each other and with ``--model``; with no
  model-only file and no ``--model``, dataset-only files pair with every model of the eval
  configs (and model-only files, without dataset-only files, with every eval dataset);
* ``--model`` replaces the models of the eval configs; a pair reached twice counts once.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._version import __version__
from .assemble.base import Record
from .compiler import Compiler
from .config import DatasetConfig, ModelConfig, SuiteConfig, load_config, load_configs
from .data.sources import attach_rows
from .emit.blockfile import write_blocks
from .emit.manifest import build_manifest, input_root
from .emit.names import MANIFEST, check_unique, on_disk, output_name
from .emit.outdir import OutputDir
from .emit.records import record_bytes, record_json
from .errors import ConfigError, DataError, OutputError, PromptCompilerError, PromptCompilerWarning

__all__ = ["Pair", "Suite", "compile", "compile_to_dir", "load", "model_from_name"]

Globs = str | Sequence[str]
"""One abbr glob or several (``"gsm8k*"`` or ``["gsm8k*", "math"]``)."""
PathArg = str | os.PathLike[str]


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


@dataclass(frozen=True, slots=True)
class Suite:
    """Loaded configs: the datasets and models to pair up, and the files they came from."""

    configs: tuple[SuiteConfig, ...]
    datasets: tuple[DatasetConfig, ...]
    models: tuple[ModelConfig, ...]
    paths: tuple[str, ...] = ()
    """The files and folders the suite was loaded from."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Compile options for every pair, over the configs' own (e.g. ``{"fewshot": "inline"}``)."""
    groups: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] | None = None
    """Which datasets meet which models: ``(dataset abbrs, model abbrs)`` per eval config,
    then one group for the dataset-only and model-only files (see the module docstring);
    ``None`` (or groups naming datasets or models the suite no longer has, after a
    ``dataclasses.replace``) pairs every dataset with every model."""

    def pairs(self, only: Globs = (), models: Globs = ()) -> list[Pair]:
        """The pairs to compile, in a stable order, each once.

        Args:
            only: Dataset abbr globs; a dataset matching none is left out.
            models: Model abbr globs; a model matching none is left out.
        """
        only, models = _globs(only), _globs(models)
        options: dict[str, dict[str, Any]] = {}
        for cfg in self.configs:
            for d in cfg.datasets:
                options[d.config_path + d.key_path] = dict(cfg.options)
        by_ds = {d.abbr: d for d in self.datasets}
        by_model = {m.abbr: m for m in self.models}
        groups = self.groups
        if groups is None or any(d not in by_ds for g in groups for d in g[0]) or any(
                m not in by_model for g in groups for m in g[1]):
            # no pairing recorded, or datasets/models replaced since load(): every x every
            groups = ((tuple(by_ds), tuple(by_model)),)
        seen: set[tuple[str, str]] = set()
        out = []
        for ds_abbrs, model_abbrs in groups:
            for d_abbr in ds_abbrs:
                if only and not any(fnmatch.fnmatchcase(d_abbr, g) for g in only):
                    continue
                for m_abbr in model_abbrs:
                    if (d_abbr, m_abbr) in seen or (
                            models and not any(fnmatch.fnmatchcase(m_abbr, g) for g in models)):
                        continue
                    seen.add((d_abbr, m_abbr))
                    d = by_ds[d_abbr]
                    out.append(Pair(d, by_model[m_abbr],
                                    {**options.get(d.config_path + d.key_path, {}),
                                     **self.options}))
        for pair in out:  # a model that failed to load stops the run only when selected
            if pair.model.error is not None:
                raise pair.model.error
        return out

    def nothing_to_compile(self, only: Globs = (), models: Globs = ()) -> ConfigError:
        """The error for a selection with no pair (the same with or without --show/--check)."""
        given = ", ".join(self.paths) or "the given paths"
        if not self.datasets:
            why = "no datasets"
        elif not self.models:
            why = "no models (give --model NAME)"
        elif _globs(only) and not self.pairs(only):
            why = f"no dataset matches --only {' '.join(_globs(only))}"
        elif _globs(models):
            why = f"no model matches --models {' '.join(_globs(models))}"
        else:
            why = "no dataset x model pair"
        return ConfigError(f"nothing to compile: {why}", config_path=given)


def _globs(value: Globs) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def model_from_name(name_or_file: str, *,
                    opencompass_configs: PathArg | None = None) -> list[ModelConfig]:
    """Models from a config file, or the meta template library entry of that name."""
    path = Path(name_or_file)
    if path.suffix in (".py", ".yaml", ".yml", ".json") or path.exists():
        try:
            suite = load_config(path, opencompass_configs=opencompass_configs)
        except ConfigError as err:
            if "defines no datasets and no models" not in err.message:
                raise
            return [_model_template_file(path)]
        if not suite.models:
            raise ConfigError("--model: this config defines datasets but no models",
                              config_path=str(path), hint=_MODEL_EXPECTED)
        return list(suite.models)
    from .model.meta_library import load_model_template

    tpl = load_model_template(name_or_file)
    spec = {"name": tpl.name, "parser": tpl.renderer, "meta_template": tpl.meta_template_dict()}
    return [ModelConfig(tpl.name, str(tpl.path), "meta_template", spec)]


_MODEL_EXPECTED = ("--model takes a template name (see 'compile-prompts models'), a model "
                   "template file (name, renderer, meta_template) or a config file with a "
                   "models list")


def _model_template_file(path: Path) -> ModelConfig:
    """``--model FILE`` where FILE defines no models: a model template file (as the built-in
    ones: name, renderer, meta_template) is used as one; anything else is an error saying
    what the file is and what is expected."""
    top: Any = None
    if path.suffix in (".yaml", ".yml", ".json"):
        import yaml  # type: ignore[import-untyped,unused-ignore]

        try:
            top = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            top = None
    if isinstance(top, dict) and "meta_template" in top:
        from .model.meta_library import load_model_template

        tpl = load_model_template(path)
        spec = {"name": tpl.name, "parser": tpl.renderer,
                "meta_template": tpl.meta_template_dict()}
        return ModelConfig(tpl.name, str(path), "meta_template", spec, files=(str(path),))
    if isinstance(top, dict) and ("round" in top or "begin" in top):
        what = "a bare meta template (round/begin/end), not a model"
        hint = ("wrap it in a model template file: name: NAME, renderer: lm | api, "
                "meta_template: {round: [...]}; " + _MODEL_EXPECTED)
    else:
        what = "a file that defines no model"
        hint = _MODEL_EXPECTED
    raise ConfigError(f"--model: this is {what}", config_path=str(path), hint=hint)


def load(paths: PathArg | Sequence[PathArg], *, models: str | Sequence[str] = (),
         opencompass_configs: PathArg | None = None) -> Suite:
    """Load config files and folders (str or Path, one or many) and pair them up.

    Args:
        paths: Config files and folders.
        models: Template names or model config files; they replace the models of the eval
            configs and join the model-only files (see the module docstring).
        opencompass_configs: The folder ``from opencompass.configs.<x> import y`` reads
            (OpenCompass's ``configs/``, holding ``datasets/`` and ``models/``); by default
            ``$PROMPT_COMPILER_OPENCOMPASS_CONFIGS``, else an installed ``opencompass``'s.

    Raises:
        ConfigError: A config is malformed, or two different entries share an abbr.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    try:
        configs = load_configs([Path(p) for p in paths], opencompass_configs=opencompass_configs,
                               defer_model_errors=True)
    except PromptCompilerError as err:
        raise _at_origin(err) from None
    override = [m for name in _globs(models)
                for m in model_from_name(name, opencompass_configs=opencompass_configs)]
    groups: list[tuple[tuple[DatasetConfig, ...], tuple[ModelConfig, ...]]] = []
    free_ds: list[DatasetConfig] = []
    free_models: list[ModelConfig] = []
    for cfg in configs:
        if cfg.datasets and cfg.models:
            groups.append((cfg.datasets, tuple(override) or cfg.models))
        else:
            free_ds += cfg.datasets
            free_models += cfg.models
    free_models += override
    if free_ds or free_models:
        ds = tuple(free_ds) or tuple(d for g in groups for d in g[0])
        ms = tuple(free_models) or tuple(m for g in groups for m in g[1])
        groups.append((ds, ms))
    # A config reached twice (directly and through a suite's read_base()) counts once;
    # two different configs under one name are an error.
    datasets = _unique([d for g in groups for d in g[0]] or
                       [d for c in configs for d in c.datasets], "datasets")
    chosen = _unique([m for g in groups for m in g[1]], "models")
    return Suite(tuple(configs), datasets, chosen, tuple(str(p) for p in paths),
                 groups=tuple((tuple(dict.fromkeys(d.abbr for d in ds)),
                               tuple(dict.fromkeys(m.abbr for m in ms))) for ds, ms in groups))


def _at_origin(err: PromptCompilerError) -> PromptCompilerError:
    """Name the base config that defines a dataset, not only the eval config importing it."""
    if err.dataset and err.config_path and " (imported by " not in err.config_path:
        from .config.bases import defining_file

        origin = defining_file(err.config_path, err.dataset)
        if origin is not None:
            err.config_path = f"{origin} (imported by {err.config_path})"
    return err


def _unique(items: Sequence[Any], kind: str) -> tuple[Any, ...]:
    def body(spec: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in spec.items() if k != "source"}

    seen: dict[str, Any] = {}
    for item in items:
        first = seen.get(item.abbr)
        if first is None:
            seen[item.abbr] = item
        elif body(first.spec) != body(item.spec):
            raise ConfigError(f"two different {kind} are both named {item.abbr!r} (the other is in "
                              f"{first.config_path} at {first.key_path})",
                              config_path=item.config_path, key_path=item.key_path)
    return tuple(seen.values())


def compile_pair(pair: Pair, *, data_dir: PathArg | None = None, mode: str = "default",
                 compiler: Compiler | None = None, lean: bool = False, spans: bool = False,
                 rows: range | None = None, strict: bool = False,
                 on_rows: Callable[[int], None] | None = None) -> Iterator[Record]:
    """Stream the records of one pair; errors name the config file and key path.

    Args:
        lean: Records as written to files (see :meth:`Compiler.iter_records`).
        rows: Only those test rows (a pair split across processes).
        strict: Raise the warnings below as errors.
        on_rows: Called once with the number of test rows, before the first record.

    Warns:
        PromptCompilerWarning: The dataset has no test rows, or a template placeholder
            names no column (see :func:`dataset_warnings`).
    """
    compiler = compiler or Compiler(mode=mode)
    try:
        job, kind, params = _pair_job(pair, data_dir, compiler, lean, rows, strict, on_rows)
        yield from _job_records(compiler, job, kind, params, lean=lean, spans=spans, rows=rows)
    except PromptCompilerError as err:
        raise _pair_located(pair, err) from None


def _job_records(compiler: Compiler, job: Any, kind: str, params: Mapping[str, Any], *,
                 lean: bool, spans: bool, rows: range | None) -> Iterator[Record]:
    """A job's records; with ``spans``, each with its span provenance (the generic path,
    re-rendered with tagged values: :func:`prompt_compiler.inspection.spans.add_spans`)."""
    if not spans:
        yield from compiler.job_records(job, kind, params, lean=lean, rows=rows)
        return
    from .inspection.spans import add_spans

    run = compiler.run(job, kind, params, rows=rows)
    yield from add_spans(job, kind, params, run.records, run.labels,
                         lambda rec: record_json(rec)["prompt"])


def _pair_job(pair: Pair, data_dir: PathArg | None, compiler: Compiler, lean: bool,
              rows: range | None, strict: bool, on_rows: Callable[[int], None] | None
              ) -> tuple[Any, str, dict[str, Any]]:
    """The compile job of one pair, after its warnings (see :func:`compile_pair`)."""
    compat = compiler.policy.name == "opencompass"
    for note in (*pair.model.notes, *pair.dataset.notes):
        if strict or (compat and note.reference is not None):
            raise _at_origin(note)
        warnings.warn(PromptCompilerWarning(str(_at_origin(note))), stacklevel=3)
    dataset = attach_rows(pair.dataset, Path(data_dir) if data_dir is not None else None)
    job, kind, params = compiler.job(dataset.spec, {**pair.model.spec, "abbr": pair.model.abbr},
                                     pair.options, lean=lean)
    eager = isinstance(job.rows.test, (list, tuple))
    # the checks read the first row (streamed rows too); a range after the first skips them
    for problem in (dataset_warnings(job, dataset.spec) if not rows or not rows.start else []):
        problem.key_path = f"{pair.dataset.key_path}.{problem.key_path}"
        problem.located(config_path=pair.dataset.config_path, dataset=pair.dataset.abbr)
        if strict:
            raise _at_origin(problem)
        warnings.warn(PromptCompilerWarning(str(_at_origin(problem))), stacklevel=3)
    if on_rows is not None and eager:
        on_rows(len(job.rows.test))
    return job, kind, params


def _pair_located(pair: Pair, err: PromptCompilerError) -> PromptCompilerError:
    """``err`` located in the pair's config files (dataset and model key paths)."""
    own = pair.dataset.key_path
    if err.key_path and own and not err.key_path.startswith((own, pair.model.key_path)):
        if err.key_path.startswith("model"):
            # the model's own config file and key path
            err.key_path = pair.model.key_path + err.key_path[len("model"):]
            err.located(config_path=pair.model.config_path, model=pair.model.abbr)
        elif not err.key_path.startswith("meta_template"):
            err.key_path = f"{pair.dataset.key_path}.{err.key_path}"
    return _at_origin(err.located(config_path=pair.dataset.config_path,
                                  dataset=pair.dataset.abbr, model=pair.model.abbr))


class _Counts:
    """Lines written for one pair, and how many of them are flagged ``over_limit``."""

    def __init__(self) -> None:
        self.count = 0
        self.over_limit = 0

    def entry(self, pair: Pair, digest: str) -> dict[str, Any]:
        """The manifest's output entry (``over_limit`` only when some prompt is)."""
        out: dict[str, Any] = {"dataset": pair.dataset.abbr, "model": pair.model.abbr,
                               "records": self.count, "sha256": digest}
        if self.over_limit:
            out["over_limit"] = self.over_limit
        return out


def pair_lines(pair: Pair, counts: _Counts, *, data_dir: PathArg | None = None,
               mode: str = "default", spans: bool = False, rows: range | None = None,
               strict: bool = False, progress: Any = None) -> Iterator[bytes]:
    """The record lines of one pair as written to its file, in blocks of whole lines.

    Plannable jobs go through :mod:`.plan.lines` (no Record objects); others through
    :func:`compile_pair`. ``counts`` holds the totals once the blocks are consumed;
    ``progress.rows(n)`` and ``progress.row()`` (when present) hear of the rows.
    """
    from .plan.lines import Lines, plannable

    compiler = Compiler(mode=mode)
    tick = getattr(progress, "row", None)
    try:
        job, kind, params = _pair_job(pair, data_dir, compiler, True, rows, strict,
                                      getattr(progress, "rows", None))
        if not spans and plannable(job, kind, params):
            try:
                retrieved = job.retriever.retrieve(job.rows.train, job.rows.test, job.reader,
                                                   job.policy)
                lines = Lines(job, kind, params, retrieved, rows=rows, tick=tick)
                try:
                    yield from lines
                finally:
                    counts.count, counts.over_limit = lines.count, lines.over_limit
            except PromptCompilerError as err:
                raise err.located(dataset=job.abbr, model=job.model.abbr, row=job.row) from None
            return
        records = _row_ticks(_job_records(compiler, job, kind, params, lean=True, spans=spans,
                                          rows=rows), tick)
        block: list[bytes] = []
        for rec in records:
            obj = record_json(rec)
            if obj.get("over_limit"):
                counts.over_limit += 1
            block.append(record_bytes(obj))
            if len(block) >= 256:
                counts.count += len(block)
                yield b"".join(block)
                block = []
        counts.count += len(block)
        if block:
            yield b"".join(block)
    except PromptCompilerError as err:
        raise _pair_located(pair, err) from None


def dataset_warnings(job: Any, spec: Mapping[str, Any]) -> list[PromptCompilerError]:
    """What a user should hear about a dataset that still compiles.

    A test split with no rows (nothing is compiled), an ``output_column`` no row has
    (every ``gold`` is null), and ``{placeholders}`` naming no column of the rows
    (:func:`prompt_compiler.template.placeholders.unknown_placeholders`: they
    stay in the prompt verbatim). Each is an error object carrying its key path, so a
    caller can print it as a warning or raise it (``--strict``).
    """
    from .template.placeholders import unknown_placeholders

    if not job.rows.test:
        return [DataError("the test split has no rows, so nothing is compiled for this "
                          "dataset", key_path="reader_cfg.test_split")]
    infer = spec.get("infer_cfg") or {}
    test_cols = list(job.rows.test[0])
    train_cols = list(job.rows.train[0]) if job.rows.train else test_cols
    found: list[PromptCompilerError] = []
    for key, cols in (("ice_template", train_cols), ("prompt_template", test_cols)):
        for hit in unknown_placeholders(infer.get(key), cols, f"infer_cfg.{key}"):
            found.append(ConfigError(hit.message, key_path=hit.key_path))
    output = (spec.get("reader_cfg") or {}).get("output_column")
    if isinstance(output, str) and output and output not in test_cols:
        import difflib

        close = difflib.get_close_matches(output, [str(c) for c in test_cols], n=1, cutoff=0.6)
        mean = f" (did you mean {close[0]!r}?)" if close else ""
        found.append(DataError(f"output_column {output!r} names no column of the rows{mean}, so "
                               "every record's gold is null", key_path="reader_cfg.output_column"))
    return found


def compile(suite: Suite, *, data_dir: PathArg | None = None, mode: str = "default",
            only: Globs = (), models: Globs = (), limit: int | None = None,
            strict: bool = False, spans: bool = False, fewshot: str | None = None,
            tokenize: bool = False) -> Iterator[Record]:
    """Every record of every pair, in a stable order (``record.prompt`` is the model input).

    Args:
        data_dir: Rows at ``DIR/<abbr>/<split>.jsonl`` or ``DIR/<abbr>.jsonl`` (``--data-dir``).
        mode: ``"default"`` or ``"opencompass"`` (``--mode compat``).
        only: Dataset abbr globs (one str or several; ``--only``).
        models: Model abbr globs (``--models``).
        limit: Compile only the first ``limit`` test rows of each dataset (``--limit``).
        strict: Warnings (an empty test split, an unknown placeholder) are errors (``--strict``).
        spans: Set each record's :attr:`Record.spans` (``--spans``).
        fewshot: ``"multiturn"`` or ``"inline"`` for every dataset (``--fewshot``).
        tokenize: Every record gets ``input_ids`` (each model needs its ``tokenizer``; see
            :func:`tokenized`; ``--tokenize``).
    """
    compiler = Compiler(mode=mode)
    if tokenize:
        suite = tokenized(suite)
    for pair in with_options(suite, limit=limit, fewshot=fewshot).pairs(only, models):
        yield from compile_pair(pair, data_dir=data_dir, mode=mode, compiler=compiler,
                                strict=strict, spans=spans)


def with_options(suite: Suite, *, limit: int | None = None, fewshot: str | None = None) -> Suite:
    """``suite`` with ``--limit`` and ``--fewshot`` set for every pair (``None``: unchanged)."""
    options = dict(suite.options)
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ConfigError(f"limit must be a non-negative integer, got {limit!r}")
        options["limit"] = limit
    if fewshot is not None:
        options["fewshot"] = fewshot
    if options == suite.options:
        return suite
    from dataclasses import replace

    return replace(suite, options=options)


def tokenized(suite: Suite) -> Suite:
    """The suite with ``tokenize: true`` on every model (``--tokenize``).

    Raises:
        ConfigError: A model has no ``tokenizer`` (its file and key path named).
    """
    from dataclasses import replace

    models = []
    for m in suite.models:
        if m.spec.get("tokenizer") is None:
            raise ConfigError(
                f"--tokenize needs every model's tokenizer, and model {m.abbr!r} has none: set "
                f"{m.key_path}.tokenizer to a tokenizer.json, its folder or its "
                "tokenizer_config.json", config_path=m.config_path,
                key_path=f"{m.key_path}.tokenizer", model=m.abbr,
                hint="or leave that model out with --models")
        models.append(replace(m, spec={**m.spec, "tokenize": True}))
    return replace(suite, models=tuple(models))


def _limited(suite: Suite, limit: int | None) -> Suite:
    return with_options(suite, limit=limit)


def _compile_one(args: tuple[Pair, Path | None, str, Path, str, bool, range | None, str, bool]
                 ) -> tuple[int, str, int]:
    """Worker: compile one pair (or a range of its test rows) into the parent's staging folder."""
    pair, data_dir, mode, staging, shown, spans, rows, rel, strict = args
    counts = _Counts()
    blocks = pair_lines(pair, counts, data_dir=data_dir, mode=mode, spans=spans, rows=rows,
                        strict=strict)
    digest = write_blocks(staging / on_disk(rel), blocks, shown=f"{shown}/{pair.out_name}")
    return counts.count, digest, counts.over_limit


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A split pair's job, built and retrieved once by the parent; forked workers inherit it."""

    job: Any
    kind: str
    params: dict[str, Any]
    retrieved: Sequence[Sequence[int]]


_PREPARED: dict[int, _Prepared] = {}
"""Prepared jobs by pair number, for the duration of one :func:`_parallel`."""


def _compile_range(args: tuple[int, tuple[Any, ...]]) -> tuple[int, str, int]:
    """Worker: one row range of a split pair, from the job the parent prepared before the
    pool forked (or, in a process that did not inherit it, from the configs again)."""
    key, one = args
    prepared = _PREPARED.get(key)
    if prepared is None:
        return _compile_one(one)
    pair, _, _, staging, shown, _, rows, rel, _ = one
    counts = _Counts()
    write_blocks(staging / on_disk(rel), _prepared_lines(pair, prepared, rows, counts),
                 shown=f"{shown}/{pair.out_name}", digest=False)
    return counts.count, "", counts.over_limit


def _prepared_lines(pair: Pair, prepared: _Prepared, rows: range | None, counts: _Counts
                    ) -> Iterator[bytes]:
    """The lines of ``rows`` from a prepared job; errors located as :func:`pair_lines` does."""
    from .plan.lines import Lines

    job = prepared.job
    lines = Lines(job, prepared.kind, prepared.params, prepared.retrieved, rows=rows)
    try:
        yield from lines
    except PromptCompilerError as err:
        err.located(dataset=job.abbr, model=job.model.abbr, row=job.row)
        raise _pair_located(pair, err) from None
    finally:
        counts.count, counts.over_limit = lines.count, lines.over_limit


SPLIT_ROWS = 2_000
"""A gen or ppl pair with at least twice this many test rows is split into row ranges."""
PARENT_SHARE = 0.5
"""The parent's range of a split pair, relative to a worker's: it also hashes the whole file
(measured on the benchmark's jobs: hashing costs about a third of building the lines)."""


def _row_ranges(pair: Pair, data_dir: Path | None, mode: str, jobs: int, spans: bool = False
                ) -> tuple[list[range | None], _Prepared | None]:
    """How a pair's test rows are shared among ``jobs`` processes (``[None]``: one does all),
    and the job, prepared once, when the ranges can be built from plans.

    The first range is the parent's; ranges are cut by bytes of the test file where the
    rows stream from one (rows differ in length), else by rows."""
    from .data.sources import NotPeekable, peeking
    from .plan.lines import plannable

    try:
        with peeking():  # rows from a pipe are left for the worker
            dataset = attach_rows(pair.dataset, data_dir)
        job, kind, params = Compiler(mode=mode).job(
            dataset.spec, {**pair.model.spec, "abbr": pair.model.abbr}, pair.options, lean=True)
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
    prepared = None
    if not spans and plannable(job, kind, params):
        try:
            retrieved = job.retriever.retrieve(job.rows.train, job.rows.test, job.reader,
                                               job.policy)
        except PromptCompilerError:
            return ranges, None  # each range raises it again
        prepared = _Prepared(job, kind, params, retrieved)
    return ranges, prepared


def _byte_bounds(rows: Sequence[Any], cuts: Sequence[float]) -> list[int] | None:
    """Row bounds at those fractions of the rows' bytes in their JSON Lines file, or None."""
    from bisect import bisect_left

    from .data.reader import RowView
    from .data.sources import JsonlRows

    if not isinstance(rows, RowView) or not isinstance(rows.source, JsonlRows):
        return None
    positions = rows.positions
    if not isinstance(positions, range) or positions.step != 1 or not positions:
        return None
    starts = rows.source._starts
    lo, hi = positions.start, positions.stop
    first = starts[lo]
    size = rows.source._ends[hi - 1] - first
    return [bisect_left(starts, first + size * c, lo, hi) - lo if 0 < c < 1 else
            (0 if c <= 0 else hi - lo) for c in cuts]


def compile_to_dir(suite: Suite, out: PathArg | None, *, data_dir: PathArg | None = None,
                   mode: str = "default", only: Globs = (), jobs: int = 1,
                   progress: Any = None, replace_foreign: bool = False, spans: bool = False,
                   models: Globs = (), limit: int | None = None, strict: bool = False,
                   arguments: Mapping[str, Any] | None = None, tokenize: bool = False,
                   fewshot: str | None = None, format: str = "records",
                   batch_lines: int | None = None, batch_bytes: int | None = None,
                   engine: str = "local", ray_address: str | None = None) -> dict[str, Any]:
    """Compile every pair into ``out`` as one unit and return the manifest.

    ``format``: ``records`` (the JSONL records), or engine-ready files in their place:
    ``vllm``, ``openai-batch`` (files of at most ``batch_lines`` lines and ``batch_bytes``
    bytes, by default the Batch API's 50,000 and 200 MB) or ``parquet``
    (:mod:`prompt_compiler.emit.formats`). With ``out=None`` only the records are compiled
    and checked.

    ``out`` is replaced as a whole (see :mod:`prompt_compiler.emit.outdir`): afterwards it
    holds exactly the files the manifest lists, or, if anything fails, what it held
    before. A non-empty folder this tool did not write is refused unless
    ``replace_foreign``. With ``out=None`` everything is compiled and checked, and
    nothing is written.

    ``progress``: called as ``progress(i, total, pair)`` before each pair; if it also has a
    ``rows(n)`` and a ``row()`` method, they are told each pair's test rows and each
    finished row (sequential runs). ``arguments``: the CLI arguments that shape the
    output, recorded in the manifest. ``engine="ray"``: the pairs and row ranges run as Ray
    tasks (:mod:`prompt_compiler.ray_engine`) on the cluster at ``ray_address``, or on a
    local instance of ``jobs`` CPUs; the output is the same.
    """
    from .emit.formats import check_format, convert_outputs

    format = check_format(format)
    if format == "parquet":
        from .emit.formats import _pyarrow

        _pyarrow()  # a missing extra fails before anything is compiled
    out = Path(out) if out is not None else None
    data_dir = Path(data_dir) if data_dir is not None else None
    suite = with_options(tokenized(suite) if tokenize else suite, limit=limit, fewshot=fewshot)
    pairs = suite.pairs(only, models)
    if not pairs:
        raise suite.nothing_to_compile(only, models)
    _check_names(pairs)
    outputs: dict[str, dict[str, Any]] = {}
    writer = None
    if out is not None:
        _check_not_inside(out, _every_input(suite, data_dir))
        writer = OutputDir(out, replace_foreign=replace_foreign).open()
    try:
        if engine == "ray" and writer is not None:
            from .ray_engine import compile_pairs, ray_session

            with ray_session(ray_address, jobs):
                compile_pairs(pairs, writer, outputs, data_dir, mode, progress, spans, strict)
        elif jobs > 1 and writer is not None:
            _parallel(pairs, writer, outputs, data_dir, mode, jobs, progress, spans, strict)
        else:
            for i, pair in enumerate(pairs):
                if progress:
                    progress(i, len(pairs), pair)
                counts = _Counts()
                blocks = pair_lines(pair, counts, data_dir=data_dir, mode=mode, spans=spans,
                                    strict=strict, progress=progress)
                if writer is None:
                    digest = _hash(blocks)
                else:
                    digest = writer.write_blocks(pair.out_name, blocks)
                outputs[pair.out_name] = counts.entry(pair, digest)
        if format != "records" and writer is not None:
            limits = {k: v for k, v in (("batch_lines", batch_lines),
                                        ("batch_bytes", batch_bytes)) if v is not None}
            outputs = convert_outputs(writer, outputs, {p.out_name: p for p in pairs}, format,
                                      **limits)
        from .model.spec import manifest_models

        manifest = build_manifest(version=__version__, mode=mode, root=input_root(suite.paths),
                                  inputs=input_files(suite, pairs, data_dir), outputs=outputs,
                                  arguments=arguments, models=manifest_models(
                                      {p.model.abbr: p.model for p in pairs}.values(), mode))
        if writer is not None:
            writer.write_json(MANIFEST, manifest)
            writer.commit()
        return manifest
    except BaseException:
        if writer is not None:
            writer.abort()
        raise


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


def input_files(suite: Suite, pairs: Sequence[Pair], data_dir: Path | None) -> list[Path]:
    """Every file that shaped the output: the configs given or found, the configs they
    pull in (``read_base()``/``_base_``), the data files, and model/chat template files."""
    from .config.bases import base_files
    from .data.sources import row_files

    files: dict[Path, None] = {}
    for cfg in suite.configs:
        files[cfg.path] = None
        if cfg.path.suffix == ".py":
            files.update(dict.fromkeys(base_files(cfg.path, cfg.opencompass_root)))
    datasets = {p.dataset.abbr: p.dataset for p in pairs}
    for dataset in datasets.values():
        files.update(dict.fromkeys(row_files(dataset, data_dir)))
    for model in {p.model.abbr: p.model for p in pairs}.values():
        files.update(dict.fromkeys(Path(f) for f in model.files))
    return list(files)


def _every_input(suite: Suite, data_dir: Path | None) -> list[str | os.PathLike[str]]:
    """What replacing OUT must not delete: the paths given, ``--data-dir`` and the input
    files of every dataset and model of the suite (not only the pairs compiled now)."""
    from .config.bases import base_files
    from .data.sources import row_files

    found: list[str | os.PathLike[str]] = [*suite.paths, *([data_dir] if data_dir else [])]
    for cfg in suite.configs:
        found.append(cfg.path)
        if cfg.path.suffix == ".py":
            found += base_files(cfg.path)
    for dataset in suite.datasets:
        found += row_files(dataset, data_dir)
        for key in ("path", "data_files"):  # a folder or file named but not (yet) found too
            value = dataset.spec.get(key)
            if isinstance(value, str) and value:
                found.append(Path(dataset.config_path).parent / value)
    for where in [d.config_path for d in suite.datasets] + [m.config_path for m in suite.models]:
        if isinstance(where, str) and where and os.path.isfile(where):  # e.g. a --model FILE
            found.append(where)
            if where.endswith(".py"):
                found += base_files(where)
    for model in suite.models:
        found += model.files
        for key in ("tokenizer", "chat_template"):
            value = model.spec.get(key)
            if isinstance(value, str) and value and os.path.exists(value):
                found.append(value)
    return found


def _check_names(pairs: Sequence[Pair]) -> None:
    """Two abbrs may not share an output file (:func:`outnames.check_unique`)."""
    check_unique({p.model.abbr: p.model.config_path for p in pairs},
                  {p.dataset.abbr: p.dataset.config_path for p in pairs})


def _check_not_inside(out: Path, inputs: Sequence[str | os.PathLike[str]]) -> None:
    """Replacing OUT must never delete an input (e.g. ``-o .`` or ``-o configs``)."""
    target = os.path.realpath(out)
    for item in inputs:
        real = os.path.realpath(item)
        if real == target or real.startswith(target.rstrip(os.sep) + os.sep):
            raise OutputError(f"the output folder {out} holds the input {item}, and would be "
                              "replaced as a whole", hint="write the output to another folder")


def _hash(blocks: Iterator[bytes]) -> str:
    h = hashlib.sha256()
    for block in blocks:
        h.update(block)
    return h.hexdigest()


def _parallel(pairs: list[Pair], writer: OutputDir, outputs: dict[str, dict[str, Any]],
              data_dir: Path | None, mode: str, jobs: int, progress: Any,
              spans: bool = False, strict: bool = False) -> None:
    """Compile pairs in ``jobs`` processes; a large pair's row ranges go to several of them
    and their parts are joined in order, so every file is byte-identical to ``--jobs 1``.

    The parent builds a split pair's job once (the forked workers inherit it) and compiles
    its first range itself, straight into the pair's file; the workers' parts are appended."""
    from concurrent.futures import ProcessPoolExecutor

    from .interrupts import deferred
    from .workers import Watch, init_worker, labelled, result, stop_workers

    staging = writer.staging
    split = [_row_ranges(pair, data_dir, mode, jobs, spans) for pair in pairs]
    for key, (_, prepared) in enumerate(split):
        if prepared is not None:
            _PREPARED[key] = prepared
    pool_tasks = sum(len(ranges) - (len(ranges) > 1) for ranges, _ in split)
    workers = max(1, min(jobs if len(pairs) > 1 else jobs - 1, pool_tasks))
    tasks: list[list[tuple[str, Any]]] = []
    try:
        with ProcessPoolExecutor(max_workers=workers, initializer=init_worker,
                                 initargs=(os.getpid(),)) as pool:
            watch = Watch(pool, str(staging))
            try:
                with deferred():  # forks, and the pool's locks: no stop signal in between
                    for key, (pair, (ranges, _)) in enumerate(zip(pairs, split, strict=True)):
                        label = f"dataset {pair.dataset.abbr!r} x model {pair.model.abbr!r}"
                        if len(ranges) == 1:
                            one = (pair, data_dir, mode, staging, writer.shown, spans, None,
                                   pair.out_name, strict)
                            tasks.append([(pair.out_name, pool.submit(
                                labelled, str(staging), label, _compile_one, one))])
                            continue
                        named = [(f"{pair.out_name}.part{k}", rows)
                                 for k, rows in enumerate(ranges)]
                        tasks.append([(rel, pool.submit(labelled, str(staging), label + (
                            f" (rows {rows.start}-{rows.stop - 1})" if rows else ""),
                            _compile_range, (key, (pair, data_dir, mode, staging, writer.shown,
                                                   spans, rows, rel, strict))))
                            for rel, rows in named[1:]])
                    watch.start()
                for key, (pair, parts) in enumerate(zip(pairs, tasks, strict=True)):
                    if progress:
                        progress(key, len(pairs), pair)
                    ranges = split[key][0]
                    if len(ranges) == 1:
                        count, digest, over = result(parts[0][1], watch)
                    else:
                        count, digest, over = _join(pair, key, ranges[0], parts, data_dir,
                                                     mode, staging, writer.shown, spans, strict,
                                                     lambda fut: result(fut, watch))
                    writer.adopt(pair.out_name)
                    counts = _Counts()
                    counts.count, counts.over_limit = count, over
                    outputs[pair.out_name] = counts.entry(pair, digest)
            except BaseException:
                stop_workers(pool, [fut for parts in tasks for _, fut in parts])
                raise
    finally:
        _PREPARED.clear()


def _join(pair: Pair, key: int, first: range | None, parts: list[tuple[str, Any]],
          data_dir: Path | None, mode: str, staging: Path, shown: str, spans: bool,
          strict: bool, wait: Callable[[Any], Any]) -> tuple[int, str, int]:
    """A split pair's file: its first range compiled here, then the workers' parts appended
    in order (deleted once appended); (lines, sha256, lines over the limit)."""
    counts = _Counts()
    prepared = _PREPARED.get(key)
    if prepared is not None:
        blocks = _prepared_lines(pair, prepared, first, counts)
    else:
        blocks = pair_lines(pair, counts, data_dir=data_dir, mode=mode, spans=spans,
                            rows=first, strict=strict)
    totals = [0, 0]  # lines, lines over the limit

    def appended() -> Iterator[Path]:
        totals[:] = [counts.count, counts.over_limit]  # the first range is written by now
        for rel, fut in parts:
            n, _, n_over = wait(fut)  # the first failing range raises
            totals[0] += n
            totals[1] += n_over
            yield staging / on_disk(rel)

    digest = write_blocks(staging / on_disk(pair.out_name), blocks,
                          shown=f"{shown}/{pair.out_name}", parts=appended())
    return totals[0], digest, totals[1]
