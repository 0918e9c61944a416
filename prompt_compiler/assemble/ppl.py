"""PPLInferencer: one prompt per (test row, label), each scored by perplexity."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..errors import RenderError
from ..promptlist import RoleItem
from ..template.raw_template import RawPromptTemplate
from .base import Job, Record, fit_examples

__all__ = ["ppl_records", "ppl_reference_failure", "ppl_row_records", "scored_reference_failure"]


def _split_normalizing(job: Job, prompt: Any, normalizing_str: str) -> dict[str, Any]:
    """Context/answer split at the template's sep_token, for normalized PPL."""
    if not isinstance(prompt, str):
        raise RenderError("normalizing_str needs str templates (the prompt must be a string)",
                          reference=("AssertionError",
                                     "Prompt must be a string when normalizing_str is set."))
    tp = job.prompt_template or job.ice_template
    sep = tp.sep_token if tp is not None else None
    if sep is None:
        raise RenderError("normalizing_str needs the template's sep_token to split context and "
                          "answer",
                          key_path="infer_cfg.prompt_template.sep_token",
                          reference=("TypeError", "must be str, not None"))
    pos = prompt.find(sep)
    context = prompt[:pos]
    answer = prompt[pos:].replace(sep, "")
    return {
        "scored": context + answer,
        "context": context,
        "mask_length": job.token_len(job.model.render(context, "ppl", job.policy)),
        "normalizing_prompt": normalizing_str + answer,
        "normalizing_mask_length": job.token_len(
            job.model.render(normalizing_str, "ppl", job.policy)),
    }


def ppl_records(job: Job, retrieved: Sequence[Sequence[int]], *,
                labels: Sequence[Any] | None = None,
                normalizing_str: str | None = None, rows: range | None = None) -> Iterator[Record]:
    """Per row (of ``rows``, by default all) and label: build, fit to ``max_seq_len``, render
    in ppl mode.

    OpenCompass fits the examples label by label and carries the shortened list over
    to later labels (defect D5); the default mode fits once per row, for all labels.
    """
    labels = list(labels) if labels is not None else job.labels()
    indexes = range(len(retrieved)) if rows is None else rows
    if job.model.max_seq_len is not None and job.model.renderer != "lm" and _raw_messages(job):
        # (an LM parser refuses the message list itself, when it is first counted)
        for index in indexes:
            if retrieved[index]:
                # OpenCompass counts a message list's tokens as a batch (a list of counts) and
                # compares that list with max_seq_len, before it scores anything.
                raise RenderError(
                    "a RawPromptTemplate PPL prompt cannot be fitted to the model's max_seq_len "
                    f"(test row {index} has in-context examples to drop)",
                    key_path="model.max_seq_len",
                    hint="leave max_seq_len unset for this model, or use ZeroRetriever",
                    reference=("TypeError",
                               "'>' not supported between instances of 'list' and 'int'"))
    for index in indexes:
        yield from ppl_row_records(job, index, retrieved[index], labels, normalizing_str)


def _raw_messages(job: Job) -> bool:
    """Whether the PPL prompts are message lists (the template that builds them is raw)."""
    return isinstance(job.prompt_template or job.ice_template, RawPromptTemplate)


