"""OpenCompass's two template parsers by name: a PromptList + a meta template -> model input.

``LMTemplateParser`` (base and local models: one string) and ``APITemplateParser`` (API
models: a list of ``{"role": api_role, "prompt": text}`` messages) are the names
OpenCompass gives the two renderers of this package, :func:`~prompt_compiler.render.lm.render_lm`
and :func:`~prompt_compiler.render.api.render_api`; compiled datasets reach them through a
model's ``renderer`` (``lm``, ``api``). As in OpenCompass, ``parse_template`` takes one
prompt (a str, returned as it is, or a :class:`~prompt_compiler.promptlist.PromptList`) or a
batch (a plain list or tuple of prompts, parsed one by one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError, RenderError
from ..policy import Policy
from ..promptlist import PromptList
from .api import is_message_list, render_api
from .lm import render_lm
from .meta import MetaTemplate

__all__ = ["APITemplateParser", "LMTemplateParser"]

_MODES = ("gen", "ppl")


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ConfigError(f"mode must be 'gen' (stop where the model generates) or 'ppl' "
                          f"(render everything), got {mode!r}",
                          reference=("AssertionError", ""))


class LMTemplateParser:
    """A meta template for base and local models: PromptList -> one string.

    Args:
        meta_template: OpenCompass's meta template dict (``round``, optional ``begin``,
            ``end``, ``reserved_roles``); ``None`` or empty joins the items with ``'\\n'``.
        policy: ``"default"`` (the default: OpenCompass's defects fixed, docs/defects.md)
            or ``"opencompass"`` (compat mode, defects included), or a
            :class:`~prompt_compiler.policy.Policy`.

    Raises:
        MetaTemplateError: The meta template is malformed (no ``round``, a role twice, ...).
    """

    def __init__(self, meta_template: Mapping[str, Any] | None = None, *,
                 policy: Policy | str | None = None) -> None:
        self.meta_template = meta_template
        self.policy = Policy.of(policy)
        self.meta = MetaTemplate.parse(meta_template, lm=True)

    def parse_template(self, prompt_template: Any, mode: str) -> Any:
        """The model input for ``prompt_template``.

        Args:
            prompt_template: A str (returned unchanged, never wrapped), a PromptList, or a
                list/tuple of them (a batch: a list of inputs).
            mode: ``"gen"`` stops where the last round's generating role begins (its text and
                everything after it are left out); ``"ppl"`` renders everything.
        """
        _check_mode(mode)
        if isinstance(prompt_template, (list, tuple)):
            return [self.parse_template(p, mode) for p in prompt_template]
        if not isinstance(prompt_template, (str, PromptList)):
            raise RenderError(f"a prompt must be a str or a PromptList, got "
                              f"{type(prompt_template).__name__}",
                              reference=("AssertionError", ""))
        return render_lm(prompt_template, self.meta, mode, self.policy)


class APITemplateParser:
    """A meta template for API models: PromptList -> ``[{"role": api_role, "prompt": ...}]``.

    Bare strings of the PromptList are left out (a warning when not blank), consecutive
    messages of one ``api_role`` are joined with ``'\\n'``, and the meta template's ``begin``
    (when set) comes first as a str. Without a meta template the items are joined into one
    string, as :class:`LMTemplateParser` joins them. A non-empty list of ``{"role",
    "content"}`` dicts (OpenAI messages) is returned as it is.

    Args:
        meta_template: OpenCompass's meta template dict (every role needs an ``api_role``),
            or a list of OpenAI messages, merged into message prompts.
        policy: ``"default"`` or ``"opencompass"`` (see :class:`LMTemplateParser`).
    """

    def __init__(self,
                 meta_template: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
                 *, policy: Policy | str | None = None) -> None:
        self.meta_template = meta_template
        self.policy = Policy.of(policy)
        self.meta = MetaTemplate.parse(meta_template, lm=False)

    def parse_template(self, prompt_template: Any, mode: str) -> Any:
        """The model input for ``prompt_template`` (a str, a PromptList, OpenAI messages,
        or a list/tuple of them); ``mode`` as :meth:`LMTemplateParser.parse_template`."""
        _check_mode(mode)
        if is_message_list(prompt_template):
            return render_api(prompt_template, self.meta, mode, self.policy)
        if isinstance(prompt_template, (list, tuple)):
            return [self.parse_template(p, mode) for p in prompt_template]
        if not isinstance(prompt_template, (str, PromptList)):
            raise RenderError(f"a prompt must be a str, a PromptList or a list of OpenAI "
                              f"messages, got {type(prompt_template).__name__}",
                              reference=("AssertionError", ""))
        return render_api(prompt_template, self.meta, mode, self.policy)
