"""Python configs are data: what a ``.py`` config may do, and the bounds it runs in.

A Python config is executed (OpenCompass's configs are programs: loops, comprehensions,
``read_base()``), but never as arbitrary code. Before a file runs (by our loader or by
mmengine's ``Config``, for the shapes ours leaves to it) its syntax tree is checked and
rewritten here:

* no name or attribute that starts with ``__`` (``().__class__.__bases__``,
  ``__import__``, ``__builtins__``; ``__file__`` and ``__name__`` are allowed), no frame or
  code attribute (``gi_frame``, ``f_globals``, ``mro``, ...), no ``match``, and no builtin
  outside :data:`SAFE_BUILTINS` (``exec``, ``compile``,
  ``getattr`` on private names, ``vars``, ``type``, ``input``, ``breakpoint`` ...);
* a class definition is never run: an inert stand-in named after it takes its place (a
  ``type=`` naming it reads as ``config.<name>``); a bare ``except:`` catches what
  ``except Exception:`` catches;
* every attribute read goes through :func:`_attr`, which refuses the same names at run time
  and turns ``str.format``/``format_map`` into the names-only formatter of
  :mod:`prompt_compiler.safe_format`;
* ``**``, ``*`` and ``<<`` go through :func:`_pow`, :func:`_mul` and :func:`_lshift`, which
  refuse an integer of more than 4,300 digits and a repeated string or list over the prompt
  size limit *before* computing it (``10**10**10`` would otherwise run for hours in one C call);
* the builtins are a fixed table: ``open`` reads a regular file in or below the reading
  config's own folder (bounded, never a link out of it, read only), ``import`` gives
  ``opencompass.*`` placeholders and small read-only stand-ins for ``os``/``os.path``,
  ``copy``, ``math``, ``functools`` and ``typing`` (anything else is an error), ``os.environ``
  and ``os.getenv`` read the real environment, read only (each name read is noted on the
  :class:`Guard`, for the manifest), ``eval`` runs an expression under these same rules,
  ``globals()`` and ``locals()`` hide the ``__`` names, ``range`` iterates in Python (so it
  is counted).

While a config runs, :class:`Guard` bounds it: every loop turn, comprehension item and call
of the config is a step (``PROMPT_COMPILER_MAX_CONFIG_STEPS``; counted, so the outcome does
not depend on the machine's load), CPU seconds are a far backstop
(``PROMPT_COMPILER_MAX_CONFIG_SECONDS``), and on Linux the address
space is capped at the current size plus ``PROMPT_COMPILER_MAX_CONFIG_BYTES``. Stopping is a
:class:`~prompt_compiler.errors.LimitError` (or :class:`~prompt_compiler.errors.ConfigError`)
naming the file and line, which config code cannot catch (it is raised as a
``BaseException`` until it leaves the config).
"""

from __future__ import annotations

import ast
import builtins
import collections
import copy
import functools
import io
import math
import os
import posixpath
import stat
import sys
import time
import types
import typing
from collections.abc import Callable, Iterator, Mapping, MutableSet
from typing import Any

from .. import limits
from ..errors import ConfigError, LimitError, PromptCompilerError
from ..safe_format import FormatRefused, safe_format

__all__ = ["SAFE_BUILTINS", "Guard", "Stop", "check", "check_base", "compile_config", "harden",
           "parse", "safe_globals"]

ALLOWED_DUNDERS = frozenset({"__file__", "__name__"})
FORBIDDEN_ATTRS = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "cr_frame", "cr_code", "cr_await",
    "ag_frame", "ag_code", "ag_await", "f_globals", "f_locals", "f_builtins", "f_back",
    "f_code", "f_trace", "tb_frame", "tb_next", "co_code", "co_consts", "func_globals",
    "func_code", "mro", "with_traceback",
})
MAX_INT_DIGITS = 4300
_MAX_INT_BITS = int(MAX_INT_DIGITS * math.log2(10)) + 1
_MAX_READ_BYTES = 64 << 20
_CHECK_CLOCK_EVERY = 256


