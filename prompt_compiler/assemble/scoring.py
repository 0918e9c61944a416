"""Scoring inferencers whose prompts are gen-style: PPLOnly, InferencePPLOnly, SWCELoss, LL.

* ``PPLOnlyInferencer``: the gen prompt of each row (answer column unused: the reader must
  have no ``output_column``), fitted to ``max_seq_len`` as GenInferencer fits it, and the
  whole text scored; the model receives it parsed in *ppl* mode, OpenCompass saves it parsed
  in *gen* mode (``origin_prompt``).
* ``InferencePPLOnlyInferencer``: the same, scored token-wise against the row's ``label``.
* ``SWCELossInferencer``: each row's template text, with no in-context examples and no meta
  template, tokenized and scored in sliding windows (``block_size``, ``stride``).
* ``LLInferencer``: PPLInferencer's per-label prompts, each scored on the log-likelihood of
  the row's ``cont`` (continuation) column.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..errors import MissingFieldError, RenderError, UnsupportedError
from .base import Job, Record

__all__ = ["ll_records", "ppl_only_records", "require_no_output_column", "sw_ce_loss_records"]


def require_no_output_column(job: Job, inferencer: str) -> None:
    """PPLOnly-style inferencers score the whole input: a reader answer column is an error."""
    if job.reader.output_column is not None:
        raise UnsupportedError(
            f"{inferencer} scores whole inputs and takes no answer column, but reader_cfg "
            f"has output_column={job.reader.output_column!r}",
            key_path="reader_cfg.output_column", hint="set output_column=None",
            reference=("AssertionError", f"{inferencer} supports `output_column=None` only."))


def _after_every_prompt(job: Job, inferencer: str, records: Iterator[Record]
                        ) -> Iterator[Record]:
    """``records``; with an output column, OpenCompass's assertion, which it makes after it
    has built every prompt (an error building one comes first)."""
    if job.reader.output_column is None:
        yield from records
        return
    for _ in records:
        pass
    require_no_output_column(job, inferencer)


def ppl_only_records(job: Job, retrieved: Sequence[Sequence[int]], *,
                     token_labels: bool = False) -> Iterator[Record]:
    """PPLOnly (``token_labels=False``) or InferencePPLOnly (``True``) records."""
    name = "InferencePPLOnlyInferencer" if token_labels else "PPLOnlyInferencer"
    return _after_every_prompt(job, name, _ppl_only(job, retrieved, token_labels))


def _ppl_only(job: Job, retrieved: Sequence[Sequence[int]], token_labels: bool
              ) -> Iterator[Record]:
    model, policy = job.model, job.policy
    for index, ids in enumerate(retrieved):
        job.row = index
        used = list(ids)
        prompt = job.gen_prompt(index, job.build_ice(used))
        origin = model.render(prompt, "gen", policy)
        if model.max_seq_len is not None:
            n = job.token_len(origin)
            while used and n > model.max_seq_len:
                if token_labels and not policy.fixes("D19"):
                    # OpenCompass unpacks (prompt, label) from a call returning one prompt.
                    raise UnsupportedError(
                        "InferencePPLOnlyInferencer cannot drop in-context examples to fit "
                        "max_seq_len in OpenCompass (it fails while rebuilding the prompt)",
                        hint="the default mode rebuilds the prompt (defect D19)",
                        reference=("ValueError", "too many values to unpack (expected 2)"))
                used.pop()
                prompt = job.gen_prompt(index, job.build_ice(used))
                origin = model.render(prompt, "gen", policy)
                n = job.token_len(origin)
        label = None
        if token_labels:
            row = job.rows.test[index]
            if "label" not in row:
                raise MissingFieldError(
                    "InferencePPLOnlyInferencer scores against the row's 'label' column, which "
                    "the rows do not have", key_path="reader_cfg",
                    reference=("KeyError", "'label'"))
            label = row["label"]
        scored = model.render(prompt, "ppl", policy)
        extra: dict[str, Any] = {"origin_prompt": origin}
        yield Record(
            dataset=job.abbr, model=model.abbr, mode="ppl", index=index, prompt=scored,
            intermediate=prompt, ice_ids=tuple(used), retrieved_ids=tuple(ids), label=label,
            token_len=job.token_len(scored) if job.token_lens else None,
            chat_messages=model.chat_messages(scored, policy, "ppl"),
            model_input=model.deliver(scored, "ppl", policy), extra=extra,
        )


def sw_ce_loss_records(job: Job, params: Mapping[str, Any]) -> Iterator[Record]:
    """SWCELoss: the template text of each row, unparsed; windows are the scorer's job."""
    return _after_every_prompt(job, "SWCELossInferencer", _sw_ce_loss(job, params))


def _sw_ce_loss(job: Job, params: Mapping[str, Any]) -> Iterator[Record]:
    tp = job.prompt_template
    if tp is None:
        raise UnsupportedError("SWCELossInferencer builds its text from the prompt_template, "
                               "which infer_cfg lacks", key_path="infer_cfg.prompt_template")
    extra = {"block_size": params.get("block_size", 1900), "stride": params.get("stride", 512)}
    for index, row in enumerate(job.rows.test):
        job.row = index
        text = tp.gen_item(row, "", job.policy, output_column=None, replace_token="")
        if not isinstance(text, str):
            raise RenderError(
                "SWCELossInferencer tokenizes the template text itself, so the template must "
                "be a string (no roles)", key_path="infer_cfg.prompt_template.template",
                reference=("TypeError", "TextEncodeInput must be Union[TextInputSequence, "
                           "Tuple[InputSequence, InputSequence]]"))
        yield Record(dataset=job.abbr, model=job.model.abbr, mode="loss", index=index,
                     prompt=text, intermediate=text, extra=extra)


def ll_records(job: Job, records: Iterator[Record]) -> Iterator[Record]:
    """PPL records turned into LL records: each carries its row's ``cont`` continuation."""
    for rec in records:
        row = job.rows.test[rec.index]
        if "cont" not in row:
            raise MissingFieldError(
                "LLInferencer scores the row's 'cont' column (the continuation), which the "
                "rows do not have", key_path="reader_cfg", row=rec.index,
                reference=("KeyError", "'cont'"))
        yield replace(rec, mode="ll", extra={**rec.extra, "continuation": row["cont"]})
