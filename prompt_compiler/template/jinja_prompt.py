"""AdalFlow-style Jinja2 prompts: a template, preset keyword arguments, the rest at call time.

A :class:`JinjaPrompt` holds one Jinja2 template (by default :data:`DEFAULT_TEMPLATE`, the
system/user layout with task description, input/output format, tools, examples, chat history,
context, agent steps and input), keyword arguments preset at construction, and takes the
remaining ones when called::

    >>> p = JinjaPrompt("<SYS>{{ task }}</SYS> {{ question }}", {"task": "Be brief."})
    >>> p.variables
    ('question', 'task')
    >>> p(question="Why?")
    '<SYS>Be brief.</SYS> Why?'

Two policies for a variable the template uses but nobody set:

* default (strict): the variable is *unset*. It is falsy, ``is none``, not ``defined``, takes a
  ``default(...)`` and compares equal to ``None``, so ``{% if x %}`` blocks are simply left out.
  Printing, iterating, measuring, indexing or doing arithmetic with it raises
  :class:`~prompt_compiler.errors.MissingFieldError` naming the variable::

    >>> JinjaPrompt("<SYS>{{ task }}</SYS>{% if ctx %} {{ ctx }}{% endif %}")()
    Traceback (most recent call last):
    ...
    prompt_compiler.errors.MissingFieldError: Jinja2 template variable 'task' is used ...

* ``compat="adalflow"``: AdalFlow 1.1.3 exactly. Every template variable starts as ``None`` (so
  an unguarded ``{{ task }}`` prints ``None``) and every render error becomes a ``ValueError``
  subclass whose message is AdalFlow's ``Error rendering Jinja2 template: ...``::

    >>> JinjaPrompt("<SYS>{{ task }}</SYS>", compat="adalflow")()
    '<SYS>None</SYS>'

The engine is Jinja2's immutable sandbox (:mod:`prompt_compiler.sandbox`: templates come from
configs, which are data) with ``StrictUndefined``, ``trim_blocks``, ``lstrip_blocks`` and
``keep_trailing_newline``, without autoescaping. A template is parsed and compiled once; values
are inserted verbatim and never rendered again, so ``{{`` inside data stays ``{{``.
:func:`compile_jinja` gives the same engine to callers that fill templates from a mapping, such as
dataset rows.
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

from ..errors import (
    ConfigError,
    MissingFieldError,
    PromptCompilerError,
    TemplateError,
    TemplateSyntaxError,
)
from ..sandbox import PromptSandbox, SecurityError

__all__ = [
    "COMPAT_MODES",
    "DEFAULT_TEMPLATE",
    "CompiledJinja",
    "JinjaPrompt",
    "Prompt",
    "compile_jinja",
    "jinja_environment",
]

COMPAT_MODES: Final = ("adalflow",)
"""Values accepted by the ``compat`` argument besides ``None``."""

# The default system/user layout. Each optional section is a ``<TAG>`` block that only appears
# when its variable is truthy; the agent steps sit inside the user prompt. Blank-line control
# comes from trim_blocks/lstrip_blocks, so every tag line is emitted exactly once.
DEFAULT_TEMPLATE: Final[str] = r"""<START_OF_SYSTEM_PROMPT>
{# task desc #}
{% if task_desc_str %}
{{task_desc_str}}
{% else %}
You are a helpful assistant.
{% endif %}
{#input format#}
{% if input_format_str %}
<INPUT_FORMAT>
{{input_format_str}}
</INPUT_FORMAT>
{% endif %}
{# output format #}
{% if output_format_str %}
<OUTPUT_FORMAT>
{{output_format_str}}
</OUTPUT_FORMAT>
{% endif %}
{# tools #}
{% if tools_str %}
<TOOLS>
{{tools_str}}
</TOOLS>
{% endif %}
{# example #}
{% if examples_str %}
<EXAMPLES>
{{examples_str}}
</EXAMPLES>
{% endif %}
{# chat history #}
{% if chat_history_str %}
<CHAT_HISTORY>
{{chat_history_str}}
</CHAT_HISTORY>
{% endif %}
{#contex#}
{% if context_str %}
<CONTEXT>
{{context_str}}
</CONTEXT>
{% endif %}
<END_OF_SYSTEM_PROMPT>
<START_OF_USER_PROMPT>
{% if input_str %}
{{input_str}}
{% endif %}
{# steps #}
{% if steps_str %}
<START_OF_ASSISTANT_STEPS>
{{steps_str}}
<END_OF_ASSISTANT_STEPS>
{% endif %}
<END_OF_USER_PROMPT>
"""
"""The default template; its variables are the nine ``*_str`` names, all optional."""

_RENDER_PREFIX: Final = "Error rendering Jinja2 template: "
_INVALID_PREFIX: Final = "Invalid Jinja2 template: "
_TEMPLATE_FILENAME: Final = "<template>"  # the code filename Jinja gives from_string templates


# --------------------------------------------------------------------------- engine


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
    project's sandbox (:class:`~prompt_compiler.sandbox.PromptSandbox`): an escape such as
    ``cycler.__init__.__globals__`` raises ``SecurityError`` (reported as a
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


def _compile(source: object, *, compat: bool) -> tuple[jinja2.Template, tuple[str, ...]]:
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


def _render_strict(
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
            reference=("ValueError", _RENDER_PREFIX + str(exc)),
        ) from exc


# --------------------------------------------------------------------------- compile_jinja


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
        return _render_strict(self.template, self.variables, given)

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
    template, variables = _compile(text, compat=False)
    return CompiledJinja(text, variables, strict, template)


# --------------------------------------------------------------------------- JinjaPrompt


def _check_compat(compat: str | None) -> bool:
    if compat is None:
        return False
    if compat not in COMPAT_MODES:
        raise ConfigError(
            f"unknown compat mode {compat!r}; expected None or one of {list(COMPAT_MODES)}"
        )
    return True


def _is_nested(value: object) -> bool:
    return isinstance(value, (JinjaPrompt, jinja2.Template, CompiledJinja))


def _render_nested(value: object, kwargs: dict[str, Any]) -> Any:
    """Render a prompt-like value with ``kwargs``; other values pass through."""
    if isinstance(value, JinjaPrompt):
        return value.call(**kwargs)
    if isinstance(value, (jinja2.Template, CompiledJinja)):
        return value.render(kwargs)
    return value


def _serialise(value: Any) -> Any:
    """The to_dict form of a preset value: containers recursed, prompts as their dicts."""
    if isinstance(value, dict):
        return {key: _serialise(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_serialise(item) for item in value]
    if isinstance(value, JinjaPrompt):
        return value.to_dict()
    return value


def _restore(value: Any, compat: str | None) -> Any:
    """Inverse of :func:`_serialise` for prompts stored inside preset values."""
    if isinstance(value, dict):
        if value.get("type") == "Prompt" and isinstance(value.get("data"), dict):
            return JinjaPrompt.from_dict(value, compat=compat)
        return {key: _restore(item, compat) for key, item in value.items()}
    if isinstance(value, list):
        return [_restore(item, compat) for item in value]
    return value


class JinjaPrompt:
    """A Jinja2 prompt with preset keyword arguments.

    Args:
        template: Jinja2 text; ``None`` or ``""`` selects :data:`DEFAULT_TEMPLATE`.
        prompt_kwargs: Values preset now; call-time keyword arguments override them.
        compat: ``None`` (strict unset variables) or ``"adalflow"`` (AdalFlow 1.1.3 exactly).

    Raises:
        TemplateSyntaxError: the template does not parse (a ``ValueError``).
        ConfigError: unknown ``compat``.

    A value that is itself a :class:`JinjaPrompt`, :class:`CompiledJinja` or ``jinja2.Template``
    is rendered first, with the other (non-template) keyword arguments of the call.
    """

    __slots__ = ("_compat", "_prompt_kwargs", "_template", "_text", "_variables")

    def __init__(
        self,
        template: str | None = None,
        prompt_kwargs: Mapping[str, Any] | None = None,
        *,
        compat: str | None = None,
    ) -> None:
        self._compat = _check_compat(compat)
        self._text: str = template or DEFAULT_TEMPLATE
        self._template, self._variables = _compile(self._text, compat=self._compat)
        self._prompt_kwargs: dict[str, Any] = dict(prompt_kwargs or {})

    # ------------------------------------------------------------------ inspection

    @property
    def template(self) -> str:
        """The template text."""
        return self._text

    @property
    def variables(self) -> tuple[str, ...]:
        """The names the template reads (``jinja2.meta.find_undeclared_variables``), sorted."""
        return self._variables

    @property
    def prompt_kwargs(self) -> dict[str, Any]:
        """A copy of the preset keyword arguments."""
        return dict(self._prompt_kwargs)

    @property
    def compat(self) -> str | None:
        """``"adalflow"`` or ``None``."""
        return COMPAT_MODES[0] if self._compat else None

    def missing_variables(self, **kwargs: Any) -> tuple[str, ...]:
        """Template variables neither preset nor in ``kwargs`` (sorted): what would be unset."""
        return tuple(n for n in self._variables if n not in self._prompt_kwargs and n not in kwargs)

    def update_prompt_kwargs(self, **kwargs: Any) -> None:
        """Add or replace preset keyword arguments."""
        self._prompt_kwargs.update(kwargs)

    # ------------------------------------------------------------------ rendering

    def __call__(self, **kwargs: Any) -> str:
        """Same as :meth:`call`."""
        return self.call(**kwargs)

    def call(self, /, **kwargs: Any) -> str:
        """Render with the presets overridden by ``kwargs``.

        Raises:
            MissingFieldError: (strict) an unset variable is printed, iterated or used as a value.
            TemplateError: any other render failure; in compat mode every failure, with
                AdalFlow's message ``Error rendering Jinja2 template: ...``.
        """
        if self._compat:
            return self._call_adalflow(kwargs)
        given = {**self._prompt_kwargs, **kwargs}
        plain = {key: value for key, value in given.items() if not _is_nested(value)}
        for key, value in list(given.items()):
            if _is_nested(value):
                try:
                    given[key] = _render_nested(value, plain)
                except PromptCompilerError as exc:
                    if exc.reference is not None:  # AdalFlow wraps the inner error once more
                        exc.reference = (exc.reference[0], _RENDER_PREFIX + exc.reference[1])
                    exc.located(key_path=key)
                    raise
                except Exception as exc:
                    raise TemplateError(
                        f"Error rendering the nested template {key!r}: {exc}",
                        key_path=key,
                        reference=("ValueError", _RENDER_PREFIX + str(exc)),
                    ) from exc
        return _render_strict(self._template, self._variables, given)

    def _call_adalflow(self, kwargs: dict[str, Any]) -> str:
        # Every variable starts as None, then presets, then call kwargs; nested prompts get all
        # non-template values (including those Nones and unknown keys).
        try:
            values: dict[str, Any] = dict.fromkeys(self._variables)
            values.update(self._prompt_kwargs)
            values.update(kwargs)
            plain = {key: value for key, value in values.items() if not _is_nested(value)}
            rendered = {key: _render_nested(value, plain) for key, value in values.items()}
            return self._template.render(rendered)
        except Exception as exc:
            message = _RENDER_PREFIX + str(exc)
            raise TemplateError(message, reference=("ValueError", message)) from exc

    # ------------------------------------------------------------------ serialisation

    def to_dict(self) -> dict[str, Any]:
        """AdalFlow's ``Prompt.to_dict()`` shape (``_init_args`` is always the empty defaults)."""
        return {
            "type": "Prompt",
            "data": {
                "_components": {"_ordered_dict": True, "data": []},
                "_parameters": {"_ordered_dict": True, "data": []},
                "training": False,
                "teacher_mode": False,
                "tracing": False,
                "name": "Prompt",
                "_init_args": {"template": None, "prompt_kwargs": {}},
                "template": self._text,
                "prompt_variables": list(self._variables),
                "prompt_kwargs": _serialise(self._prompt_kwargs),
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, compat: str | None = None) -> JinjaPrompt:
        """Rebuild a prompt from :meth:`to_dict` output (or AdalFlow's).

        Raises:
            ConfigError: ``data`` lacks ``data.template`` or ``data.prompt_kwargs`` is not a dict.
        """
        body = data.get("data") if isinstance(data, Mapping) else None
        if not isinstance(body, Mapping) or not isinstance(body.get("template"), str):
            raise ConfigError(
                "not a serialised prompt: expected {'type': 'Prompt', 'data': {'template': str, "
                "'prompt_kwargs': {...}}}",
                key_path="data.template",
            )
        kwargs = body.get("prompt_kwargs") or {}
        if not isinstance(kwargs, Mapping):
            raise ConfigError(
                f"prompt_kwargs must be a dict, got {type(kwargs).__name__}",
                key_path="data.prompt_kwargs",
            )
        restored = {key: _restore(value, compat) for key, value in kwargs.items()}
        return cls(body["template"], restored, compat=compat)

    def __reduce__(self) -> tuple[Any, ...]:
        # The compiled Jinja2 template does not pickle; rebuild from text, presets and mode.
        return (_rebuild_prompt, (self._text, self._prompt_kwargs, self.compat))

    def __repr__(self) -> str:
        # Component-style: class name, then the fields indented by two spaces.
        text = f"template: {self._text}"
        if self._prompt_kwargs:
            text += f", prompt_kwargs: {self._prompt_kwargs}"
        if self._variables:
            text += f", prompt_variables: {list(self._variables)}"
        body = text.replace("\n", "\n  ")
        return f"{type(self).__name__}(\n  {body}\n)"


def _rebuild_prompt(text: str, prompt_kwargs: dict[str, Any], compat: str | None) -> JinjaPrompt:
    return JinjaPrompt(text, prompt_kwargs, compat=compat)


Prompt = JinjaPrompt
"""AdalFlow's name for :class:`JinjaPrompt`."""
