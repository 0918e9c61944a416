"""Our own loader of OpenCompass-style Python configs: mmengine's ``Config``, without mmengine.

Importing mmengine costs a quarter of a second before any prompt is built, so the common
shapes of Python config are executed here instead, with the same result as
``Config.fromfile`` (as :mod:`.load` reads it):

* **lazy-import configs** (``with read_base():`` plus ``from opencompass... import X``;
  mmengine picks this mode when a file imports anything that is not in the standard
  library). The one top-level ``with read_base():`` block names base configs (relative
  ``from .x import y``, or ``from opencompass.configs.x import y`` against the package
  root); each base is loaded the same way, recursively, into a :class:`ConfigDict`, and
  the names imported from it are bound *before* the file runs. Every other import of a
  non-standard module becomes a :class:`LazyObject` bound where the import stood;
  ``import a.b`` lines are gathered into one ``a = LazyObject([...])`` at the top. The file
  then runs with ``LazyObject`` and ``__file__`` as its only predefined globals.
* **plain configs** (only standard-library imports, no ``_base_``): run with ``_base_``
  as the only predefined global (no ``__file__``), functions and modules dropped, values
  deep-copied.

Values pulled in from a base config are :class:`~.mm_values.ConfigDict` objects, which
behave as mmengine's do (see :mod:`.mm_values`), so config code that edits them sees what
it would see under mmengine. Imported names are reported so that they can be left out of
the result.

Everything else raises :class:`NeedsMmengine` *before or instead of* guessing:
``_base_`` inheritance, ``{{fileDirname}}``-style substitutions, imports inside functions
or blocks, a second ``with``, ``custom_imports``, absolute base imports of packages other
than ``opencompass``, a ``ConfigDict`` method this module does not model, and any error
while loading (so that mmengine reports it, word for word as before). The caller then
loads the file with mmengine. ``tools/pyconfig_sameness.py`` loads a corpus both ways
and compares.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import os
import re
import sys
import threading
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ...errors import ConfigError, PromptCompilerError
from .check import base_tree, check, compile_config
from .mm_values import ConfigDict, LazyAttr, LazyObject, NeedsMmengine
from .mm_values import to_config_dict as _to_config_dict
from .stand_ins import run, safe_globals

__all__ = [
    "ConfigDict",
    "LazyAttr",
    "LazyObject",
    "LoadedConfig",
    "Bases",
    "NeedsMmengine",
    "load",
    "noted",
]

_MAX_DEPTH = 64
"""Base configs nested deeper than this (a cycle, most likely) are left to mmengine."""

_PYTHON_ROOT = os.path.dirname(os.path.dirname(sys.executable))
_SYSTEM_PYTHON = "/usr/lib/python"
_RESERVED_KEYS = frozenset({"filename", "text", "pretty_text", "env_variables"})
# Text mmengine substitutes before running a plain config ({{ fileDirname }}, {{$ENV:x}},
# {{ _base_.x }}): such files are left to mmengine.
_SUBSTITUTIONS = (
    r"\{\{\s*(?:fileDirname|fileBasename|fileBasenameNoExtension|fileExtname)\s*\}\}",
    r"\{\{['\"]?\s*\$\w+\s*:\s*(?:\S+\s*)?['\"]?\}\}",  # mmengine's \s*\S*?\s*, linear
    r"\{\{\s*_base_\.[\w.]+\s*\}\}",
)


Bases = list[tuple[str, dict[str, Any]]]
"""Each base config loaded, deepest first: its file and its variables as they were when it
finished loading (:func:`noted`)."""



def noted(variables: Any) -> dict[str, Any]:
    """A base config's top-level lists as they are now, each dict in them copied (config
    code run later may change them): what :func:`~..origins.defined_at` reads."""
    return {name: [dict(dict.items(entry)) if isinstance(entry, dict) else entry
                   for entry in value]
            for name, value in (dict.items(variables) if isinstance(variables, dict) else ())
            if isinstance(value, (list, tuple))}


# --------------------------------------------------------------------------- loading


class LoadedConfig:
    """A loaded config: its variables and the names that were imported rather than set."""

    __slots__ = ("imported", "variables")

    def __init__(self, variables: dict[str, Any], imported: frozenset[str]) -> None:
        self.variables = variables
        self.imported = imported


def load(filename: str, tree: ast.Module | None = None,
         bases: Bases | None = None, roots: Sequence[str] = ()) -> LoadedConfig:
    """Run the config at ``filename`` as ``mmengine.Config.fromfile(filename)`` would.

    Call it with the ``opencompass`` shim active (as the mmengine path is), so that
    ``opencompass.configs`` base imports resolve the same way.

    Args:
        filename: The config path, exactly as mmengine would be given it (it becomes
            ``__file__`` and the base of relative imports).
        tree: The already parsed file, if at hand.
        bases: Receives each base config's file and variables as that base finishes
            loading (:func:`noted`).
        roots: The folders base configs may come from
            (:func:`~.check.check_base`).

    Raises:
        NeedsMmengine: The config is outside what this loader models, or loading failed.
    """
    try:
        if tree is None:
            tree = ast.parse(_read(filename))
        modules = _ModuleKinds()
        if _is_lazy_import(tree, modules):
            variables, imported = _load_lazy(filename, tree, modules, (), bases, roots)
            variables = _to_config_dict(variables)
        else:
            variables, imported = _load_plain(filename, tree, roots), frozenset()
    except (NeedsMmengine, PromptCompilerError, MemoryError):
        raise
    except Exception as exc:  # an error: mmengine reports it, in its words
        raise NeedsMmengine(f"{type(exc).__name__}: {exc}") from exc
    if _RESERVED_KEYS & variables.keys():
        raise NeedsMmengine("a reserved key")
    return LoadedConfig(variables, imported)


def _read(filename: str) -> str:
    with open(filename, encoding="utf-8") as fh:
        return fh.read()


class _ModuleKinds:
    """Whether a module counts as standard library, as mmengine decides it (cached)."""

    def __init__(self) -> None:
        self._cache: dict[str, bool] = {}

    def builtin(self, name: str) -> bool:
        """mmengine imports these for real; any other import becomes a lazy object.

        Standard library means: a module of ``sys.stdlib_module_names``, or found, and its
        file is frozen, or lies below the interpreter's prefix or ``/usr/lib/python`` and not
        in a ``site-packages`` or ``dist-packages`` folder. A relative name is never standard
        library. (mmengine itself only checks where the file lies, so in a virtual environment
        on a Python installed elsewhere, as pyenv and uv make them, ``copy`` would count as
        third-party; :func:`stdlib_as_builtin` gives it the same rule as here.)
        """
        if name.startswith("."):
            return False
        if name.startswith("mmengine.config") or name in sys.builtin_module_names:
            return True
        top = name.split(".")[0]
        if top in sys.stdlib_module_names:
            return True
        found = self._cache.get(top)
        if found is None:
            found = self._cache[top] = _stdlib_origin(top)
        return found


@contextmanager
def stdlib_as_builtin() -> Iterator[None]:
    """While active, mmengine's ``Config`` counts every standard-library module as built-in
    (imported for real), as :meth:`_ModuleKinds.builtin` does, wherever the interpreter's
    files lie: a config's ``from copy import deepcopy`` then works as it does in the
    environments OpenCompass is installed in (conda, a system Python)."""
    from mmengine.config import config as mm_config  # type: ignore[import-untyped,unused-ignore]
    from mmengine.config import utils as mm_utils  # type: ignore[import-untyped,unused-ignore]

    original = mm_utils._is_builtin_module

    def is_builtin(module_name: str) -> bool:
        if not module_name.startswith(".") and \
                module_name.split(".")[0] in sys.stdlib_module_names:
            return True
        return bool(original(module_name))

    with _PATCH_LOCK:
        mm_utils._is_builtin_module = is_builtin
        mm_config._is_builtin_module = is_builtin
        try:
            yield
        finally:
            mm_utils._is_builtin_module = original
            mm_config._is_builtin_module = original


_PATCH_LOCK = threading.RLock()


def _stdlib_origin(top: str) -> bool:
    spec = importlib.util.find_spec(top)
    origin: str | None = None if spec is None else getattr(spec, "origin", None)
    if origin is None:
        return False
    if origin == "frozen":
        return True
    origin = os.path.abspath(origin)
    if "site-package" in origin or "dist-package" in origin:
        return False
    return origin.startswith((_PYTHON_ROOT, _SYSTEM_PYTHON))


def _is_lazy_import(tree: ast.Module, modules: _ModuleKinds) -> bool:
    """Which of mmengine's two modes reads this file (``_base_`` files are not ours)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "_base_":
            raise NeedsMmengine("_base_")
    for node in ast.walk(tree):  # the same order as mmengine's check: the first hit decides
        if isinstance(node, ast.With):
            if not _is_read_base(node):
                raise NeedsMmengine("a with block before any import")  # mmengine refuses it
            return True
        if isinstance(node, ast.ImportFrom):
            if node.level:
                return True
            if node.module == "mmengine" and [a.name for a in node.names] == ["Config"]:
                continue
            if isinstance(node.module, str) and not modules.builtin(node.module):
                return True
        if isinstance(node, ast.Import) and any(not modules.builtin(a.name) for a in node.names):
            return True
    return False


