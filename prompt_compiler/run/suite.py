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
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..assemble.base import Record
from ..config import DatasetConfig, ModelConfig, SuiteConfig, load_config, load_configs
from ..emit.manifest import build_manifest, input_root
from ..emit.names import MANIFEST, check_unique
from ..emit.outdir import OutputDir
from ..errors import ConfigError, OutputError
from .pairs import Pair, pair_records, prefetch_rows
from .settings import CompileSettings

__all__ = ["CompileSettings", "Pair", "Suite", "apply_settings", "compile", "compile_to_dir",
           "load", "model_from_name", "tokenized", "with_options", "with_tokenizer"]

Globs = str | Sequence[str]
"""One abbr glob or several (``"gsm8k*"`` or ``["gsm8k*", "math"]``)."""
PathArg = str | os.PathLike[str]


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
    variants: Mapping[tuple[str, str], DatasetConfig] = field(default_factory=dict)
    """``(dataset abbr, model abbr)`` -> the dataset that pair compiles when it is not the one
    of :attr:`datasets` of that abbr (OpenCompass's ``model_dataset_combinations`` may give
    each model its own copy of a dataset, e.g. with its own tokenizer)."""

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
                    d = self.variants.get((d_abbr, m_abbr)) or by_ds[d_abbr]
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
    from ..model.meta_library import load_model_template

    tpl = load_model_template(name_or_file)
    return [ModelConfig(tpl.name, str(tpl.path), "meta_template", tpl.model_spec())]


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
        from ..model.meta_library import load_model_template

        tpl = load_model_template(path)
        return ModelConfig(tpl.name, str(path), "meta_template", tpl.model_spec(),
                           files=(str(path),))
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
    configs = load_configs([Path(p) for p in paths], opencompass_configs=opencompass_configs,
                           defer_model_errors=True)  # (errors named where entries are defined)
    override = [m for name in _globs(models)
                for m in model_from_name(name, opencompass_configs=opencompass_configs)]
    groups: list[tuple[tuple[DatasetConfig, ...], tuple[ModelConfig, ...]]] = []
    free_ds: list[DatasetConfig] = []
    free_models: list[ModelConfig] = []
    for cfg in configs:
        if cfg.combinations:  # OpenCompass's model_dataset_combinations: only these pairs
            groups += [(ds, tuple(override) or ms) for ds, ms in cfg.combinations]
        elif cfg.datasets and cfg.models:
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
    # two different configs under one name are an error, unless no model meets both (as
    # OpenCompass writes <model>/<dataset abbr>, such datasets never share a file).
    chosen = _unique([m for g in groups for m in g[1]], "models")
    if groups:
        datasets, variants = _datasets_of(groups)
    else:
        datasets, variants = _unique([d for c in configs for d in c.datasets], "datasets"), {}
    return Suite(tuple(configs), datasets, chosen, tuple(str(p) for p in paths),
                 groups=tuple((tuple(dict.fromkeys(d.abbr for d in ds)),
                               tuple(dict.fromkeys(m.abbr for m in ms))) for ds, ms in groups),
                 variants=variants)


def _datasets_of(groups: Sequence[tuple[Sequence[DatasetConfig], Sequence[ModelConfig]]]
                 ) -> tuple[tuple[DatasetConfig, ...], dict[tuple[str, str], DatasetConfig]]:
    """The suite's datasets (the first of each abbr) and, per (dataset abbr, model abbr)
    pair, a different dataset of the same abbr that pair takes instead.

    Raises:
        ConfigError: One pair meets two different datasets of one abbr (OpenCompass would
            write both to the same predictions file).
    """
    first: dict[str, DatasetConfig] = {}
    taken: dict[tuple[str, str], DatasetConfig] = {}
    variants: dict[tuple[str, str], DatasetConfig] = {}
    for ds, ms in groups:
        for d in ds:
            head = first.setdefault(d.abbr, d)
            for m in ms:
                key = (d.abbr, m.abbr)
                before = taken.setdefault(key, d)
                if _body(before.spec) != _body(d.spec):
                    raise ConfigError(
                        f"two different datasets are both named {d.abbr!r} for model "
                        f"{m.abbr!r} (the other is in {before.config_path} at "
                        f"{before.key_path}): OpenCompass writes both to the one "
                        f"predictions file {m.abbr}/{d.abbr}.json, so one of them is lost",
                        config_path=d.config_path, key_path=d.key_path,
                        hint="give one of them another abbr")
                if _body(head.spec) != _body(d.spec):
                    variants[key] = d
    return tuple(first.values()), variants


