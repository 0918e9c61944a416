"""AlpacaPrompter and ChatPrompter: LazyLLM 0.4.1-compatible instruction prompters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import DataError, TemplateError, UnsupportedError
from ._base import InstructionPrompter, Message
from ._history import render_text
from ._instruction import (
    InstructionTemplate,
    SplitInput,
    extra_keys_block,
    normalize_extra_keys,
)

__all__ = ["ALPACA_PREAMBLE", "ALPACA_RESPONSE", "AlpacaPrompter", "ChatPrompter"]

ALPACA_PREAMBLE = (
    "Below is an instruction that describes a task, paired with extra messages such as input "
    "that provides further context if possible. Write a response that appropriately completes "
    "the request.\n\n### Instruction:\n"
)
"""Opening of every Alpaca instruction (a format fact of LazyLLM)."""

ALPACA_RESPONSE = "### Response:"
"""Where an Alpaca prompt hands over to the model; ``get_response`` splits on it."""

Instruction = str | Mapping[str, Any] | None
"""A str instruction (system side), or ``{"system": ..., "user": ...}``."""


class AlpacaPrompter(InstructionPrompter):
    """Single-turn Alpaca-style prompts.

    Text form: ``{system}\\n{instruction}\\n{tools}\\n{user}### Response:\\n``.

    Every input value must land in a slot of the instruction or of an extra key; history is
    not supported. Of the model tokens only ``system`` is used.

    Args:
        instruction: The task, with ``{slot}`` placeholders; or ``{"system", "user"}`` (the user
            part opens the user turn).
        extra_keys: Keys listed after the instruction under "Here are some extra messages...".
        show: Log every generated prompt.
        tools: OpenAI function schemas for every call.
        extro_keys: The older spelling of ``extra_keys``.
        model: Apply this project's model template of that name (see :meth:`for_model`).
    """

    def __init__(
        self,
        instruction: Instruction = None,
        extra_keys: str | Sequence[str] | None = None,
        show: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        extro_keys: str | Sequence[str] | None = None,
        model: str | None = None,
    ) -> None:
        keys = normalize_extra_keys(extra_keys, extro_keys)
        block = extra_keys_block(keys)
        system, user = self._parts(instruction)
        if user is None:
            template = InstructionTemplate(f"{ALPACA_PREAMBLE}{system or ''}\n\n{block}")
        else:
            # The extra-keys block closes the user part, where the user sees it.
            template = InstructionTemplate(
                ALPACA_PREAMBLE + (system or ""), user + (f"\n\n{block}" if block else "")
            )
        self.extra_keys = keys
        super().__init__(template, show=show, tools=tools, model=model)

    def _response_marker(self) -> str:
        return ALPACA_RESPONSE

    def _check(self, split: SplitInput, past: str | list[Message]) -> None:
        if past:
            raise UnsupportedError(
                "AlpacaPrompter does not take a conversation history",
                hint="use ChatPrompter for multi-turn prompts",
                reference=("AssertionError", "Chat history is not supported in <class "
                           "'lazyllm.components.prompter.alpacaPrompter.AlpacaPrompter'>."),
            )
        if split.free:
            reference = ("AssertionError", "All keys should in instruction or extro-keys")
            slots = list(self._template.slots)
            if split.free_key is not None:
                raise DataError(
                    f"AlpacaPrompter needs every input key to be a slot of the instruction or "
                    f"an extra key; {split.free_key!r} is neither a slot nor an extra key "
                    f"(slots: {slots})",
                    reference=reference,
                )
            if isinstance(split.free, (str, int)):
                raise TemplateError(
                    "AlpacaPrompter needs a slot for every input, and the instruction has no "
                    f"slot for the free input {render_text(split.free)!r}; its slots: {slots}",
                    hint="add one {slot} to the instruction or declare extra_keys",
                    reference=reference,
                )
            raise DataError(
                f"AlpacaPrompter cannot place a chat message input; slots: {slots}",
                reference=reference,
            )

    def _prompt_text(self, split: SplitInput, history: str, tools: str) -> str:
        instruction = split.instruction
        return (f"{self._tokens.system}\n{instruction.system}\n{tools}\n"
                f"{instruction.user}{ALPACA_RESPONSE}\n")


class ChatPrompter(InstructionPrompter):
    """Multi-turn chat prompts wrapped in the model's special tokens.

    Text form: ``{sos}{system}{instruction}{tools}{eos}\\n\\n{history}\\n{soh}\\n``
    ``{user}{input}\\n{eoh}{soa}\\n`` (one line, split here for width).

    Args:
        instruction: System-side instruction, optionally with ``{slot}`` placeholders; or
            ``{"system", "user"}`` (the user part is prefixed to the user input).
        extra_keys: Keys listed after the instruction under "Here are some extra messages...".
        show: Log every generated prompt.
        tools: OpenAI function schemas for every call.
        history: Turns prepended to every call's history.
        extro_keys: The older spelling of ``extra_keys``.
        model: Apply this project's model template of that name (see :meth:`for_model`).
    """

    def __init__(
        self,
        instruction: Instruction = None,
        extra_keys: str | Sequence[str] | None = None,
        show: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        history: Sequence[Any] | None = None,
        *,
        extro_keys: str | Sequence[str] | None = None,
        model: str | None = None,
    ) -> None:
        keys = normalize_extra_keys(extra_keys, extro_keys)
        block = extra_keys_block(keys)
        system, user = self._parts(instruction)
        if user is not None:
            # The extra-keys block closes the user part (0.4.1 drops it; see the divergences).
            template = InstructionTemplate(system or "", user + block)
        elif system or block:
            template = InstructionTemplate(f"{system or ''}\n{block}\n")
        else:
            template = InstructionTemplate("")
        self.extra_keys = keys
        super().__init__(template, show=show, tools=tools, history=history, model=model)

    def _response_marker(self) -> str:
        return self._tokens.soa

    def _prompt_text(self, split: SplitInput, history: str, tools: str) -> str:
        t = self._tokens
        soh, text, eoh = self._user_turn(split.free)
        return (
            f"{t.sos}{t.system}{split.instruction.system}{tools}{t.eos}\n\n{history}\n"
            f"{soh}\n{split.instruction.user}{text}\n{eoh}{t.soa}\n"
        )
