"""The builtins a Python config runs with: a fixed table of the safe ones and stand-ins.

``open`` reads a regular file in or below the reading config's own folder (bounded, never a
link out of it, read only), ``import`` gives ``opencompass.*`` placeholders and small
read-only stand-ins for ``os``/``os.path``, ``copy``, ``math``, ``functools``, ``itertools``
and ``typing`` (anything else is an error), ``os.environ`` and ``os.getenv`` read the real
environment, read only (each name read is noted on the :class:`~.budget.Guard`, for the
manifest), ``eval`` runs an expression under the same rules (:mod:`.check`), ``globals()``
and ``locals()`` hide the ``__`` names, ``range``, ``map``, ``filter`` and friends iterate in
Python (so each item is counted), ``set`` keeps insertion order (the same on every run).
Attribute reads go through :func:`_attr`, which refuses private and frame names at run time
and turns ``str.format``/``format_map`` into the names-only formatter of
:mod:`prompt_compiler.safety.format_guard`. A config's code (and what its ``eval`` reads)
runs through :func:`run`, with these builtins.
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import io
import math
import os
import posixpath
import stat
import sys
import types
import typing
from collections.abc import Callable, Iterator, Mapping, MutableSet
from typing import Any

from ...errors import ConfigError, LimitError
from ...safety.format_guard import FormatRefused, safe_format
from .budget import (
    Guard,
    config_line,
    guarded_lshift,
    guarded_mul,
    guarded_pow,
    refuse,
    tick,
)
from .check import PLAIN_BUILTINS, REPLACED_BUILTINS, bad_attr, bad_name, compile_config

__all__ = ["SAFE_BUILTINS", "run", "safe_globals"]

_MAX_READ_BYTES = 64 << 20
_GUARD_MODULES = frozenset({__name__, Guard.__module__, compile_config.__module__})


_LAZY = frozenset({"LazyObject", "LazyAttr"})


def _attr(obj: Any, name: str) -> Any:
    kind = type(obj)
    if (bad_attr(name)
            or (name.startswith("_") and kind.__module__ in _GUARD_MODULES)  # the guards' state
            or (name == "build" and (kind.__name__ in _LAZY or obj in _LAZY_CLASSES))):
        where = config_line()  # (a lazy import's build() would import its module for real)
        refuse(ConfigError(f"{where + ': ' if where else ''}the attribute .{name[:60]} "
                            "(not available in a config)"))
    if name in ("format", "format_map") and (isinstance(obj, str) or obj is str):
        return _formatter(obj, name)
    return getattr(obj, name)


def _formatter(obj: Any, name: str) -> Callable[..., str]:
    def fmt(*args: Any, **kwargs: Any) -> str:
        if obj is str:  # str.format(template, ...)
            if not args or not isinstance(args[0], str):
                raise TypeError(f"descriptor '{name}' needs a str")
            template, args = args[0], args[1:]
        else:
            template = obj
        if name == "format_map":
            if len(args) != 1 or kwargs:
                raise TypeError("format_map() takes exactly one argument")
            mapping = args[0]
            args, kwargs = (), dict(mapping)
        try:
            return safe_format(template, *args, **kwargs)
        except FormatRefused as exc:
            where = config_line()
            refuse(ConfigError(f"{where + ': ' if where else ''}{exc}"))
    return fmt


def _getattr(obj: Any, name: Any, *default: Any) -> Any:
    if not isinstance(name, str):
        raise TypeError("attribute name must be string")
    try:
        return _attr(obj, name)
    except AttributeError:
        if default:
            return default[0]
        raise


class _Range:
    """``range``, iterated in Python so that the guard counts every item."""

    __slots__ = ("_range",)

    def __init__(self, *args: Any) -> None:
        self._range = range(*args)

    def __iter__(self) -> Iterator[int]:
        for item in self._range:
            tick()
            yield item

    def __reversed__(self) -> Iterator[int]:
        for item in reversed(self._range):
            tick()
            yield item

    def __len__(self) -> int:
        return len(self._range)

    def __getitem__(self, index: Any) -> Any:
        got = self._range[index]
        if isinstance(got, range):
            wrapped = _Range()
            wrapped._range = got
            return wrapped
        return got

    def __contains__(self, item: object) -> bool:
        return item in self._range

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Range) and self._range == other._range

    def __hash__(self) -> int:
        return hash(self._range)

    def __repr__(self) -> str:
        return repr(self._range)

    def __deepcopy__(self, memo: dict[int, Any]) -> _Range:
        return self

    @property
    def start(self) -> int:
        return self._range.start

    @property
    def stop(self) -> int:
        return self._range.stop

    @property
    def step(self) -> int:
        return self._range.step

    def index(self, value: int) -> int:
        return self._range.index(value)

    def count(self, value: int) -> int:
        return self._range.count(value)


_Range.__name__ = _Range.__qualname__ = "range"  # as the values it stands for are named


class _OrderedSet(MutableSet[Any]):
    """``set`` in a config: the same operations, iterated in the order items were added.

    Python's own sets iterate strings in an order that changes with ``PYTHONHASHSEED``, so
    ``list({'b', 'a'})`` (OpenCompass's calm config does this) would differ from run to
    run; a config's sets keep insertion order instead."""

    __slots__ = ("_items",)

    def __init__(self, iterable: Any = ()) -> None:
        self._items: dict[Any, None] = dict.fromkeys(iterable)

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def add(self, item: Any) -> None:
        self._items[item] = None

    def discard(self, item: Any) -> None:
        self._items.pop(item, None)

    def update(self, *iterables: Any) -> None:
        for iterable in iterables:
            self._items.update(dict.fromkeys(iterable))

    def union(self, *iterables: Any) -> _OrderedSet:
        result = type(self)(self)
        result.update(*iterables)
        return result

    def intersection(self, *iterables: Any) -> _OrderedSet:
        result = type(self)(self)
        for iterable in iterables:
            other = _OrderedSet(iterable)
            result = type(self)(x for x in result if x in other)
        return result

    def difference(self, *iterables: Any) -> _OrderedSet:
        result = type(self)(self)
        for iterable in iterables:
            for item in iterable:
                result.discard(item)
        return result

    def issubset(self, other: Any) -> bool:
        return all(x in _OrderedSet(other) for x in self)

    def issuperset(self, other: Any) -> bool:
        return all(x in self for x in other)

    def copy(self) -> _OrderedSet:
        return type(self)(self)

    def __repr__(self) -> str:
        if not self._items:
            return f"{type(self).__name__}()"
        inner = ", ".join(map(repr, self._items))
        return f"{{{inner}}}" if type(self).__name__ == "set" else f"frozenset({{{inner}}})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (_OrderedSet, set, frozenset)):
            return len(self) == len(other) and all(x in other for x in self)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class _OrderedFrozenSet(_OrderedSet):
    """``frozenset`` in a config (hashable, no ``add``)."""

    __slots__ = ()

    def add(self, item: Any) -> None:
        raise AttributeError("'frozenset' object has no attribute 'add'")

    def discard(self, item: Any) -> None:
        raise AttributeError("'frozenset' object has no attribute 'discard'")

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self._items))


