"""GenInferencer: one generation prompt per test row, answer masked."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .base import Job, Record, fit_examples

__all__ = ["gen_record", "gen_records"]


def gen_records(job: Job, retrieved: Sequence[Sequence[int]], *,
                gen_field_replace_token: str = "", rows: range | None = None) -> Iterator[Record]:
    """Build, fit to ``max_seq_len`` (dropping the last example first) and render each row
    (of ``rows``, by default all)."""
    for index in range(len(retrieved)) if rows is None else rows:
        yield gen_record(job, index, retrieved[index], gen_field_replace_token)


def gen_record(job: Job, index: int, ids: Sequence[int],
               gen_field_replace_token: str = "") -> Record:
    """The record of test row ``index`` (the generic path; :mod:`..plan` is the fast one)."""
    model = job.model
    job.row = index
    used = list(ids)
    prompt = job.gen_prompt(index, job.build_ice(used), gen_field_replace_token)
    rendered = model.render(prompt, "gen", job.policy)
    n = full = job.token_len(rendered) if job.counts_tokens else None
    limit = model.max_seq_len
    if limit is not None and used and n is not None and n > limit:
        most: int = limit

        def build(kept: list[int]) -> tuple[Any, Any, int]:
            built = job.gen_prompt(index, job.build_ice(kept), gen_field_replace_token)
            shown = model.render(built, "gen", job.policy)
            return built, shown, job.token_len(shown)

        def over(built: tuple[Any, Any, int]) -> bool:
            return built[2] > most

        kept, found = fit_examples(used, build, over)
        prompt, rendered, n = found
        del used[kept:]
    return Record(
        dataset=job.abbr, model=model.abbr, mode="gen", index=index,
        intermediate=prompt, ice_ids=tuple(used), retrieved_ids=tuple(ids),
        token_len=n, gold=job.gold(index), **job.final(rendered, "gen"),
        token_len_full=full,
        over_limit=model.max_seq_len is not None and n is not None and n > model.max_seq_len,
    )
