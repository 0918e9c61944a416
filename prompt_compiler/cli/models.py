"""``compile-prompts models``: the built-in model templates."""

from __future__ import annotations

import argparse
import sys

from . import json_text

__all__ = ["run"]


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="compile-prompts models",
                                     description="List the built-in model templates.")
    parser.add_argument("--json", action="store_true", help="print them as JSON")
    args = parser.parse_args(argv)
    from ..model.meta_library import list_model_templates

    templates = list_model_templates()
    if args.json:
        sys.stdout.write(json_text(
            [{"name": t.name, "renderer": t.renderer, "description": t.description,
              "aliases": list(t.aliases), "source": t.source} for t in templates]) + "\n")
        return 0
    for tpl in templates:
        sys.stdout.write(f"{tpl.name:<28} {tpl.renderer:<8} {tpl.description}\n")
    return 0
