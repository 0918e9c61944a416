"""What a chat template sees: message pre-processing and the restricted globals.

transformers 5.x does more than hand the messages to Jinja2, and templates depend on it:

* keys whose value is ``None`` are dropped from every message (an API's ``content=None``
  or ``tool_calls=None`` must look like a missing key, not render as ``None``);
* an empty conversation, or a message that is not a dict, is refused;
* everything the template sees is rebuilt from plain JSON types (a ``str`` subclass
  becomes a ``str``, a mapping, dataclass or pydantic model a ``dict``, an unknown object
  the text ``<TypeName>``);
* a message carrying its reasoning as ``reasoning_content``, ``thinking`` or
  ``reasoning`` gets both ``thinking`` and ``reasoning_content`` (templates of different
  families read different names);
* ``dict`` is a restricted callable (``dict(...)`` and ``dict.fromkeys(...)`` only) and
  ``namespace`` refuses underscore-prefixed attribute names.

:mod:`prompt_compiler.render.chat_template` applies these before rendering.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2.exceptions
import jinja2.utils

from ..errors import DataError

__all__ = ["REASONING_FIELDS", "TemplateDict", "TemplateNamespace", "plain", "prepare_messages",
           "template_globals"]

#: Names a message's reasoning text travels under; the first is the one templates read most.
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def plain(value: Any) -> Any:
    """``value`` rebuilt from JSON types: what a template may safely see.

    Scalars keep their value but lose subclass methods; mappings become dicts, lists stay
    lists and tuples tuples; dataclass instances and pydantic models become dicts of their
    fields; any other object becomes the inert text ``<TypeName>``.
    """
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy":  # a NumPy scalar
        return plain(item())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # One level at a time, so large arrays inside are never deep-copied.
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # a pydantic model: its own plain-data view
        return plain(dump())
    return f"<{type(value).__name__}>"


def _alias_reasoning(message: Any) -> Any:
    if not isinstance(message, dict):
        return message
    reasoning = next((message[k] for k in REASONING_FIELDS if message.get(k) is not None), None)
    if reasoning is None:
        return message
    # Key order matters to templates that iterate a message: ``thinking`` first (unless
    # the message already has it), ``reasoning_content`` last (unless it already has it).
    return {"thinking": reasoning, **message, "reasoning_content": reasoning}


def prepare_messages(messages: Sequence[Any]) -> list[Any]:
    """A fresh copy of ``messages`` as transformers passes it to the template.

    Keys with ``None`` values are dropped (top level only), values are made plain,
    reasoning is aliased.

    Raises:
        DataError: The conversation is empty, or a message is not a dict.
    """
    if not messages:
        # transformers refuses an empty conversation before it renders anything.
        raise DataError("a chat needs at least one message; the conversation is empty",
                        key_path="messages")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise DataError(
                f"messages[{i}] must be a message dict ({{\"role\": ..., \"content\": ...}}), "
                f"got {type(message).__name__}", key_path=f"messages[{i}]")
        kept = {k: v for k, v in message.items() if v is not None}
        out.append(_alias_reasoning(plain(kept)))
    return out


def continue_fields(message: Mapping[str, Any], key: str) -> list[str]:
    """The fields continued for ``continue_final_message=key``: every reasoning copy."""
    if key not in REASONING_FIELDS:
        return [key]
    final = message.get(key)
    return [f for f in REASONING_FIELDS if f in message and message[f] == final]


class TemplateDict:
    """``dict`` inside a chat template: callable and ``fromkeys``, nothing else."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


class TemplateNamespace(jinja2.utils.Namespace):
    """``namespace`` inside a chat template: refuses names starting with ``_``."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 - jinja's signature trick
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for name in attrs:
            TemplateNamespace._check(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        TemplateNamespace._check(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"a chat template cannot store the underscore-prefixed attribute {name!r} "
                "on a namespace")


def template_globals() -> dict[str, Any]:
    """The ``dict`` and ``namespace`` globals a chat-template environment installs."""
    return {"dict": TemplateDict(), "namespace": TemplateNamespace}
