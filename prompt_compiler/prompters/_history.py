"""Conversation history of the chat prompter: ``[[q, a], ...]`` pairs and/or role dicts."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import json5

from ..errors import DataError
from ._tokens import ModelTokens

__all__ = ["history_messages", "history_text", "render_text"]


def render_text(value: Any) -> str:
    """How a history value is written into a text prompt: ``None`` as ``''``, else ``str()``."""
    return "" if value is None else str(value)


def _pair(item: Sequence[Any], *, reference: tuple[str, str]) -> Sequence[Any]:
    if len(item) > 2:
        raise DataError(
            f"a history pair must be [question, answer] (at most 2 items), got {len(item)} items",
            reference=reference,
        )
    return item


def _not_an_item(item: Any) -> DataError:
    return DataError(
        "a history item must be a [question, answer] pair or a message dict with 'role', "
        f"got {type(item).__name__} {item!r}",
        reference=("ValueError", "history must be a list of list or dict"),
    )


def history_messages(items: Sequence[Any]) -> list[dict[str, Any]]:
    """History as chat messages: pairs become user/assistant dicts, dicts are copied as is.

    Raises:
        DataError: A pair with more than two items, or an item that is neither a pair nor a dict.
    """
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, (list, tuple)):
            pair = _pair(item, reference=("AssertionError",
                                          "history item length cannot be greater than 2"))
            roles = ("user", "assistant")
            out.extend({"role": role, "content": copy.deepcopy(text)}
                       for role, text in zip(roles, pair, strict=False))
        elif isinstance(item, Mapping):
            out.append(copy.deepcopy(dict(item)))
        else:
            raise _not_an_item(item)
    return out


def _field(message: Mapping[str, Any], key: str) -> Any:
    if key not in message:
        raise DataError(
            f"history message {dict(message)!r} has no {key!r} key",
            reference=("KeyError", repr(key)),
        )
    return message[key]


def _tool_call_text(call: Mapping[str, Any], tokens: ModelTokens) -> str:
    function = _field(call, "function")
    if tokens.tool_args_token:
        arguments = json5.dumps(_field(function, "arguments"), ensure_ascii=False)
        body = f"{_field(function, 'name')}{tokens.tool_args_token}{arguments}"
    else:
        # Without an args token the function object is shown as Python prints it.
        body = str(function)
    return f"{tokens.tool_start_token}\n{body}{tokens.tool_end_token}\n"


def _tool_result_text(content: Any) -> str:
    # A tool result that parses as JSON5 is shown as the parsed Python value.
    if isinstance(content, str):
        try:
            return render_text(json5.loads(content.strip()))
        except ValueError:
            pass
    return render_text(content)


def _message_text(message: Mapping[str, Any], tokens: ModelTokens) -> str:
    role = _field(message, "role")
    if role == "user":
        return f"{tokens.soh}{render_text(_field(message, 'content'))}{tokens.eoh}"
    if role == "assistant":
        calls = message.get("tool_calls") or []
        text = tokens.soa + render_text(message.get("content", ""))
        text += "".join(_tool_call_text(call, tokens) for call in calls)
        return text + tokens.eoa
    if role == "tool":
        return f"{tokens.soe}{_tool_result_text(_field(message, 'content'))}{tokens.eoe}"
    if role == "system":
        # A system turn inside the history is wrapped in the system tokens.
        return f"{tokens.sos}{render_text(_field(message, 'content'))}{tokens.eos}"
    raise DataError(
        f"history message role {role!r} is not one of 'user', 'assistant', 'tool', 'system'",
    )


def history_text(items: Sequence[Any], tokens: ModelTokens) -> str:
    """History written with the model's tokens, item by item and without separators.

    A pair gives ``soh+q+eoh+soa+a+eoa`` (a one-item pair only the user turn); a dict is
    rendered by its role (see :func:`_message_text`).

    Raises:
        DataError: Malformed items, unknown roles or missing keys.
    """
    parts: list[str] = []
    for item in items:
        if isinstance(item, (list, tuple)):
            pair = _pair(item, reference=("ValueError", "too many values to unpack (expected 2)"))
            if pair:
                parts.append(f"{tokens.soh}{render_text(pair[0])}{tokens.eoh}")
            if len(pair) == 2:
                parts.append(f"{tokens.soa}{render_text(pair[1])}{tokens.eoa}")
        elif isinstance(item, Mapping):
            parts.append(_message_text(item, tokens))
        else:
            raise _not_an_item(item)
    return "".join(parts)
