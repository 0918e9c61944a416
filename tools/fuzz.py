#!/usr/bin/env python3
"""Fuzz ``compile-prompts`` with generated and mutated configs and rows.

    python tools/fuzz.py [--examples 4000] [--seed 0] [--timeout 10] [--corpus DIR] [--cli N]

Each example (see ``tools/fuzz_cases.py``) is a set of config/data files written to a fresh
folder and compiled exactly as the CLI does it (the compile command,
``prompt_compiler.cli.compile.run``, with those files and arguments, from that folder).
The rule: the run exits 0, or 1 with one line ``compile-prompts: error: ...`` on stderr
(2 for a usage error); on success every written record line is strict JSON (no
``NaN``/``Infinity``) in valid UTF-8. Anything else is a *crash*: an exception escaping the
command, a traceback, a multi-line error, bad output. An example that runs longer than
``--timeout`` seconds is a *hang* (its worker process is killed and replaced); a worker is
limited to ``--memory-mb`` of address space, so a memory blow-up is a crash.

``--cli N`` also runs the first N examples through the installed CLI as a real subprocess
(``python -m prompt_compiler``): exit 0/1/2 and no ``Traceback`` on stderr; in turn plain,
under ``LC_ALL=C``, with ``--jobs 2``, with a symlink planted at the lock's path, and
stopped by SIGTERM at a random moment (see ``VARIANTS``).

The last lines are ``N examples, M crashes, H hangs`` and one line per distinct crash site
(exception type and the innermost ``prompt_compiler`` frame), with a seed that replays it:
``python tools/fuzz.py --replay SEED`` prints that example's files, arguments and outcome.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing as mp
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import random  # noqa: E402

from fuzz_cases import Case, load_corpus, make_case  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = REPO.parent / "shared" / "conformance" / "opencompass" / "cases"


@dataclass
class Outcome:
    """What one example did: ``ok``, ``crash`` or ``hang``, and for a crash where."""

    status: str
    site: str = ""
    detail: str = ""
    exit: int | None = None


def example_seed(seed: int, index: int) -> int:
    """The seed of example ``index`` of a run seeded with ``seed``."""
    return seed * 1_000_003 + index


def write_case(case: Case, folder: Path) -> None:
    for rel, data in case.files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _crash_site(exc: BaseException) -> str:
    """``Type at prompt_compiler/x.py:123`` (innermost frame of the package, else the last)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "prompt_compiler" in f.filename.replace(os.sep, "/")]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return type(exc).__name__
    name = frame.filename.replace(os.sep, "/")
    name = name[name.rfind("prompt_compiler/"):] if "prompt_compiler/" in name else Path(name).name
    return f"{type(exc).__name__} at {name}:{frame.lineno} ({frame.name})"


