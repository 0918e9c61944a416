"""GenInferencer: one generation prompt per test row, answer masked."""

from __future__ import annotations

from collections.abc import Iterator, Sequence


from .base import Job, Record

__all__ = ["gen_records"]


def gen_records(job: Job, retrieved: Sequence[Sequence[int]], *,
                gen_field_replace_token: str = "") -> Iterator[Record]:
    """Build, fit to ``max_seq_len`` (dropping the last example first) and render each row."""
    model = job.model
    for index, ids in enumerate(retrieved):
        job.row = index
        used = list(ids)
        prompt = job.gen_prompt(index, job.build_ice(used), gen_field_replace_token)
        rendered = model.render(prompt, "gen", job.policy)
        n = job.token_len(rendered)
        if model.max_seq_len is not None:
            while used and n > model.max_seq_len:
                used.pop()
                prompt = job.gen_prompt(index, job.build_ice(used), gen_field_replace_token)
                rendered = model.render(prompt, "gen", job.policy)
                n = job.token_len(rendered)
        yield Record(
            dataset=job.abbr, model=model.abbr, mode="gen", index=index, prompt=rendered,
            intermediate=prompt, ice_ids=tuple(used), retrieved_ids=tuple(ids),
            token_len=n, chat_messages=model.chat_messages(rendered, job.policy),
            model_input=model.deliver(rendered, "gen", job.policy),
        )


