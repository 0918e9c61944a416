"""CLPInferencer: one prompt per row whose next-token choice probabilities are scored."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ..errors import MissingFieldError, UnsupportedError
from .base import Job, Record

__all__ = ["clp_records"]


def clp_records(job: Job, retrieved: Sequence[Sequence[int]], *,
                single_token: bool = True) -> Iterator[Record]:
    """The gen-style prompt (answer masked), fitted so that prompt + 1 token <= max_seq_len."""
    model = job.model
    if model.is_api:
        raise UnsupportedError(
            "conditional log-probability (CLP) scoring needs token probabilities, which API "
            "models do not return",
            model=model.abbr, hint="use a gen or ppl config for API models",
            reference=("ValueError", "API model is not supported for conditional log probability "
                       "inference and skip this exp."))
    # OpenCompass builds every row's in-context examples, then reads the choices from the
    # first test row, before any prompt exists.
    for index, ids in enumerate(retrieved):
        job.row = index
        job.build_ice(list(ids))
    job.row = 0
    if single_token and job.rows.test and "choices" not in job.rows.test[0]:
        raise MissingFieldError(
            "CLPInferencer scores the options in the rows' 'choices' column, which the rows "
            "do not have", key_path="reader_cfg", hint="add a 'choices' list to every row",
            reference=("KeyError", "'choices'"))
    for index, ids in enumerate(retrieved):
        job.row = index
        used = list(ids)
        prompt = model.render(job.gen_prompt(index, job.build_ice(used)), "gen", job.policy)
        full = None
        over = False
        if model.max_seq_len is not None:
            full = job.token_len(prompt)
            while used and job.token_len(prompt) + 1 > model.max_seq_len:
                used.pop()
                prompt = job.gen_prompt(index, job.build_ice(used))
                # OpenCompass measures and scores the rebuilt prompt unparsed (D9).
                if job.policy.fixes("D9"):
                    prompt = model.render(prompt, "gen", job.policy)
            over = job.token_len(prompt) + 1 > model.max_seq_len
        yield Record(
            dataset=job.abbr, model=model.abbr, mode="clp", index=index,
            ice_ids=tuple(used), retrieved_ids=tuple(ids),
            token_len=job.token_len(prompt) if job.counts_tokens or full is not None else None,
            token_len_full=full, over_limit=over,
            gold=job.gold(index), **job.final(prompt, "gen"),
        )
