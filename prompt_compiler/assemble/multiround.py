"""GenInferencer with ``multiround=True``: one generation call per empty assistant message.

The row's prompt is an OpenAI-style message list (a ``RawPromptTemplate``). Every
assistant message with empty content is a slot the model fills: the call for a slot sees
the messages before it, earlier slots holding the model's earlier replies. ``reply``
stands in for the model (as in ChatInferencer ``every`` mode); by default a visible
placeholder. Rows without empty assistant slots make no call.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..errors import RenderError
from .base import Job, Record

__all__ = ["multiround_records"]


def _slots(messages: Sequence[Any]) -> list[int]:
    return [i for i, m in enumerate(messages)
            if isinstance(m, dict) and m.get("role") == "assistant" and not m.get("content", "")]


def multiround_records(job: Job, retrieved: Sequence[Sequence[int]], *,
                       reply: Callable[[Any], str] | None = None,
                       gen_field_replace_token: str = "") -> Iterator[Record]:
    """One record per (row, assistant slot), ``turn`` numbering the slots of a row."""
    model, policy = job.model, job.policy
    answer = reply or (lambda _prompt: "<model reply>")
    for index, ids in enumerate(retrieved):
        job.row = index
        prompt = job.gen_prompt(index, job.build_ice(list(ids)), gen_field_replace_token)
        if not isinstance(prompt, list) or not all(isinstance(m, dict) for m in prompt):
            raise RenderError(
                "GenInferencer(multiround=True) needs the prompt to be a message list (a "
                "RawPromptTemplate); this template builds a single prompt",
                key_path="infer_cfg.inferencer.multiround",
                hint="drop multiround=True or use a RawPromptTemplate")
        chat = copy.deepcopy(prompt)
        for turn, pos in enumerate(_slots(chat)):
            history = copy.deepcopy(chat[:pos])
            rendered = model.render(history, "gen", policy)
            yield Record(
                dataset=job.abbr, model=model.abbr, mode="gen", index=index, prompt=rendered,
                intermediate=history, ice_ids=tuple(ids), retrieved_ids=tuple(ids), turn=turn,
                token_len=job.token_len(rendered) if job.token_lens else None,
                chat_messages=model.chat_messages(rendered, policy),
                model_input=model.deliver(rendered, "gen", policy),
                extra={"chat": copy.deepcopy(prompt)},
            )
            chat[pos]["content"] = answer(rendered)