class Stop(BaseException):
    """Carries a refusal through config code (an ``except Exception`` there cannot catch it)."""

    def __init__(self, error: PromptCompilerError) -> None:
        super().__init__(str(error))
        self.error = error


# --------------------------------------------------------------------------- the static check


def parse(source: str, display: str) -> ast.Module:
    """The syntax tree of a Python config's source.

    Raises:
        ConfigError: Invalid syntax, or a source Python's parser cannot hold (an expression
            nested thousands of levels deep, a file of millions of statements).
        LimitError: The source is over ``PROMPT_COMPILER_MAX_CONFIG_SOURCE_BYTES``.
    """
    limit = limits.current().config_source_bytes
    if len(source) > limit:  # (characters: at most the bytes)
        raise LimitError(f"{len(source):,} characters of Python; "
                         + limits.describe("config_source_bytes", limit, "bytes"),
                         config_path=display, hint="a config is a page of settings: put rows "
                         "in a data file (path:)")
    try:
        return ast.parse(source, filename=display)
    except SyntaxError as exc:
        where = f" at line {exc.lineno}" if exc.lineno else ""
        raise ConfigError(f"invalid Python syntax{where}: {exc.msg}",
                          config_path=display) from None
    except (RecursionError, MemoryError) as exc:
        why = ("nested too deeply" if isinstance(exc, RecursionError)
               else "too large or nested too deeply")
        raise ConfigError(f"the config is {why} for Python's parser ({type(exc).__name__})",
                          config_path=display) from None
    except ValueError as exc:  # e.g. NUL bytes in the source
        raise ConfigError(f"invalid Python source: {exc}", config_path=display) from None


def check(tree: ast.AST, display: str) -> None:
    """Refuse what no config may contain, naming the file and line.

    Raises:
        ConfigError: The first construct that is not allowed.
    """
    if getattr(tree, "_pc_checked", False):
        return
    nodes = list(_walk_outside_classes(tree))
    assigned: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            assigned.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            assigned.add(n.name)
        elif isinstance(n, ast.arg):
            assigned.add(n.arg)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            assigned.update((a.asname or a.name).split(".")[0] for a in n.names)
    for node in nodes:
        what = _refusal(node, assigned)
        if what:
            line = getattr(node, "lineno", None)
            raise ConfigError(
                f"line {line}: {what}; a Python config is read as data, not run as a program"
                if line else f"{what}; a Python config is read as data, not run as a program",
                config_path=display,
                hint="configs may assign values, loop, call functions they define and the "
                     "builtins of docs/configs.md, and import opencompass.* and base configs")
    tree._pc_checked = True  # type: ignore[attr-defined]  # (checked once per tree)


