"""The records writer of the plan stage: lean records, through plans where they apply.

The same prompts, ids and labels as the generic path (:mod:`.assemble.gen`,
:mod:`.assemble.ppl`), byte for byte, but no ``intermediate``; ``token_len`` only where the
job counts tokens. Which rows a plan serves is :class:`.core.RowPlanner`'s decision.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..assemble.base import Job, Record
from .core import GENERIC, RowPlanner, plannable

__all__ = ["plan_records"]


def plan_records(job: Job, kind: str, params: Mapping[str, Any],
                 retrieved: Sequence[Sequence[int]], *, labels: Sequence[Any] | None = None,
                 rows: range | None = None) -> Iterator[Record] | None:
    """The records of a gen or ppl job from plans, or None when the job is not
    :func:`.core.plannable` (the caller takes the generic path)."""
    if not plannable(job, kind, params):
        return None
    if kind == "gen":
        return _records(job, RowPlanner(job, kind, params.get("gen_field_replace_token", ""),
                                        retrieved, rows=rows, counts=True), None)
    ppl_labels = list(labels) if labels is not None else None
    planner = RowPlanner(job, kind, ppl_labels, retrieved, rows=rows, counts=True)
    return _records(job, planner, ppl_labels)


def _records(job: Job, planner: RowPlanner, labels: list[Any] | None) -> Iterator[Record]:
    abbr, model_abbr, mode = job.abbr, job.model.abbr, planner.kind
    counted = job.counts_tokens
    for index, ids, row in planner.rows():
        plans = planner.plans(ids, row)
        if plans is not None:
            texts, counts = [], []
            for plan in plans:
                values = plan.values(row)
                text = plan.fill(values)
                n = planner.decide(plan, values, text[len(plan.literals[0]):])
                if n == GENERIC:
                    break
                texts.append(text)
                counts.append(n if counted else None)
            else:
                ice = tuple(ids)
                gold = job.gold(index)
                # lm models only: the rendered string is what the model receives
                for j, text in enumerate(texts):
                    yield Record(dataset=abbr, model=model_abbr, mode=mode, index=index,
                                 prompt=text, rendered=text, ice_ids=ice, retrieved_ids=ice,
                                 label=None if labels is None else labels[j],
                                 token_len=counts[j], token_len_full=counts[j], gold=gold)
                continue
        yield from planner.generic(index, ids)