_OrderedSet.__name__ = _OrderedSet.__qualname__ = "set"
_OrderedFrozenSet.__name__ = _OrderedFrozenSet.__qualname__ = "frozenset"


def _map(function: Callable[..., Any], *iterables: Any) -> Iterator[Any]:
    for items in zip(*iterables):  # noqa: B905 - map's own semantics
        tick()
        yield function(*items)


def _filter(function: Callable[[Any], Any] | None, iterable: Any) -> Iterator[Any]:
    for item in iterable:
        tick()
        if (function(item) if function is not None else item):
            yield item


def _python_key(key: Any) -> Any:
    if key is None or isinstance(key, types.FunctionType):
        return key
    return lambda item: tick() and key(item)  # each call counted


def _sorted(iterable: Any, *, key: Any = None, reverse: bool = False) -> list[Any]:
    return sorted(iterable, key=_python_key(key), reverse=reverse)


def _min(*args: Any, **kwargs: Any) -> Any:
    if "key" in kwargs:
        kwargs["key"] = _python_key(kwargs["key"])
    return min(*args, **kwargs)


def _max(*args: Any, **kwargs: Any) -> Any:
    if "key" in kwargs:
        kwargs["key"] = _python_key(kwargs["key"])
    return max(*args, **kwargs)


def _print(*args: Any, **kwargs: Any) -> None:
    """``print`` in a config writes nothing: stdout may be ``--json`` output, and stderr
    carries the command's one error line (a config printing a thousand lines first would
    bury it)."""