def _walk_outside_classes(tree: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` that does not enter class definitions: a class is never run (the rewrite
    puts an inert stand-in named after it in its place, see :func:`_inert_class`)."""
    todo = collections.deque([tree])
    while todo:
        node = todo.popleft()
        yield node
        if not isinstance(node, ast.ClassDef):
            todo.extend(ast.iter_child_nodes(node))


def _refusal(node: ast.AST, assigned: set[str]) -> str | None:
    if isinstance(node, ast.Match):
        return "a match statement"
    if isinstance(node, ast.Attribute) and _bad_attr(node.attr):
        return f"the attribute .{node.attr[:60]}"
    if isinstance(node, ast.Name):
        if _bad_name(node.id):
            return f"the name {node.id[:60]}"
        if (isinstance(node.ctx, ast.Load) and node.id not in assigned
                and node.id not in SAFE_BUILTINS and hasattr(builtins, node.id)):
            return f"the builtin {node.id}() (not available in a config)" if callable(
                getattr(builtins, node.id)) else f"the builtin {node.id}"
    if isinstance(node, ast.arg) and _bad_name(node.arg):
        return f"the parameter name {node.arg[:60]}"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _bad_name(node.name):
        return f"the function name {node.name[:60]}"
    if isinstance(node, ast.alias) and (_bad_name(node.name.split(".")[-1])
                                        or (node.asname and _bad_name(node.asname))):
        return f"importing the name {node.name[:60]}"
    if isinstance(node, ast.keyword) and node.arg and _bad_name(node.arg):
        return f"the keyword {node.arg[:60]}"
    return None


def _bad_name(name: str) -> bool:
    return name.startswith("__") and name not in ALLOWED_DUNDERS


def _bad_attr(name: str) -> bool:
    return name.startswith("__") or name in FORBIDDEN_ATTRS


# --------------------------------------------------------------------------- the rewrite


class _Rewrite(ast.NodeTransformer):
    """Attribute reads and the operators that can explode go through the guards."""

    _OPS: typing.ClassVar[dict[type, str]] = {ast.Pow: "__pc_pow", ast.Mult: "__pc_mul",
                                              ast.LShift: "__pc_lshift"}

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        # A class in a config (OpenCompass's summarizers define some) is only ever named as a
        # `type=`: its body, bases and decorators never run; an inert stand-in takes its name.
        stand_in = ast.Assign(
            targets=[ast.Name(id=node.name, ctx=ast.Store())],
            value=ast.Call(func=ast.Name(id="__pc_class", ctx=ast.Load()),
                           args=[ast.Constant(value=node.name)], keywords=[]))
        return ast.copy_location(stand_in, node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        # A bare `except:` catches what `except Exception:` catches: never the guards' stops.
        self.generic_visit(node)
        if node.type is None:
            node.type = ast.copy_location(ast.Name(id="Exception", ctx=ast.Load()), node)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        call = ast.Call(func=ast.Name(id="__pc_attr", ctx=ast.Load()),
                        args=[node.value, ast.Constant(value=node.attr)], keywords=[])
        return ast.copy_location(call, node)

    def _ticked(self, body: list[ast.stmt]) -> list[ast.stmt]:
        tick = ast.Expr(value=ast.Call(func=ast.Name(id="__pc_tick", ctx=ast.Load()), args=[],
                                       keywords=[]))
        return [ast.copy_location(tick, body[0]) if body else tick, *body]

    def _visit_body(self, node: ast.For | ast.AsyncFor | ast.While | ast.FunctionDef
                    | ast.AsyncFunctionDef) -> ast.AST:
        """A loop or a function: each turn (each call) of its body counts as a step."""
        self.generic_visit(node)
        node.body = self._ticked(node.body)
        return node

    visit_For = visit_AsyncFor = visit_While = _visit_body
    visit_FunctionDef = visit_AsyncFunctionDef = _visit_body

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self.generic_visit(node)
        tick = ast.Call(func=ast.Name(id="__pc_tick", ctx=ast.Load()), args=[], keywords=[])
        node.body = ast.BoolOp(op=ast.And(), values=[tick, node.body])
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        self.generic_visit(node)
        node.ifs.insert(0, ast.Call(func=ast.Name(id="__pc_tick", ctx=ast.Load()), args=[],
                                    keywords=[]))
        return node

    def visit_Set(self, node: ast.Set) -> ast.AST:
        self.generic_visit(node)
        listed = ast.List(elts=node.elts, ctx=ast.Load())
        call = ast.Call(func=ast.Name(id="__pc_set", ctx=ast.Load()), args=[listed],
                        keywords=[])
        return ast.copy_location(call, node)

    def visit_SetComp(self, node: ast.SetComp) -> ast.AST:
        self.generic_visit(node)
        listed = ast.ListComp(elt=node.elt, generators=node.generators)
        call = ast.Call(func=ast.Name(id="__pc_set", ctx=ast.Load()), args=[listed],
                        keywords=[])
        return ast.copy_location(call, node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        helper = self._OPS.get(type(node.op))
        if helper is None:
            return node
        call = ast.Call(func=ast.Name(id=helper, ctx=ast.Load()), args=[node.left, node.right],
                        keywords=[])
        return ast.copy_location(call, node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        helper = self._OPS.get(type(node.op))
        if helper is None or not isinstance(node.target, ast.Name):
            if helper is not None:  # x.a **= y, x[0] *= y: read, guard, store
                return self._augment_subscript(node, helper)
            return node
        value = ast.Call(func=ast.Name(id=helper, ctx=ast.Load()),
                         args=[ast.Name(id=node.target.id, ctx=ast.Load()), node.value],
                         keywords=[])
        assign = ast.Assign(targets=[node.target], value=value)
        return ast.copy_location(assign, node)

    def _augment_subscript(self, node: ast.AugAssign, helper: str) -> ast.AST:
        target = node.target
        load: ast.expr
        if isinstance(target, ast.Subscript):
            load = ast.Subscript(value=target.value, slice=target.slice, ctx=ast.Load())
        elif isinstance(target, ast.Attribute):
            load = ast.Attribute(value=target.value, attr=target.attr, ctx=ast.Load())
        else:
            return node
        value = ast.Call(func=ast.Name(id=helper, ctx=ast.Load()), args=[load, node.value],
                         keywords=[])
        return ast.copy_location(ast.Assign(targets=[target], value=value), node)


def harden(tree: ast.Module, display: str) -> ast.Module:
    """:func:`check` the tree, then rewrite it for :func:`safe_globals` (in place)."""
    check(tree, display)
    rewritten: ast.Module = ast.fix_missing_locations(_Rewrite().visit(tree))
    return rewritten


# --------------------------------------------------------------------------- the guards


def _refuse(error: PromptCompilerError) -> typing.NoReturn:
    """Stop the load with ``error``, at the config file whose code met it (a base config's
    refusal names the base config, not the eval config that imported it)."""
    if error.config_path is None:
        error.config_path = _base_file()
    raise Stop(error)


def _config_frame() -> types.FrameType | None:
    """The innermost frame of config code (the guards' own frames skipped)."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame


def _where() -> str:
    """``line N`` of the innermost config frame (for errors raised in guards; the file is
    the one :func:`_refuse` names)."""
    frame = _config_frame()
    return "" if frame is None else f"line {frame.f_lineno}"


def _base_file() -> str | None:
    """The file of the innermost config frame when it is not the config being loaded (a
    base config), shown relative to the working folder where it lies below it; else None."""
    frame = _config_frame()
    guard = Guard._active
    if frame is None or guard is None:
        return None
    file = frame.f_code.co_filename
    if not os.path.isfile(file) or os.path.realpath(file) == os.path.realpath(guard.display):
        return None
    shown = os.path.relpath(file)
    return file if shown.startswith("..") else shown


def _int_limit(what: str) -> typing.NoReturn:
    where = _where()
    _refuse(LimitError(f"{where + ': ' if where else ''}{what} would give an integer of more "
                       f"than {MAX_INT_DIGITS:,} digits (a config value cannot be that long)"))


def _size_limit(what: str, size: int) -> None:
    limit = limits.current().prompt_chars
    if size > limit:
        where = _where()
        _refuse(LimitError(f"{where + ': ' if where else ''}{what} would build {size:,} "
                           f"characters or items; {limits.describe('prompt_chars', limit)}"))


def _pow(a: Any, b: Any, mod: Any = None) -> Any:
    if (isinstance(a, int) and isinstance(b, int) and b > 0 and mod is None
            and abs(a) > 1 and (abs(a).bit_length() - 1) * b > _MAX_INT_BITS):
        _int_limit(f"{_short(a)} ** {_short(b)}")
    return pow(a, b) if mod is None else pow(a, b, mod)


def _mul(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        if a.bit_length() + b.bit_length() > _MAX_INT_BITS + 64:
            _int_limit("the product")
    elif isinstance(b, int) and isinstance(a, (str, bytes, list, tuple)):
        _size_limit("repeating a value", len(a) * b)
    elif isinstance(a, int) and isinstance(b, (str, bytes, list, tuple)):
        _size_limit("repeating a value", len(b) * a)
    return a * b


def _lshift(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and a and b > 0 and \
            a.bit_length() + b > _MAX_INT_BITS:
        _int_limit(f"{_short(a)} << {_short(b)}")
    return a << b


def _short(value: int) -> str:
    return str(value) if value.bit_length() < 64 else "a long integer"


_LAZY = frozenset({"LazyObject", "LazyAttr"})


def _attr(obj: Any, name: str) -> Any:
    kind = type(obj)
    if (_bad_attr(name)
            or (name.startswith("_") and kind.__module__ == __name__)  # this module's own state
            or (name == "build" and (kind.__name__ in _LAZY or obj in _LAZY_CLASSES))):
        where = _where()  # (a lazy import's build() would import its module for real)
        _refuse(ConfigError(f"{where + ': ' if where else ''}the attribute .{name[:60]} "
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
            where = _where()
            _refuse(ConfigError(f"{where + ': ' if where else ''}{exc}"))
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
            _tick()
            yield item

    def __reversed__(self) -> Iterator[int]:
        for item in reversed(self._range):
            _tick()
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
        _tick()
        yield function(*items)


def _filter(function: Callable[[Any], Any] | None, iterable: Any) -> Iterator[Any]:
    for item in iterable:
        _tick()
        if (function(item) if function is not None else item):
            yield item


def _python_key(key: Any) -> Any:
    if key is None or isinstance(key, types.FunctionType):
        return key
    return lambda item: _tick() and key(item)  # each call counted


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
        if isinstance(key, str) and _bad_name(key):
            _refuse(ConfigError(f"setting the name {key[:60]} (not available in a config)"))
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
    guard = Guard._active
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
                _tick()
                grown.append((*head, item))
        result = grown
    yield from result


def _chain(*iterables: Any) -> Iterator[Any]:
    """``itertools.chain``, each item counted."""
    for iterable in iterables:
        for item in iterable:
            _tick()
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
    where = _where()
    what = ("." * level) + name
    _refuse(ConfigError(
        f"{where + ': ' if where else ''}import {what or '.'}: a config may import "
        "opencompass.*, mmengine.config's read_base, base configs (inside `with "
        "read_base():`) and " + ", ".join(sorted(_STAND_INS)) + " (in part)"))


