"""``compile-prompts``: the command line.

    compile-prompts PATH... [options]        compile a suite (prompt_compiler/cli/compile.py)
    compile-prompts models [--json]          list the built-in model templates
    compile-prompts lint PATH... [--strict]  findings that compile but are probably wrong
    compile-prompts check-template MODEL --chat-template PATH
                                             a meta template against a chat template
    compile-prompts diff A B [--json]        what changed between two compilations

A subcommand word always wins over a path of the same name: write ``./models`` to
compile a folder called ``models``. Each subcommand lives in its own module here and
exposes ``run(argv) -> exit status``.

Exit status: 0 on success, 1 for a user error (one line, no traceback), 2 for a usage
error.
"""

from __future__ import annotations

import importlib
import os
import sys

__all__ = ["SUBCOMMANDS", "main"]

SUBCOMMANDS: dict[str, str] = {
    "models": "models",
    "lint": "lint",
    "check-template": "check_template",
    "diff": "diff",
}
"""Subcommand word -> module in this package."""


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