def _body(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in spec.items() if k != "source"}


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


def compile(suite: Suite, settings: CompileSettings | None = None,
            **options: Any) -> Iterator[Record]:
    """Every record of every pair, in a stable order (``record.prompt`` is the model input).

    Args:
        settings: The run's settings; or give its fields as keyword ``options`` instead:
            ``data_dir`` (rows at ``DIR/<abbr>/<split>.jsonl`` or ``DIR/<abbr>.jsonl``),
            ``mode`` (``"default"`` or ``"opencompass"``), ``only`` / ``models`` (dataset /
            model abbr globs, one str or several), ``limit`` (the first N test rows of each
            dataset), ``strict`` (warnings are errors), ``spans`` (each record's
            :attr:`Record.spans`), ``fewshot`` (``"multiturn"`` or ``"inline"``),
            ``tokenize`` (``input_ids``; each model needs its ``tokenizer``: :func:`tokenized`),
            ``opencompass_python`` (the interpreter that runs OpenCompass's own loader for a
            class with no native reader; docs/opencompass-users.md).
    """
    settings = CompileSettings.of(settings, options)
    compiler = settings.compiler()
    pairs = apply_settings(suite, settings).pairs(settings.only, settings.models)
    prefetch_rows(pairs, settings)
    for pair in pairs:
        yield from pair_records(pair, settings, compiler=compiler)


def apply_settings(suite: Suite, settings: CompileSettings) -> Suite:
    """``suite`` with the settings that shape its pairs: ``--tokenize`` on its models,
    ``--limit`` and ``--fewshot`` in their options (:func:`compile` and
    :func:`compile_to_dir` apply them; a caller that lists the pairs first applies them
    itself)."""
    if settings.mode == "opencompass":
        suite = _compat_models(suite)
    if settings.tokenizer is not None:
        suite = with_tokenizer(suite, settings.tokenizer)
    if settings.tokenize:
        suite = tokenized(suite)
    return with_options(suite, limit=settings.limit, fewshot=settings.fewshot)


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
        if getattr(m, "error", None) is not None:  # its own error is reported when compiled
            models.append(m)
            continue
        if m.spec.get("tokenizer") is None:
            raise _no_tokenizer(m)
        models.append(replace(m, spec={**m.spec, "tokenize": True}))
    return replace(suite, models=tuple(models))


def _compat_models(suite: Suite) -> Suite:
    """Compat mode: a model OpenCompass loads although the default mode refuses it
    (``abbr=''``) takes the place of its error (the error's ``compat_model``)."""
    from dataclasses import replace

    found: dict[str, ModelConfig] = {}
    for m in suite.models:
        compat = getattr(getattr(m, "error", None), "compat_model", None)
        if isinstance(compat, ModelConfig):
            found[m.abbr] = compat
    if not found:
        return suite
    groups = None if suite.groups is None else tuple(
        (ds, tuple(found[m].abbr if m in found else m for m in ms)) for ds, ms in suite.groups)
    return replace(suite, models=tuple(found.get(m.abbr, m) for m in suite.models),
                   groups=groups)


def _no_tokenizer(m: ModelConfig) -> ConfigError:
    """``--tokenize`` and a model without a tokenizer: where its class's ``tokenizer_path`` /
    ``path`` was looked for, or which key (or flag) gives one."""
    from ..model.hub import FETCH_HINT, missing_tokenizer

    head = f"--tokenize needs every model's tokenizer, and model {m.abbr!r} has none"
    missing = missing_tokenizer(m.spec)
    if missing is not None:
        return ConfigError(f"{head}: {missing[1]}", config_path=m.config_path,
                           key_path=f"{m.key_path}.{missing[0]}", model=m.abbr,
                           hint=FETCH_HINT)
    if m.key_path == "meta_template":  # a model template (--model NAME): no key to set
        return ConfigError(f"{head} (a model template names no tokenizer)",
                           config_path=m.config_path, model=m.abbr,
                           hint="give --tokenizer PATH (a tokenizer.json, its folder or its "
                                "tokenizer_config.json)")
    return ConfigError(
        f"{head}: set {m.key_path}.tokenizer to a tokenizer.json, its folder or its "
        "tokenizer_config.json", config_path=m.config_path,
        key_path=f"{m.key_path}.tokenizer", model=m.abbr,
        hint="or leave that model out with --models")


