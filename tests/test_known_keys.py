"""The model-class keyword table (prompt_compiler/config/known_keys.py) against OpenCompass
0.5.4's own model classes, read (never imported) from the wheel installed into
``$PC_OPENCOMPASS_PACKAGE`` (.ci/run installs it); skipped without it."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from prompt_compiler.config.known_keys import OPENCOMPASS_MODEL_PARAMS


def _exported(models: Path) -> dict[str, Path]:
    """The file each name ``opencompass.models`` exports comes from (two files define Doubao)."""
    out: dict[str, Path] = {}
    for node in ast.parse((models / "__init__.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            file = models.joinpath(*node.module.split("."))  # a package folder
            file = file if file.is_dir() else file.with_suffix(".py")
            for alias in node.names:
                out[alias.asname or alias.name] = file
    return out


def _classes(models: Path) -> dict[str, tuple[list[str], list[str], bool | None]]:
    """class -> (base names, __init__ keyword names or [], takes **kwargs / None: no __init__)."""
    found: dict[str, tuple[list[str], list[str], bool | None]] = {}
    exported = _exported(models)
    for file in sorted(models.rglob("*.py")):
        for node in ast.parse(file.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.ClassDef) or not file.is_relative_to(
                    exported.get(node.name, file)):
                continue
            bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                     for b in node.bases]
            init = next((n for n in node.body
                         if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
            if init is None:
                found[node.name] = (bases, [], None)
            else:
                a = init.args
                names = [x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]][1:]
                found[node.name] = (bases, names, a.kwarg is not None)
    return found


def _params(classes: dict[str, tuple[list[str], list[str], bool | None]], name: str
            ) -> tuple[frozenset[str], bool]:
    bases, names, kwargs = classes[name]
    if kwargs is None:  # inherits __init__
        return next(_params(classes, b) for b in bases if b in classes)
    return frozenset(names), kwargs


def test_every_listed_class_takes_exactly_those_keywords() -> None:
    given = os.environ.get("PC_OPENCOMPASS_PACKAGE")
    models = Path(given or "-") / "opencompass" / "models"
    if not models.is_dir():
        pytest.skip("set PC_OPENCOMPASS_PACKAGE to a folder holding OpenCompass 0.5.4")
    classes = _classes(models)
    for name, expected in OPENCOMPASS_MODEL_PARAMS.items():
        assert _params(classes, name) == expected, name
