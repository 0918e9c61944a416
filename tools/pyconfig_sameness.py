#!/usr/bin/env python3
"""Load Python configs with our loader and with mmengine, and check that both agree.

    python tools/pyconfig_sameness.py PATH... [--jobs N] [--sample N] [--show-declined]

Every ``*.py`` under the PATHs (files or folders; ``__init__.py`` skipped) is loaded twice
(``prompt_compiler.config.python.load.load_variables`` with ``loader="own"``, then with
``loader="mmengine"``), with the same ``opencompass`` package root, and the top-level
settings are compared. Outcomes per file:

* ``same``: both loaded it, identical settings;
* ``declined``: our loader handed the file to mmengine (``_base_``, ``{{ }}``, an
  import inside a function, ...) and the CLI gets mmengine's result, so nothing differs;
* ``both fail``: both raise (ours hands the error over to mmengine, which reports it);
* ``DIFFERENT``: both loaded it with different settings, or only ours loaded it. This is a
  bug; the exit status is 1.

For the OpenCompass 0.5.4 corpus (the wheel's extracted ``opencompass/configs`` folder)::

    python tools/pyconfig_sameness.py .../site-packages/opencompass/configs --jobs 2
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def compare(file: str) -> tuple[str, str, str]:
    """(file, outcome, detail) for one config."""
    import contextlib
    import io
    import warnings

    from prompt_compiler.config.python.shim import opencompass_shim
    from prompt_compiler.config.python.load import find_package_root, load_variables
    from prompt_compiler.config.python.mm_values import settings
    from prompt_compiler.config.python.mmengine_mode import NeedsMmengine
    from prompt_compiler.errors import PromptCompilerError

    path = Path(file)
    root = find_package_root(path)
    sink = io.StringIO()
    with opencompass_shim(root), warnings.catch_warnings(), contextlib.redirect_stdout(sink):
        warnings.simplefilter("ignore")
        own: object
        try:
            own = settings(*load_variables(path, file, root, loader="own"))
        except (NeedsMmengine, PromptCompilerError) as exc:  # declined, or refused (the guards)
            own = exc
        try:
            theirs: object = settings(*load_variables(path, file, root, loader="mmengine"))
        except PromptCompilerError as exc:
            theirs = exc
    if isinstance(own, (NeedsMmengine, PromptCompilerError)):
        if isinstance(theirs, PromptCompilerError):
            return file, "both fail", str(theirs)[:200]
        return file, "declined", str(own)[:200]
    if isinstance(theirs, PromptCompilerError):
        return file, "DIFFERENT", f"only ours loads it; mmengine: {theirs}"[:400]
    if own != theirs:
        keys = sorted(k for k in set(own) | set(theirs)  # type: ignore[call-overload]
                      if own.get(k) != theirs.get(k))  # type: ignore[attr-defined]
        return file, "DIFFERENT", f"settings differ: {keys[:5]}"
    return file, "same", ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--sample", type=int, default=0, help="a seeded sample of N files")
    ap.add_argument("--show-declined", action="store_true", help="list the declined files")
    args = ap.parse_args(argv)
    files: list[str] = []
    for given in args.paths:
        path = Path(given)
        found = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        files += [str(f) for f in found if f.name != "__init__.py"]
    if args.sample:
        files = sorted(random.Random(0).sample(files, min(args.sample, len(files))))
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(compare, files, chunksize=16))
    else:
        results = [compare(f) for f in files]
    counts = Counter(outcome for _, outcome, _ in results)
    reasons = Counter(detail.split(":")[0] for _, outcome, detail in results
                      if outcome == "declined")
    for file, outcome, detail in results:
        if outcome == "DIFFERENT" or (args.show_declined and outcome == "declined"):
            print(f"{outcome}: {os.path.relpath(file)}: {detail}")
    print(f"{len(files)} configs: " + ", ".join(
        f"{counts[k]} {k}" for k in ("same", "declined", "both fail", "DIFFERENT")))
    if reasons:
        print("declined: " + ", ".join(f"{n} {why}" for why, n in reasons.most_common()))
    return 1 if counts["DIFFERENT"] else 0


if __name__ == "__main__":
    sys.exit(main())
