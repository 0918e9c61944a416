"""Per-model special tokens of the instruction prompters (LazyLLM's ``model_configs`` keys)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

__all__ = ["DEFAULT_SYSTEM", "TOKEN_NAMES", "ModelTokens"]

DEFAULT_SYSTEM = "You are an AI-Agent developed by LazyLLM."
"""The system text used when the model defines none (a format fact of LazyLLM)."""


@dataclass(frozen=True, slots=True)
class ModelTokens:
    """The special-token slots a prompter wraps its parts in.

    Every slot defaults to ``''`` (no token), ``system`` to :data:`DEFAULT_SYSTEM`.
    """

    system: str = DEFAULT_SYSTEM
    """System text; a model's own replaces the default (``''`` removes it)."""
    sos: str = ""
    """Start of the system section."""
    eos: str = ""
    """End of the system section."""
    soh: str = ""
    """Start of a human (user) turn."""
    eoh: str = ""
    """End of a human turn."""
    soa: str = ""
    """Start of an assistant turn; ChatPrompter's response split marker."""
    eoa: str = ""
    """End of an assistant turn."""
    soe: str = ""
    """Start of an environment (tool result) turn."""
    eoe: str = ""
    """End of an environment turn."""
    tool_start_token: str = ""
    """Written before each tool call of an assistant history turn."""
    tool_args_token: str = ""
    """Between a tool call's name and its JSON5 arguments; without it the call is shown raw."""
    tool_end_token: str = ""
    """Written after each tool call."""
    separator: str | None = None
    """Accepted for compatibility; not used in rendering."""
    plugin: str | None = None
    """Accepted for compatibility; not used in rendering."""
    interpreter: str | None = None
    """Accepted for compatibility; not used in rendering."""
    stop_words: tuple[str, ...] = ()
    """Accepted for compatibility (the serving side stops on them); not used in rendering."""

    def updated(self, **tokens: Any) -> ModelTokens:
        """A copy with the given slots set; ``None`` values leave a slot unchanged.

        Raises:
            ConfigError: For an unknown slot name or a value of the wrong type.
        """
        changes: dict[str, Any] = {}
        for name, value in tokens.items():
            if name not in TOKEN_NAMES:
                raise ConfigError(
                    f"unknown model token {name!r}; expected one of: {', '.join(TOKEN_NAMES)}",
                    reference=("TypeError", f"_set_model_configs() got an unexpected keyword "
                                            f"argument {name!r}"),
                )
            if value is None:
                continue
            if name == "stop_words":
                if not isinstance(value, (list, tuple)) or not all(
                        isinstance(word, str) for word in value):
                    raise ConfigError(
                        f"model token 'stop_words' must be a list of str, got {value!r}")
                value = tuple(value)
            elif not isinstance(value, str):
                raise ConfigError(
                    f"model token {name!r} must be a str, got {type(value).__name__} {value!r}"
                )
            changes[name] = value
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_mapping(cls, tokens: Mapping[str, Any]) -> ModelTokens:
        """Defaults updated with ``tokens`` (see :meth:`updated`)."""
        return cls().updated(**dict(tokens))


TOKEN_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(ModelTokens))
"""Every accepted slot name, in declaration order."""