def _load_plain(filename: str, tree: ast.Module, roots: Sequence[str]) -> dict[str, Any]:
    """A config without base files or non-standard imports (mmengine's classic mode)."""
    source = _read(filename)
    if "{{" in source and any(re.search(pattern, source) for pattern in _SUBSTITUTIONS):
        raise NeedsMmengine("{{ }} substitution")
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                a.name for a in node.names]
            if any(n.split(".")[0] == "mmengine" for n in names):
                raise NeedsMmengine("imports mmengine")
    path = os.path.abspath(os.path.expanduser(filename))
    namespace: dict[str, Any] = safe_globals(_base_=ConfigDict())
    run(compile_config(tree, path, path, roots=roots), namespace)
    found = {key: value for key, value in namespace.items()
             if key != "_base_" and not key.startswith("__")
             and not isinstance(value, (types.FunctionType, types.ModuleType))}
    if "_deprecation_" in found or found.get("custom_imports"):
        raise NeedsMmengine("_deprecation_ or custom_imports")
    found = _rebuilt(copy.deepcopy(found))
    return {key: ConfigDict(value) if isinstance(value, dict) else value
            for key, value in found.items()}


def _rebuilt(value: Any) -> Any:
    """Sequences re-built as plain lists and tuples (mmengine's base-variable pass)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (list, tuple, dict)):
                value[key] = _rebuilt(item)
        return value
    if isinstance(value, tuple):
        return tuple(_rebuilt(item) for item in value)
    if isinstance(value, list):
        return [_rebuilt(item) for item in value]
    return value


def _load_lazy(filename: str, tree: ast.Module, modules: _ModuleKinds,
               stack: tuple[str, ...], bases: Bases | None = None, roots: Sequence[str] = (),
               ) -> tuple[dict[str, Any], frozenset[str]]:
    """A lazy-import config (and, recursively, its bases): its globals and imported names."""
    real = os.path.realpath(filename)
    if real in stack:
        cycle = [os.path.basename(f) for f in (*stack[stack.index(real):], real)]
        raise ConfigError(f"base configs import each other in a cycle: {' -> '.join(cycle)}")
    if len(stack) > _MAX_DEPTH:
        raise NeedsMmengine("base configs nested too deep")
    check(tree, filename)
    body, modules_read = _splice_read_base(tree)
    loaded: dict[str, Any] = {}
    imported: set[str] = set()
    for base in modules_read:
        path = _base_path(filename, base)
        base_vars, base_imported = _load_lazy(path, base_tree(path, roots), modules,
                                              (*stack, real), bases, roots)
        imported |= base_imported
        loaded[base] = _to_config_dict(base_vars)
    bound: dict[str, Any] = {}  # names imported from base configs
    statements: list[ast.stmt] = []
    gathered: dict[str, tuple[int, list[str]]] = {}
    for node in body:
        if isinstance(node, ast.ImportFrom):
            statements += _import_from(node, filename, bound, loaded, imported, modules)
        elif isinstance(node, ast.Import):
            statements += _import(node, filename, imported, modules, gathered)
        else:
            statements.append(node)
    for top, (lineno, names) in gathered.items():  # ``import a.b``: one lazy ``a``, bound first
        statements.insert(0, _lazy_assign(top, [names], f"{filename}, line {lineno}", None))
    imported |= gathered.keys()
    module = ast.Module(body=statements, type_ignores=tree.type_ignores)
    module._pc_checked = True  # type: ignore[attr-defined]  # its nodes: tree's and ours
    code = compile_config(module, filename, filename, roots=roots)
    namespace: dict[str, Any] = safe_globals(LazyObject=LazyObject, __file__=filename)
    namespace.update(bound)
    run(code, namespace)
    variables = {key: value for key, value in namespace.items()
                 if not key.startswith("__") and key != "LazyObject"}
    if stack and bases is not None:  # a base config, as it finishes loading
        bases.append((filename, noted(variables)))
    return variables, frozenset(imported)


def _is_read_base(node: ast.With) -> bool:
    expr = node.items[0].context_expr
    return (len(node.items) == 1 and isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Name) and expr.func.id == "read_base")


def _splice_read_base(tree: ast.Module) -> tuple[list[ast.stmt], list[str]]:
    """The body with the ``with read_base():`` block's imports in its place, and their modules.

    mmengine only looks at the first top-level ``with`` (it must be ``read_base()``); ``with``
    blocks inside loops or functions run as written.
    """
    body = list(tree.body)
    blocks = [n for n in body if isinstance(n, (ast.With, ast.AsyncWith))]
    if not blocks:
        _refuse_nested_imports(body)
        return body, []
    block = blocks[0]
    if len(blocks) > 1 or not isinstance(block, ast.With) or not _is_read_base(block):
        raise NeedsMmengine("a top-level with block other than one read_base()")
    modules = []
    for stmt in block.body:
        if not isinstance(stmt, ast.ImportFrom) or stmt.module is None:
            raise NeedsMmengine("read_base() holds something other than `from x import y`")
        modules.append("." * stmt.level + stmt.module)
    at = body.index(block)
    body = body[:at] + list(block.body) + body[at + 1:]
    _refuse_nested_imports(body)
    return body, modules


def _refuse_nested_imports(body: list[ast.stmt]) -> None:
    """mmengine rewrites imports inside functions and blocks too: not modelled here."""
    for stmt in body:
        for node in ast.walk(stmt):
            if node is not stmt and isinstance(node, (ast.Import, ast.ImportFrom)):
                raise NeedsMmengine("an import inside a function or block")


def _base_path(filename: str, module: str) -> str:
    """The file of a base module, spelled as mmengine spells it (it becomes ``__file__``)."""
    level = len(module) - len(module.lstrip("."))
    if level:
        path = os.path.join(os.path.dirname(filename), *([".."] * (level - 1)),
                            module[level:].replace(".", "/") + ".py")
    else:
        parts = module.split(".")
        if len(parts) == 1 or parts[0] != "opencompass":
            raise NeedsMmengine(f"base config {module!r} outside opencompass.configs")
        spec = importlib.util.find_spec("opencompass")  # the shim: origin <root>/__init__.py
        if spec is None or spec.origin is None:
            raise NeedsMmengine("no opencompass package root")
        path = os.path.join(os.path.dirname(spec.origin), *parts[1:]) + ".py"
    if not os.path.isfile(path):
        raise NeedsMmengine(f"base config {path} not found")
    return path


def _lazy_assign(target: str, args: list[Any], location: str, node: ast.stmt | None) -> ast.stmt:
    """``target = LazyObject(*args, location=...)`` as a statement."""
    call = ast.Call(
        func=ast.Name(id="LazyObject", ctx=ast.Load()),
        args=[ast.Constant(value=a) if not isinstance(a, list)
              else ast.List(elts=[ast.Constant(value=x) for x in a], ctx=ast.Load())
              for a in args],
        keywords=[ast.keyword(arg="location", value=ast.Constant(value=location))])
    stmt = ast.Assign(targets=[ast.Name(id=target, ctx=ast.Store())], value=call)
    return ast.copy_location(stmt, node) if node is not None else stmt


def _import_from(node: ast.ImportFrom, filename: str, bound: dict[str, Any],
                 loaded: dict[str, Any], imported: set[str],
                 modules: _ModuleKinds) -> list[ast.stmt]:
    module = f"{'.' * node.level}{node.module}"
    names = [(a.name, a.asname) for a in node.names]
    if modules.builtin(module):
        if module.split(".")[0] == "mmengine":  # a real import of mmengine.config
            if module != "mmengine.config" or any(n != "read_base" for n, _ in names):
                raise NeedsMmengine(f"imports {module}")
            stand_ins: list[ast.stmt] = []
            for name, asname in names:
                imported.add(asname or name)
                stand_in = ast.Assign(
                    targets=[ast.Name(id=asname or name, ctx=ast.Store())],
                    value=ast.Attribute(value=ast.Name(id="LazyObject", ctx=ast.Load()),
                                        attr="_read_base", ctx=ast.Load()))
                stand_ins.append(ast.copy_location(stand_in, node))
            return stand_ins
        for name, asname in names:
            if name == "*":
                raise NeedsMmengine("`import *` from a module")
            imported.add(asname or name)
        return [node]
    if module in loaded:
        base = loaded[module]
        for name, asname in names:
            if name == "*":
                bound.update(base)
                return []
            bound[asname or name] = base[name]
        return []
    out = []
    for alias in node.names:
        if alias.name == "*":
            raise NeedsMmengine("`import *` from a module")
        target = alias.asname or alias.name
        imported.add(target)
        out.append(_lazy_assign(target, [module, alias.name],
                                f"{filename}, line {alias.lineno}", node))
    return out


def _import(node: ast.Import, filename: str, imported: set[str], modules: _ModuleKinds,
            gathered: dict[str, tuple[int, list[str]]]) -> list[ast.stmt]:
    if len(node.names) != 1:
        raise NeedsMmengine("several modules in one import line")
    alias = node.names[0]
    top = alias.name.split(".")[0]
    if alias.asname is not None:
        imported.add(alias.asname)
        if not modules.builtin(top):
            return [_lazy_assign(alias.asname, [alias.name],
                                 f"{filename}, line {node.lineno}", node)]
    elif not modules.builtin(alias.name):
        gathered.setdefault(top, (alias.lineno, []))[1].append(alias.name)
        return []
    if top == "mmengine":  # a real import of mmengine.config
        raise NeedsMmengine("imports mmengine")
    return [node]
