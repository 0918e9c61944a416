"""The Jinja2 sandbox every user-supplied template is rendered in.

Configs are data: a YAML/JSON config, a dataset template with ``engine: jinja2``, an
AdalFlow-style prompt or a Hugging Face chat template must never run code. Templates are therefore
rendered in jinja2's :class:`~jinja2.sandbox.ImmutableSandboxedEnvironment` (no underscore
attributes, no mutation of lists or dicts), tightened so that the output is a pure, reproducible
function of the inputs and its size is bounded:

* sizes: no text a template builds (one value, a captured block, or the whole output) may exceed
  :attr:`~prompt_compiler.safety.limits.Limits.prompt_chars` characters, and no list it builds
  more than a sixteenth of that in items. The operations that can amplify are checked *before* they
  allocate: ``*``, ``+``, ``~``, ``%`` and ``format`` widths, ``str.format`` widths, ``center``,
  ``ljust``, ``rjust``, ``zfill``, ``replace``, ``expandtabs``, ``join``, ``indent``,
  ``wordwrap``, ``batch``, ``slice``, ``tojson(indent=...)``; output is counted as it is
  produced. Integers are bounded too: ``**``, ``*``, ``+`` and ``-`` refuse an integer beyond
  :data:`MAX_POWER_BITS` bits (about 4,200 digits), so that every integer a template holds can be
  printed (Python turns at most 4,300 digits into text), and printing one that is longer anyway
  is a limit error, not Python's ``ValueError``;
* reproducible text: ``lipsum`` is not a global and the ``random`` filter is an error; printing
  a function, method or any object whose text shows a memory address (``<... at 0x7f...>``) is
  an error wherever it would become text (output, ``~``, ``string``, ``format``, ``%``,
  ``join``, ``pprint``);
* ``str.format`` fields may only name an argument: ``'{0.__class__}'.format(x)`` and
  ``'{0[1]}'.format(x)`` are errors;
* an unsafe attribute (``raise_exception.__globals__``, ``''.__class__``) is an error when it is
  read, also in chat templates (whose undefined values otherwise print as nothing, as in
  transformers).

A blocked operation raises :class:`jinja2.sandbox.SecurityError`; the callers turn it into a
:class:`~prompt_compiler.errors.TemplateError` (or ``RenderError``) naming where the template
came from. A size error names the limit and ``PROMPT_COMPILER_MAX_PROMPT_CHARS``, which raises it.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.nodes import Concat
from jinja2.runtime import Context, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import _PassArg

from . import limits
from .format_guard import FormatRefused, NamesOnlyFormatter
from .values import int_problem

__all__ = ["MAX_POWER_BITS", "MAX_REPEAT", "PromptSandbox", "SecurityError", "json_indent_check"]

MAX_REPEAT: Final = 10_000_000
"""Kept for compatibility: ``*`` is now bounded by the prompt-size limit (see above)."""
MAX_POWER_BITS: Final = 14_000
"""Most bits an integer a template builds may have (4,214 decimal digits: always printable)."""

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_PLAIN = (str, int, float, type(None), Undefined)
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|[0-9]+)?(?:\.(\*|[0-9]+))?")


def _limit() -> int:
    return limits.current().prompt_chars


class _Budget:
    """What one render may still do: loop turns, and characters (or items) built in all."""

    __slots__ = ("chars", "depth", "steps")

    def __init__(self) -> None:
        current = limits.current()
        self.steps = current.template_steps
        self.chars = current.template_chars
        self.depth = 0


_local = threading.local()


def _charge(size: int) -> None:
    """Count ``size`` characters (or items) built against the render's total."""
    budget: _Budget | None = getattr(_local, "budget", None)
    if budget is None:
        return
    budget.chars -= size
    if budget.chars < 0:
        limit = limits.current().template_chars
        raise SecurityError(f"this render has built more than {limit:,} characters in all; "
                            + limits.describe("template_chars", limit, "characters"))


def _too_big(what: str, size: int, limit: int, unit: str = "characters") -> SecurityError:
    if unit == "characters":
        return SecurityError(f"{what} would build {size:,} characters; "
                             + limits.describe("prompt_chars", limit, "characters"))
    return SecurityError(f"{what} would build {size:,} items; the limit is {limit:,} items "
                         f"(1/16 of {limits.env_name('prompt_chars')}, which raises it)")


def _int_bits(what: str, bits: int) -> None:
    """Refuse building an integer of ``bits`` bits past :data:`MAX_POWER_BITS`."""
    if bits > MAX_POWER_BITS:
        raise SecurityError(f"{what} would build an integer of about {bits:,} bits; a "
                            f"template's integers may have {MAX_POWER_BITS:,} bits (about 4,200 "
                            "digits: Python turns at most 4,300 digits into text)")


