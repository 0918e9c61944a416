"""``compile-prompts view OUT [B] -o report.html``: a self-contained HTML report.

    compile-prompts view OUT [-o FILE] [--max-items N] [--title TEXT]
    compile-prompts view A B [-o FILE] ...     the items that differ, side by side

OUT (A, B) is an output folder, an output on object storage (``s3://bucket/prefix``) or a
record file. Exit status: 0 written, 1 user error,
2 usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import PromptCompilerError
from . import exists, is_file, location

__all__ = ["run"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="compile-prompts view",
        description="Write one self-contained HTML page (no server, no network) showing the "
        "compiled prompts of an output folder; with two outputs, what differs side by side.",
    )
    p.add_argument("out", type=location, metavar="OUT",
                   help="output folder, s3:// output or record file")
    p.add_argument("other", type=location, nargs="?", metavar="B",
                   help="a second output: diff view")
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("report.html"),
        metavar="FILE",
        help="the HTML file to write (default: report.html)",
    )
    p.add_argument(
        "--max-items",
        type=int,
        default=200,
        metavar="N",
        help="show the first N items per dataset x model (default 200; 0: all)",
    )
    p.add_argument("--title", help="the page title")
    p.add_argument("--only", choices=("prompt",), default=None,
                   help="with two outputs: compare the prompts alone (by default every field "
                        "the model is fed or generates with)")
    return p


def run(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.max_items < 0:
        parser.error("--max-items must be >= 0")
    for path in (args.out, args.other):
        if path is not None and not exists(path):
            parser.error(f"{path}: no such file or folder")
    if args.other is not None and is_file(args.out) != is_file(args.other):
        parser.error("give two output folders or two record files, not one of each")
    from ..inspection.viewer import diff_report, report

    try:
        if args.other is None:
            page = report(args.out, max_items=args.max_items, title=args.title)
        else:
            page = diff_report(args.out, args.other, max_items=args.max_items, title=args.title,
                               only=args.only)
    except PromptCompilerError as err:
        print(f"compile-prompts: error: {err}", file=sys.stderr)
        return 1
    target = args.output
    if target.is_dir():
        parser.error(f"{target} is a folder; give the HTML file to write")
    target.absolute().parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8", newline="\n") as fh:
            fh.write(page)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    print(f"wrote {target} ({len(page.encode('utf-8')) // 1024 + 1} KiB)")
    return 0
