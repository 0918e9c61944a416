"""``compile-prompts``: the command line.

    compile-prompts PATH... [options]        compile a suite (prompt_compiler/cli/compile.py)
    compile-prompts models [--json]          list the built-in model templates
    compile-prompts lint PATH... [--strict]  findings that compile but are probably wrong
    compile-prompts check-template MODEL --chat-template PATH
                                             a meta template against a chat template
    compile-prompts diff A B [--json]        what changed between two compilations
    compile-prompts view OUT [B] -o FILE     a self-contained HTML report (B: side-by-side diff)

A subcommand word always wins over a path of the same name: write ``./models`` to
compile a folder called ``models``. Each subcommand lives in its own module here and
exposes ``run(argv) -> exit status``.

Exit status: 0 on success, 1 for a user error (one line, no traceback), 2 for a usage
error.
"""

from __future__ import annotations

import importlib
import os
import re
import sys

__all__ = ["SUBCOMMANDS", "main", "one_line"]

SUBCOMMANDS: dict[str, str] = {
    "models": "models",
    "lint": "lint",
    "check-template": "check_template",
    "diff": "diff",
    "view": "view",
}
"""Subcommand word -> module in this package."""


def one_line(text: str) -> str:
    """``text`` folded onto one line: an indented continuation joins with a space, any
    other line break becomes ``; `` (multi-line messages such as PyYAML's stay readable)."""
    text = re.sub(r"[ \t]*(?:\r\n|\r|\n)[ \t]+", " ", text.strip())
    return re.sub(r"[ \t]*(?:\r\n|\r|\n)+[ \t]*", "; ", text)


def main(argv: list[str] | None = None) -> int:
    """The ``compile-prompts`` entry point."""
    argv = list(sys.argv[1:] if argv is None else argv)
    module = SUBCOMMANDS.get(argv[0]) if argv else None
    try:
        if module is not None:
            return int(importlib.import_module(f"{__name__}.{module}").run(argv[1:]))
        from .compile import run

        return run(argv)
    except BrokenPipeError:  # e.g. `compile-prompts models | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # last resort: an OS error no layer below turned into a message
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"compile-prompts: error: {one_line(where + (exc.strerror or str(exc)))}",
              file=sys.stderr)
        return 1
    except Exception as exc:  # last resort: a bug; one line (PROMPT_COMPILER_TRACEBACK=1 shows it)
        if os.environ.get("PROMPT_COMPILER_TRACEBACK"):
            raise
        print(f"compile-prompts: error: internal error, please report it: "
              f"{one_line(f'{type(exc).__name__}: {exc}')}", file=sys.stderr)
        return 1