def _check_printable(value: Any) -> None:
    """Refuse a value whose text is not reproducible (functions, ``<... at 0x...>``) or that
    cannot become text at all (an integer past Python's digit limit)."""
    if type(value) is int:
        if why := int_problem(value):
            raise SecurityError(f"the template prints {why}")
        return
    if isinstance(value, _PLAIN):
        return
    if inspect.isroutine(value) or _ADDRESS.search(str(value)):
        raise SecurityError(
            f"the template prints a {type(value).__name__} object, whose text shows a memory "
            "address and changes from run to run; print data, not functions or objects"
        )


def _finalize(value: Any) -> Any:
    _check_printable(value)
    return value


def _check_size(value: Any, what: str) -> Any:
    """``value`` itself, after checking a str, list or int is within the limits."""
    if type(value) is int:
        _int_bits(what, value.bit_length())
    elif isinstance(value, str):
        limit = _limit()
        if len(value) > limit:
            raise _too_big(what, len(value), limit)
        _charge(len(value))
    elif isinstance(value, (list, tuple)):
        limit = _limit()
        if len(value) > limit // 16:
            raise _too_big(what, len(value), limit // 16, "items")
        _charge(len(value))
    return value


def _predict(what: str, size: int, *, items: bool = False) -> None:
    limit = _limit()
    if items and size > limit // 16:
        raise _too_big(what, size, limit // 16, "items")
    if not items and size > limit:
        raise _too_big(what, size, limit)
    _charge(size)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_result_bits(operator_: str, left: int, right: int) -> int:
    """About how many bits ``left operator_ right`` has (an upper bound), before computing it."""
    if operator_ == "**":
        return int(right * math.log2(abs(left))) + 1 if right > 0 and abs(left) > 1 else 1
    if operator_ == "*":
        return left.bit_length() + right.bit_length()
    return max(left.bit_length(), right.bit_length()) + 1  # + and -


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _check_percent(fmt: str, args: Any) -> None:
    """``fmt % args``: widths and precisions within the limit, arguments printable."""
    limit = _limit()
    star = False
    for m in _PERCENT_SPEC.finditer(fmt):
        for number in m.groups():
            if number == "*":
                star = True
            elif number is not None and (len(number) > 18 or int(number) > limit):
                raise _too_big("a % format width", int(number[:19]), limit)
    values = (list(args.values()) if isinstance(args, Mapping)
              else list(args) if isinstance(args, tuple) else [args])
    for value in values:
        _check_printable(value)
        if star and _int(value) > limit:
            raise _too_big("a % format width", _int(value), limit)


def _check_str_call(text: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Predict what ``text.name(*args)`` builds, for the str methods that can amplify."""
    if name in ("center", "ljust", "rjust", "zfill"):
        width = _int(args[0] if args else kwargs.get("width"))
        _predict(f"{name}({width})", width)
    elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) \
            and isinstance(args[1], str):
        old, new = args[0], args[1]
        count = text.count(old) if old else len(text) + 1
        if len(args) > 2 and _int(args[2], -1) >= 0:
            count = min(count, _int(args[2]))
        _predict("replace()", len(text) + count * (len(new) - len(old)))
    elif name == "expandtabs":
        size = _int(args[0] if args else kwargs.get("tabsize", 8), 8)
        _predict("expandtabs()", len(text) + text.count("\t") * max(size, 0))
    elif name in ("join", "format", "format_map"):
        pass  # join: checked by the caller (it materialises the items); format: wrapped


def _join_size(sep: str, items: list[Any]) -> int:
    for item in items:
        _check_printable(item)
    return sum(len(str(x)) for x in items) + len(sep) * max(len(items) - 1, 0)


def json_indent_check(value: Any, indent: Any) -> None:
    """Refuse ``tojson(indent=...)`` whose indentation alone would pass the limit."""
    if indent is None:
        return
    width = len(indent) if isinstance(indent, str) else _int(indent)
    if width <= 0:
        return
    limit = _limit()
    nodes = depth_total = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        nodes += 1
        depth_total += depth
        if depth_total * width > limit:
            raise _too_big(f"tojson(indent={width})", depth_total * width, limit)
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)


# -- filters ------------------------------------------------------------------------------------


def _wrap_filter(func: Callable[..., Any], check: Callable[..., None] | None,
                 name: str) -> Callable[..., Any]:
    """``func`` (a jinja2 filter) with ``check(value, *args, **kwargs)`` before it runs and a
    size check of its result; pass-context markers are kept."""
    skip = 1 if _PassArg.from_obj(func) is not None else 0

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if check is not None:
            check(*args[skip:], **kwargs)
        return _check_size(func(*args, **kwargs), f"the {name} filter")

    return wrapper


def _f_width(value: Any, width: Any = 80, *_: Any, **kw: Any) -> None:
    _predict("center()", _int(kw.get("width", width)))


def _f_indent(value: Any, width: Any = 4, *_: Any, **kw: Any) -> None:
    width = kw.get("width", width)
    size = len(width) if isinstance(width, str) else _int(width)
    text = str(value)
    _predict("indent()", len(text) + (text.count("\n") + 1) * size)


def _f_replace(value: Any, old: Any = "", new: Any = "", count: Any = None, **_: Any) -> None:
    if isinstance(value, str):
        _check_str_call(value, "replace", (str(old), str(new), -1 if count is None else count), {})


def _f_join(value: Any, d: Any = "", attribute: Any = None, **kw: Any) -> None:
    if attribute is None and "attribute" not in kw and isinstance(value, (list, tuple)):
        _predict("join()", _join_size(str(kw.get("d", d)), list(value)))


def _f_format(value: Any, *args: Any, **kwargs: Any) -> None:
    _check_percent(str(value), kwargs or args)


def _f_wordwrap(s: Any, width: Any = 79, break_long_words: Any = True, wrapstring: Any = None,
                *_: Any, **kw: Any) -> None:
    wrap = kw.get("wrapstring", wrapstring)
    if isinstance(wrap, str):
        _predict("wordwrap()", len(str(s)) * (1 + len(wrap)))


def _f_batch(value: Any, linecount: Any = 1, fill_with: Any = None, **kw: Any) -> None:
    if kw.get("fill_with", fill_with) is not None:
        _predict("batch()", _int(kw.get("linecount", linecount)), items=True)


def _f_slice(value: Any, slices: Any = 1, fill_with: Any = None, **kw: Any) -> None:
    _predict("slice()", _int(kw.get("slices", slices)), items=True)


def _f_printable(value: Any, *_: Any, **__: Any) -> None:
    _check_printable(value)


def _f_tojson(value: Any, indent: Any = None, *_: Any, **kw: Any) -> None:
    json_indent_check(value, kw.get("indent", indent))


def _no_random(*_: Any, **__: Any) -> Any:
    raise SecurityError("the random filter gives different output on every run; "
                        "pick items deterministically")


_FILTER_CHECKS: dict[str, Callable[..., None] | None] = {
    "center": _f_width, "indent": _f_indent, "replace": _f_replace, "join": _f_join,
    "format": _f_format, "wordwrap": _f_wordwrap, "batch": _f_batch, "slice": _f_slice,
    "string": _f_printable, "pprint": _f_printable, "tojson": _f_tojson, "list": None,
    "sum": None, "truncate": None, "title": None, "upper": None, "lower": None,
    "capitalize": None, "trim": None, "striptags": None, "urlize": None, "xmlattr": None,
    "escape": None, "e": None, "forceescape": None, "filesizeformat": None, "map": None,
}


# -- the environment -----------------------------------------------------------------------------


class _Buffer(list):  # type: ignore[type-arg]
    """The output list of a captured block or macro, refusing to grow past the limit."""

    __slots__ = ("_left",)

    def __init__(self, limit: int) -> None:
        super().__init__()
        self._left = limit

    def append(self, piece: Any) -> None:
        self._left -= len(piece)
        if self._left < 0:
            raise _too_big("a captured block", _limit() - self._left, _limit())
        super().append(piece)

    def extend(self, pieces: Iterable[Any]) -> None:
        for piece in pieces:
            self.append(piece)


class _Generator(CodeGenerator):
    """Compiles ``a ~ b`` to a bounded, reproducible join (:meth:`PromptSandbox.tilde`) and
    block buffers (``{% set x %}``, macros, filter blocks) to bounded lists."""

    def buffer(self, frame: Frame) -> None:
        frame.buffer = self.temporary_identifier()
        self.writeline(f"{frame.buffer} = environment.new_buffer()")

    def visit_Concat(self, node: Concat, frame: Frame) -> None:
        self.write("environment.tilde((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _Formatter(NamesOnlyFormatter):
    def format_field(self, value: Any, format_spec: str) -> Any:
        _check_printable(value)
        return super().format_field(value, format_spec)


class PromptSandbox(ImmutableSandboxedEnvironment):
    """jinja2's immutable sandbox with bounded sizes, no randomness, reproducible text.

    Accepts the keyword arguments of :class:`jinja2.Environment` (``finalize`` is set here).
    """

    intercepted_binops = frozenset({"*", "**", "+", "-", "%"})
    code_generator_class = _Generator

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=_finalize, **options)
        self.globals.pop("lipsum", None)
        for name, check in _FILTER_CHECKS.items():
            if name in self.filters:
                self.filters[name] = _wrap_filter(self.filters[name], check, name)
        self.filters["random"] = _no_random

    def concat(self, pieces: Iterable[str]) -> str:
        """Join output pieces, stopping as soon as they pass the limit.

        The outermost call is one render (``Template.render`` joins the whole output here,
        while the template runs): it holds the render's :class:`_Budget` of loop turns and
        characters built in all, which captured blocks and macros share."""
        budget: _Budget | None = getattr(_local, "budget", None)
        if budget is None:
            budget = _local.budget = _Budget()
        budget.depth += 1
        try:
            limit = _limit()
            out: list[str] = []
            total = 0
            for piece in pieces:
                total += len(piece)
                if total > limit:
                    raise _too_big("the template's output", total, limit)
                out.append(piece)
            _charge(total)
            return "".join(out)
        finally:
            budget.depth -= 1
            if budget.depth == 0:
                _local.budget = None

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        """An unsafe attribute (``__globals__``, ``__class__``, ``mro``...) is an error at once.

        jinja2 (and so transformers' chat-template sandbox) returns an undefined value that
        prints as nothing under the default ``Undefined``: the template would render as if the
        attribute were merely missing. Here it stops the render, whatever the undefined policy.
        """
        raise SecurityError(f"access to attribute {attribute!r} of "
                            f"{type(obj).__name__!r} object is unsafe.")

    def counted(self, iterable: Any) -> Iterator[Any]:
        """A ``{% for %}`` loop's items, each counted against the render's loop turns."""
        budget: _Budget | None = getattr(_local, "budget", None)
        for item in iterable:
            if budget is not None:
                budget.steps -= 1
                if budget.steps < 0:
                    limit = limits.current().template_steps
                    raise SecurityError(
                        f"this render's loops ran more than {limit:,} turns in all; "
                        + limits.describe("template_steps", limit, "turns"))
            yield item

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        """Parse, then route every ``{% for %}`` loop's items through :meth:`counted`."""
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Call(nodes.EnvironmentAttribute("counted"), [loop.iter], [],
                                   None, None, lineno=loop.iter.lineno)
        return tree

    def new_buffer(self) -> list[Any]:
        """An output buffer of a block (see :class:`_Buffer`)."""
        return _Buffer(_limit())

    def tilde(self, values: tuple[Any, ...]) -> str:
        """``a ~ b ~ ...``: each value printable, the result within the limit."""
        parts = []
        for value in values:
            _check_printable(value)
            parts.append(str(value))
        _predict("'~'", sum(map(len, parts)))
        return "".join(parts)

    def call_binop(self, context: Context, operator_: str, left: Any, right: Any) -> Any:
        """Apply an intercepted operator, refusing results too large to be meant."""
        if _is_int(left) and _is_int(right) and operator_ != "%":
            _int_bits(f"'{operator_}'", _int_result_bits(operator_, left, right))
        if operator_ == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(times, int):
                    _predict("'*'", len(seq) * max(times, 0),
                             items=not isinstance(seq, str))
            return operator.mul(left, right)
        if operator_ == "+":
            if isinstance(left, str) and isinstance(right, str):
                _predict("'+'", len(left) + len(right))
            elif isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
                _predict("'+'", len(left) + len(right), items=True)
            return operator.add(left, right)
        if operator_ == "%":
            if isinstance(left, str):
                _check_percent(left, right)
                return _check_size(operator.mod(left, right), "'%'")
            return operator.mod(left, right)
        return super().call_binop(context, operator_, left, right)

    def call(__self, __context: Context, __obj: Any, *args: Any,  # noqa: N805
             **kwargs: Any) -> Any:
        """Call ``__obj``; a str method that can amplify is sized before it runs."""
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, str) and inspect.isbuiltin(__obj):
            name = __obj.__name__
            if name == "join" and args:
                items = list(args[0])
                _predict("join()", _join_size(owner, items))
                args = (items, *args[1:])
            else:
                _check_str_call(owner, name, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        return _check_size(result, "a call")

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """``str.format`` / ``format_map`` whose fields only name arguments, widths bounded."""
        fmt = super().wrap_str_format(value)
        if fmt is None:
            return None
        text: str = value.__self__
        is_map = value.__name__ == "format_map"
        formatter = _Formatter()

        def wrapper(*args: Any, **kwargs: Any) -> str:
            if is_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one argument")
                kwargs, args = args[0], ()
            try:
                return str(_check_size(formatter.vformat(text, args, kwargs), "str.format"))
            except FormatRefused as exc:
                raise SecurityError(str(exc)) from None

        return wrapper
