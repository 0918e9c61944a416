"""ChatInferencer: multi-turn chats built from rows, one generation call per model turn.

In-context examples are not used. A chat comes from the row's input and output
columns (one turn, or one turn per list position), from a column that already holds
a chat, or from a ``dialogue`` column. Modes: ``last`` (one call, on the history
before the last assistant turn), ``every`` (one call per assistant turn, the model's
reply replacing it) and ``every_with_gt`` (one call per assistant turn, history keeps
the gold replies).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..errors import ConfigError, DataError, RenderError
from ..promptlist import Marker, RoleItem
from ..render import chat_to_api, chat_to_lm
from .base import Job, Record

__all__ = ["CHAT_MODES", "chat_records", "promptlist_to_chat"]

CHAT_MODES = ("last", "every", "every_with_gt")
_ROLE = {"SYSTEM": "system", "HUMAN": "user", "BOT": "assistant"}
Reply = Callable[[Any], str]


def promptlist_to_chat(prompt: Any, *, fixed: Callable[[str], bool]) -> list[dict[str, Any]]:
    """OpenAI-style messages from a template's output."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    out: list[dict[str, Any]] = []
    for item in prompt:
        if isinstance(item, Marker):
            continue
        if isinstance(item, str):
            # OpenCompass tests `'section' in item`, a substring test on strings (D10),
            # and indexes empty strings as dicts (D16).
            if not fixed("D10") and "section" in item:
                continue
            if item:
                out.append({"role": "user", "content": item})
            elif not fixed("D16"):
                raise RenderError(
                    "an empty string item (e.g. an ice_token with no examples, or an empty "
                    "cell) cannot become a chat message",
                    hint="the default mode skips it (defect D16)",
                    reference=("TypeError", "string indices must be integers, not 'str'"))
            continue
        assert isinstance(item, RoleItem)
        role = _ROLE.get(item.role)
        if role is not None:
            out.append({"role": role, "content": item.prompt})
    return out


def _chats(job: Job, index: int) -> tuple[list[dict[str, Any]], bool]:
    reader = job.reader
    cols, out_col = reader.input_columns, reader.output_column or ""
    row = job.rows.test[index]
    item = {k: v for k, v in row.items() if k in cols or k == out_col}

    def chat_from(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
        tp = job.prompt_template
        if tp is None and len(cols) == 1:
            return [{"role": "user", "content": entry.get(cols[0])},
                    {"role": "assistant", "content": entry.get(out_col, "")}]
        if tp is None:
            raise ConfigError("ChatInferencer needs a prompt_template when there are several "
                              "input columns", key_path="infer_cfg.prompt_template",
                              reference=("ValueError", ""))
        chat = promptlist_to_chat(tp.gen_item(entry, "", job.policy), fixed=job.policy.fixes)
        if not chat:
            raise RenderError("the template produced no chat message for this row",
                              reference=("IndexError", "list index out of range"))
        if chat[-1]["role"] != "assistant":
            chat.append({"role": "assistant", "content": entry.get(out_col, "")})
        return chat

    values = list(item.values())
    if all(isinstance(v, str) for v in values):
        return chat_from(item), False
    if all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in values):
        chat: list[dict[str, Any]] = []
        for turn in zip(*values, strict=False):
            chat.extend(chat_from(dict(zip(item, turn, strict=False))))
        return chat, False
    if len(cols) == 1 and isinstance(item.get(cols[0]), list) and all(
            isinstance(m, dict) for m in item[cols[0]]):
        return _checked_chat(item[cols[0]], cols[0]), False
    if "dialogue" in cols:
        return _checked_chat(item["dialogue"], "dialogue"), True
    raise DataError("cannot build a chat from this row: the input/output columns must all be "
                    "strings, all lists of strings, one column holding a chat, or a 'dialogue' "
                    "column",
                    reference=("ValueError", "Cannot construct chat from the dataset."))


def _checked_chat(chat: Any, column: str) -> list[dict[str, Any]]:
    """A copy of a chat read from a row: a list of messages with a str role and text content."""
    if not isinstance(chat, list):
        raise DataError(f"column {column!r} must hold a chat (a list of messages), got "
                        f"{type(chat).__name__}")
    for i, message in enumerate(chat):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise DataError(f"column {column!r}, message {i}: expected a dict with a str 'role', "
                            f"got {type(message).__name__}"
                            + (f" with role {type(message.get('role')).__name__}"
                               if isinstance(message, dict) else ""))
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise DataError(f"column {column!r}, message {i}: 'content' must be a str, got "
                            f"{type(content).__name__}")
    return copy.deepcopy(chat)


def chat_records(job: Job, *, infer_mode: str = "last",
                 reply: Reply | None = None) -> Iterator[Record]:
    """One record per generation call. ``reply`` stands in for the model in ``every``
    mode (its answer replaces each assistant turn); by default a visible placeholder."""
    if infer_mode not in CHAT_MODES:
        raise ConfigError(f"infer_mode must be one of {', '.join(CHAT_MODES)}, got {infer_mode!r}",
                          key_path="infer_cfg.inferencer.infer_mode")
    model = job.model
    answer = reply or (lambda _prompt: "<model reply>")
    origin: dict[int, list[Any]] = {}
    # ChatInferencer swaps in chat parsers built from the model's own meta template
    # (for hf_chat, OpenCompass's default chat meta).
    meta = model.meta.raw if model.meta is not None else None
    for index in range(len(job.rows.test)):
        job.row = index
        chat, dialogue = _chats(job, index)
        original = copy.deepcopy(chat)
        turns = [i for i, m in enumerate(chat) if m["role"] == "assistant"]
        if infer_mode == "last":
            turns = turns[-1:]
        pending: list[Record] = []
        counter = index
        for turn, pos in enumerate(turns):
            history = chat[:pos]
            shown = history
            if model.system_role is not None:  # the model's system-role policy, as in render
                from ..model.system_role import apply_system_role

                shown = apply_system_role(history, model.system_role, model=model.abbr)
            if model.renderer == "lm":
                rendered: Any = chat_to_lm(shown, meta)
            else:
                rendered = chat_to_api(shown, meta)
            if infer_mode == "every":
                chat[pos]["content"] = answer(rendered)
            if infer_mode == "last":
                origin[index] = history
            elif not dialogue:
                # OpenCompass files every_with_gt turns under a running counter, so a
                # row's saved prompts spill into the next row's entry; reproduced as saved.
                key = counter if infer_mode == "every_with_gt" else index
                origin.setdefault(key, []).append(history[-1]["content"] if history else None)
                if infer_mode == "every_with_gt":
                    counter += 1
            pending.append(Record(
                dataset=job.abbr, model=model.abbr, mode="chat", index=index,
                intermediate=copy.deepcopy(history), turn=turn,
                token_len=job.token_len(rendered) if job.counts_tokens else None,
                extra={"chat": original}, gold=job.gold(index), **job.final(rendered, "gen"),
            ))
        for rec in pending:
            rec.extra["origin_prompt"] = origin.get(index)  # type: ignore[index]
            yield rec

