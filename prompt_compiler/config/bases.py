"""The config files a Python config pulls in: ``with read_base():`` imports and ``_base_``.

Found statically (the file is parsed, never run), so that the manifest can list every
config that shaped the output (where each entry is defined is recorded while the config
loads: :mod:`.origins`).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

__all__ = ["base_files"]


def base_files(path: str | os.PathLike[str], package_root: Path | None = None) -> list[Path]:
    """Every config ``path`` pulls in, recursively, deepest first (each file once).

    ``from .x.y import z`` inside ``read_base()`` resolves against the file's folder,
    ``from opencompass.configs.x import z`` against ``package_root`` (default: the parent of
    the nearest enclosing ``configs/`` folder); ``_base_ = [...]`` strings against the
    file's folder. Imports that resolve to no file are left out (they fail when loading).
    """
    out: dict[Path, None] = {}
    _walk(Path(path).resolve(), package_root, out, set())
    return list(out)


def _walk(file: Path, root: Path | None, out: dict[Path, None], busy: set[Path]) -> None:
    if file in busy:
        return
    busy.add(file)
    for dep in _direct(file, root):
        if dep not in out:
            _walk(dep, root, out, busy)
            out[dep] = None


def _direct(file: Path, root: Path | None) -> list[Path]:
    try:
        tree = ast.parse(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return []
    found: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and any(_is_read_base(i.context_expr) for i in node.items):
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    target = _module_file(file, stmt.module or "", stmt.level, root)
                    if target is not None:
                        found.append(target)
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "_base_" for t in node.targets):
            for name in _strings(node.value):
                candidate = (file.parent / name).resolve()
                if candidate.is_file():
                    found.append(candidate)
    return found


def _is_read_base(expr: ast.expr) -> bool:
    func = expr.func if isinstance(expr, ast.Call) else None
    return (isinstance(func, ast.Name) and func.id == "read_base") or (
        isinstance(func, ast.Attribute) and func.attr == "read_base")


def _strings(value: ast.expr) -> list[str]:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return [value.value]
    if isinstance(value, (ast.List, ast.Tuple)):
        return [e.value for e in value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _module_file(file: Path, module: str, level: int, root: Path | None) -> Path | None:
    parts = [p for p in module.split(".") if p]
    if level:
        base = file.parent
        for _ in range(level - 1):
            base = base.parent
    elif parts[:2] == ["opencompass", "configs"]:
        if root is None:
            from .python import find_package_root

            root = find_package_root(file)
        if root is None:
            return None
        base, parts = root, parts[1:]
    else:
        return None
    target = base.joinpath(*parts)
    for candidate in (target.with_suffix(".py"), target / "__init__.py"):
        if candidate.is_file():
            return candidate.resolve()
    return None
