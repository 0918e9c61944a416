"""Our own loader of OpenCompass-style Python configs: mmengine's ``Config``, without mmengine.

Importing mmengine costs a quarter of a second before any prompt is built, so the common
shapes of Python config are executed here instead, with the same result as
``Config.fromfile`` (as :mod:`.pyconfig` reads it):

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

Values pulled in from a base config are :class:`ConfigDict` objects, which behave as
mmengine's do (attribute access, a recursive ``update``, ``pop`` defaulting to ``None``,
lists re-built when stored, ...), so config code that edits them sees what it would see
under mmengine. Imported names are reported so that they can be left out of the result.

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
import types
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

__all__ = [
    "ConfigDict",
    "LazyAttr",
    "LazyObject",
    "LoadedConfig",
    "NeedsMmengine",
    "load",
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
    r"\{\{['\"]?\s*\$\w+\s*:\s*\S*?\s*['\"]?\}\}",
    r"\{\{\s*_base_\.[\w.]+\s*\}\}",
)


class NeedsMmengine(BaseException):  # noqa: N818 - a signal, not an error
    """This config (or something it does) is outside what this loader models.

    A ``BaseException`` so that a config's own ``except Exception:`` cannot swallow it.
    """


# --------------------------------------------------------------------------- lazy objects


class LazyObject:
    """A name imported from a module that is never imported (``from x.y import Z``).

    Behaves as mmengine's class of the same name while a config runs: attribute access
    gives a :class:`LazyAttr`, calling it raises ``RuntimeError``, ``str()`` is the name.
    """

    def __init__(self, module: str | list[str], imported: str | None = None,
                 location: str | None = None) -> None:
        self._module: str | list[str] = module
        self._imported = imported
        self.location = location

    @property
    def module(self) -> str:
        """The module imported from (the top package for gathered ``import a.b`` lines)."""
        if isinstance(self._module, str):
            return self._module
        return self._module[0].split(".")[0]

    def qualified_name(self) -> str:
        """``module.Name`` (or the module alone), as the config's class reference."""
        return f"{self.module}.{self._imported}" if self._imported else self.module

    def build(self) -> Any:
        """Would import the object for real: left to mmengine."""
        raise NeedsMmengine("LazyObject.build")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError()

    def __deepcopy__(self, memo: dict[int, Any]) -> LazyObject:
        return LazyObject(self._module, self._imported, self.location)

    def __getattr__(self, name: str) -> LazyAttr:
        location = None if self.location is None else self.location.split(", line")[0]
        return LazyAttr(name, self, location)

    def __str__(self) -> str:
        return self._imported if self._imported is not None else self.module

    __repr__ = __str__

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__ = state


class LazyAttr:
    """An attribute of a :class:`LazyObject` (``datasets.GSM8KDataset``), never resolved."""

    def __init__(self, name: str, source: LazyObject | LazyAttr,
                 location: str | None = None) -> None:
        self.name = name
        self.source = source
        self._module: str
        if isinstance(source, LazyAttr):
            self._module = f"{source._module}.{source.name}"
        elif not isinstance(source._module, str):
            self._module = str(source)
        elif source._imported is None:
            self._module = source._module
        else:
            self._module = f"{source._module}.{source}"
        self.location = location

    @property
    def module(self) -> str:
        """The dotted path of the object this is an attribute of."""
        return self._module

    def qualified_name(self) -> str:
        """``module.name``, as the config's class reference."""
        return f"{self._module}.{self.name}"

    def build(self) -> Any:
        """Would import the object for real: left to mmengine."""
        raise NeedsMmengine("LazyAttr.build")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError()

    def __getattr__(self, name: str) -> LazyAttr:
        return LazyAttr(name, self)

    def __deepcopy__(self, memo: dict[int, Any]) -> LazyAttr:
        return LazyAttr(self.name, self.source)

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__ = state


def _read_base() -> Iterator[None]:  # pragma: no cover - never entered: the block is removed
    yield


# ``from mmengine.config import read_base`` binds this stand-in (named as mmengine's), read
# through the ``LazyObject`` global so that the config sees no extra name.
_read_base.__module__ = "mmengine.config.config"
_read_base.__name__ = _read_base.__qualname__ = "read_base"
setattr(LazyObject, "_read_base", staticmethod(_read_base))  # noqa: B010


# --------------------------------------------------------------------------- ConfigDict

