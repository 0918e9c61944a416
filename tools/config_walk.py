#!/usr/bin/env python3
"""The walk through the config stage's files while one config loads.

    python tools/config_walk.py [CONFIG ...] [--show]

Loads each CONFIG (default: ``configs/eval_demo.py``) as ``compile-prompts CONFIG --check``
does (``load_configs``, models' errors deferred), once to import and warm what a load touches,
then again under ``sys.setprofile``, recording which file of ``prompt_compiler/config/`` (and
its sub-folders) runs after every call and return: the current file is the innermost frame
that lies in the config stage. A *stop* is a change of that file; a *return* is a stop at a
file the walk already left. ``--show`` prints the walk itself; ``--folders`` counts a
sub-folder of the stage (``python/``, the Python config loader) as one place.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def walk(config: str, folders: bool = False) -> list[str]:
    """The files of the config stage, one per stop, while ``config`` loads."""
    import prompt_compiler.config as config_stage
    from prompt_compiler.config import load_configs

    stage = Path(config_stage.__file__).resolve().parent
    stops: list[str] = []
    known: dict[str, str | None] = {}

    def in_stage(frame: FrameType | None) -> str | None:
        while frame is not None:
            name = frame.f_code.co_filename
            found = known.get(name, "?")
            if found == "?":
                path = Path(name).resolve() if not name.startswith("<") else None
                found = known[name] = (path.relative_to(stage).as_posix()
                                       if path is not None and path.is_relative_to(stage)
                                       else None)
                if found is not None and folders and "/" in found:
                    found = known[name] = found.split("/")[0] + "/"
            if found is not None:
                return found
            frame = frame.f_back
        return None

    entered: set[Any] = set()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call" or frame.f_code in entered:
            return
        entered.add(frame.f_code)
        current = in_stage(frame)
        if current is not None and (not stops or stops[-1] != current):
            stops.append(current)

    load_configs([config], defer_model_errors=True)  # imports, caches
    sys.setprofile(profile)
    try:
        load_configs([config], defer_model_errors=True)
    finally:
        sys.setprofile(None)
    return stops


def returns(stops: list[str]) -> int:
    """Stops at a file the walk had already left."""
    seen: set[str] = set()
    count = 0
    for stop in stops:
        count += stop in seen
        seen.add(stop)
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", default=[str(REPO / "configs" / "eval_demo.py")])
    parser.add_argument("--show", action="store_true", help="print every stop")
    parser.add_argument("--folders", action="store_true",
                        help="count a sub-folder of the config stage as one place")
    args = parser.parse_args(argv)
    for config in args.configs:
        stops = walk(config, args.folders)
        print(f"{config}: {len(stops)} stops across {len(set(stops))} files, "
              f"{returns(stops)} returns to a file already left")
        if args.show:
            print("  " + " -> ".join(stops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
