"""The shared machinery of the LazyLLM-style instruction prompters."""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar, overload

import json5

from ..errors import ConfigError, RenderError, UnsupportedError
from ._history import history_messages, history_text, render_text
from ._instruction import InstructionTemplate, SplitInput, is_message, split_input
from ._tokens import ModelTokens

__all__ = ["TOOLS_HEADER", "InstructionPrompter", "Message", "PromptDict"]

logger = logging.getLogger("prompt_compiler.prompters")

TOOLS_HEADER = "### Function-call Tools. \n\n"
"""Heading of the tools block in text prompts (a LazyLLM format fact, trailing space included)."""

Message = dict[str, Any]
"""An OpenAI-style chat message."""
PromptDict = dict[str, Any]
"""``{"messages": [...], "tools": [...]}`` (``tools`` only when there are tools)."""

_P = TypeVar("_P", bound="InstructionPrompter")


def _split_dict_instruction(instruction: Mapping[str, Any]) -> tuple[str, str]:
    unknown = sorted(set(instruction) - {"system", "user"})
    if unknown:
        raise ConfigError(
            f"a dict instruction may only have the keys 'system' and 'user', got {unknown}"
        )
    parts = []
    for key in ("system", "user"):
        value = instruction.get(key) or ""
        if not isinstance(value, str):
            raise ConfigError(f"instruction[{key!r}] must be a str, got {type(value).__name__}")
        parts.append(value)
    return parts[0], parts[1]


