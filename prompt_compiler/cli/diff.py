"""``compile-prompts diff A B``: what changed between two compilations, item by item.

    compile-prompts diff A B [--json] [--context N] [--max-items N]

A and B are two output folders (or outputs on object storage, ``s3://bucket/prefix``) or
two record files. Exit status, as diff(1)'s: 0 identical,
1 they differ, 2 trouble: a usage error, or A or B cannot be compared (not records, e.g. an
engine-format output; unreadable), so a script never takes trouble for "different".
"""

from __future__ import annotations

import argparse
import sys

from ..errors import PromptCompilerError
from . import exists, is_file, json_text, location, one_line

__all__ = ["run"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="compile-prompts diff",
        description="Compare two compilations (two output folders, matched by "
        "<model>/<dataset>.jsonl, or two record files); records are matched by "
        "(mode, index, label, turn) and compared by every field the model is fed or "
        "generates with (prompt, input_ids, stop, stop_token_ids, max_out_len, mask_length, "
        "messages). Exit 0: identical, 1: differ, "
        "2: trouble (usage, or A or B holds no readable records).",
    )
    p.add_argument("a", type=location, metavar="A",
                   help="output folder, s3:// output or record file")
    p.add_argument("b", type=location, metavar="B",
                   help="output folder, s3:// output or record file")
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"pairs": [...], "items": [...]} as one JSON object',
    )
    p.add_argument(
        "--only",
        choices=("prompt",),
        default=None,
        help="compare the prompts alone (the other fields are not compared)",
    )
    p.add_argument(
        "--context",
        type=int,
        default=3,
        metavar="N",
        help="lines of context around each change (default 3)",
    )
    p.add_argument(
        "--max-items",
        type=int,
        default=None,
        metavar="N",
        help="show at most N differing items (default 20; all with --json; 0: all)",
    )
    return p


def run(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.context < 0 or (args.max_items is not None and args.max_items < 0):
        parser.error("--context and --max-items must be >= 0")
    for path in (args.a, args.b):
        if not exists(path):
            parser.error(f"{path}: no such file or folder")
    if is_file(args.a) != is_file(args.b):
        parser.error("give two output folders or two record files, not one of each")
    from ..inspection.diff import diff_outputs, diff_text, to_json

    try:
        pairs = list(diff_outputs(args.a, args.b, only=args.only))
    except PromptCompilerError as err:  # trouble, not "different"
        print(f"compile-prompts: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"compile-prompts: error: {one_line(where + (exc.strerror or str(exc)))}",
              file=sys.stderr)
        return 2
    if not pairs:
        parser.error(f"no record files (<model>/<dataset>.jsonl) in {args.a} or {args.b}")
    if args.json:
        obj = to_json(pairs, max_items=args.max_items or 0)
        sys.stdout.write(json_text(obj) + "\n")
    else:
        max_items = 20 if args.max_items is None else args.max_items
        sys.stdout.write(diff_text(pairs, context=args.context, max_items=max_items))
    return 0 if all(p.identical for p in pairs) else 1
