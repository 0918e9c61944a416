"""Chat-shaped rendering: OpenAI messages for chat-template models and ChatInferencer.

* :func:`to_chat_messages` turns an API prompt into the OpenAI messages a
  ``HuggingFacewithChatTemplate`` model hands to its tokenizer's chat template
  (roles mapped, empty prompts dropped, consecutive roles merged with ``'\\n'``).
* :func:`chat_to_lm` / :func:`chat_to_api` render a whole OpenAI-style chat for
  ChatInferencer, which bypasses the PromptList path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import MetaTemplateError, RenderError, UnknownRoleError
from .api import ApiPrompt

__all__ = ["chat_to_api", "chat_to_lm", "to_chat_messages"]

_TO_OPENAI = {"HUMAN": "user", "BOT": "assistant", "SYSTEM": "system"}
_FROM_OPENAI = {v: k for k, v in _TO_OPENAI.items()}


_OPENAI_ROLES = frozenset(_FROM_OPENAI)


def _is_openai_message(item: Any) -> bool:
    return (isinstance(item, Mapping) and "prompt" not in item and "content" in item
            and item.get("role") in _OPENAI_ROLES)


def to_chat_messages(rendered: Any, *, pass_openai: bool = False) -> list[dict[str, str]]:
    """OpenAI messages from an API-rendered prompt (a str becomes one user message).

    ``pass_openai`` (defect D18 fixed): a message list that is already OpenAI-style
    (a RawPromptTemplate's) goes through unchanged instead of failing on ``'prompt'``.
    """
    if isinstance(rendered, str):
        return [{"role": "user", "content": rendered}]
    if pass_openai and rendered and all(_is_openai_message(m) for m in rendered):
        return [dict(m) for m in rendered]
    messages: list[dict[str, str]] = []
    for item in rendered:
        if isinstance(item, str):
            raise RenderError(
                "a raw string (the meta template's begin) cannot become a chat message",
                reference=("TypeError", "string indices must be integers, not 'str'"))
        if "prompt" not in item:
            raise RenderError(
                "an OpenAI-style message list cannot go through the chat-template model's "
                "API prompt conversion (it expects 'prompt' keys)",
                reference=("KeyError", "'prompt'"))
        if not item["prompt"]:
            continue
        role = _TO_OPENAI.get(item["role"])
        if role is None:
            raise UnknownRoleError(
                f"api role {item['role']!r} has no chat equivalent; expected HUMAN, BOT or SYSTEM",
                reference=("KeyError", repr(item["role"])))
        if messages and messages[-1]["role"] == role:
            joined = messages[-1]["content"] + "\n" + item["prompt"]
            messages[-1] = {"role": role, "content": joined}
        else:
            messages.append({"role": role, "content": item["prompt"]})
    return messages


def _chat_roles(meta: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    roles: dict[str, dict[str, Any]] = {}
    if meta and not isinstance(meta, Mapping):
        raise MetaTemplateError(
            "ChatInferencer builds its chats from a meta template dict (round, "
            "reserved_roles); a meta template given as a list of messages has none",
            key_path="meta_template",
            reference=("AttributeError", f"'{type(meta).__name__}' object has no attribute "
                       "'get'"))
    if meta:
        for key in ("round", "reserved_roles"):
            for item in meta.get(key, []) or []:
                if isinstance(item, Mapping):
                    name = str(item["role"])
                    roles[_TO_OPENAI.get(name, name)] = dict(item)
    return roles


def chat_to_lm(chat: Sequence[Mapping[str, Any]], meta: Mapping[str, Any] | None) -> str:
    """A chat as one string: each message wrapped by its role, then the assistant's begin."""
    roles = _chat_roles(meta)
    if not roles:
        return "\n".join(str(m.get("content") or "") for m in chat)
    out = []
    for message in chat:
        cfg = roles.get(message["role"], {})
        out.append((cfg.get("begin") or "") + (message.get("content") or "")
                   + (cfg.get("end") or ""))
    if "assistant" not in roles:
        raise MetaTemplateError(
            "the meta template has no BOT role, so a chat cannot end with the model's turn",
            reference=("KeyError", "'assistant'"))
    out.append(roles["assistant"].get("begin") or "")
    return "".join(out)


def chat_to_api(chat: Sequence[Mapping[str, Any]], meta: Mapping[str, Any] | None) -> ApiPrompt:
    """A chat as API messages (``{"role": api_role, "prompt": content}``)."""
    roles = _chat_roles(meta) or {
        "system": {"api_role": "SYSTEM"}, "user": {"api_role": "HUMAN"},
        "assistant": {"api_role": "BOT", "generate": True},
    }
    out = ApiPrompt()
    for message in chat:
        cfg = roles.get(message["role"])
        if cfg is not None and "api_role" not in cfg:
            raise MetaTemplateError(
                f"role {cfg.get('role')!r} has no 'api_role' in the meta template of an API model",
                reference=("KeyError", "'api_role'"))
        role = cfg["api_role"] if cfg is not None else message["role"]
        out.append({"role": role, "prompt": message.get("content") or ""})
    return out