class InstructionPrompter:
    """Base of :class:`AlpacaPrompter` and :class:`ChatPrompter`.

    A prompter turns an input (a str or a dict of slot values), an optional conversation
    history and optional tools into either one text prompt (for local models, wrapped in the
    model's special tokens) or ``{"messages", "tools"}`` for chat APIs.
    """

    def __init__(
        self,
        template: InstructionTemplate,
        *,
        show: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        history: Sequence[Any] | None = None,
        model: str | None = None,
    ) -> None:
        self._template = template
        self._tokens = ModelTokens()
        self._show = show
        self._tools: list[Any] | None = copy.deepcopy(list(tools)) if tools else None
        self._history: list[Any] = copy.deepcopy(list(history or []))
        if model is not None:
            self.apply_model_template(model)

    # -- construction helpers -------------------------------------------------------------

    @staticmethod
    def _parts(instruction: str | Mapping[str, Any] | None) -> tuple[str | None, str | None]:
        """``(system, user)`` of an instruction; ``user`` is None for a str instruction."""
        if instruction is None or isinstance(instruction, str):
            return instruction, None
        if isinstance(instruction, Mapping):
            return _split_dict_instruction(instruction)
        raise ConfigError(
            "instruction must be a str or a dict with 'system'/'user', "
            f"got {type(instruction).__name__}"
        )

    @classmethod
    def for_model(cls: type[_P], model: str, *args: Any, **kwargs: Any) -> _P:
        """A prompter with the special tokens of one of this project's model templates.

        Args:
            model: A model template name or path, as accepted by
                ``prompt_compiler.model.meta_library.load_model_template``.
            *args: The prompter's own arguments (instruction, extra_keys, ...).
            **kwargs: The prompter's own keyword arguments.
        """
        prompter = cls(*args, **kwargs)
        return prompter.apply_model_template(model)

    def apply_model_template(self: _P, name_or_path: str) -> _P:
        """Apply the ``prompter`` token mapping of a model template (none: nothing changes)."""
        from ..model.meta_library import load_model_template  # lazy: the library is optional here

        template = load_model_template(name_or_path)
        return self.set_model_tokens(**dict(template.prompter))

    def set_model_tokens(self: _P, **tokens: Any) -> _P:
        """Set per-model special tokens (``sos``, ``eos``, ``soh``, ``eoh``, ``soa``, ``eoa``,
        ``soe``, ``eoe``, ``system``, ``tool_start_token``, ``tool_args_token``,
        ``tool_end_token``; ``separator``, ``plugin``, ``interpreter``, ``stop_words`` are
        accepted and unused). ``None`` leaves a slot unchanged. Tool tokens written as
        ``{tool_start_token}`` etc. in the instruction are replaced now.

        Returns:
            The prompter itself.

        Raises:
            ConfigError: For an unknown token name or a non-str value.
        """
        self._tokens = self._tokens.updated(**tokens)
        self._template = self._template.with_tool_tokens(self._tokens)
        return self

    _set_model_configs = set_model_tokens
    """LazyLLM's name for :meth:`set_model_tokens`, kept for compatibility."""

    # -- read-only views ---------------------------------------------------------------------

    @property
    def model_tokens(self) -> ModelTokens:
        """The special tokens in use."""
        return self._tokens

    @property
    def instruction(self) -> InstructionTemplate:
        """The instruction template (slots unfilled)."""
        return self._template

    @property
    def tools(self) -> list[Any] | None:
        """A copy of the tools given at construction."""
        return copy.deepcopy(self._tools)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(instruction={self._template!r}, "
            f"tools={len(self._tools or [])}, history={len(self._history)})"
        )

    # -- prompt generation -----------------------------------------------------------------

    @overload
    def generate_prompt(
        self, input: Any = ..., history: Sequence[Any] | None = ...,
        tools: Sequence[Mapping[str, Any]] | None = ..., label: str | None = ..., *,
        show: bool = ..., return_dict: Literal[False] = ...,
    ) -> str: ...

    @overload
    def generate_prompt(
        self, input: Any = ..., history: Sequence[Any] | None = ...,
        tools: Sequence[Mapping[str, Any]] | None = ..., label: str | None = ..., *,
        show: bool = ..., return_dict: Literal[True],
    ) -> PromptDict: ...

    def generate_prompt(
        self,
        input: Any = None,
        history: Sequence[Any] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        label: str | None = None,
        *,
        show: bool = False,
        return_dict: bool = False,
    ) -> str | PromptDict:
        """Build the model input.

        Args:
            input: A str/int (fills the only slot, or becomes the user turn when there is no
                slot) or a dict (slot and extra-key values, plus at most one free key for the
                user turn, or the ``role``/``content`` keys of a chat message).
            history: ``[[q, a], ...]`` and/or message dicts; appended to the history given at
                construction.
            tools: OpenAI function schemas (not allowed when tools were given at construction).
            label: Appended to a text prompt (training targets); ignored with ``return_dict``.
            show: Log the result at INFO level.
            return_dict: Return ``{"messages": [...], "tools": [...]}`` instead of text.

        Raises:
            TemplateError, MissingFieldError, DataError, RenderError: The input or history
                does not fit the instruction (the message says what was expected).
            UnsupportedError: Tools at both construction and call, or history for Alpaca.
        """
        split = split_input(self._template, copy.deepcopy(input))
        items = self._history + list(history or [])
        past: str | list[Message] = (
            history_messages(items) if return_dict else history_text(items, self._tokens)
        )
        tool_list = self._resolve_tools(tools)
        self._check(split, past)
        result: str | PromptDict
        if return_dict:
            assert isinstance(past, list)
            result = self._prompt_dict(split, past, tool_list)
        else:
            assert isinstance(past, str)
            tools_text = TOOLS_HEADER + json5.dumps(tool_list) + "\n\n" if tool_list else ""
            result = self._prompt_text(split, past, tools_text) + (str(label) if label else "")
        if show or self._show:
            logger.info("%s", result)
        return result

    def get_response(self, output: str, input: str | None = None) -> str:
        """The model's answer in ``output``.

        If ``input`` is given and ``output`` starts with it, the rest is returned; otherwise
        what follows the last response marker (Chat: ``soa``; Alpaca: ``### Response:``),
        or ``output`` unchanged when there is no marker.
        """
        if input and output.startswith(input):
            return output[len(input):]
        marker = self._response_marker()
        return output.split(marker)[-1] if marker else output

    # -- pieces for subclasses ---------------------------------------------------------------

    def _response_marker(self) -> str:
        raise NotImplementedError

    def _check(self, split: SplitInput, past: str | list[Message]) -> None:
        """Reject inputs this prompter kind does not support (after history and tools)."""

    def _prompt_text(self, split: SplitInput, history: str, tools: str) -> str:
        raise NotImplementedError

    def _resolve_tools(self, tools: Sequence[Mapping[str, Any]] | None) -> list[Any] | None:
        if self._tools:
            if tools is not None:
                raise UnsupportedError(
                    "tools were given at construction; a call may not pass tools again",
                    hint="construct the prompter without tools to pass them per call",
                    reference=("AssertionError", ""),
                )
            return copy.deepcopy(self._tools)
        return copy.deepcopy(list(tools)) if tools else None

    def _system_text(self, instruction: str) -> str:
        system = self._tokens.system
        return f"{system}\n{instruction}" if instruction else system

    def _prompt_dict(
        self, split: SplitInput, messages: list[Message], tools: list[Any] | None
    ) -> PromptDict:
        free = split.free
        if isinstance(free, str):
            messages.append({"role": "user", "content": free})
        elif is_message(free):
            messages.append(dict(free))
        elif isinstance(free, list) and free and all(is_message(m) for m in free):
            messages.extend(dict(m) for m in free)
        else:
            raise RenderError(
                "with return_dict=True the user input must be a str or a chat message, got "
                f"{type(free).__name__} {free!r}",
                reference=("TypeError", "input must be a string or a dict"),
            )
        user = split.instruction.user
        if user:
            messages[-1]["content"] = user + render_text(messages[-1].get("content"))
        system = self._system_text(split.instruction.system)
        messages.insert(0, {"role": "system", "content": system})
        return {"messages": messages, "tools": tools} if tools else {"messages": messages}

    def _user_turn(self, free: Any) -> tuple[str, str, str]:
        """``(start token, text, end token)`` of the user turn in a text prompt."""
        tokens = self._tokens
        if is_message(free):
            text = render_text(free["content"])
            if free["role"] == "tool":
                return tokens.soe or tokens.soh, text, tokens.eoe or tokens.eoh
            return tokens.soh, text, tokens.eoh
        return tokens.soh, render_text(free), tokens.eoh
