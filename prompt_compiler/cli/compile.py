"""``compile-prompts PATH...``: compile a suite, a thin shell over :mod:`prompt_compiler.run.suite`.

    compile-prompts PATH... [--model NAME_OR_FILE]... [--models ABBR_GLOB]... [--data-dir DIR]
                    [-o OUT] [--mode compat|default] [--only ABBR_GLOB]... [--limit N]
                    [--show N] [--check] [--strict] [--jobs N] [--json] [--overwrite-foreign]
                    [--format records|vllm|openai-batch|parquet]
    compile-prompts --version

SIGINT, SIGTERM and SIGHUP stop the run: its staging folder is removed, OUT stays as it
was, and the exit status is 128 + the signal number (130, 143, 129).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from ..emit.outdir import OutputDir
from ..errors import PromptCompilerError, PromptCompilerWarning
from ..safety import limits
from ..storage import object_uri
from . import SUMMARIES, json_text, location, one_line
from .signals import Stopped, reported, stopping

__all__ = ["Stopped", "quiet_warnings", "run", "warnings_to_stderr"]

_MODES = {"compat": "opencompass", "opencompass": "opencompass", "default": "default"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="compile-prompts",
        description="Compile prompt configs into the exact model inputs "
                    "(JSONL per dataset x model).",
        epilog="other commands (compile-prompts COMMAND --help for each):\n" + "".join(
            f"  compile-prompts {word}{line}\n" for word, line in SUMMARIES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    from .._version import __version__

    p.add_argument("--version", action="version", version=f"compile-prompts {__version__}")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="config files or folders (.py, .yaml, .json)")
    p.add_argument("--model", action="append", default=[], metavar="NAME_OR_FILE",
                   help="a model template name (see 'compile-prompts models') or a model config "
                        "file; replaces the models of the configs (repeatable)")
    p.add_argument("--opencompass-configs", type=Path, metavar="DIR",
                   help="the folder `from opencompass.configs.X import y` reads (OpenCompass's "
                   "configs/, holding datasets/ and models/); default: "
                   "$PROMPT_COMPILER_OPENCOMPASS_CONFIGS, else an installed opencompass's")
    p.add_argument("--data-dir", type=location,
                   help="rows at DIR/<abbr>/<split>.jsonl or DIR/<abbr>.jsonl")
    p.add_argument("--opencompass-python", type=Path, metavar="PATH",
                   help="the python of a venv with OpenCompass installed: runs the loader of a "
                        "dataset class with no native reader, rows cached (default: "
                        "$PROMPT_COMPILER_OPENCOMPASS_PYTHON)")
    p.add_argument("-o", "--out", type=location,
                   help="output folder (default: ./out), or s3://bucket/prefix (with "
                        "--shard-rows)")
    p.add_argument("--mode", choices=("default", "compat"), default="default",
                   help="compat reproduces OpenCompass 0.5.4 exactly, defects included")
    p.add_argument("--models", action="append", default=[], metavar="ABBR_GLOB",
                   help="compile only the suite's models whose abbr matches (repeatable)")
    p.add_argument("--only", action="append", default=[], metavar="ABBR_GLOB",
                   help="compile only datasets whose abbr matches (repeatable)")
    p.add_argument("--limit", type=int, metavar="N",
                   help="compile only the first N test rows of each dataset")
    p.add_argument("--strict", action="store_true",
                   help="treat every warning as an error (a misspelt key, an empty test "
                   "split, an unknown placeholder, ...)")
    p.add_argument("--show", type=int, default=0, metavar="N",
                   help="print N prompts per dataset x model, whitespace and special tokens "
                   "visible")
    p.add_argument("--check", action="store_true",
                   help="compile and validate everything, write nothing; also print lint findings")
    p.add_argument("--no-rows", action="store_true",
                   help="with --check: read no data; each dataset is checked on stand-in rows "
                        "made from its reader_cfg (keys, templates and placeholders, "
                        "retriever, inferencer, model class, tokenizer)")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="N processes: pairs in parallel, and a large dataset in row ranges "
                        "(output identical to --jobs 1)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="ray: compile pairs and row ranges as Ray tasks (extra 'ray'); the "
                        "output is the local engine's")
    p.add_argument("--ray-address", metavar="ADDR",
                   help="with --engine ray: join this Ray cluster (default: start a local "
                        "instance with --jobs CPUs, stopped at the end)")
    p.add_argument("--json", action="store_true", help="print the summary (manifest) as JSON")
    p.add_argument("--spans", action="store_true",
                   help="add to every record where each part of its prompt came from (spans)")
    p.add_argument("--tokenize", action="store_true",
                   help="give every record input_ids, the token ids the model is fed (every "
                        "model needs its tokenizer; docs/tokenizers.md)")
    p.add_argument("--tokenizer", metavar="PATH",
                   help="the tokenizer of the models given by --model (a tokenizer.json, its "
                        "folder or its tokenizer_config.json, or a tiktoken name)")
    p.add_argument("--fewshot", choices=("multiturn", "inline"),
                   help="role-based in-context examples as user/assistant turns, or inline as "
                        "text in the first user turn (overrides the datasets' 'fewshot' key)")
    from ..emit.formats import OUTPUT_FORMATS  # the one list of output formats

    p.add_argument("--format", choices=OUTPUT_FORMATS.names(), default="records",
                   help=f"what to write per dataset x model: {OUTPUT_FORMATS.help()}")
    p.add_argument("--shard-rows", type=int, metavar="N",
                   help="write each dataset x model as <model>/<dataset>/part-NNNNN files of at "
                        "most N records, each hashed in the manifest (written by the processes "
                        "or Ray workers that compile them)")
    p.add_argument("--overwrite-foreign", action="store_true",
                   help="replace OUT even if it is a non-empty folder that compile-prompts did not "
                        "write (its files are deleted)")
    return p


@contextlib.contextmanager
def warnings_to_stderr() -> Iterator[None]:
    """Print each distinct :class:`PromptCompilerWarning` once, as
    ``compile-prompts: warning: ...``."""
    with warnings.catch_warnings():
        warnings.simplefilter("default", PromptCompilerWarning)
        warnings.showwarning = lambda message, *args, **kwargs: print(
            f"compile-prompts: warning: {message}", file=sys.stderr)
        yield


@contextlib.contextmanager
def quiet_warnings() -> Iterator[None]:
    """Silence :class:`PromptCompilerWarning` (lint reports the same things as findings)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PromptCompilerWarning)
        yield