def _strict_json(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise ValueError(f"non-strict JSON token {token}")
    return json.loads(text, parse_constant=refuse)


def check_output(out: Path) -> str:
    """'' when every file under ``out`` is valid UTF-8 strict JSON (lines), else the problem."""
    if not out.is_dir():
        return ""
    for path in sorted(out.rglob("*")):
        if not path.is_file():
            continue
        try:
            text = path.read_bytes().decode("utf-8")
            if path.suffix == ".jsonl":
                for line in text.splitlines():
                    _strict_json(line)
            elif path.suffix == ".json":
                _strict_json(text)
        except (UnicodeDecodeError, ValueError) as exc:
            return f"{path.relative_to(out)}: {exc}"[:300]
    return ""


def run_in_process(case: Case, folder: Path) -> Outcome:
    """Compile ``case`` in ``folder`` as ``compile-prompts`` does; judge the result.

    The compile command's ``run`` is called directly: ``cli.main`` adds last-resort handlers
    that turn any exception into one line, which would hide exactly what is looked for here.
    """
    from prompt_compiler.cli.compile import run as main

    write_case(case, folder)
    err, out = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = main(list(case.args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
    except Exception as exc:  # noqa: BLE001 - any escape is what the fuzzer looks for
        return Outcome("crash", _crash_site(exc), f"{type(exc).__name__}: {exc}"[:300])
    finally:
        os.chdir(old)
    return judge(code, err.getvalue(), folder / "out")


def judge(code: int, stderr: str, out: Path) -> Outcome:
    if "Traceback" in stderr:
        return Outcome("crash", "traceback on stderr", stderr[-300:], code)
    if "internal error, please report it" in stderr:  # the CLI's last resort caught a bug
        return Outcome("crash", "internal error: " + stderr.split("report it: ", 1)[-1][:60],
                       stderr[:300], code)
    if code == 0:
        problem = check_output(out)
        if problem:
            return Outcome("crash", "invalid output (" + problem.split(":", 1)[-1].strip()[:60]
                           + ")", problem, code)
        return Outcome("ok", exit=0)
    if code == 1:  # warnings may come first; the error itself is one line
        warning = "compile-prompts: warning: "
        lines = [ln for ln in stderr.splitlines() if not ln.startswith(warning)]
        if len(lines) != 1 or not lines[0].startswith("compile-prompts: error: "):
            return Outcome("crash", "error is not one line", stderr[:300], code)
        return Outcome("ok", detail=lines[0], exit=1)
    if code == 2:
        return Outcome("ok", exit=2)
    return Outcome("crash", f"exit status {code}", stderr[:300], code)


# -- the worker process -----------------------------------------------------------------------


def _worker(conn: Any, seed: int, corpus: list[Any], base: str, memory_mb: int) -> None:
    import prompt_compiler.cli.compile  # noqa: F401 - import once, before the first example

    if memory_mb:  # a memory blow-up becomes a MemoryError (a crash), not a machine-wide OOM
        limit = memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    while True:
        index = conn.recv()
        if index is None:
            return
        rng = random.Random(example_seed(seed, index))
        case = make_case(rng, corpus)
        folder = Path(tempfile.mkdtemp(prefix=f"ex{index}.", dir=base))
        try:
            outcome = run_in_process(case, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        conn.send(outcome)


class _Pool:
    """One worker process fed one example at a time, replaced when an example hangs."""

    def __init__(self, seed: int, corpus: list[Any], base: str, memory_mb: int) -> None:
        self.args = (seed, corpus, base, memory_mb)
        self.ctx = mp.get_context("fork")
        self._start()

    def _start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child, *self.args), daemon=True)
        self.proc.start()

    def run(self, index: int, timeout: float) -> Outcome:
        self.conn.send(index)
        if self.conn.poll(timeout):
            try:
                result: Outcome = self.conn.recv()
                return result
            except EOFError:
                pass
            self.proc.join(1)
            code = self.proc.exitcode
            self._start()
            return Outcome("crash", f"worker died (exit {code})")
        self.proc.kill()
        self.proc.join()
        self._start()
        return Outcome("hang", detail=f"over {timeout:g}s")

    def close(self) -> None:
        with contextlib.suppress(OSError, BrokenPipeError):
            self.conn.send(None)
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()


# -- the real CLI as a subprocess -------------------------------------------------------------


VARIANTS = ("plain", "ascii-locale", "jobs-2", "planted-lock-link", "sigterm")
"""How the ``--cli`` examples run, in turn: as written; under ``LC_ALL=C`` with UTF-8 mode
off; with ``--jobs 2``; with a symlink planted at OUT's lock path (the run must refuse it
and leave the link's target alone); sent SIGTERM at a random moment (exit 143 and one
line, or the run's own outcome if it ended first)."""


def run_subprocess(case: Case, folder: Path, timeout: float, variant: str = "plain",
                   delay: float = 0.0) -> Outcome:
    write_case(case, folder)
    args = list(case.args)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROMPT_COMPILER_TEST")}
    canary = folder.parent / f"{folder.name}.canary"
    if variant == "ascii-locale":
        env.update(LC_ALL="C", PYTHONUTF8="0")
        env.pop("PYTHONIOENCODING", None)
    elif variant == "jobs-2" and any(not a.startswith("-") for a in args):
        args += ["--jobs", "2"]
    elif variant == "planted-lock-link":
        canary.write_bytes(b"not yours\n")
        (folder / ".out.compile-prompts-lock").symlink_to(canary)
    proc = subprocess.Popen([sys.executable, "-m", "prompt_compiler", *args], cwd=folder,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        if variant == "sigterm":
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(delay)
            if proc.poll() is None:
                proc.terminate()
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return Outcome("hang", detail=f"over {timeout:g}s")
    stderr = err.decode("utf-8", "replace")
    code = proc.returncode
    if variant == "planted-lock-link":
        same = canary.read_bytes() == b"not yours\n"
        canary.unlink()
        if not same:
            return Outcome("crash", "wrote through a planted lock link", stderr[-300:], code)
        if code == 0 and (folder / "out" / "manifest.json").exists():
            return Outcome("crash", "a planted lock link was not refused", stderr[-300:], code)
    if variant == "sigterm" and code == -15 and stderr == "":
        return Outcome("ok", exit=code)  # before the package loaded: Python's own start-up
    if variant == "sigterm" and code == 128 + 15:
        if stderr != "compile-prompts: stopped by SIGTERM\n":
            return Outcome("crash", "stop is not one line", stderr[-300:], code)
        return Outcome("ok", exit=code)
    if code not in (0, 1, 2):
        return Outcome("crash", f"exit status {code}", stderr[-300:], code)
    return judge(code, stderr, folder / "out")


# -- main -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fuzz.py", description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000, help="examples to run (1000)")
    parser.add_argument("--seed", type=int, default=0, help="run seed (0)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per example (10)")
    parser.add_argument("--memory-mb", type=int, default=3072,
                        help="address-space limit per worker, MiB (3072; 0: none)")
    parser.add_argument("--corpus", type=Path, default=None,
                        help="conformance cases to mutate too (default: ../shared/... if present)")
    parser.add_argument("--no-corpus", action="store_true", help="hand-written bases only")
    parser.add_argument("--cli", type=int, default=0, metavar="N",
                        help="also run the first N examples through the CLI as a subprocess")
    parser.add_argument("--replay", type=int, default=None, metavar="SEED",
                        help="print one example (by its seed) and its outcome, then stop")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every crash")
    args = parser.parse_args(argv)

    corpus_dir = args.corpus or (DEFAULT_CORPUS if DEFAULT_CORPUS.is_dir() else None)
    corpus = [] if args.no_corpus or corpus_dir is None else load_corpus(corpus_dir)
    base = tempfile.mkdtemp(prefix="pc-fuzz.")
    try:
        if args.replay is not None:
            return _replay(args.replay, corpus, Path(base))
        return _run(args, corpus, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _replay(seed: int, corpus: list[Any], base: Path) -> int:
    case = make_case(random.Random(seed), corpus)
    print("args:", " ".join(case.args))
    print("notes:", "; ".join(case.notes))
    for rel, data in case.files.items():
        print(f"--- {rel} ({len(data)} bytes)")
        print(data[:3000].decode("utf-8", "replace"))
    outcome = run_in_process(case, base)
    print("outcome:", outcome)
    return 0 if outcome.status == "ok" else 1


def _run(args: argparse.Namespace, corpus: list[Any], base: str) -> int:
    start = time.monotonic()
    pool = _Pool(args.seed, corpus, base, args.memory_mb)
    sites: Counter[str] = Counter()
    first: dict[str, tuple[int, str]] = {}
    exits: Counter[int | None] = Counter()
    crashes = hangs = 0
    try:
        for index in range(args.examples):
            outcome = pool.run(index, args.timeout)
            exits[outcome.exit] += 1
            if outcome.status == "ok":
                continue
            site = outcome.site if outcome.status == "crash" else "hang"
            crashes += outcome.status == "crash"
            hangs += outcome.status == "hang"
            sites[site] += 1
            first.setdefault(site, (example_seed(args.seed, index), outcome.detail))
            if args.verbose:
                print(f"[{index}] {outcome.status}: {site}: {outcome.detail}", file=sys.stderr)
    finally:
        pool.close()
    elapsed = time.monotonic() - start
    cli_line = ""
    if args.cli:
        cli_crashes = cli_hangs = 0
        for index in range(args.cli):
            case = make_case(random.Random(example_seed(args.seed, index)), corpus)
            folder = Path(tempfile.mkdtemp(prefix=f"cli{index}.", dir=base))
            variant = VARIANTS[index % len(VARIANTS)]
            delay = random.Random(example_seed(args.seed, index)).uniform(0.05, 1.0)
            outcome = run_subprocess(case, folder, max(args.timeout, 60.0), variant, delay)
            shutil.rmtree(folder, ignore_errors=True)
            if outcome.status != "ok":
                cli_crashes += outcome.status == "crash"
                cli_hangs += outcome.status == "hang"
                site = f"cli: {outcome.site or 'hang'}"
                sites[site] += 1
                first.setdefault(site, (example_seed(args.seed, index), outcome.detail))
        cli_line = (f"; CLI subprocess: {args.cli} examples, {cli_crashes} crashes, "
                    f"{cli_hangs} hangs")
    print("exit statuses: " + ", ".join(f"{k}: {v}" for k, v in sorted(
        exits.items(), key=lambda kv: -1 if kv[0] is None else kv[0])) + f"; {elapsed:.0f}s")
    for site, count in sites.most_common():
        seed, detail = first[site]
        print(f"  {count:5d}  {site}  [--replay {seed}] {detail[:160]!r}")
    print(f"{args.examples} examples, {crashes} crashes, {hangs} hangs{cli_line}")
    return 0 if not sites else 1


if __name__ == "__main__":
    sys.exit(main())
