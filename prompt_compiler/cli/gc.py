"""``compile-prompts gc OUT [--unlock]``: delete what runs that died left in an output.

On object storage (``s3://bucket/prefix``) that is every run folder the manifest does not
name (shards of runs killed before their manifest was written; readers never see them);
``--unlock`` first deletes the lock such a run left (only when no run is alive). On a
folder it is the staging and old folders a killed run left beside OUT (as the next run
into OUT would do).

Exit status: 0 when done, 1 for an error (one line), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import PromptCompilerError

__all__ = ["run"]


def run(argv: list[str]) -> int:
    """Collect the garbage of an output."""
    parser = argparse.ArgumentParser(
        prog="compile-prompts gc",
        description="Delete the shards and folders that runs killed before their manifest "
                    "left in an output (a folder, or s3://bucket/prefix).")
    parser.add_argument("out", metavar="OUT", help="the output (a folder or s3://bucket/prefix)")
    parser.add_argument("--unlock", action="store_true",
                        help="first delete the lock a dead run left (s3://; never while a "
                             "run is alive)")
    args = parser.parse_args(argv)
    from ..storage import object_uri

    try:
        uri = object_uri(args.out)
        if uri is None:
            from ..emit.outdir import OutputDir

            OutputDir(args.out).recover()
            print(f"{args.out}: nothing left by a dead run remains beside it")
            return 0
        from ..emit.objstore import collect_garbage

        removed = collect_garbage(uri, unlock=args.unlock)
    except PromptCompilerError as err:
        from . import one_line

        print(f"compile-prompts: error: {one_line(str(err))}", file=sys.stderr)
        return 1
    for item in removed:
        print(f"removed {item}")
    print(f"{uri}: {len(removed)} unfinished run{'s' * (len(removed) != 1)} removed")
    return 0