class _Progress:
    """A progress bar on an interactive terminal (rows done, rate, ETA); silent otherwise.

    Silent when stderr is not a terminal, under CI, or with ``TERM=dumb``.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.enabled = (stream.isatty() and not os.environ.get("CI")
                        and os.environ.get("TERM") != "dumb")
        self._bar: Any = None
        self._task: Any = None

    def _start(self) -> Any:
        if self._bar is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            console = Console(file=self.stream, no_color=bool(os.environ.get("NO_COLOR")))
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(),
                                 TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                                 console=console, transient=True)
            self._bar.start()
        return self._bar

    def __call__(self, i: int, total: int, pair: object) -> None:
        """A new pair starts (``i`` of ``total``)."""
        if not self.enabled:
            return
        bar = self._start()
        name = f"[{i + 1}/{total}] {pair.dataset.abbr} x {pair.model.abbr}"  # type: ignore[attr-defined]
        if self._task is not None:
            bar.remove_task(self._task)
        self._task = bar.add_task(name[:80], total=None, rate="")

    def rows(self, n: int) -> None:
        """The current pair has ``n`` test rows."""
        if self.enabled and self._task is not None:
            self._bar.update(self._task, total=n)

    def row(self) -> None:
        """One more row is done."""
        self.advance(1)

    def advance(self, n: int) -> None:
        """``n`` more rows are done."""
        if self.enabled and self._task is not None:
            self._bar.advance(self._task, n)
            speed = self._bar.tasks[-1].speed
            self._bar.update(self._task, rate=f"{speed:,.0f} rows/s" if speed else "")

    def done(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
            self._task = None


def _arguments(args: argparse.Namespace) -> dict[str, object]:
    """The arguments that shape the output, for the manifest (unset ones left out)."""
    given = {"model": args.model, "models": args.models, "only": args.only,
             "limit": args.limit, "fewshot": args.fewshot, "tokenize": args.tokenize or None,
             "tokenizer": args.tokenizer,
             "format": None if args.format == "records" else args.format,
             "shard_rows": args.shard_rows}
    return {k: v for k, v in given.items() if v not in (None, [])}


def _strict_warnings() -> tuple[type[Warning], ...]:
    """With ``--strict``, every warning this project gives is raised (and printed as an error)."""
    from ..api_formats._messages import FormatWarning
    from ..compiler import IgnoredSettingWarning

    categories = (PromptCompilerWarning, IgnoredSettingWarning, FormatWarning)
    for category in categories:
        warnings.filterwarnings("error", category=category)
    return categories


def run(argv: list[str]) -> int:
    """Compile a suite (the default command)."""
    args = _parser().parse_args(argv)
    if args.jobs < 1 or args.show < 0 or (args.limit is not None and args.limit < 0):
        _parser().error("--jobs must be >= 1, and --show and --limit >= 0")
    if args.shard_rows is not None and args.shard_rows < 1:
        _parser().error("--shard-rows must be >= 1")
    if args.tokenizer is not None and not args.model:
        _parser().error("--tokenizer sets the tokenizer of the models given by --model; a "
                        "config's model takes its own tokenizer key")
    if args.no_rows and not args.check:
        _parser().error("--no-rows checks without data: give --check too (nothing is written)")
    said.clear()
    try:
        with stopping(), warnings_to_stderr():
            try:
                return _run(args)
            except (Stopped, KeyboardInterrupt) as stop:  # after _run's own handlers: while
                if said:  # the error line was printed or the summary written, the run had
                    return said[-1]  # its status
                return reported(stop.signum if isinstance(stop, Stopped) else int(signal.SIGINT))
    except Stopped as stop:  # while the handlers were put back, as the run ended
        return said[-1] if said else reported(stop.signum)


said: list[int] = []
"""The exit status once the run has printed its outcome (its error line): a stop signal that
arrives after that (while the line is printed, or the summary) changes nothing."""


def _run(args: argparse.Namespace) -> int:
    import dataclasses

    from ..run import suite as S
    from ..run.pairs import pair_records
    from ..run.settings import CompileSettings

    mode = _MODES[args.mode]
    progress = _Progress(sys.stderr)
    strict_errors = _strict_warnings() if args.strict else ()
    try:
        limits.current()  # a malformed PROMPT_COMPILER_MAX_* variable fails first
        writes = not args.check and (args.out is not None or not args.show)
        if writes and not object_uri(args.out):  # repair what a dead run left; fail now,
            OutputDir(args.out or Path("out")).recover()  # not after loading, if OUT is busy
        settings = CompileSettings(
            data_dir=args.data_dir, mode=mode, spans=args.spans, strict=args.strict,
            jobs=args.jobs, limit=args.limit, fewshot=args.fewshot, tokenize=args.tokenize,
            tokenizer=args.tokenizer, opencompass_python=args.opencompass_python,
            no_rows=args.no_rows, shard_rows=args.shard_rows, only=tuple(args.only),
            models=tuple(args.models), format=args.format, engine=args.engine,
            ray_address=args.ray_address, replace_foreign=args.overwrite_foreign)
        loaded = S.apply_settings(S.load(args.paths, models=args.model,
                                         opencompass_configs=args.opencompass_configs),
                                  settings)
        if not loaded.pairs(settings.only, settings.models):
            raise loaded.nothing_to_compile(settings.only, settings.models)
        if args.show:
            from ..inspection.visible import visible

            color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
            for pair in loaded.pairs(settings.only, settings.models):
                print(f"=== {pair.dataset.abbr} x {pair.model.abbr} ({pair.dataset.config_path})")
                shown = dataclasses.replace(settings, spans=False)  # the prompts only
                for n, rec in enumerate(pair_records(pair, shown)):
                    if n >= args.show:
                        break
                    label = f" label={rec.label!r}" if rec.mode == "ppl" else ""
                    turn = f" turn={rec.turn}" if rec.mode == "chat" else ""
                    print(f"--- [{rec.mode}] row {rec.index}{label}{turn} "
                          f"ice_ids={list(rec.ice_ids)}")
                    print(visible(rec.prompt, color=color))
            if not args.check and args.out is None:
                return 0
        out = None if args.check else (args.out or Path("out"))
        manifest = S.compile_to_dir(loaded, out, settings, progress=progress,
                                    arguments=_arguments(args))
        if args.check:
            from ..inspection.lint import COMPILE_WARNS, lint_suite

            with quiet_warnings():
                findings = lint_suite(loaded, data_dir=settings.data_dir, mode=mode,
                                      only=settings.only, models=settings.models,
                                      opencompass_python=settings.opencompass_python,
                                      no_rows=settings.no_rows)
            findings = [f for f in findings if f.code not in COMPILE_WARNS]  # (warned once)
            progress.done()
            level = "error" if args.strict else "warning"  # --strict: every warning fails
            for finding in findings:
                print(f"compile-prompts: {level}: {finding}", file=sys.stderr)
            if args.strict and findings:
                return 1
    except PromptCompilerError as err:
        progress.done()
        said.append(1)
        print(f"compile-prompts: error: {one_line(str(err))}", file=sys.stderr)
        return 1
    except strict_errors as warning:  # --strict: every warning is an error
        progress.done()
        said.append(1)
        print(f"compile-prompts: error: {one_line(str(warning))}", file=sys.stderr)
        return 1
    except (Stopped, KeyboardInterrupt) as stop:
        progress.done()
        return reported(stop.signum if isinstance(stop, Stopped) else int(signal.SIGINT))
    progress.done()
    said.append(0)  # OUT is complete: a stop now changes nothing
    if args.json:
        print(json_text(manifest))
    else:
        total = sum(o["records"] for o in manifest["outputs"].values())
        where = ("checked, nothing written" if out is None
                 else f"written to {object_uri(out) or out}/")
        pairs = len(manifest["outputs"])
        print(f"{pairs} dataset x model pair{'s' * (pairs != 1)}, "
              f"{total} prompt{'s' * (total != 1)} ({mode} mode), {where}")
        over = sum(o.get("over_limit", 0) for o in manifest["outputs"].values())
        if over:
            print(f"{over} {'prompt is' if over == 1 else 'prompts are'} over max_seq_len with "
                  "every in-context example dropped (\"over_limit\": true)")
    return 0