def with_tokenizer(suite: Suite, tokenizer: str) -> Suite:
    """The suite with ``tokenizer`` on every model (``--tokenizer`` for the models given by
    ``--model``): a path relative to the working directory, or a counter or tiktoken name.

    Raises:
        ConfigError: A model does not take it (e.g. an API model and ``--tokenize``).
    """
    from dataclasses import replace

    from ..config.normalize import check_model_tokenizer

    models = []
    for m in suite.models:
        if getattr(m, "error", None) is not None:
            models.append(m)
            continue
        spec, files = check_model_tokenizer(m, tokenizer)
        models.append(replace(m, spec=spec, files=files))
    return replace(suite, models=tuple(models))


def compile_to_dir(suite: Suite, out: PathArg | None, settings: CompileSettings | None = None,
                   *, progress: Any = None, arguments: Mapping[str, Any] | None = None,
                   **options: Any) -> dict[str, Any]:
    """Compile every pair into ``out`` as one unit and return the manifest.

    ``settings`` carries every option of the run (:class:`CompileSettings`; or give its
    fields as keyword ``options`` instead). Its ``format``: ``records`` (the JSONL records),
    or engine-ready files in their place: ``vllm``, ``openai-batch`` (files of at most
    ``batch_lines`` lines and ``batch_bytes`` bytes, by default the Batch API's 50,000 and
    200 MB) or ``parquet`` (:mod:`prompt_compiler.emit.formats`). Its ``engine``: where the
    pairs are compiled (:mod:`prompt_compiler.run.engines`; ``ray``: on the cluster at
    ``ray_address``, or on a local instance of ``jobs`` CPUs); the output is the same. Its
    ``shard_rows``: each pair's records as ``<model>/<dataset>/part-NNNNN`` files of at most
    that many records (:mod:`prompt_compiler.emit.shards`), written by the processes or Ray
    workers that compile them; this process writes only the manifest.

    ``out`` is replaced as a whole (see :mod:`prompt_compiler.emit.outdir`): afterwards it
    holds exactly the files the manifest lists, or, if anything fails, what it held
    before. A non-empty folder this tool did not write is refused unless
    ``replace_foreign``. With ``out=None`` everything is compiled and checked, and
    nothing is written.

    ``progress``: called as ``progress(i, total, pair)`` before each pair; if it also has a
    ``rows(n)`` and a ``row()`` method, they are told each pair's test rows and each
    finished row (sequential runs). ``arguments``: the CLI arguments that shape the
    output, recorded in the manifest.

    ``no_rows`` (with ``out=None`` only): every pair checked on stand-in rows made from its
    ``reader_cfg`` where rows would be read (:mod:`prompt_compiler.data.standin`).
    """
    from dataclasses import replace

    from ..emit.formats import OUTPUT_FORMATS, convert_outputs
    from ..emit.shards import check_shard_rows, plan_for
    from .engines import engine_for

    settings = CompileSettings.of(settings, options)
    if settings.no_rows and out is not None:
        raise ConfigError("stand-in rows (--no-rows) are for checking: nothing is written",
                          hint="use --check --no-rows")
    output_format = OUTPUT_FORMATS.get(settings.format)
    output_format.check_available()  # e.g. a missing extra, before anything is compiled
    fmt = output_format.name
    from ..storage import object_uri

    remote = object_uri(out)
    if remote is not None and settings.shard_rows is None:
        raise ConfigError(f"-o {remote}: an output on object storage is sharded; give "
                          "--shard-rows N (records per shard)", hint="e.g. --shard-rows 100000")
    out = Path(out) if out is not None and remote is None else None
    settings = replace(settings, format=fmt, shard_rows=check_shard_rows(settings.shard_rows))
    data_dir = settings.data_dir
    suite = apply_settings(suite, settings)
    pairs = suite.pairs(settings.only, settings.models)
    if not pairs:
        raise suite.nothing_to_compile(settings.only, settings.models)
    _check_names(pairs)
    prefetch_rows(pairs, settings)
    outputs: dict[str, dict[str, Any]] = {}
    writer: Any = None
    if remote is not None:
        from ..emit.objstore import ObjectOutput

        _check_not_under(remote, suite, data_dir)
        writer = ObjectOutput(remote, replace_foreign=settings.replace_foreign).open()
    elif out is not None:
        _check_not_inside(out, _every_input(suite, data_dir))
        writer = OutputDir(out, replace_foreign=settings.replace_foreign).open()
    limits = {k: v for k, v in (("batch_lines", settings.batch_lines),
                                ("batch_bytes", settings.batch_bytes)) if v is not None}
    digests: dict[str, str] = {}  # inputs hashed by the workers that read them
    try:
        shards = None
        if settings.shard_rows and writer is not None:
            shards = {p.out_name: plan_for(p, settings.shard_rows, fmt, **limits) for p in pairs}
        engine_for(settings, writing=writer is not None).run(
            pairs, writer, outputs, settings, shards=shards, progress=progress, digests=digests)
        if not output_format.raw and writer is not None and shards is None:
            outputs = convert_outputs(writer, outputs, {p.out_name: p for p in pairs}, fmt,
                                      **limits)
        from ..model.spec import manifest_models

        manifest = build_manifest(version=__version__, mode=settings.mode,
                                  root=input_root(suite.paths),
                                  inputs=input_files(suite, pairs, data_dir,
                                                     settings.opencompass_python), outputs=outputs,
                                  arguments=arguments, models=manifest_models(
                                      {p.model.abbr: p.model for p in pairs}.values(),
                                      settings.mode),
                                  environment={name: digest for cfg in suite.configs
                                               for name, digest in cfg.environment},
                                  digests=digests)
        if writer is not None:
            writer.write_json(MANIFEST, manifest)
            writer.commit()
        return manifest
    except BaseException:
        if writer is not None:
            writer.abort()
        raise