def ppl_row_records(job: Job, index: int, ids: Sequence[int], labels: Sequence[Any],
                    normalizing_str: str | None = None) -> list[Record]:
    """The records of test row ``index``, one per label (the generic path)."""
    model, policy = job.model, job.policy
    remain_sep = normalizing_str is not None
    limit = model.max_seq_len
    counts = job.counts_tokens

    def build(index: int, ids: list[int], label: Any,
              keep_sep: bool) -> tuple[Any, Any, int | None]:
        prompt = job.label_prompt(index, job.build_ice(ids), label, keep_sep)
        rendered = model.render(prompt, "ppl", policy)
        return prompt, rendered, job.token_len(rendered) if counts else None

    job.row = index
    used = list(ids)
    built = [build(index, used, lb, remain_sep) for lb in labels]
    full = [n for _, _, n in built]
    if limit is not None and policy.fixes("D5"):
        if used and any(n is not None and n > limit for _, _, n in built):
            kept, built = fit_examples(
                used, lambda kept: [build(index, kept, lb, remain_sep) for lb in labels],
                lambda b: any(n is not None and n > limit for _, _, n in b))
            del used[kept:]
    out = []
    for k, (label, (prompt, rendered, token_len)) in enumerate(zip(labels, built, strict=True)):
        if limit is not None and not policy.fixes("D5"):
            if len(used) < len(ids):
                # OpenCompass carries the shortened list over from earlier labels (D5).
                prompt, rendered, token_len = build(index, used, label, remain_sep)
            if used and token_len is not None and token_len > limit:
                # OpenCompass rebuilds without remain_sep here.
                kept, (prompt, rendered, token_len) = fit_examples(
                    used, functools.partial(_build_for, build, index, label),
                    functools.partial(_over, limit))
                del used[kept:]
        extra: dict[str, Any] = {}
        if normalizing_str is not None:
            extra = _split_normalizing(job, prompt, normalizing_str)
            prompt = extra.pop("scored")  # OpenCompass keeps context + answer, sep removed
            rendered = model.render(prompt, "ppl", policy)
        out.append(Record(
            dataset=job.abbr, model=model.abbr, mode="ppl", index=index,
            intermediate=prompt, ice_ids=tuple(used), retrieved_ids=tuple(ids), label=label,
            token_len=token_len, extra=extra, gold=job.gold(index), **job.final(rendered, "ppl"),
            token_len_full=full[k],
            over_limit=limit is not None and token_len is not None and token_len > limit,
        ))
    return out


def ppl_reference_failure(job: Job, first_ice: Any) -> tuple[str, str] | None:
    """The error OpenCompass's PPLInferencer hits *after* building these prompts, if any.

    With an API-style parser and a meta template the parsed prompts are message lists,
    which its bookkeeping then treats as strings.
    """
    if _raw_messages(job):
        # Message lists (an LM parser only ever gets an empty one: a batch of nothing); the
        # scoring bookkeeping then strips the in-context text from each as if it were a string.
        return ("AttributeError", "'list' object has no attribute 'replace'")
    if job.model.renderer == "lm" or job.model.meta is None:
        return None
    parsed_ice = job.model.render(first_ice, "ppl", job.policy) if first_ice is not None else ""
    if isinstance(parsed_ice, str):
        return ("AttributeError", "'PromptList' object has no attribute 'encode'")
    return ("TypeError", "'in <string>' requires string as left operand, not PromptList")




def _build_for(build: Callable[[int, list[int], Any, bool], Any], index: int, label: Any,
               kept: list[int]) -> Any:
    return build(index, kept, label, False)


def _over(limit: int, built: tuple[Any, Any, int | None]) -> bool:
    return built[2] is not None and built[2] > limit


def scored_reference_failure(job: Job, kind: str, first: Record) -> tuple[str, str] | None:
    """The error OpenCompass's CLP or LL inferencer hits *after* scoring, if any: it removes
    the first batch's in-context text from each scored prompt with ``prompt.replace(ice,
    '')``, which fails when the examples are a PromptList (CLP: as built; LL: as parsed)."""
    ice = job.build_ice(list(first.ice_ids))
    if kind == "ll":
        ice = job.model.render(ice, "ppl", job.policy)
    if isinstance(ice, str):
        return None
    name = "list" if type(ice) is list else "PromptList"
    text = first.rendered if first.rendered is not None else first.prompt
    for item in [text] if isinstance(text, str) else text:
        if isinstance(item, str):
            return ("TypeError", f"replace() argument 1 must be str, not {name}")
        if (isinstance(item, RoleItem) and item.has("prompt")) or (
                isinstance(item, Mapping) and "prompt" in item):
            return ("TypeError", f"'in <string>' requires string as left operand, not {name}")
    return None
