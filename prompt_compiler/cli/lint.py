"""``compile-prompts lint PATH...``: findings that compile but are probably wrong.

    compile-prompts lint PATH... [--model NAME_OR_FILE]... [--data-dir DIR] [--mode compat|default]
                         [--only ABBR_GLOB]... [--json] [--strict]

Exit status: 0 with no findings (or findings without ``--strict``), 1 with ``--strict`` and
any finding, or when a config does not compile; 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import PromptCompilerError
from . import json_text, location

__all__ = ["run"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="compile-prompts lint",
        description="Report placeholder typos, special tokens and template syntax in data, "
                    "empty "
                    "prompts and test splits, in-context examples equal to the test row, and "
                    "system messages a model drops or merges.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="config files or folders")
    p.add_argument("--model", action="append", default=[], metavar="NAME_OR_FILE",
                   help="a model template name or model config file; replaces the configs' models")
    p.add_argument("--opencompass-configs", type=Path, metavar="DIR",
                   help="the folder `from opencompass.configs.X import y` reads (OpenCompass's "
                   "configs/, holding datasets/ and models/); default: "
                   "$PROMPT_COMPILER_OPENCOMPASS_CONFIGS, else an installed opencompass's")
    p.add_argument("--data-dir", type=location,
                   help="rows at DIR/<abbr>/<split>.jsonl or DIR/<abbr>.jsonl")
    p.add_argument("--no-rows", action="store_true",
                   help="read no data: lint each dataset on stand-in rows made from its "
                        "reader_cfg (as compile-prompts --check --no-rows)")
    p.add_argument("--opencompass-python", type=Path, metavar="PATH",
                   help="as for compiling: runs OpenCompass's loader of a class with no native "
                        "reader")
    p.add_argument("--mode", choices=("default", "compat"), default="default")
    p.add_argument("--only", action="append", default=[], metavar="ABBR_GLOB",
                   help="lint only datasets whose abbr matches (repeatable)")
    p.add_argument("--fewshot", choices=("multiturn", "inline"), help="as for compiling")
    p.add_argument("--json", action="store_true", help="print the findings as a JSON list")
    p.add_argument("--strict", action="store_true", help="exit 1 when there is any finding")
    return p


def run(argv: list[str]) -> int:
    """Lint a suite."""
    args = _parser().parse_args(argv)
    from ..inspection.lint import lint_suite
    from ..run import suite as S
    from .compile import quiet_warnings

    try:
        loaded = S.load(args.paths, models=args.model,
                        opencompass_configs=args.opencompass_configs)
        if args.fewshot:
            import dataclasses

            loaded = dataclasses.replace(loaded, options={"fewshot": args.fewshot})
        with quiet_warnings():
            findings = lint_suite(loaded, data_dir=args.data_dir, only=args.only,
                                  mode="opencompass" if args.mode == "compat" else "default",
                                  opencompass_python=args.opencompass_python,
                                  no_rows=args.no_rows)
    except PromptCompilerError as err:
        print(f"compile-prompts: error: {err}", file=sys.stderr)
        return 1
    if args.json:
        sys.stdout.write(json_text([f.to_json() for f in findings]) + "\n")
    else:
        for f in findings:
            sys.stdout.write(f"{f}\n")
        sys.stdout.write(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}\n")
    return 1 if findings and args.strict else 0
