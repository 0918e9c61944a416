"""Suite-level compiling: config files -> every dataset x model -> records or files.

This is what the ``compile-prompts`` CLI calls; pipelines can call it directly::

    suite = load(["configs/"])
    for rec in compile(suite):
        send(rec.prompt)
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .assemble.base import Record
from .compiler import Compiler
from .config import DatasetConfig, ModelConfig, SuiteConfig, load_config, load_configs
from .data import attach_rows
from .emit import record_bytes, record_json
from .errors import ConfigError, OutputError, PromptCompilerError
from .manifest import build_manifest, input_root
from .outdir import OutputDir, _os, write_jsonl
from .outnames import MANIFEST, check_unique, output_name
from .workers import init_worker, stop_workers

__all__ = ["Pair", "Suite", "compile", "compile_to_dir", "load", "model_from_name"]


@dataclass(frozen=True, slots=True)
class Pair:
    """One dataset compiled for one model."""

    dataset: DatasetConfig
    model: ModelConfig
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def out_name(self) -> str:
        """The record file in OUT (see :mod:`prompt_compiler.outnames`)."""
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

    def pairs(self, only: Sequence[str] = ()) -> list[Pair]:
        """Every dataset x model (datasets filtered by ``only`` abbr globs)."""
        options: dict[str, dict[str, Any]] = {}
        for cfg in self.configs:
            for d in cfg.datasets:
                options[d.config_path + d.key_path] = dict(cfg.options)
        datasets = [d for d in self.datasets
                    if not only or any(fnmatch.fnmatchcase(d.abbr, g) for g in only)]
        return [Pair(d, m, {**options.get(d.config_path + d.key_path, {}), **self.options})
                for d in datasets for m in self.models]


def model_from_name(name_or_file: str) -> list[ModelConfig]:
    """Models from a config file, or the meta template library entry of that name."""
    path = Path(name_or_file)
    if path.suffix in (".py", ".yaml", ".yml", ".json") or path.exists():
        suite = load_config(path)
        if not suite.models:
            raise ConfigError("this config defines no models", config_path=str(path))
        return list(suite.models)
    from .meta_library import load_model_template

    tpl = load_model_template(name_or_file)
    spec = {"name": tpl.name, "parser": tpl.renderer, "meta_template": tpl.meta_template_dict()}
    return [ModelConfig(tpl.name, str(tpl.path), "meta_template", spec)]


def load(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
         *, models: Sequence[str] = ()) -> Suite:
    """Load config files/folders; ``models`` (names or files) replace the configs' models."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    configs = load_configs([Path(p) for p in paths])
    datasets = tuple(d for c in configs for d in c.datasets)
    if models:
        chosen = tuple(m for name in models for m in model_from_name(name))
    else:
        chosen = tuple(m for c in configs for m in c.models)
    # A config reached twice (directly and through a suite's read_base()) counts once;
    # two different configs under one name are an error.
    return Suite(tuple(configs), _unique(datasets, "datasets"), _unique(chosen, "models"),
                 tuple(str(p) for p in paths))


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


def compile_pair(pair: Pair, *, data_dir: Path | None = None, mode: str = "default",
                 compiler: Compiler | None = None, lean: bool = False,
                 spans: bool = False, rows: range | None = None) -> Iterator[Record]:
    """Stream the records of one pair; errors name the config file and key path.

    ``lean``: records as written to files; ``rows``: only those test rows (see
    :meth:`Compiler.iter_records`).
    """
    compiler = compiler or Compiler(mode=mode)
    where = {"config_path": pair.dataset.config_path, "dataset": pair.dataset.abbr,
             "model": pair.model.abbr}
    try:
        dataset = attach_rows(pair.dataset, data_dir)
        records = compiler.iter_records(dataset.spec, {**pair.model.spec, "abbr": pair.model.abbr},
                                        options=pair.options, lean=lean, spans=spans,
                                        rows=rows)
        for rec in records:
            yield rec
    except PromptCompilerError as err:
        if err.key_path and pair.dataset.key_path and not err.key_path.startswith(pair.dataset.key_path):
            if not err.key_path.startswith(("model", "meta_template")):
                err.key_path = f"{pair.dataset.key_path}.{err.key_path}"
        raise err.located(**where)