# Every attribute name of mmengine's ConfigDict class: setting one as an attribute is an
# error there ("read-only"), and reading one gives the method, not a key.
_CONFIGDICT_ATTRS = frozenset(dir(dict)) | {
    "__add__", "__copy__", "__deepcopy__", "__dict__", "__getattr__", "__getnewargs__",
    "__getstate__", "__ior__", "__missing__", "__module__", "__or__", "__reduce_ex__",
    "__ror__", "__setstate__", "__weakref__", "_hook", "_to_lazy_dict", "build_lazy",
    "deepcopy", "freeze", "lazy", "merge", "to_dict", "unfreeze",
}
# ... of which these are not modelled here: a config that uses one goes to mmengine.
_UNMODELLED = frozenset({
    "_to_lazy_dict", "build_lazy", "freeze", "lazy", "merge", "to_dict", "unfreeze",
    "__getnewargs__", "__getstate__", "__setstate__", "fromkeys",
})


class ConfigDict(dict):  # type: ignore[type-arg]
    """A dict as mmengine hands base-config values to the config that imports them.

    Attribute access reads keys; storing a value turns a plain ``dict`` (or
    ``OrderedDict``) into a ConfigDict and re-builds lists and tuples; ``update`` merges
    nested dicts; ``pop`` returns ``None`` for a missing key; ``copy`` is shallow but
    re-builds lists; ``items``/``values`` return lists.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        for arg in args:
            if not arg:
                continue
            if isinstance(arg, ConfigDict):
                pairs: Any = dict.items(arg)
            elif isinstance(arg, dict):
                pairs = arg.items()
            elif isinstance(arg, tuple) and not isinstance(arg[0], tuple):
                pairs = [(arg[0], arg[1])]
            else:
                pairs = iter(arg)
            for key, value in pairs:
                self[key] = self._hook(value)
        for key, value in dict.items(kwargs):
            self[key] = self._hook(value)

    @classmethod
    def _hook(cls, item: Any) -> Any:
        if type(item) in (dict, OrderedDict):
            return cls(item)
        if isinstance(item, (list, tuple)):
            return type(item)(cls._hook(elem) for elem in item)
        return item

    def __missing__(self, name: Any) -> Any:
        raise KeyError(name)

    def __getattr__(self, name: str) -> Any:
        if name in _UNMODELLED:
            raise NeedsMmengine(f"ConfigDict.{name}")
        try:
            return self[name]
        except KeyError:
            raise AttributeError(
                f"'{self.__class__.__name__}' object has no attribute '{name}'") from None

    def __setattr__(self, name: str, value: Any) -> None:
        value = self._hook(value)
        if name in _CONFIGDICT_ATTRS:
            raise AttributeError(f"'Dict' object attribute '{name}' is read-only")
        self[name] = value

    def __delattr__(self, name: str) -> None:
        del self[name]

    def __setitem__(self, name: Any, value: Any) -> None:
        dict.__setitem__(self, name, self._hook(value))

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())

    def __copy__(self) -> ConfigDict:
        other = self.__class__()
        for key, value in dict.items(self):
            other[key] = value
        return other

    copy = __copy__

    def deepcopy(self) -> ConfigDict:
        """``copy.deepcopy(self)``."""
        return copy.deepcopy(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> ConfigDict:
        other = self.__class__()
        memo[id(self)] = other
        for key, value in dict.items(self):
            other[copy.deepcopy(key, memo)] = copy.deepcopy(value, memo)
        return other

    def get(self, key: Any, default: Any = None) -> Any:  # noqa: D102
        return dict.get(self, key, default)

    def pop(self, key: Any, default: Any = None) -> Any:  # noqa: D102
        return dict.pop(self, key, default)

    def values(self) -> list[Any]:  # type: ignore[override]  # noqa: D102
        return list(dict.values(self))

    def items(self) -> list[tuple[Any, Any]]:  # type: ignore[override]  # noqa: D102
        return list(dict.items(self))

    def update(self, *args: Any, **kwargs: Any) -> None:  # noqa: D102
        other: dict[Any, Any] = {}
        if args:
            if len(args) > 1:
                raise TypeError("update only accept one positional argument")
            for key, value in dict.items(args[0]):
                other[key] = value
        for key, value in dict(kwargs).items():
            other[key] = value
        for key, value in other.items():
            if key not in self or not isinstance(self[key], dict) or not isinstance(value, dict):
                self[key] = self._hook(value)
            else:
                self[key].update(value)

    def setdefault(self, key: Any, default: Any = None) -> Any:  # noqa: D102
        if key in self:
            return self[key]
        self[key] = default
        return default

    def __add__(self, other: Any) -> Any:
        if not self.keys():
            return other
        raise TypeError(f"unsupported operand type(s) for +: '{type(self).__name__}' and "
                        f"'{type(other).__name__}'")

    def __or__(self, other: Any) -> Any:  # mmengine returns an addict.Dict: not modelled
        raise NeedsMmengine("ConfigDict.__or__")

    def __ror__(self, other: Any) -> Any:
        raise NeedsMmengine("ConfigDict.__ror__")

    def __ior__(self, other: Any) -> ConfigDict:
        self.update(other)
        return self

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ConfigDict):
            return bool(_plain_equal(other) == _plain_equal(self))
        if isinstance(other, dict):
            return dict(dict.items(self)) == other
        return False

    __hash__ = None

    def __reduce_ex__(self, proto: Any) -> Any:
        return (self.__class__, (dict(dict.items(self)),), None, None, None, None)


def _plain_equal(value: Any) -> Any:
    """mmengine's ``to_dict()`` view used by ConfigDict equality (lazy objects as text)."""
    if isinstance(value, dict):
        return {k: _plain_equal(v) for k, v in dict.items(value)}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain_equal(v) for v in value)
    if isinstance(value, (LazyAttr, LazyObject)):
        return f"{value.module}.{value}"
    return value


