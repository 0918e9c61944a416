"""Python configs are data: the check and rewrite a config's syntax tree gets before it runs.

A Python config is executed (OpenCompass's configs are programs: loops, comprehensions,
``read_base()``), but never as arbitrary code. Before a file runs (by our loader,
:mod:`.mmengine_mode`, or by mmengine's ``Config``, for the shapes ours leaves to it) its
syntax tree is checked and rewritten here:

* no name or attribute that starts with ``__`` (``().__class__.__bases__``,
  ``__import__``, ``__builtins__``; ``__file__`` and ``__name__`` are allowed), no frame or
  code attribute (``gi_frame``, ``f_globals``, ``mro``, ...), no ``match``, and no builtin
  outside :data:`PLAIN_BUILTINS` and :data:`REPLACED_BUILTINS` (``exec``, ``compile``,
  ``vars``, ``type``, ``input``, ``breakpoint`` ...);
* a class definition is never run: an inert stand-in named after it takes its place (a
  ``type=`` naming it reads as ``config.<name>``); a bare ``except:`` catches what
  ``except Exception:`` catches;
* every attribute read goes through the attribute guard of :mod:`.stand_ins`, every loop
  turn, comprehension item and call counts a step of the :mod:`.budget`, and ``**``, ``*``
  and ``<<`` go through the budget's size checks *before* computing (``10**10**10`` would
  otherwise run for hours in one C call).

The rewritten code runs with the builtins of :mod:`.stand_ins` under a
:class:`~.budget.Guard`; a base config must lie in the load's root folders
(:func:`check_base`).
"""

from __future__ import annotations

import ast
import builtins
import collections
import os
import typing
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import ConfigError, LimitError
from ...safety import limits

__all__ = ["ALLOWED_DUNDERS", "FORBIDDEN_ATTRS", "PLAIN_BUILTINS", "REPLACED_BUILTINS",
           "bad_attr", "bad_name", "base_tree", "check", "check_base", "compile_config", "harden",
           "parse", "parse_file"]

ALLOWED_DUNDERS = frozenset({"__file__", "__name__"})
FORBIDDEN_ATTRS = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "cr_frame", "cr_code", "cr_await",
    "ag_frame", "ag_code", "ag_await", "f_globals", "f_locals", "f_builtins", "f_back",
    "f_code", "f_trace", "tb_frame", "tb_next", "co_code", "co_consts", "func_globals",
    "func_code", "mro", "with_traceback",
})
PLAIN_BUILTINS = (
    "abs", "all", "any", "bool", "callable", "chr", "dict", "divmod", "enumerate", "float",
    "hasattr", "int", "len", "list", "ord", "repr", "reversed", "round",
    "slice", "str", "sum", "tuple", "zip", "bytes", "ascii", "bin", "hex", "oct",
    "Exception", "ArithmeticError", "AssertionError", "AttributeError", "ImportError",
    "IndexError", "KeyError", "LookupError", "ModuleNotFoundError", "NameError",
    "NotImplementedError", "OverflowError", "RuntimeError", "StopIteration", "TypeError",
    "UnicodeError", "ValueError", "ZeroDivisionError", "Warning", "UserWarning",
    "DeprecationWarning", "True", "False", "None", "NotImplemented", "Ellipsis",
)
"""Builtins a config gets as they are."""
REPLACED_BUILTINS = frozenset({
    "range", "map", "filter", "sorted", "min", "max", "print", "globals", "locals", "open",
    "eval", "getattr", "pow", "isinstance", "set", "frozenset",
})
"""Builtins a config may use that :mod:`.stand_ins` gives a bounded stand-in for."""
_ALLOWED = frozenset(PLAIN_BUILTINS) | REPLACED_BUILTINS


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


def parse_file(path: Path, display: str) -> ast.Module:
    """The syntax tree of the config file ``path`` (:func:`parse`).

    Raises:
        ConfigError: It cannot be read, or as :func:`parse`.
    """
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the config: {exc}", config_path=display) from exc
    return parse(source, display)


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
    puts an inert stand-in named after it in its place, see :mod:`.stand_ins`)."""
    todo = collections.deque([tree])
    while todo:
        node = todo.popleft()
        yield node
        if not isinstance(node, ast.ClassDef):
            todo.extend(ast.iter_child_nodes(node))


def _refusal(node: ast.AST, assigned: set[str]) -> str | None:
    if isinstance(node, ast.Match):
        return "a match statement"
    if isinstance(node, ast.Attribute) and bad_attr(node.attr):
        return f"the attribute .{node.attr[:60]}"
    if isinstance(node, ast.Name):
        if bad_name(node.id):
            return f"the name {node.id[:60]}"
        if (isinstance(node.ctx, ast.Load) and node.id not in assigned
                and node.id not in _ALLOWED and hasattr(builtins, node.id)):
            return f"the builtin {node.id}() (not available in a config)" if callable(
                getattr(builtins, node.id)) else f"the builtin {node.id}"
    if isinstance(node, ast.arg) and bad_name(node.arg):
        return f"the parameter name {node.arg[:60]}"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and bad_name(node.name):
        return f"the function name {node.name[:60]}"
    if isinstance(node, ast.alias) and (bad_name(node.name.split(".")[-1])
                                        or (node.asname and bad_name(node.asname))):
        return f"importing the name {node.name[:60]}"
    if isinstance(node, ast.keyword) and node.arg and bad_name(node.arg):
        return f"the keyword {node.arg[:60]}"
    return None


def bad_name(name: str) -> bool:
    return name.startswith("__") and name not in ALLOWED_DUNDERS


def bad_attr(name: str) -> bool:
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




def check_base(filename: str, roots: Sequence[str]) -> None:
    """A base config must lie in one of ``roots``, the load's root folders (links resolved;
    none: anywhere).

    Raises:
        ConfigError: It does not.
    """
    if not roots or not filename:
        return
    real = os.path.realpath(filename)
    for root in roots:
        if os.path.commonpath([root, real]) == root:
            return
    raise ConfigError(
        f"the base config {filename} lies outside the config's folders "
        f"({', '.join(roots)}); a config may only import base configs from its own "
        "folder tree or the OpenCompass configs folder")


def base_tree(filename: str, roots: Sequence[str]) -> ast.Module:
    """The syntax tree of a base config a config imports, which must lie in ``roots``.

    Raises:
        ConfigError: It lies elsewhere, or does not parse (:func:`parse`).
        OSError, UnicodeDecodeError: It cannot be read.
    """
    check_base(filename, roots)
    with open(filename, encoding="utf-8") as fh:
        return parse(fh.read(), filename)


def compile_config(tree: ast.AST, filename: str, display: str, mode: str = "exec",
                   roots: Sequence[str] = ()) -> Any:
    """:func:`harden` a parsed config (or expression) and compile it, registered; a config
    file (``exec``) must lie in ``roots`` (:func:`check_base`)."""
    check(tree, display)
    if filename and mode == "exec":
        check_base(filename, roots)
    rewritten = ast.fix_missing_locations(_Rewrite().visit(tree))
    return compile(rewritten, filename, mode)