def _read_base() -> Any:
    import contextlib

    return contextlib.nullcontext()


def _no_config(*_: Any, **__: Any) -> Any:
    _refuse(ConfigError("mmengine's Config is not available in a config"))


def _open(file: Any, mode: str = "r", *args: Any, encoding: str | None = None,
          **kwargs: Any) -> io.IOBase:
    """``open`` for reading a file in or below the calling config's own folder."""
    frame = sys._getframe(1)
    reader = frame.f_code.co_filename
    where = f"line {frame.f_lineno}"
    if not isinstance(mode, str) or mode not in ("r", "rt", "rb", "tr", "br"):
        _refuse(ConfigError(f"{where}: open(..., {mode!r}): a config may only read files"))
    if not isinstance(file, str):
        _refuse(ConfigError(f"{where}: open() takes a file path in a config"))
    folder = os.path.realpath(os.path.dirname(reader))
    path = file if os.path.isabs(file) else os.path.join(os.getcwd(), file)
    real = os.path.realpath(path)
    if os.path.commonpath([folder, real]) != folder:
        _refuse(ConfigError(f"{where}: open({file[:200]!r}): a config may only read files in "
                            f"or below its own folder ({folder})"))
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, file) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            _refuse(ConfigError(f"{where}: open({file[:200]!r}): not a regular file"))
        if info.st_size > _MAX_READ_BYTES:
            _refuse(LimitError(f"{where}: open({file[:200]!r}): {info.st_size:,} bytes; a "
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
        _refuse(ConfigError("eval() in a config takes an expression string"))
    frame = sys._getframe(1)
    display = os.path.basename(frame.f_code.co_filename)
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise SyntaxError(f"eval(): {exc.msg}") from None
    code = compile_config(tree, frame.f_code.co_filename, display, "eval")
    scope = frame.f_globals if globals is None else dict(globals)
    if globals is not None:
        scope["__builtins__"] = SAFE_BUILTINS
    if locals is None and globals is None:
        locals = frame.f_locals
    return eval(code, scope, locals)  # noqa: S307 - checked and guarded above


def _isinstance(obj: Any, classinfo: Any) -> bool:
    if classinfo is _Range or (isinstance(classinfo, tuple) and range in classinfo):
        return isinstance(obj, (range, _Range)) or isinstance(obj, classinfo)
    if classinfo is range:
        return isinstance(obj, (range, _Range))
    return isinstance(obj, classinfo)


SAFE_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name) for name in (
        "abs", "all", "any", "bool", "callable", "chr", "dict", "divmod", "enumerate", "float",
        "frozenset", "hasattr", "int", "len", "list", "ord", "repr", "reversed", "round", "set",
        "slice", "str", "sum", "tuple", "zip", "bytes", "ascii", "bin", "hex", "oct",
        "Exception", "ArithmeticError", "AssertionError", "AttributeError", "ImportError",
        "IndexError", "KeyError", "LookupError", "ModuleNotFoundError", "NameError",
        "NotImplementedError", "OverflowError", "RuntimeError", "StopIteration", "TypeError",
        "UnicodeError", "ValueError", "ZeroDivisionError", "Warning", "UserWarning",
        "DeprecationWarning", "True", "False", "None", "NotImplemented", "Ellipsis",
    ) if hasattr(builtins, name)
}
SAFE_BUILTINS.update({
    "range": _Range, "map": _map, "filter": _filter, "sorted": _sorted, "min": _min,
    "max": _max, "print": _print, "globals": _globals, "locals": _locals, "open": _open,
    "eval": _eval, "getattr": _getattr, "pow": _pow, "isinstance": _isinstance,
    "__import__": _import, "__pc_attr": _attr, "__pc_pow": _pow, "__pc_mul": _mul,
    "__pc_lshift": _lshift, "__name__": "builtins",  # (what a config sees under mmengine)
    "set": _OrderedSet, "frozenset": _OrderedFrozenSet, "__pc_set": _OrderedSet,
})


