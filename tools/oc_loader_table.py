"""Count the OpenCompass loader classes named by OpenCompass's own dataset configs.

For every config file under OpenCompass's ``configs/datasets`` folder, each loader class
named as ``type=NameDataset`` counts once for that file. The table lists classes by the
number of files that name them, most used first; ties by name.

    python tools/oc_loader_table.py [OPENCOMPASS_PACKAGE_DIR] [--top N] [--markdown]

The last column says how this project reads each class's rows (native reader, built-in path
reader, or OpenCompass's own loader).

OPENCOMPASS_PACKAGE_DIR is the folder holding the ``opencompass`` package (default:
``$PC_OPENCOMPASS_PACKAGE``). Reading is static (the files are parsed, never run).
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path


def loader_names(source: str) -> set[str]:
    """The loader classes one config file names as ``type=...Dataset`` (a keyword or a
    dict key)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        pairs: Iterator[tuple[str | None, ast.expr]] = iter(())
        if isinstance(node, ast.Call):
            pairs = ((k.arg, k.value) for k in node.keywords)
        elif isinstance(node, ast.Dict):
            pairs = ((k.value if isinstance(k, ast.Constant) and isinstance(k.value, str)
                      else None, v) for k, v in zip(node.keys, node.values, strict=True))
        for key, value in pairs:
            if key != "type":
                continue
            name = (value.id if isinstance(value, ast.Name) else
                    value.attr if isinstance(value, ast.Attribute) else
                    value.value if isinstance(value, ast.Constant)
                    and isinstance(value.value, str) else None)
            if name and name.rsplit(".", 1)[-1].endswith("Dataset"):
                found.add(name.rsplit(".", 1)[-1])
    return found


def count(package_dir: Path) -> tuple[Counter[str], int]:
    """(files naming each class, files naming any) over the dataset configs."""
    root = package_dir / "opencompass" / "configs" / "datasets"
    if not root.is_dir():
        raise SystemExit(f"{root}: not found (give the folder holding the opencompass package)")
    counts: Counter[str] = Counter()
    files = 0
    for file in sorted(root.rglob("*.py")):
        names = loader_names(file.read_text(encoding="utf-8", errors="replace"))
        if names:
            files += 1
            counts.update(names)
    return counts, files


def route(name: str) -> str:
    """How this project reads the class's rows: ``native``, ``built-in`` (a path reader),
    or ``OpenCompass`` (its own loader, in another interpreter)."""
    from prompt_compiler.data.opencompass import native_reader
    from prompt_compiler.data.sources import BUILTIN_READERS

    if native_reader(name) is not None:
        return "native"
    return "built-in" if name in BUILTIN_READERS else "OpenCompass"


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package_dir", nargs="?", default=os.environ.get("PC_OPENCOMPASS_PACKAGE"))
    parser.add_argument("--top", type=int, default=0, help="only the N most used classes")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args(argv)
    if not args.package_dir:
        parser.error("give OPENCOMPASS_PACKAGE_DIR or set PC_OPENCOMPASS_PACKAGE")
    counts, files = count(Path(args.package_dir))
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if args.top:
        ranked = ranked[: args.top]
    if args.markdown:
        print("| rank | class | config files | rows read by |\n| ---: | --- | ---: | --- |")
        for rank, (name, n) in enumerate(ranked, 1):
            print(f"| {rank} | `{name}` | {n} | {route(name)} |")
    else:
        for rank, (name, n) in enumerate(ranked, 1):
            print(f"{rank:4d}  {name:<40s} {n:5d}  {route(name)}")
    print(f"# {len(counts)} classes named by {files} config files", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