def compile(suite: Suite, *, data_dir: Path | None = None, mode: str = "default",
            only: Sequence[str] = ()) -> Iterator[Record]:
    """Every record of every dataset x model, in a stable order."""
    compiler = Compiler(mode=mode)
    for pair in suite.pairs(only):
        yield from compile_pair(pair, data_dir=data_dir, mode=mode, compiler=compiler)


class _Tally:
    """Counts the records flagged ``over_limit`` while they stream past."""

    def __init__(self) -> None:
        self.over_limit = 0

    def __call__(self, lines: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for obj in lines:
            if obj.get("over_limit"):
                self.over_limit += 1
            yield obj

    def entry(self, pair: Pair, count: int, digest: str) -> dict[str, Any]:
        """The manifest's output entry (``over_limit`` only when some prompt is)."""
        out: dict[str, Any] = {"dataset": pair.dataset.abbr, "model": pair.model.abbr,
                               "records": count, "sha256": digest}
        if self.over_limit:
            out["over_limit"] = self.over_limit
        return out


def _compile_one(args: tuple[Pair, Path | None, str, Path, str, bool, range | None, str]
                 ) -> tuple[int, str, int]:
    """Worker: compile one pair (or a range of its test rows) into the parent's staging folder."""
    pair, data_dir, mode, staging, shown, spans, rows, rel = args
    tally = _Tally()
    lines = tally(record_json(r) for r in compile_pair(pair, data_dir=data_dir, mode=mode,
                                                       lean=True, spans=spans, rows=rows))
    count, digest = write_jsonl(staging / rel, lines, shown=f"{shown}/{pair.out_name}")
    return count, digest, tally.over_limit


SPLIT_ROWS = 2_000
"""A gen or ppl pair with at least twice this many test rows is split into row ranges."""


def _row_ranges(pair: Pair, data_dir: Path | None, mode: str, jobs: int) -> list[range | None]:
    """How a pair's test rows are shared among ``jobs`` processes (``[None]``: one does all)."""
    from .data import NotPeekable, peeking

    try:
        with peeking():  # rows from a pipe are left for the worker
            dataset = attach_rows(pair.dataset, data_dir)
        job, kind, _ = Compiler(mode=mode).job(
            dataset.spec, {**pair.model.spec, "abbr": pair.model.abbr}, pair.options)
    except (PromptCompilerError, NotPeekable):
        return [None]  # a worker raises it again, located as a whole-pair compile does
    n = len(job.rows.test)
    if kind not in ("gen", "ppl") or n < 2 * SPLIT_ROWS:
        return [None]
    parts = min(jobs, n // SPLIT_ROWS)
    bounds = [n * k // parts for k in range(parts + 1)]
    return [range(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]


def compile_to_dir(suite: Suite, out: Path | None, *, data_dir: Path | None = None,
                   mode: str = "default", only: Sequence[str] = (), jobs: int = 1,
                   progress: Callable[[int, int, Pair], None] | None = None,
                   replace_foreign: bool = False, spans: bool = False) -> dict[str, Any]:
    """Compile every pair into ``out`` as one unit and return the manifest.

    ``out`` is replaced as a whole (see :mod:`prompt_compiler.outdir`): afterwards it
    holds exactly the files the manifest lists, or, if anything fails, what it held
    before. A non-empty folder this tool did not write is refused unless
    ``replace_foreign``. With ``out=None`` everything is compiled and checked, and
    nothing is written.
    """
    pairs = suite.pairs(only)
    if not pairs:
        given = ", ".join(suite.paths) or "the given paths"
        raise ConfigError("nothing to compile: " + ("no dataset matches --only" if only and suite.datasets
                          else "no datasets" if not suite.datasets else "no models (give --model NAME)"),
                          config_path=given)
    _check_names(pairs)
    outputs: dict[str, dict[str, Any]] = {}
    writer = None
    if out is not None:
        _check_not_inside(out, [*suite.paths, *([data_dir] if data_dir else [])])
        writer = OutputDir(out, replace_foreign=replace_foreign).open()
    try:
        if jobs > 1 and writer is not None:
            _parallel(pairs, writer, outputs, data_dir, mode, jobs, progress, spans)
        else:
            for i, pair in enumerate(pairs):
                if progress:
                    progress(i, len(pairs), pair)
                tally = _Tally()
                lines = tally(record_json(r) for r in compile_pair(
                    pair, data_dir=data_dir, mode=mode, lean=True, spans=spans))
                if writer is None:
                    count, digest = _count_and_hash(lines)
                else:
                    count, digest = writer.write_lines(pair.out_name, lines)
                outputs[pair.out_name] = tally.entry(pair, count, digest)
        manifest = build_manifest(version=__version__, mode=mode, root=input_root(suite.paths),
                                  inputs=[c.path for c in suite.configs], outputs=outputs)
        if writer is not None:
            writer.write_json(MANIFEST, manifest)
            writer.commit()
        return manifest
    except BaseException:
        if writer is not None:
            writer.abort()
        raise


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


def _count_and_hash(lines: Iterator[dict[str, Any]]) -> tuple[int, str]:
    h = hashlib.sha256()
    count = 0
    for obj in lines:
        h.update(record_bytes(obj))
        count += 1
    return count, h.hexdigest()


def _parallel(pairs: list[Pair], writer: OutputDir, outputs: dict[str, dict[str, Any]],
              data_dir: Path | None, mode: str, jobs: int,
              progress: Callable[[int, int, Pair], None] | None, spans: bool = False) -> None:
    """Compile pairs in ``jobs`` processes; a large pair's row ranges go to several of them
    and their parts are joined in order, so every file is byte-identical to ``--jobs 1``."""
    from concurrent.futures import ProcessPoolExecutor

    staging = writer.staging
    with ProcessPoolExecutor(max_workers=jobs, initializer=init_worker,
                             initargs=(os.getpid(),)) as pool:
        tasks: list[list[tuple[str, Any]]] = []
        for pair in pairs:
            ranges = _row_ranges(pair, data_dir, mode, jobs)
            names = [pair.out_name] if len(ranges) == 1 else [
                f"{pair.out_name}.part{k}" for k in range(len(ranges))]
            tasks.append([(rel, pool.submit(_compile_one, (pair, data_dir, mode, staging,
                                                           writer.shown, spans, rows, rel)))
                          for rel, rows in zip(names, ranges, strict=True)])
        try:
            for i, (pair, parts) in enumerate(zip(pairs, tasks, strict=True)):
                if progress:
                    progress(i, len(pairs), pair)
                results = [fut.result() for _, fut in parts]  # the first failing range raises
                count, over = sum(r[0] for r in results), sum(r[2] for r in results)
                if len(parts) == 1:
                    digest = results[0][1]
                else:
                    digest = _join(staging, pair.out_name, [rel for rel, _ in parts],
                                   shown=f"{writer.shown}/{pair.out_name}")
                writer.adopt(pair.out_name)
                tally = _Tally()
                tally.over_limit = over
                outputs[pair.out_name] = tally.entry(pair, count, digest)
        except BaseException:
            stop_workers(pool, [fut for parts in tasks for _, fut in parts])
            raise


def _join(staging: Path, rel: str, parts: list[str], *, shown: str) -> str:
    """Concatenate part files into ``rel`` (deleting them); the sha256 of the result."""
    h = hashlib.sha256()
    with _os(f"write {shown}"), (staging / rel).open("wb") as out:
        for part in parts:
            with (staging / part).open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):  # noqa: B023
                    h.update(chunk)
                    out.write(chunk)
            (staging / part).unlink()
    return h.hexdigest()