def safe_globals(**names: Any) -> dict[str, Any]:
    """A namespace for a checked, rewritten config: ``names`` plus the safe builtins."""
    return {"__builtins__": SAFE_BUILTINS, **names}


# --------------------------------------------------------------------------- the bounds


class Guard:
    """Bounds one config load: CPU seconds (counted at every loop turn and function call of
    the config, :func:`_tick`) and memory (Linux: the address space).

    Re-entrant: a nested load (a base config) shares the outer one's budget.
    """

    _active: typing.ClassVar[Guard | None] = None

    def __init__(self, display: str) -> None:
        self.display = display
        self.tripped: PromptCompilerError | None = None
        self.roots: list[str] = []
        self._outer: Guard | None = None
        self._ticks = 0
        self._deadline = 0.0
        self._previous_limit: tuple[int, int] | None = None
        self.environment: dict[str, str | None] = {}
        """The environment variables the config (and its bases) read: name -> value, or
        ``None`` when unset."""

    def __enter__(self) -> Guard:
        if Guard._active is not None:
            self._outer = Guard._active
            return self
        Guard._active = self
        current = limits.current()
        self._deadline = time.process_time() + current.config_seconds
        self._cap_memory(current.config_bytes)
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        if self._outer is not None:
            return
        Guard._active = None
        self._uncap_memory()
        if isinstance(value, MemoryError):
            raise LimitError(
                "the config needs more memory than it may take while it loads; "
                f"{limits.describe('config_bytes', limits.current().config_bytes, 'bytes')}",
                config_path=self.display) from None
        if isinstance(value, Stop):
            raise value.error.located(config_path=self.display) from None
        if isinstance(value, PromptCompilerError):  # a refusal: name the file given
            value.located(config_path=self.display)
        if self.tripped is not None and kind is None:
            raise self.tripped.located(config_path=self.display)

    def tick(self) -> None:
        self._ticks += 1
        if self._ticks & 1023 == 0 or self.tripped is not None:
            if self.tripped is None:
                self.tripped = self._over()
            if self.tripped is not None:
                raise Stop(self.tripped)

    def _over(self) -> LimitError | None:
        """The limit the load has run past: its steps (counted: the same on every machine and
        under any load), else, as a backstop, its CPU seconds."""
        current = limits.current()
        if self._ticks > current.config_steps:
            what = (f"more than {current.config_steps:,} steps (loop turns, comprehension "
                    "items and function calls)")
            why = limits.describe("config_steps", current.config_steps, "steps")
        elif time.process_time() > self._deadline:
            what = f"for more than {current.config_seconds:,} seconds of CPU time"
            why = limits.describe("config_seconds", current.config_seconds, "seconds")
        else:
            return None
        where = _where()
        return LimitError(f"{where + ': ' if where else ''}the config ran {what} while "
                          f"loading; {why}", config_path=_base_file())

    def _cap_memory(self, budget: int) -> None:
        try:
            import resource

            with open("/proc/self/statm", "rb") as fh:
                pages = int(fh.read().split()[0])
            size = pages * os.sysconf("SC_PAGE_SIZE")
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            target = size + budget
            if hard != resource.RLIM_INFINITY:
                target = min(target, hard)
            if soft != resource.RLIM_INFINITY and soft <= target:
                return
            resource.setrlimit(resource.RLIMIT_AS, (target, hard))
            self._previous_limit = (soft, hard)
        except (ImportError, OSError, ValueError, IndexError):
            self._previous_limit = None

    def _uncap_memory(self) -> None:
        if self._previous_limit is None:
            return
        import resource

        try:
            resource.setrlimit(resource.RLIMIT_AS, self._previous_limit)
        except (OSError, ValueError):  # pragma: no cover - we only lowered it
            pass
        self._previous_limit = None


