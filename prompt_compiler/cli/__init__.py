"""``compile-prompts``: the command line.

    compile-prompts PATH... [options]        compile a suite (prompt_compiler/cli/compile.py)
    compile-prompts models [--json]          list the built-in model templates
    compile-prompts lint PATH... [--strict]  findings that compile but are probably wrong
    compile-prompts check-template MODEL --chat-template PATH
                                             a meta template against a chat template
    compile-prompts diff A B [--json]        what changed between two compilations
    compile-prompts view OUT [B] -o FILE     a self-contained HTML report (B: side-by-side diff)
    compile-prompts gc OUT [--unlock]        delete what killed runs left in an output

A subcommand word always wins over a path of the same name: write ``./models`` to
compile a folder called ``models``. Each subcommand lives in its own module here and
exposes ``run(argv) -> exit status``.

Exit status: 0 on success, 1 for a user error (one line, no traceback), 2 for a usage
error.

Output files are UTF-8 whatever the locale: under the C/POSIX locale (file names and
paths in configs would be ASCII only to Python) the command runs itself again in Python's
UTF-8 mode, its streams keeping the locale's encoding. What is printed follows the
streams' encoding; a character a stream cannot encode (``LC_ALL=C``, ``PYTHONIOENCODING=ascii``)
is printed as a backslash escape, and ``--json`` output then escapes non-ASCII as
``\\uXXXX``, so it stays valid JSON.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import importlib
import io
import json
import os
import re
import sys
from pathlib import Path

from . import signals

__all__ = ["SUBCOMMANDS", "SUMMARIES", "exists", "is_file", "json_text", "location", "main",
           "one_line"]

SUBCOMMANDS: dict[str, str] = {
    "models": "models",
    "lint": "lint",
    "check-template": "check_template",
    "diff": "diff",
    "view": "view",
    "gc": "gc",
}
"""Subcommand word -> module in this package."""

SUMMARIES: dict[str, str] = {
    "models": " [--json]: list the built-in model templates",
    "lint": " PATH... [--strict]: what compiles but is probably wrong",
    "check-template": " MODEL --chat-template PATH: a meta template against a chat template",
    "diff": " A B: what changed between two compilations (exit 1: they differ)",
    "view": " OUT [B] -o FILE: a self-contained HTML report (B: side by side)",
    "gc": " OUT [--unlock]: delete what killed runs left in an output",
}
"""Subcommand word -> its line in ``compile-prompts --help`` (the same words as SUBCOMMANDS)."""


def location(text: str) -> Path:
    """An argparse type: a folder or an ``s3://`` URI (``-o``, ``--data-dir``), the URI checked
    before a ``Path`` folds its slashes (``s3:///x`` would read as the bucket ``x``)."""
    from ..errors import ConfigError
    from ..storage import object_uri

    try:
        object_uri(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return Path(text)


def exists(path: Path) -> bool:
    """A :func:`location` that may be read: an ``s3://`` URI (its reader says what is not
    there), or a local file or folder that exists."""
    from ..storage import object_uri

    return object_uri(path) is not None or path.exists()


def is_file(path: Path) -> bool:
    """A :func:`location` naming a local file (an ``s3://`` output is a folder of shards)."""
    from ..storage import object_uri

    return object_uri(path) is None and path.is_file()


def one_line(text: str) -> str:
    """``text`` folded onto one line: an indented continuation joins with a space, any
    other line break becomes ``; `` (multi-line messages such as PyYAML's stay readable)."""
    # Linear in the text: as substitutions, `[ \t]*(?:\r\n|\r|\n)[ \t]+` -> " " then
    # `[ \t]*(?:\r\n|\r|\n)+[ \t]*` -> "; " backtrack quadratically over a long run of blanks.
    parts = _BREAK.split(text.strip())
    out = [parts[0]]
    for i in range(1, len(parts), 2):
        line = parts[i + 1]
        body = line.lstrip(" \t")
        if len(body) < len(line):  # an indented continuation joins with a space
            out[-1] = out[-1].rstrip(" \t")
            out += [" ", body]
        else:
            out += [parts[i], line]
    segs = _BREAKS.split("".join(out))
    last = len(segs) - 1
    return "; ".join(s.rstrip(" \t") if i == 0 else s.lstrip(" \t") if i == last
                     else s.strip(" \t") for i, s in enumerate(segs))


_BREAK = re.compile(r"(\r\n|\r|\n)")
_BREAKS = re.compile(r"(?:\r\n|\r|\n)+")


def _utf(stream: object) -> bool:
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "ascii").name.startswith("utf")
    except LookupError:
        return False


def json_text(obj: object) -> str:
    """``obj`` as indented JSON for stdout: characters as they are on a UTF stream, else
    ``\\uXXXX`` escapes (still valid JSON)."""
    return json.dumps(obj, ensure_ascii=not _utf(sys.stdout), indent=1)


def _escape_unencodable() -> None:
    """A character stdout or stderr cannot encode is printed as a backslash escape."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            with contextlib.suppress(ValueError, OSError):
                stream.reconfigure(errors="backslashreplace")


def _utf8_mode_under_the_c_locale() -> None:
    """Under an ASCII locale with UTF-8 mode off, exec this command again with ``-X utf8``
    (file names then mean their UTF-8 bytes, as in every other locale); stdout keeps the
    locale's encoding, with backslash escapes. Nothing happens where exec cannot."""
    if (os.name != "posix" or sys.flags.utf8_mode or os.environ.get(_AGAIN)
            or codecs.lookup(sys.getfilesystemencoding()).name != "ascii"):
        return
    orig = getattr(sys, "orig_argv", None)
    if not orig or not sys.executable:
        return
    env = {**os.environ, _AGAIN: "1"}
    env.setdefault("PYTHONIOENCODING", f"{getattr(sys.stdout, 'encoding', None) or 'ascii'}"
                                       ":backslashreplace")
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        os.execve(sys.executable, [os.fsencode(a) for a in (orig[0], "-X", "utf8", *orig[1:])],
                  {os.fsencode(k): os.fsencode(v) for k, v in env.items()})


_AGAIN = "PROMPT_COMPILER_UTF8_AGAIN"


def main(argv: list[str] | None = None) -> int:
    """The ``compile-prompts`` entry point."""
    command = argv is None
    if command:
        # The command is starting: a stop signal from now on is one line, never a traceback
        # (installed here, not when the package is imported).
        signals.install()
        # NumPy's OpenBLAS (imported with pyarrow or BM25) reserves buffers per core when it
        # loads and exits the process with its own message when it cannot (a memory cap):
        # one thread is all prompt building uses.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        _utf8_mode_under_the_c_locale()
    argv = list(sys.argv[1:] if argv is None else argv)
    _escape_unencodable()
    status = _main(argv)
    if command and signals.stopped():  # no pool teardown or shutdown after a stop signal
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(status)
    if command:
        signals.finished()
    return status


def _main(argv: list[str]) -> int:
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
