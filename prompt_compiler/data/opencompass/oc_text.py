"""Text some loaders take from OpenCompass's own source (prompts written in its package).

This project does not ship OpenCompass's sentences: a loader that puts them in its rows is read
natively only where an ``opencompass`` package can be found on the import path (found through
its files, never imported; ``pip install --no-deps opencompass==0.5.4`` is enough), and its
text is read from the source with :mod:`ast`. Without it, or when the source is not shaped as
expected, the rows come from OpenCompass's own loader (:class:`.registry.NotNative`).
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from .registry import NotNative

__all__ = ["filled", "module_strings", "package_file", "source_tree"]


def package_file(*parts: str) -> Path:
    """The file ``opencompass/<parts>`` of the package on the import path.

    Raises:
        NotNative: No such package or file.
    """
    try:
        spec = importlib.util.find_spec("opencompass")
    except (ImportError, ValueError):
        spec = None
    for folder in (spec.submodule_search_locations or ()) if spec is not None else ():
        candidate = Path(folder).joinpath(*parts)
        if candidate.is_file():
            return candidate
    raise NotNative(f"its prompt is OpenCompass's text (opencompass/{'/'.join(parts)}), and "
                    "no opencompass package is on the import path")


@lru_cache(maxsize=8)
def source_tree(file: Path) -> ast.Module:
    """The parsed source of ``file``.

    Raises:
        NotNative: It cannot be read or parsed.
    """
    try:
        return ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError) as exc:
        raise NotNative(f"{file}: cannot read its text ({type(exc).__name__})") from None


def module_strings(file: Path) -> dict[str, str]:
    """Every ``NAME = '<string>'`` at the top of ``file``."""
    found: dict[str, str] = {}
    for node in source_tree(file).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            found[node.targets[0].id] = node.value.value
    return found


def filled(node: ast.expr, values: Mapping[str, str], where: str) -> str | list[str]:
    """A text expression of OpenCompass's source filled with ``values``, never executed:
    literals, f-strings of names in ``values`` (no conversion or format), ``+`` of texts, and a
    tuple of texts (a list, as a ``Dataset`` holds it).

    Raises:
        NotNative: Another kind of expression (``where`` names the source).
    """
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(filled(part, values, where)) for part in node.values)
    if (isinstance(node, ast.FormattedValue) and isinstance(node.value, ast.Name)
            and node.value.id in values and node.conversion == -1 and node.format_spec is None):
        return values[node.value.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = filled(node.left, values, where), filled(node.right, values, where)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    if isinstance(node, ast.Tuple):
        return [str(filled(item, values, where)) for item in node.elts]
    raise NotNative(f"{where}: text written as {ast.unparse(node)[:40]!r}, which this project "
                    "does not read")

