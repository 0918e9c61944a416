"""The API renderer: a PromptList -> OpenCompass's API message list.

The result is an :class:`ApiPrompt`: ``{"role": api_role, "prompt": text}`` dicts,
possibly preceded by the meta template's raw ``begin`` string. Bare strings of the
PromptList are dropped (API models take no free text) and consecutive messages of the
same role are merged with ``'\\n'``.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import MetaTemplateError, PromptCompilerWarning, RenderError
from ..policy import Policy
from ..promptlist import PromptList
from .lm import join_plain
from .meta import (
    Dialogue,
    MetaTemplate,
    RoleText,
    Text,
    lookup,
    merge_meta_messages,
    merge_roles,
    split_rounds,
    walk,
)

DROPPED_STRING = "Non-empty string in prompt template will be ignored in API models."
"""OpenCompass 0.5.4's warning (``APITemplateParser``) for a bare string it drops."""

__all__ = ["ApiPrompt", "DEFAULT_CHAT_META", "is_message_list", "prompt_text", "render_api"]

# OpenCompass's meta template for chat-template (HuggingFacewithChatTemplate) models.
DEFAULT_CHAT_META: dict[str, Any] = {
    "round": [
        {"role": "HUMAN", "api_role": "HUMAN"},
        {"role": "SYSTEM", "api_role": "HUMAN"},
        {"role": "BOT", "api_role": "BOT", "generate": True},
    ]
}


class ApiPrompt(list):  # type: ignore[type-arg]
    """A rendered API prompt (a list subclass so it serialises as a JSON list)."""


def is_message_list(value: Any) -> bool:
    """True for a non-empty list of ``{"role", "content"}`` dicts (raw OpenAI messages)."""
    return (isinstance(value, list) and not isinstance(value, ApiPrompt) and bool(value)
            and all(isinstance(m, Mapping) and "role" in m and "content" in m for m in value))


def prompt_text(rendered: Any) -> str | list[str]:
    """The text a token counter sees: one string, or one per message of a raw list."""
    if isinstance(rendered, str):
        return rendered
    if isinstance(rendered, PromptList):  # an unrendered prompt (OpenCompass's CLP defect D9)
        return str(rendered)
    if isinstance(rendered, ApiPrompt):
        return "".join(i if isinstance(i, str) else str(i.get("prompt", "")) for i in rendered)
    return [str(m) for m in rendered]


def _api_role(cfg: Mapping[str, Any], table: Mapping[str, Any], for_gen: bool
              ) -> tuple[dict[str, str] | None, bool]:
    merged = lookup(table, cfg)  # type: ignore[arg-type]
    if for_gen and merged.get("generate", False):
        return None, False
    if "api_role" not in merged:
        raise MetaTemplateError(
            f"role {merged.get('role')!r} has no 'api_role' in the meta template of an API model",
            reference=("KeyError", "'api_role'"))
    text = merged.get("begin", "") + merged.get("prompt", "") + merged.get("end", "")
    return {"role": merged["api_role"], "prompt": text}, True


def _round(meta_round: Sequence[Any], table: Mapping[str, Any], for_gen: bool
           ) -> tuple[list[dict[str, str]], bool]:
    out = []
    for cfg in meta_round:
        if isinstance(cfg, str):
            raise RenderError(
                "an API model's meta round cannot hold a bare string; give it a role",
                reference=("TypeError",
                           "Mixing str without explicit role is not allowed in API models!"))
        msg, cont = _api_role(cfg, table, for_gen)
        if msg:
            out.append(msg)
        if not cont:
            return out, False
    return out, True


def _messages_meta_with_prompt_list(prompt: PromptList) -> RenderError:
    """OpenCompass's APITemplateParser, with a meta template of messages, fails on the first
    role item of a PromptList: in a begin/end section it looks for the role table (which
    only a dict meta template builds), at the end of a round for the meta ``round``."""
    reference = ("IndexError", "list index out of range")  # no role item: nothing rendered
    for event in walk(prompt):
        if isinstance(event, RoleText):
            reference = ("AttributeError", "'APITemplateParser' object has no attribute 'roles'")
            break
        if isinstance(event, Dialogue):
            reference = ("TypeError", "list indices must be integers or slices, not str")
            break
    return RenderError(
        "a meta template given as a list of messages merges into message prompts "
        "(RawPromptTemplate) only; this prompt is a PromptList of role items",
        key_path="meta_template",
        hint="give the model a meta template dict (round with api_role), or build the dataset's "
             "prompts with RawPromptTemplate", reference=reference)


def render_api(prompt: Any, meta: MetaTemplate | None, mode: str, policy: Policy) -> Any:
    """Render for an API model (see the module docstring)."""
    if is_message_list(prompt):
        if meta is not None and meta.messages is not None:
            return merge_meta_messages(meta.messages, prompt)
        return copy.deepcopy(prompt)
    if isinstance(prompt, str):
        return prompt
    if not isinstance(prompt, PromptList):
        return [render_api(p, meta, mode, policy) for p in prompt]
    if meta is None:
        return join_plain(prompt)
    if meta.messages is not None:
        raise _messages_meta_with_prompt_list(prompt)
    parts: list[Any] = []
    generate = True
    for event in walk(prompt):
        if isinstance(event, Text):
            if event.text.strip():  # OpenCompass's APITemplateParser warns (a UserWarning)
                warnings.warn(PromptCompilerWarning(DROPPED_STRING), stacklevel=2)
        elif isinstance(event, RoleText):
            table = merge_roles(meta, [event.item])
            # OpenCompass lets a begin/end item stop generation in gen mode (D14).
            for_gen = mode == "gen" and not policy.fixes("D14")
            msg, generate = _api_role(event.item.to_obj(), table, for_gen)
            parts.append(msg)
        elif isinstance(event, Dialogue):
            rounds = split_rounds(event.items, meta, use_fallback=True)
            last = len(rounds) - 1
            for j, items in enumerate(rounds):
                table = merge_roles(meta, items)
                for_gen = mode == "gen" and event.section == "round" and j == last
                msgs, generate = _round(meta.round, table, for_gen)
                parts.extend(msgs)
        if not generate:
            break
    if not parts:
        raise RenderError("the prompt renders to no message at all for this API model",
                          reference=("IndexError", "list index out of range"))
    merged = ApiPrompt()
    for msg in parts:
        if msg is None:
            raise RenderError(
                "a generating role (e.g. BOT) in a begin/end section stops generation before "
                "any round in OpenCompass's API parser",
                hint="compile in the default mode (defect D14) or move the role into the round",
                reference=("TypeError", "'NoneType' object is not subscriptable"))
        if merged and merged[-1]["role"] == msg["role"]:
            merged[-1] = {"role": msg["role"],
                          "prompt": merged[-1]["prompt"] + "\n" + msg["prompt"]}
        else:
            merged.append(dict(msg))
    if meta.begin:
        merged.insert(0, meta.begin)
    return merged