def input_files(suite: Suite, pairs: Sequence[Pair], data_dir: Path | None,
                opencompass_python: Path | None = None) -> list[Path | str]:
    """Every file that shaped the output: the configs given or found, the configs they
    pull in (``read_base()``/``_base_``), the data files (objects on object storage as their
    ``s3://`` URIs), and model/chat template files."""
    from ..config.bases import base_files
    from ..data.sources import row_files

    files: dict[Path | str, None] = {}
    for cfg in suite.configs:
        files[cfg.path] = None
        if cfg.path.suffix == ".py":
            files.update(dict.fromkeys(base_files(cfg.path, cfg.opencompass_root)))
    datasets = {p.dataset.abbr: p.dataset for p in pairs}
    for dataset in datasets.values():
        files.update(dict.fromkeys(row_files(dataset, data_dir, opencompass_python)))
    for model in {p.model.abbr: p.model for p in pairs}.values():
        files.update(dict.fromkeys(Path(f) for f in model.files))
    return list(files)


def _every_input(suite: Suite, data_dir: Path | None) -> list[str | os.PathLike[str]]:
    """What replacing OUT must not delete: the paths given, ``--data-dir`` and the input
    files of every dataset and model of the suite (not only the pairs compiled now)."""
    from ..config.bases import base_files
    from ..data.sources import row_files

    found: list[str | os.PathLike[str]] = [*suite.paths, *([data_dir] if data_dir else [])]
    root = next((c.opencompass_root for c in suite.configs if c.opencompass_root), None)
    for cfg in suite.configs:
        found.append(cfg.path)
        if cfg.path.suffix == ".py":
            found += base_files(cfg.path, cfg.opencompass_root)
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
                found += base_files(where, root)
    for model in suite.models:
        found += model.files
        for key in ("tokenizer", "chat_template"):
            value = model.spec.get(key)
            if isinstance(value, str) and value and os.path.exists(value):
                found.append(value)
    return found


def _check_names(pairs: Sequence[Pair]) -> None:
    """Two abbrs may not share an output file (:func:`prompt_compiler.emit.names.check_unique`)."""
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


def _check_not_under(uri: str, suite: Suite, data_dir: Path | None) -> None:
    """An output on object storage may not hold an input either (its runs are deleted)."""
    from ..storage import object_uri

    named = [data_dir] + [d.spec.get(k) for d in suite.datasets for k in ("path", "data_files")]
    for value in named:
        values = list(value.values()) if isinstance(value, Mapping) else [value]
        for item in values:
            found = object_uri(item)
            if found is not None and (found == uri or found.startswith(uri + "/")
                                      or uri.startswith(found + "/")):
                raise OutputError(f"the output {uri} holds the input {found}, and its runs are "
                                  "deleted as a whole", hint="write the output to another prefix")
