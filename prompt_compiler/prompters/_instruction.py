"""Instruction templates of the prompters: slots, extra keys and how an input fills them.

An instruction has a *system* side (it joins the system prompt) and a *user* side (it is
prefixed to the user turn; only a ``{"system", "user"}`` instruction has one). Slots are
``{name}`` with ``name`` matching ``\\w+``.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, DataError, MissingFieldError, RenderError, TemplateError
from ._tokens import ModelTokens

__all__ = [
    "EXTRA_KEYS_HEADER",
    "MESSAGE_KEYS",
    "SLOT_PATTERN",
    "InstructionTemplate",
    "SplitInput",
    "extra_keys_block",
    "is_message",
    "normalize_extra_keys",
    "split_input",
]

class _SlotFormatter(string.Formatter):
    """``str.format`` limited to bare slot names: the instruction comes from a config and the
    value from data, so ``{input.__class__}`` or ``{input[0]}`` must not reach attributes or
    items (the caller then fills textually), and a width such as ``{input:>999999999}`` is
    refused instead of building a huge string."""

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, str]:
        if field_name not in kwargs:
            raise KeyError(field_name)
        return kwargs[field_name], field_name

    def format_field(self, value: Any, format_spec: str) -> str:
        if re.search(r"\d{5,}", format_spec):
            raise ValueError(f"format width too large: {format_spec!r}")
        return format(value, format_spec)


_FORMATTER = _SlotFormatter()

SLOT_PATTERN = re.compile(r"\{(\w+)\}")
"""A slot in an instruction: ``{name}``."""

EXTRA_KEYS_HEADER = "Here are some extra messages you can referred to:\n\n"
"""First line of the extra-keys block (a format fact of LazyLLM, typo included)."""

MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
"""Keys of an OpenAI-style chat message accepted as a free input."""

_TOOL_TOKEN_NAMES = ("tool_start_token", "tool_args_token", "tool_end_token")


def normalize_extra_keys(extra_keys: Any, extro_keys: Any = None) -> tuple[str, ...]:
    """The extra keys as a tuple, from either spelling (``extro_keys`` is the 0.4 name).

    Raises:
        ConfigError: When both spellings are given or the value is not a str or a list of str.
    """
    if extra_keys is not None and extro_keys is not None:
        raise ConfigError("give extra_keys or its older spelling extro_keys, not both")
    keys = extro_keys if extra_keys is None else extra_keys
    if not keys:
        return ()
    if isinstance(keys, str):
        return (keys,)
    if not isinstance(keys, (list, tuple)) or not all(isinstance(k, str) for k in keys):
        raise ConfigError(
            f"extra_keys must be a str or a list/tuple of str, got {keys!r}",
            reference=("AssertionError", "Only str, tuple[str], list[str] are supported"),
        )
    return tuple(keys)


def extra_keys_block(keys: Iterable[str]) -> str:
    """The block listing the extra keys as slots (``''`` when there are none)."""
    keys = tuple(keys)
    if not keys:
        return ""
    return EXTRA_KEYS_HEADER + "".join(f"### {k}:\n{{{k}}}\n\n" for k in keys)


def is_message(value: Any) -> bool:
    """Whether ``value`` looks like an OpenAI chat message (``role`` and ``content`` keys)."""
    return isinstance(value, Mapping) and "role" in value and "content" in value


@dataclass(frozen=True, slots=True)
class InstructionTemplate:
    """An instruction before its slots are filled."""

    system: str
    """Text joining the system prompt."""
    user: str = ""
    """Text prefixed to the user turn (only ``{"system", "user"}`` instructions have one)."""

    @property
    def slots(self) -> tuple[str, ...]:
        """Slot names in order of first appearance (system side first)."""
        names = SLOT_PATTERN.findall(self.system) + SLOT_PATTERN.findall(self.user)
        return tuple(dict.fromkeys(names))

    def with_tool_tokens(self, tokens: ModelTokens) -> InstructionTemplate:
        """Replace ``{tool_start_token}`` etc. by the model's tool tokens, where it has them."""
        system, user = self.system, self.user
        for name in _TOOL_TOKEN_NAMES:
            value = getattr(tokens, name)
            if value:
                system = system.replace(f"{{{name}}}", value)
                user = user.replace(f"{{{name}}}", value)
        return InstructionTemplate(system, user)

    def fill_single(self, value: str | int) -> InstructionTemplate:
        """Fill the only slot with a str (or int) input.

        Like ``str.format``: ``{{``/``}}`` become single braces. When ``str.format`` cannot
        parse the instruction (literal braces such as ``{"answer": ...}``), only the slot is
        replaced and every other brace is kept.
        """
        (slot,) = self.slots
        try:
            return InstructionTemplate(
                _FORMATTER.format(self.system, **{slot: value}),
                _FORMATTER.format(self.user, **{slot: value}),
            )
        except (KeyError, IndexError, ValueError, AttributeError, TypeError):
            # Literal braces that str.format rejects: fill the slot textually instead.
            return self.fill({slot: value})

    def fill(self, values: Mapping[str, Any]) -> InstructionTemplate:
        """Replace each ``{name}`` with ``str(values[name])`` in one pass.

        Inserted values are never rescanned, so a value containing ``{other}`` stays as is;
        braces that are not slots of ``values`` are left untouched.
        """

        def repl(match: re.Match[str]) -> str:
            name = match.group(1)
            return str(values[name]) if name in values else match.group(0)

        return InstructionTemplate(
            SLOT_PATTERN.sub(repl, self.system), SLOT_PATTERN.sub(repl, self.user)
        )


