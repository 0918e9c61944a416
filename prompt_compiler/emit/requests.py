"""The request of one record as an engine takes it: a vLLM line, an OpenAI Batch API line.

``vllm`` lines
    One JSON object per prompt: the prompt as vLLM's offline API takes it (``prompt`` for a
    ``TextPrompt``, ``prompt_token_ids`` for a ``TokensPrompt`` when the records carry
    ``input_ids``, or ``messages`` for ``LLM.chat`` with its ``add_generation_prompt`` and
    ``continue_final_message``), ``sampling_params`` (keyword arguments
    of ``SamplingParams``) and ``id``. Generation records get ``max_tokens`` (the record's
    ``max_out_len``), ``stop`` and ``stop_token_ids``
    where known; scoring records (ppl, ll,
    clp, loss) get ``{"max_tokens": 1, "prompt_logprobs": 0}``: the log-probability of every
    prompt token, which is what those modes score.
``openai-batch`` lines
    Request lines of the OpenAI Batch API: ``{"custom_id", "method": "POST", "url", "body"}``;
    messages go to ``/v1/chat/completions``, text and token ids to ``/v1/completions``.
    ``body.model`` is the model config's ``path`` (the name an OpenAI-compatible server
    knows), else its abbr.

The ``id`` / ``custom_id`` of a record is ``<model>/<dataset>/<row>`` (the test split's row
id, as the record's ``row``; its ``index`` for records without one), with ``/turn<n>``
for chat and multiround turns and ``/<k>`` for the k-th record of the same row otherwise
(a ppl label, a CLP choice): unique within a file and stable from run to run
(:func:`record_ids`).

Every function reads the records' JSON objects
(:func:`prompt_compiler.emit.records.record_json`), so any compile path feeds them; the files
they go into are :mod:`prompt_compiler.emit.formats`'.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import DataError, UnsupportedError

__all__ = ["SCORING_MODES", "engine_chat_args", "openai_batch_line", "pair_max_out_len",
           "record_ids", "request_bytes", "request_model", "sampling_params", "vllm_line"]

SCORING_MODES = frozenset({"ppl", "ll", "clp", "loss"})
"""Record modes that score a text rather than generate a reply."""


def record_ids(objs: Iterable[Mapping[str, Any]]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(id, record)`` for each record object, in order (see the module docstring)."""
    last: Any = None
    k = 0
    for obj in objs:
        key = obj["row"] if obj.get("row") is not None else obj["index"]
        base = f"{obj['model']}/{obj['dataset']}/{key}"
        if obj.get("turn") is not None:
            yield f"{base}/turn{obj['turn']}", obj
            continue
        k = k + 1 if key == last else 0
        last = key
        yield (f"{base}/{k}" if obj["mode"] in SCORING_MODES else base), obj