def _to_config_dict(value: Any) -> Any:
    """A config's globals as mmengine stores them: every dict a ConfigDict, sequences new."""
    if isinstance(value, dict):
        out = ConfigDict()
        for key, item in value.items():
            out[key] = _to_config_dict(item)
        return out
    if isinstance(value, (tuple, list)):
        return type(value)(_to_config_dict(item) for item in value)
    return value


# --------------------------------------------------------------------------- loading


class LoadedConfig:
    """A loaded config: its variables and the names that were imported rather than set."""

    __slots__ = ("imported", "variables")

    def __init__(self, variables: dict[str, Any], imported: frozenset[str]) -> None:
        self.variables = variables
        self.imported = imported


def load(filename: str, tree: ast.Module | None = None) -> LoadedConfig:
    """Run the config at ``filename`` as ``mmengine.Config.fromfile(filename)`` would.

    Call it with the ``opencompass`` shim active (as the mmengine path is), so that
    ``opencompass.configs`` base imports resolve the same way.

    Args:
        filename: The config path, exactly as mmengine would be given it (it becomes
            ``__file__`` and the base of relative imports).
        tree: The already parsed file, if at hand.

    Raises:
        NeedsMmengine: The config is outside what this loader models, or loading failed.
    """
    try:
        if tree is None:
            tree = ast.parse(_read(filename))
        modules = _ModuleKinds()
        if _is_lazy_import(tree, modules):
            variables, imported = _load_lazy(filename, tree, modules, 0)
            variables = _to_config_dict(variables)
        else:
            variables, imported = _load_plain(filename, tree), frozenset()
    except NeedsMmengine:
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

        Standard library means: found, and its file is frozen, or lies below the
        interpreter's prefix or ``/usr/lib/python`` and not in a ``site-packages`` or
        ``dist-packages`` folder. A relative name is never standard library.
        """
        if name.startswith("."):
            return False
        if name.startswith("mmengine.config") or name in sys.builtin_module_names:
            return True
        top = name.split(".")[0]
        found = self._cache.get(top)
        if found is None:
            found = self._cache[top] = _stdlib_origin(top)
        return found


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


def _load_plain(filename: str, tree: ast.Module) -> dict[str, Any]:
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
    namespace: dict[str, Any] = {"_base_": ConfigDict()}
    exec(compile(tree, path, "exec"), namespace, namespace)  # noqa: S102 - the config itself
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
               depth: int) -> tuple[dict[str, Any], frozenset[str]]:
    """A lazy-import config (and, recursively, its bases): its globals and imported names."""
    if depth > _MAX_DEPTH:
        raise NeedsMmengine("base configs nested too deep")
    body, bases = _splice_read_base(tree)
    namespace: dict[str, Any] = {"LazyObject": LazyObject, "__file__": filename}
    loaded: dict[str, Any] = {}
    imported: set[str] = set()
    for base in bases:
        path = _base_path(filename, base)
        base_vars, base_imported = _load_lazy(path, ast.parse(_read(path)), modules, depth + 1)
        imported |= base_imported
        loaded[base] = _to_config_dict(base_vars)
    statements: list[ast.stmt] = []
    gathered: dict[str, tuple[int, list[str]]] = {}
    for node in body:
        if isinstance(node, ast.ImportFrom):
            statements += _import_from(node, filename, namespace, loaded, imported, modules)
        elif isinstance(node, ast.Import):
            statements += _import(node, filename, imported, modules, gathered)
        else:
            statements.append(node)
    for top, (lineno, names) in gathered.items():  # ``import a.b``: one lazy ``a``, bound first
        statements.insert(0, _lazy_assign(top, [names], f"{filename}, line {lineno}", None))
    imported |= gathered.keys()
    module = ast.Module(body=statements, type_ignores=tree.type_ignores)
    code = compile(ast.fix_missing_locations(module), filename, "exec")
    exec(code, namespace, namespace)  # noqa: S102 - the config itself
    variables = {key: value for key, value in namespace.items()
                 if not key.startswith("__") and key != "LazyObject"}
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


def _import_from(node: ast.ImportFrom, filename: str, namespace: dict[str, Any],
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
                namespace.update(base)
                return []
            namespace[asname or name] = base[name]
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