def _tick() -> bool:  # (in SAFE_BUILTINS as __pc_tick, below)
    """One turn of a config's loop or one call of its functions (true: it sits in
    comprehension conditions)."""
    guard = Guard._active
    if guard is not None:
        guard.tick()
    return True


def check_base(filename: str, importer: str = "") -> None:
    """A base config must lie in one of the active guard's root folders (links resolved).

    Raises:
        ConfigError: It does not.
    """
    guard = Guard._active
    if guard is None or not guard.roots or not filename:
        return
    real = os.path.realpath(filename)
    for root in guard.roots:
        if os.path.commonpath([root, real]) == root:
            return
    raise ConfigError(
        f"the base config {filename} lies outside the config's folders "
        f"({', '.join(guard.roots)}); a config may only import base configs from its own "
        "folder tree or the OpenCompass configs folder")


def compile_config(tree: ast.AST, filename: str, display: str, mode: str = "exec") -> Any:
    """:func:`harden` a parsed config (or expression) and compile it, registered."""
    check(tree, display)
    if filename and mode == "exec":
        check_base(filename, display)
    rewritten = ast.fix_missing_locations(_Rewrite().visit(tree))
    return compile(rewritten, filename, mode)


def _inert_class(name: str) -> Any:
    """The stand-in for a class a config defines: a placeholder class named
    ``config.<name>`` (a ``type=`` naming it reads as that name)."""
    from .opencompass_shim import _make_placeholder

    return _make_placeholder(f"config.{name}")


SAFE_BUILTINS["__pc_tick"] = _tick
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