class _Namespace(dict):  # type: ignore[type-arg]
    """What ``globals()``/``locals()`` return: the config's names, without the ``__`` ones.

    Deleting or setting a name changes the config's namespace, as in Python."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        super().__init__((k, v) for k, v in namespace.items()
                         if not (isinstance(k, str) and k.startswith("__")))
        self._namespace = namespace

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, str) and bad_name(key):
            refuse(ConfigError(f"setting the name {key[:60]} (not available in a config)"))
        super().__setitem__(key, value)
        self._namespace[key] = value

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self._namespace.pop(key, None)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (dict, (dict(self),))


def _globals() -> _Namespace:
    return _Namespace(sys._getframe(1).f_globals)


def _locals() -> _Namespace:
    frame = sys._getframe(1)
    return _Namespace(frame.f_locals)


def _read_env(key: Any) -> str | None:
    """One environment variable, as the config reads it; the name is noted on the load's
    :class:`Guard` (the manifest records it, with a sha256 of the value)."""
    if not isinstance(key, str):
        raise TypeError(f"str expected, not {type(key).__name__}")
    value = os.environ.get(key)
    guard = Guard.active()
    if guard is not None:
        guard.environment[key] = value
    return value


class _Environ(Mapping[str, str]):
    """``os.environ`` in a config: the process's environment, read only, as OpenCompass's
    configs see it; every name read is noted (:attr:`Guard.environment`)."""

    def __getitem__(self, key: str) -> str:
        value = _read_env(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return _read_env(key) is not None

    def __iter__(self) -> Iterator[str]:
        names = sorted(os.environ)
        for name in names:
            _read_env(name)
        return iter(names)

    def __len__(self) -> int:
        return len(os.environ)

    def __repr__(self) -> str:  # never the values (they may be secrets)
        return f"environ({len(os.environ)} variables)"

    def __setitem__(self, key: str, value: Any) -> None:
        raise TypeError("os.environ is read-only in a config (set the variable before "
                        "running compile-prompts)")

    __delitem__ = __setitem__


def _getenv(key: str, default: Any = None) -> Any:
    value = _read_env(key)
    return default if value is None else value


class _Module:
    """A read-only stand-in for a module: only the names given."""

    def __init__(self, name: str, names: dict[str, Any]) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_names", types.MappingProxyType(names))

    def __getattr__(self, name: str) -> Any:
        names = object.__getattribute__(self, "_names")
        if name in names:
            return names[name]
        modname = object.__getattribute__(self, "_name")
        raise AttributeError(f"{modname}.{name} is not available in a config (it offers "
                             f"{', '.join(sorted(names))})")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{object.__getattribute__(self, '_name')} is read-only")

    def __repr__(self) -> str:
        return f"<module {object.__getattribute__(self, '_name')!r}>"

    def __deepcopy__(self, memo: dict[int, Any]) -> _Module:
        return self


def _product(*iterables: Any, repeat: int = 1) -> Iterator[tuple[Any, ...]]:
    """``itertools.product``, each item counted."""
    pools = [tuple(pool) for pool in iterables] * repeat
    result: list[tuple[Any, ...]] = [()]
    for pool in pools:
        grown = []
        for head in result:
            for item in pool:
                tick()
                grown.append((*head, item))
        result = grown
    yield from result


def _chain(*iterables: Any) -> Iterator[Any]:
    """``itertools.chain``, each item counted."""
    for iterable in iterables:
        for item in iterable:
            tick()
            yield item


_OS_PATH = _Module("os.path", {
    "join": posixpath.join if os.sep == "/" else os.path.join,
    "dirname": os.path.dirname, "basename": os.path.basename, "splitext": os.path.splitext,
    "split": os.path.split, "normpath": os.path.normpath, "isabs": os.path.isabs,
    "sep": os.sep, "extsep": os.extsep})
_MATH_UNSAFE = frozenset({"factorial", "comb", "perm", "prod"})
_STAND_INS: dict[str, _Module] = {
    "os": _Module("os", {"path": _OS_PATH, "sep": os.sep, "environ": _Environ(),
                         "getenv": _getenv, "linesep": os.linesep}),
    "os.path": _OS_PATH,
    "copy": _Module("copy", {"copy": copy.copy, "deepcopy": copy.deepcopy}),
    "math": _Module("math", {n: getattr(math, n) for n in dir(math)
                             if not n.startswith("_") and n not in _MATH_UNSAFE}
                    | {"pow": math.pow}),
    "sys": _Module("sys", {"maxsize": sys.maxsize}),
    "itertools": _Module("itertools", {"product": _product, "chain": _chain}),
    "functools": _Module("functools", {"reduce": functools.reduce,
                                       "partial": functools.partial}),
    "typing": _Module("typing", {n: getattr(typing, n) for n in (
        "Any", "Dict", "List", "Optional", "Tuple", "Union", "Set", "Callable", "Sequence",
        "Mapping", "Iterable")}),
}


def _import(name: str, globals: Any = None, locals: Any = None,  # noqa: A002
            fromlist: Any = (), level: int = 0) -> Any:
    """``import`` in a config: opencompass placeholders, mmengine's read_base, stand-ins."""
    top = name.split(".")[0]
    if level == 0 and top == "opencompass":
        return __import__(name, globals, locals, fromlist, level)
    if level == 0 and name in ("mmengine.config", "mmengine") and fromlist:
        if name == "mmengine" and list(fromlist) == ["Config"]:
            return _Module("mmengine", {"Config": _no_config})
        return _Module("mmengine.config", {"read_base": _read_base, "Config": _no_config})
    if level == 0 and name in _STAND_INS:
        if not fromlist and "." in name:
            return _STAND_INS[top]
        return _STAND_INS[name]
    where = config_line()
    what = ("." * level) + name
    refuse(ConfigError(
        f"{where + ': ' if where else ''}import {what or '.'}: a config may import "
        "opencompass.*, mmengine.config's read_base, base configs (inside `with "
        "read_base():`) and " + ", ".join(sorted(_STAND_INS)) + " (in part)"))


