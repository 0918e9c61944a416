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

Rendering happens in :mod:`prompt_compiler.template.jinja_engine` (the sandboxed, compiled-once
engine that dataset ``engine: jinja2`` templates use too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import jinja2

from ..errors import ConfigError, PromptCompilerError, TemplateError
from .jinja_engine import (
    RENDER_PREFIX,
    CompiledJinja,
    compile_jinja,
    compile_template,
    render_strict,
)

__all__ = [
    "COMPAT_MODES",
    "DEFAULT_TEMPLATE",
    "CompiledJinja",
    "JinjaPrompt",
    "Prompt",
    "compile_jinja",
]

COMPAT_MODES: Final = ("adalflow",)
"""Values accepted by the ``compat`` argument besides ``None``."""

# The default layout (AdalFlow's, reproduced from its rendered output): a system part with the
# task (or a stock sentence) and six optional tagged sections, then a user part with the input
# and optional agent steps. Tags print only for truthy values; trim_blocks/lstrip_blocks remove
# the lines that hold only block tags.
DEFAULT_TEMPLATE: Final[str] = r"""<START_OF_SYSTEM_PROMPT>
{% if task_desc_str %}
{{ task_desc_str }}
{% else %}
You are a helpful assistant.
{% endif %}
{% for tag, text in [("INPUT_FORMAT", input_format_str), ("OUTPUT_FORMAT", output_format_str),
                     ("TOOLS", tools_str), ("EXAMPLES", examples_str),
                     ("CHAT_HISTORY", chat_history_str), ("CONTEXT", context_str)] if text %}
<{{ tag }}>
{{ text }}
</{{ tag }}>
{% endfor %}
<END_OF_SYSTEM_PROMPT>
<START_OF_USER_PROMPT>
{% if input_str %}
{{ input_str }}
{% endif %}
{% if steps_str %}
<START_OF_ASSISTANT_STEPS>
{{ steps_str }}
<END_OF_ASSISTANT_STEPS>
{% endif %}
<END_OF_USER_PROMPT>
"""
"""The default template; its variables are the nine ``*_str`` names, all optional."""

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
        self._template, self._variables = compile_template(self._text, compat=self._compat)
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
                        exc.reference = (exc.reference[0], RENDER_PREFIX + exc.reference[1])
                    exc.located(key_path=key)
                    raise
                except Exception as exc:
                    raise TemplateError(
                        f"Error rendering the nested template {key!r}: {exc}",
                        key_path=key,
                        reference=("ValueError", RENDER_PREFIX + str(exc)),
                    ) from exc
        return render_strict(self._template, self._variables, given)

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
            message = RENDER_PREFIX + str(exc)
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
