"""The Jinja2 engine of user templates: one sandboxed environment, compiled once, strict.

Dataset templates with ``engine: jinja2`` and AdalFlow-style prompts
(:class:`~prompt_compiler.template.jinja_prompt.JinjaPrompt`) both render here. The environment
is the project's sandbox (:mod:`prompt_compiler.safety.jinja_sandbox`: templates come from
configs, which are data) with ``StrictUndefined``, ``trim_blocks``, ``lstrip_blocks`` and
``keep_trailing_newline``, without autoescaping. A template text is parsed
and compiled once (cached); values are inserted verbatim and never rendered again, so ``{{``
inside data stays ``{{``.

A variable the template uses but nobody set is *unset* (strict mode): it is falsy, ``is none``,
not ``defined``, takes a ``default(...)`` and compares equal to ``None``, so ``{% if x %}``
blocks are left out; printing, iterating or computing with it raises
:class:`~prompt_compiler.errors.MissingFieldError` naming the variable.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final

import jinja2
from jinja2 import meta
from jinja2.exceptions import UndefinedError

from ..errors import MissingFieldError, PromptCompilerError, TemplateError, TemplateSyntaxError
from ..safety.jinja_sandbox import PromptSandbox, SecurityError

__all__ = ["RENDER_PREFIX", "CompiledJinja", "compile_jinja", "compile_template",
           "jinja_environment", "render_strict"]

RENDER_PREFIX: Final = "Error rendering Jinja2 template: "
_INVALID_PREFIX: Final = "Invalid Jinja2 template: "
_TEMPLATE_FILENAME: Final = "<template>"  # the code filename Jinja gives from_string templates


class _UnsetVariableUsed(UndefinedError):
    """An unset variable was printed, iterated or otherwise used as a value."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(name)
        self.name = name or "?"


class _Unset(jinja2.StrictUndefined):
    """A template variable nobody set (strict mode).

    It behaves like ``None`` in tests (falsy, ``is none``, ``== None``) so guarded blocks are
    skipped, and like ``StrictUndefined`` everywhere a value is needed.
    """

    __slots__ = ()

    def __init__(self, name: str) -> None:
        # The hint becomes the exception argument, so the error can name the variable.
        super().__init__(hint=name, name=name, exc=_UnsetVariableUsed)

    # StrictUndefined routes these to its failure method; an unset variable answers them.
    def __bool__(self) -> bool:  # type: ignore[override]
        return False

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return other is None or isinstance(other, _Unset)

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return not self.__eq__(other)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(None)


def _is_none(value: object) -> bool:
    return value is None or isinstance(value, _Unset)