def _read_base() -> Any:
    import contextlib

    return contextlib.nullcontext()


def _no_config(*_: Any, **__: Any) -> Any:
    refuse(ConfigError("mmengine's Config is not available in a config"))


def _open(file: Any, mode: str = "r", *args: Any, encoding: str | None = None,
          **kwargs: Any) -> io.IOBase:
    """``open`` for reading a file in or below the calling config's own folder."""
    frame = sys._getframe(1)
    reader = frame.f_code.co_filename
    where = f"line {frame.f_lineno}"
    if not isinstance(mode, str) or mode not in ("r", "rt", "rb", "tr", "br"):
        refuse(ConfigError(f"{where}: open(..., {mode!r}): a config may only read files"))
    if not isinstance(file, str):
        refuse(ConfigError(f"{where}: open() takes a file path in a config"))
    folder = os.path.realpath(os.path.dirname(reader))
    path = file if os.path.isabs(file) else os.path.join(os.getcwd(), file)
    real = os.path.realpath(path)
    if os.path.commonpath([folder, real]) != folder:
        refuse(ConfigError(f"{where}: open({file[:200]!r}): a config may only read files in "
                            f"or below its own folder ({folder})"))
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, file) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            refuse(ConfigError(f"{where}: open({file[:200]!r}): not a regular file"))
        if info.st_size > _MAX_READ_BYTES:
            refuse(LimitError(f"{where}: open({file[:200]!r}): {info.st_size:,} bytes; a "
                               f"config may read files of up to {_MAX_READ_BYTES:,} bytes"))
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            data = fh.read(_MAX_READ_BYTES + 1)
    finally:
        if fd >= 0:
            os.close(fd)
    if "b" in mode:
        return io.BytesIO(data)
    return io.StringIO(data.decode(encoding or "utf-8", kwargs.get("errors") or "strict"))


