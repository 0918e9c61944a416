#!/usr/bin/env python3
"""Conformance runner: replays reference cases through prompt_compiler's public API.

    python tools/conformance.py SUITE --cases DIR --golden DIR [--mode compat|default]

SUITE is one of the modules in ``tools/conformance_suites/`` (opencompass, hf_chat,
lazyllm, agentscope, adalflow). Every field present in a reference output is compared;
each failing case gets a readable diff, and the last line is ``N passed, M failed``
(``, K diverged`` is added when documented divergences were met). Exit status is 0 only
when nothing failed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SUITES = ("opencompass", "hf_chat", "lazyllm", "agentscope", "adalflow")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="conformance.py", description=__doc__.splitlines()[0])
    parser.add_argument("suite", choices=SUITES)
    parser.add_argument("--cases", required=True, type=Path, help="folder of case files")
    parser.add_argument("--golden", required=True, type=Path, help="folder of reference outputs")
    parser.add_argument("--mode", choices=("compat", "default"), default="compat")
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-case diffs")
    args = parser.parse_args(argv)
    for folder in (args.cases, args.golden):
        if not folder.is_dir():
            parser.error(f"not a directory: {folder}")

    # OpenCompass warns when an API template drops a bare string, and so does prompt_compiler;
    # the references record prompts, not warnings.
    warnings.filterwarnings("ignore", message="Non-empty string in prompt template")
    suite = importlib.import_module(f"conformance_suites.{args.suite}")
    counts = {"passed": 0, "failed": 0, "diverged": 0}
    for outcome in suite.run(args.cases, args.golden, args.mode):
        counts[outcome.status] += 1
        if outcome.status != "passed" and not args.quiet:
            print(outcome.report())
    line = f"{counts['passed']} passed, {counts['failed']} failed"
    if counts["diverged"]:
        line += f", {counts['diverged']} diverged"
    print(line)
    return 0 if counts["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