@functools.lru_cache(maxsize=1)
def jinja_environment() -> jinja2.Environment:
    """The shared Jinja2 environment of all prompts (created on first use).

    Templates come from configs and datasets, which are data, so the environment is the
    project's sandbox (:class:`~prompt_compiler.safety.jinja_sandbox.PromptSandbox`): an escape
    such as ``cycler.__init__.__globals__`` raises ``SecurityError`` (reported as a
    :class:`~prompt_compiler.errors.TemplateError`).

    Returns:
        ``PromptSandbox(undefined=StrictUndefined, trim_blocks=True,
        keep_trailing_newline=True, lstrip_blocks=True)`` without autoescaping, whose ``none``
        test also accepts unset variables.
    """
    env = PromptSandbox(
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        keep_trailing_newline=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.tests["none"] = _is_none
    return env


@functools.lru_cache(maxsize=512)
def _compile_source(source: str) -> tuple[jinja2.Template, tuple[str, ...]]:
    """Parse once, then compile the same tree and list its free variables (cached per text)."""
    env = jinja_environment()
    tree = env.parse(source)
    return env.from_string(tree), tuple(sorted(meta.find_undeclared_variables(tree)))


def compile_template(source: object, *, compat: bool) -> tuple[jinja2.Template, tuple[str, ...]]:
    """Compile ``source`` or raise TemplateSyntaxError (``reference`` = AdalFlow's ValueError)."""
    try:
        if isinstance(source, str):
            return _compile_source(source)
        # Let Jinja produce the failure AdalFlow reports for a non-str template.
        jinja_environment().from_string(source)  # type: ignore[arg-type]
        raise TypeError("Can't compile non template nodes")
    except Exception as exc:  # AdalFlow turns every construction failure into one ValueError
        reference = _INVALID_PREFIX + str(exc)
        if compat:
            message = reference
        elif not isinstance(source, str):
            message = f"Invalid Jinja2 template: expected a str, got {type(source).__name__}"
        elif isinstance(exc, jinja2.TemplateSyntaxError):
            message = f"Invalid Jinja2 template (line {exc.lineno}): {exc.message}"
        else:
            message = f"Invalid Jinja2 template: {exc}"
        raise TemplateSyntaxError(
            message,
            hint=None if compat else "check the {% %} / {{ }} pairs and the filter names",
            reference=("ValueError", reference),
        ) from exc


def _template_line(tb: TracebackType | None) -> int | None:
    """The template line on which a render error happened (innermost template frame)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == _TEMPLATE_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def render_strict(
    template: jinja2.Template,
    variables: tuple[str, ...],
    given: Mapping[str, Any],
) -> str:
    """Render with unset variables as :class:`_Unset`; errors become our exception classes."""
    context: dict[str, Any] = {name: _Unset(name) for name in variables if name not in given}
    context.update(given)
    try:
        return template.render(context)
    except _UnsetVariableUsed as exc:
        line = _template_line(exc.__traceback__)
        at = f" (line {line})" if line is not None else ""
        unset = ", ".join(n for n in variables if n not in given)
        raise MissingFieldError(
            f"Jinja2 template variable {exc.name!r} is used{at} but not set; "
            f"template variables not set: {unset}; given: {', '.join(sorted(given)) or 'none'}",
            hint=f"pass {exc.name}=... or preset it; guard optional parts with "
            f"{{% if {exc.name} %}}...{{% endif %}}",
        ) from exc
    except PromptCompilerError:
        raise
    except Exception as exc:
        line = _template_line(exc.__traceback__)
        at = f" at line {line}" if line is not None else ""
        blocked = isinstance(exc, SecurityError)
        raise TemplateError(
            f"Error rendering Jinja2 template{at}: {exc}"
            + (" (blocked by the sandbox)" if blocked else ""),
            hint="a template reads values; it cannot reach Python internals or run code"
            if blocked else None,
            reference=("ValueError", RENDER_PREFIX + str(exc)),
        ) from exc




@dataclass(frozen=True, slots=True)
class CompiledJinja:
    """A parsed and compiled Jinja2 template, ready to fill from mappings.

    Build it with :func:`compile_jinja`.

    >>> t = compile_jinja("Q: {{ question }}{% if hint %} ({{ hint }}){% endif %}")
    >>> t.variables
    ('hint', 'question')
    >>> t.render({"question": "2+2={{x}}?"})
    'Q: 2+2={{x}}?'
    """

    source: str
    """The template text."""
    variables: tuple[str, ...]
    """Names the template reads from its context, sorted."""
    strict: bool
    """True: an unset variable used as a value raises; False: unset variables are ``None``."""
    template: jinja2.Template = field(repr=False, compare=False)
    """The compiled Jinja2 template."""

    def render(self, mapping: Mapping[str, Any] | None = None, /, **kwargs: Any) -> str:
        """Render with ``mapping`` and keyword arguments (the latter win).

        Raises:
            MissingFieldError: strict, and an unset variable is used as a value.
            TemplateError: any other render failure (message names the template line).
        """
        given = {**(mapping or {}), **kwargs}
        if not self.strict:
            given = {**dict.fromkeys(self.variables), **given}
        return render_strict(self.template, self.variables, given)

    def missing(self, mapping: Mapping[str, Any]) -> tuple[str, ...]:
        """The template variables that ``mapping`` does not set (sorted)."""
        return tuple(name for name in self.variables if name not in mapping)

    def __reduce__(self) -> tuple[Any, ...]:
        # The compiled Jinja2 template does not pickle; recompile from the text instead.
        return (_recompile, (self.source, self.strict))


def _recompile(source: str, strict: bool) -> CompiledJinja:
    return compile_jinja(source, strict=strict)


def compile_jinja(text: str, *, strict: bool = True) -> CompiledJinja:
    """Compile a Jinja2 template text with the prompt environment.

    Args:
        text: The template.
        strict: Unset variables raise when used as values (default); False fills them with None.

    Raises:
        TemplateSyntaxError: the text does not parse or compile.
    """
    template, variables = compile_template(text, compat=False)
    return CompiledJinja(text, variables, strict, template)