@dataclass(frozen=True, slots=True)
class SplitInput:
    """An input divided into the filled instruction and what goes to the user turn."""

    instruction: InstructionTemplate
    """The instruction with its slots filled."""
    free: Any
    """The free input for the user turn: ``''`` when none, a str, an int, or a message dict."""
    free_key: str | None = None
    """The input key that carried ``free`` (None for a str/int input or a message)."""


def _type_reference(value: Any) -> tuple[str, str]:
    # The assertion LazyLLM 0.4.1 raises for an input that is neither str, int nor dict.
    return (
        "AssertionError",
        f"expected types are str, int and dict, bug get {type(value)}(`{value})`".split("\n")[0],
    )


def split_input(template: InstructionTemplate, value: Any) -> SplitInput:
    """Fill ``template`` from ``value`` and return the rest for the user turn.

    * str/int + one slot: the slot takes the value, nothing is left;
    * str/int + no slot: the value is the free input;
    * dict: every slot takes the value of its key; at most one other key may remain and its
      value is the free input, unless the remaining keys form a chat message
      (``role``/``content``...), which is then the free input.

    Raises:
        TemplateError: A str input while the instruction has several slots.
        MissingFieldError: A dict input lacks a slot's key.
        DataError: A dict input has more than one key that is not a slot.
        RenderError: The input is neither str, int nor dict.
    """
    slots = template.slots
    if isinstance(value, (str, int)):
        if len(slots) == 1:
            return SplitInput(template.fill_single(value), "")
        if not slots:
            return SplitInput(template, value)
        raise TemplateError(
            f"the instruction has {len(slots)} slots ({', '.join('{' + s + '}' for s in slots)}) "
            f"but the input is a single {type(value).__name__}, which can fill only one",
            hint=f"pass a dict with the keys {list(slots)}",
            reference=("AssertionError", ""),
        )
    if not isinstance(value, Mapping):
        raise RenderError(
            f"input must be a str, an int or a dict, got {type(value).__name__}",
            reference=_type_reference(value),
        )
    missing = [s for s in slots if s not in value]
    if missing:
        raise MissingFieldError(
            f"input lacks the key(s) {missing} that the instruction's slots need; "
            f"it has {list(value)}",
            reference=("KeyError", repr(missing[0])),
        )
    rest = {k: v for k, v in value.items() if k not in slots}
    filled = template.fill({s: value[s] for s in slots})
    if not rest:
        return SplitInput(filled, "")
    if len(rest) == 1:
        ((key, free),) = rest.items()
        return SplitInput(filled, free, key)
    if "role" in rest and "content" in rest and set(rest) <= MESSAGE_KEYS:
        return SplitInput(filled, rest)
    raise DataError(
        f"unexpected input keys {list(rest)}: the instruction's slots and extra keys are "
        f"{list(slots)}, and at most one other key may carry the user input "
        "(or the remaining keys must form a chat message with 'role' and 'content')",
        reference=("AssertionError", f"Unexpected keys found in input: {list(rest)}"),
    )
