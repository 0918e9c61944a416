"""Generation settings of a record: ``max_out_len``, ``stop`` and ``stop_token_ids``.

What a generating engine needs beside the prompt, resolved once per compile job as
OpenCompass 0.5.4 resolves it (``tasks/openicl_infer.py``, ``models/huggingface*.py``,
``models/vllm*.py``):

* ``max_out_len``: the dataset's ``infer_cfg.inferencer.max_out_len`` when the key is there
  (even ``None``), else the model's ``max_out_len`` (OpenInferTask sets the inferencer's key
  from the model only when the dataset does not), else ``None``. Scoring modes (ppl, ll,
  clp, ...) generate nothing: ``None``.
* ``stop``, in this order, each text once: the inferencer's ``stopping_criteria``, the
  model's ``stop_words``, the meta template's generating turn's ``end`` (whitespace
  stripped: ``"<|im_end|>\\n"`` stops at ``<|im_end|>``), the chat template's end-of-turn
  text (what it writes right after an assistant message), and, for chat-template models,
  the tokenizer's ``eos_token`` and the texts of ``generation_config.json``'s
  ``eos_token_id`` (HuggingFacewithChatTemplate / VLLMwithChatTemplate add those two to
  their stop words). OpenCompass joins them with ``list(set(...))``, an order that changes
  between runs; here the order is fixed.
* ``stop_token_ids``, each id once: the meta template's ``eos_token_id``
  (``BaseModel.eos_token_id``), ``generation_config.json``'s ``eos_token_id``, the
  tokenizer's ``eos_token`` id, and the id of every ``stop`` text that is one of the
  tokenizer's added tokens (``<|eot_id|>``, ``<|im_end|>``), where a ``tokenizer`` is given:
  vLLM matches ``stop`` strings against text it decoded without special tokens, so such a
  stop string alone never fires (a Llama 3 folder without ``generation_config.json``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import PromptCompilerError

__all__ = ["GENERATING", "GenerationSettings", "chat_end_of_turn", "resolve"]

GENERATING = frozenset({"gen", "sc", "chat"})
"""Job kinds whose records are generated from (the others score the prompt)."""


@dataclass(frozen=True, slots=True)
class GenerationSettings:
    """What every record of one job carries beside its prompt."""

    max_out_len: int | None = None
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()


def _unique(values: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(v for v in values if v not in (None, "")))


def resolve(model: Any, kind: str, params: Mapping[str, Any]) -> GenerationSettings:
    """The settings of a job of ``kind`` (``gen``, ``ppl``...) with inferencer ``params``."""
    if kind in GENERATING:
        limit = params["max_out_len"] if "max_out_len" in params else model.max_out_len
        if isinstance(limit, bool) or not isinstance(limit, int):
            limit = None
    else:
        limit = None
    criteria = params.get("stopping_criteria") if kind in GENERATING else None
    stops: list[str] = [s for s in (criteria or ()) if isinstance(s, str)]
    stops += model.stop_words
    stops += meta_end(model.meta_raw)
    tokenizer = _tokenizer(model)
    if model.renderer == "hf_chat":
        template = model.chat_template
        if template is None and tokenizer is not None:
            template = tokenizer.chat_template
        if template is not None:
            stops.append(chat_end_of_turn(template))
        if tokenizer is not None:
            stops.append(tokenizer.special.get("eos_token", ""))
            stops += [tokenizer.backend.decode([i], skip_special_tokens=False)
                      for i in tokenizer.generation_eos]
    ids: list[int | None] = []
    if isinstance(model.meta_raw, Mapping):  # a falsy non-dict ([]) is no meta template
        meta_eos = model.meta_raw.get("eos_token_id")
        ids += meta_eos if isinstance(meta_eos, list) else [meta_eos]
    if tokenizer is not None:
        ids += tokenizer.generation_eos
        ids.append(tokenizer.eos_id)
        ids += [tokenizer.added_id(s) for s in _unique(stops)]
    return GenerationSettings(
        limit, _unique(stops),
        _unique(i for i in ids if type(i) is int))


def _tokenizer(model: Any) -> Any:
    from .tokenize import HFTokenizer

    counter = model.count_tokens
    return counter if isinstance(counter, HFTokenizer) else None


def meta_end(meta: Mapping[str, Any] | None) -> list[str]:
    """The ``end`` of the meta template's generating turn (``generate: True``, else ``BOT``),
    whitespace stripped."""
    if not isinstance(meta, Mapping):
        return []
    turns = [t for t in meta.get("round") or () if isinstance(t, Mapping)]
    found = [t for t in turns if t.get("generate")] or [t for t in turns if t.get("role") == "BOT"]
    out = []
    for turn in found:
        end = turn.get("end")
        if isinstance(end, str) and end.strip():
            out.append(end.strip())
    return out


_ANSWER = "\ue000"


def chat_end_of_turn(template: Any) -> str:
    """The text a chat template writes right after an assistant message, up to the first
    whitespace (``<|eot_id|>``, ``<|im_end|>``, ``</s>``); ``""`` when it writes none or
    cannot render a user/assistant exchange."""
    try:
        text = template.render([{"role": "user", "content": "hi"},
                                {"role": "assistant", "content": _ANSWER}])
    except PromptCompilerError:  # a template that refuses this exchange reports no end
        return ""
    after = text.partition(_ANSWER)[2].strip()
    return after.split(maxsplit=1)[0] if after else ""