def _stops(obj: Mapping[str, Any], max_out_len: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if obj.get("max_out_len") is not None:
        out["max_tokens"] = obj["max_out_len"]
    elif max_out_len is not None:
        out["max_tokens"] = max_out_len
    if obj.get("stop"):
        out["stop"] = list(obj["stop"])
    if obj.get("stop_token_ids"):
        out["stop_token_ids"] = list(obj["stop_token_ids"])
    return out


def sampling_params(obj: Mapping[str, Any], user: Mapping[str, Any] | None = None, *,
                    max_out_len: int | None = None, every_key: bool = False
                    ) -> dict[str, Any]:
    """The keyword arguments of vLLM's ``SamplingParams`` for one record object.

    A scoring record (ppl, ll, clp, loss) gets ``{"max_tokens": 1, "prompt_logprobs": 0}``;
    a generating one its ``max_tokens`` (``max_out_len``, else ``max_out_len`` given here),
    ``stop`` and ``stop_token_ids``, where known. ``every_key`` writes ``stop`` and
    ``stop_token_ids`` even when empty (``[]``), so that every row of a table has the same
    keys and none is null (Ray Data turns a key missing from one row into a null, and
    ``SamplingParams(stop_token_ids=None)`` differs from the record). ``user``'s keys then
    replace those of the record one by one (``compile_dataset(sampling_params=...)``).
    """
    if obj.get("mode") in SCORING_MODES:
        out: dict[str, Any] = {"max_tokens": 1, "prompt_logprobs": 0}
        if every_key:
            out.update(stop=[], stop_token_ids=[])
    else:
        out = _stops(obj, max_out_len)
        if every_key:
            out.setdefault("stop", [])
            out.setdefault("stop_token_ids", [])
    if user:
        out.update(user)
    return out


def _is_messages(prompt: Any) -> bool:
    return isinstance(prompt, list) and all(
        isinstance(m, Mapping) and isinstance(m.get("role"), str) and "content" in m
        for m in prompt) and bool(prompt)


def _where(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"dataset": obj.get("dataset"), "model": obj.get("model"), "row": obj.get("index")}


def _no_scored_messages(obj: Mapping[str, Any], fmt: str) -> None:
    """A scoring record whose prompt is chat messages has no line in an engine format:
    ``LLM.chat`` and the chat completions endpoint generate, they return no log-probability
    of the prompt's tokens (one error for ``vllm`` and ``openai-batch`` alike)."""
    if obj["mode"] in SCORING_MODES and obj.get("input_ids") is None \
            and _is_messages(obj["prompt"]):
        raise UnsupportedError(
            f"--format {fmt}: the {obj['mode']} records of {obj.get('dataset')} x "
            f"{obj.get('model')} score their text, but their prompt is chat messages, which "
            "vLLM's LLM.chat and the chat completions endpoint do not score (they return no "
            "log-probability of the prompt's tokens)",
            hint="give the model its tokenizer folder (with its chat template) or a "
                 "chat_template, so the records hold the template's text (add --tokenize for "
                 "its token ids; examples/ppl-chat/suite.yaml shows one), or compile this pair "
                 "with --format records", **_where(obj))


def vllm_line(rid: str, obj: Mapping[str, Any], max_out_len: int | None = None,
              chat: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The vLLM line of one record object (see the module docstring); ``max_out_len``
    stands in where the record has none; ``chat`` goes on a messages line
    (:func:`engine_chat_args`)."""
    prompt = obj["prompt"]
    _no_scored_messages(obj, "vllm")
    line: dict[str, Any] = {"id": rid}
    if obj.get("input_ids") is not None:
        line["prompt_token_ids"] = list(obj["input_ids"])
    elif isinstance(prompt, str):
        line["prompt"] = prompt
    elif _is_messages(prompt):
        line["messages"] = prompt
        # what LLM.chat needs to render the compiled turns: a reply to start, or the last
        # (assistant) message to go on (an assistant_prefix)
        go_on = prompt[-1].get("role") == "assistant"
        line["add_generation_prompt"] = not go_on
        line["continue_final_message"] = go_on
        line.update(chat or {})
    else:
        raise UnsupportedError(
            "--format vllm takes a prompt text, token ids or OpenAI-style messages; this "
            f"record's prompt is {type(prompt).__name__} of another shape (an api_format "
            "request?)", hint="compile this model with --format records", **_where(obj))
    line["sampling_params"] = sampling_params(obj, max_out_len=max_out_len)
    return line


def openai_batch_line(rid: str, obj: Mapping[str, Any], model_name: str,
                      max_out_len: int | None = None, chat: Mapping[str, Any] | None = None
                      ) -> dict[str, Any]:
    """The OpenAI Batch API request line of one record object (``chat``: see
    :func:`engine_chat_args`, on a chat completions request)."""
    prompt = obj["prompt"]
    stops = _stops(obj, max_out_len)
    scoring = obj["mode"] in SCORING_MODES
    body: dict[str, Any] = {"model": model_name}
    _no_scored_messages(obj, "openai-batch")
    if _is_messages(prompt) and obj.get("input_ids") is None:
        url = "/v1/chat/completions"
        body["messages"] = prompt
        body.update(chat or {})
        if "max_tokens" in stops:
            body["max_completion_tokens"] = stops["max_tokens"]
    elif isinstance(prompt, str) or obj.get("input_ids") is not None:
        url = "/v1/completions"
        body["prompt"] = list(obj["input_ids"]) if obj.get("input_ids") is not None else prompt
        if scoring:
            body.update({"max_tokens": 1, "echo": True, "logprobs": 0})
        elif "max_tokens" in stops:
            body["max_tokens"] = stops["max_tokens"]
    else:
        raise UnsupportedError(
            "--format openai-batch takes a prompt text, token ids or OpenAI-style messages; "
            f"this record's prompt is {type(prompt).__name__} of another shape (an api_format "
            "request?)", hint="compile this model with --format records", **_where(obj))
    if "stop" in stops and not scoring:
        body["stop"] = stops["stop"]
    return {"custom_id": rid, "method": "POST", "url": url, "body": body}


def request_bytes(obj: Mapping[str, Any]) -> bytes:
    """One request line's bytes: strict JSON (no NaN), UTF-8, a newline at the end."""
    try:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False).encode("utf-8") + b"\n"
    except (ValueError, UnicodeEncodeError) as exc:
        raise DataError(f"a request cannot be written as strict JSON in UTF-8: {exc}") from None

def request_model(pair: Any, abbr: str) -> str:
    """``body.model`` of a pair's batch requests: its model config's ``path`` (the name an
    OpenAI-compatible server knows), else the model's abbr."""
    spec = pair.model.spec if pair is not None else {}
    return str(spec["path"]) if isinstance(spec.get("path"), str) else abbr


def engine_chat_args(pair: Any) -> dict[str, Any]:
    """What an engine needs beside a pair's messages lines to render the turns as compiled:
    the model's ``chat_template_kwargs`` (older name ``template_kwargs``; e.g. Qwen3's
    ``enable_thinking: false``), passed by ``LLM.chat`` and vLLM's chat completions endpoint
    to the chat template, and for a chat-template model its pinned ``date`` as
    ``date_string`` (what Llama 3.x templates print instead of the engine's clock; vLLM
    drops a variable the template does not read). Empty when there is none (a record
    rendered to text or token ids needs nothing: its line carries ``prompt`` or
    ``prompt_token_ids``)."""
    from ..model.chat_controls import date_string

    spec = pair.model.spec if pair is not None else {}
    kwargs = spec.get("chat_template_kwargs") or spec.get("template_kwargs")
    out = dict(kwargs) if isinstance(kwargs, Mapping) else {}
    pinned = date_string(spec.get("date")) if spec.get("parser") == "hf_chat" else None
    if pinned is not None:
        out = {"date_string": pinned, **out}  # the config's own date_string wins
    return {"chat_template_kwargs": out} if out else {}


def pair_max_out_len(pair: Any) -> int | None:
    """The pair's ``max_out_len`` as OpenCompass resolves it: the dataset inferencer's, else
    the model config's (for records written without one)."""
    if pair is None:
        return None
    infer = pair.dataset.spec.get("infer_cfg")
    inferencer = infer.get("inferencer") if isinstance(infer, Mapping) else None
    value = inferencer.get("max_out_len") if isinstance(inferencer, Mapping) else None
    if value is None:
        value = pair.model.spec.get("max_out_len")
    return value if isinstance(value, int) and not isinstance(value, bool) else None