def _eval(source: Any, globals: Any = None, locals: Any = None) -> Any:  # noqa: A002
    """``eval`` of an expression string, checked and guarded as the config itself."""
    if not isinstance(source, str):
        refuse(ConfigError("eval() in a config takes an expression string"))
    frame = sys._getframe(1)
    display = os.path.basename(frame.f_code.co_filename)
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise SyntaxError(f"eval(): {exc.msg}") from None
    code = compile_config(tree, frame.f_code.co_filename, display, "eval")
    if locals is None and globals is None:
        locals = frame.f_locals
    return run(code, frame.f_globals if globals is None else dict(globals), locals)


def _isinstance(obj: Any, classinfo: Any) -> bool:
    if classinfo is _Range or (isinstance(classinfo, tuple) and range in classinfo):
        return isinstance(obj, (range, _Range)) or isinstance(obj, classinfo)
    if classinfo is range:
        return isinstance(obj, (range, _Range))
    return isinstance(obj, classinfo)


_REPLACEMENTS: dict[str, Any] = {
    "range": _Range, "map": _map, "filter": _filter, "sorted": _sorted, "min": _min,
    "max": _max, "print": _print, "globals": _globals, "locals": _locals, "open": _open,
    "eval": _eval, "getattr": _getattr, "pow": guarded_pow, "isinstance": _isinstance,
    "set": _OrderedSet, "frozenset": _OrderedFrozenSet,
}
assert _REPLACEMENTS.keys() == REPLACED_BUILTINS  # (the check allows exactly these)
SAFE_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name) for name in PLAIN_BUILTINS if hasattr(builtins, name)}
SAFE_BUILTINS.update(_REPLACEMENTS)
SAFE_BUILTINS.update({  # what the rewrite (check.py) calls
    "__import__": _import, "__pc_attr": _attr, "__pc_pow": guarded_pow, "__pc_mul": guarded_mul,
    "__pc_lshift": guarded_lshift, "__name__": "builtins",  # (what a config sees under mmengine)
    "__pc_set": _OrderedSet,
})


def safe_globals(**names: Any) -> dict[str, Any]:
    """A namespace for a checked, rewritten config: ``names`` plus the safe builtins."""
    return {"__builtins__": SAFE_BUILTINS, **names}


def run(code: types.CodeType, scope: dict[str, Any], local_scope: Any = None) -> Any:
    """Run config code compiled by :func:`~.check.compile_config` in ``scope`` (its globals),
    with the safe builtins: the one place a config's code runs (both loaders); the value of
    an expression (``eval`` mode), else None."""
    scope["__builtins__"] = SAFE_BUILTINS
    return eval(code, scope, scope if local_scope is None else local_scope)  # noqa: S307



def _inert_class(name: str) -> Any:
    """The stand-in for a class a config defines: a placeholder class named
    ``config.<name>`` (a ``type=`` naming it reads as that name)."""
    from .shim import _make_placeholder

    return _make_placeholder(f"config.{name}")


SAFE_BUILTINS["__pc_tick"] = tick
SAFE_BUILTINS["__pc_class"] = _inert_class


def _lazy_classes() -> tuple[type, ...]:
    """The lazy-import classes (ours and mmengine's): their ``build`` is refused."""
    from .mm_values import LazyAttr, LazyObject

    found: list[type] = [LazyObject, LazyAttr]
    lazy = sys.modules.get("mmengine.config.lazy")
    if lazy is not None:
        found += [lazy.LazyObject, lazy.LazyAttr]
    return tuple(found)


class _LazyClasses:
    """``obj in _LAZY_CLASSES``: whether ``obj`` is one of :func:`_lazy_classes`."""

    def __contains__(self, obj: object) -> bool:
        return isinstance(obj, type) and obj in _lazy_classes()


_LAZY_CLASSES = _LazyClasses()
