"""The LM renderer: a PromptList -> one string, for base and local models."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import RenderError
from ..policy import Policy
from ..promptlist import Marker, PromptList
from .meta import Dialogue, MetaTemplate, RoleText, Text, lookup, merge_roles, split_rounds, walk

__all__ = ["default_system_begin", "join_plain", "render_lm"]


def join_plain(prompt: PromptList) -> str:
    """The no-meta-template form: non-empty texts and prompts joined by ``'\\n'``.

    An empty item still sets the separator, so an empty *first* item yields a
    leading newline (OpenCompass's behaviour, kept in both modes).
    """
    out: list[str] = []
    sep = ""
    for item in prompt:
        if isinstance(item, Marker):
            continue
        text = item if isinstance(item, str) else item.get("prompt", "")
        if text:
            out.append(sep + text)
        sep = "\n"
    return "".join(out)


def role_text(cfg: Mapping[str, Any], table: Mapping[str, Any], for_gen: bool) -> tuple[str, bool]:
    """``begin + prompt + end`` of one role; stops after ``begin`` for the generating role."""
    merged = lookup(table, cfg)  # type: ignore[arg-type]
    begin = merged.get("begin", "")
    if for_gen and merged.get("generate", False):
        return begin, False
    return begin + merged.get("prompt", "") + merged.get("end", ""), True


def round_text(meta_round: Sequence[Any], table: Mapping[str, Any], for_gen: bool
               ) -> tuple[str, bool]:
    out = []
    for cfg in meta_round:
        if isinstance(cfg, str):
            out.append(cfg)
            continue
        text, cont = role_text(cfg, table, for_gen)
        out.append(text)
        if not cont:
            return "".join(out), False
    return "".join(out), True


def default_system_begin(meta: MetaTemplate, body: str, policy: Policy) -> str:
    """The meta ``begin`` in front of ``body``: without the family's default system turn
    when ``body`` starts with a system turn of its own, as the family's chat template
    writes its default only when the messages do not start with a system message (D24;
    OpenCompass always writes ``begin``: two system turns)."""
    begin = meta.begin or ""
    turn = meta.default_system
    if turn is None or not policy.fixes("D24"):
        return begin
    opens = meta.roles.get("SYSTEM", {}).get("begin")
    if not opens or not body.startswith(opens):
        return begin
    return begin.replace(turn, "", 1)


def render_lm(prompt: Any, meta: MetaTemplate | None, mode: str, policy: Policy) -> str:
    """Render for a base/local model. ``mode`` is ``"gen"`` (stop where the model
    generates) or ``"ppl"`` (render everything)."""
    if isinstance(prompt, str):
        return prompt  # string templates are never wrapped
    if isinstance(prompt, list) and not prompt:
        # OpenCompass's parser treats a plain list as a batch: [] comes back as [].
        return prompt  # type: ignore[return-value]
    if not isinstance(prompt, PromptList):
        raise RenderError(
            "an LM (base/local) model cannot take an OpenAI-style message list",
            hint="use RawPromptTemplate only with API or chat-template models",
            reference=("AssertionError", ""))
    if meta is None:
        return join_plain(prompt)
    out: list[str] = []
    generate = True
    for event in walk(prompt):
        if isinstance(event, Text):
            out.append(event.text)
        elif isinstance(event, RoleText):
            table = merge_roles(meta, [event.item])
            text, generate = role_text(event.item.to_obj(), table, False)
            out.append(text)
        elif isinstance(event, Dialogue):
            rounds = split_rounds(event.items, meta, use_fallback=policy.fixes("D12"))
            last = len(rounds) - 1
            for j, items in enumerate(rounds):
                table = merge_roles(meta, items)
                for_gen = mode == "gen" and j == last and event.section == "round"
                text, generate = round_text(meta.round, table, for_gen)
                out.append(text)
        if not generate:
            break
    body = "".join(out)
    text = default_system_begin(meta, body, policy) + body
    if generate:
        text += meta.end or ""
    return text

