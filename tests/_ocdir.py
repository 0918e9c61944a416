"""Test helper: turn conformance cases into an OpenCompass-style config tree.

For a case ``<id>`` it writes, under a root folder::

    configs/datasets/<id>.py   dataset config importing from ``opencompass.*`` (types as classes)
    configs/models/<id>.py     model config with an OpenCompass model class for its parser
    configs/eval_<id>.py       ``with read_base():`` importing both, then ``datasets`` / ``models``
    data/<abbr>/<split>.jsonl  the rows (``rows`` cases: ``data/<abbr>.jsonl``)

and it knows how to pull the expected ``prompt`` values out of a golden file, so that the
records the CLI writes can be compared with them.
"""

from __future__ import annotations

import json
import keyword
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# parser -> an OpenCompass model class that feeds its prompts through that parser
MODEL_CLASS = {
    "lm": "HuggingFaceCausalLM",
    "api": "OpenAISDK",
    "hf_chat": "HuggingFacewithChatTemplate",
}
# infer_cfg part -> the OpenCompass module its classes live in
PART_MODULE = {
    "ice_template": "opencompass.openicl.icl_prompt_template",
    "prompt_template": "opencompass.openicl.icl_prompt_template",
    "retriever": "opencompass.openicl.icl_retriever",
    "inferencer": "opencompass.openicl.icl_inferencer",
}
SCORING = ("PPLInferencer", "CLPInferencer")  # get_ppl / get_logits
SUPPORTED_INFERENCERS = ("GenInferencer", "PPLInferencer", "CLPInferencer", "ChatInferencer")


def decode_items(pairs: list[tuple[str, Any]]) -> dict[Any, Any]:
    """JSON hook: ``{"__items__": [[k, v], ...]}`` -> a dict with those (maybe int) keys."""
    if len(pairs) == 1 and pairs[0][0] == "__items__":
        return {k: v for k, v in pairs[0][1]}
    return dict(pairs)


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=decode_items)


class ClassName(str):
    """A value written as a bare (imported) class name instead of a string literal."""


def py(value: Any) -> str:
    """Python source for a config value (``dict(k=v)`` when all keys are identifiers)."""
    if isinstance(value, ClassName):
        return str(value)
    if isinstance(value, dict):
        if value and all(
            isinstance(k, str) and k.isidentifier() and not keyword.iskeyword(k) for k in value
        ):
            return "dict(" + ", ".join(f"{k}={py(v)}" for k, v in value.items()) + ")"
        return "{" + ", ".join(f"{py(k)}: {py(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(py(v) for v in value) + "]"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    raise TypeError(f"cannot write {type(value).__name__} as a config literal")


def module_name(case_id: str) -> str:
    name = re.sub(r"\W", "_", case_id)
    return name if re.match(r"[A-Za-z_]", name) else "c_" + name


def loader_class(case_id: str) -> str:
    """An OpenCompass-looking dataset loader class (unknown to the compiler -> --data-dir)."""
    base = case_id.split("__", 1)[0]
    words = [w for w in re.split(r"[^0-9A-Za-z]+", base) if w]
    name = "".join(w[:1].upper() + w[1:] for w in words) + "Dataset"
    if not re.match(r"[A-Za-z]", name) or name in ("JsonlDataset", "CustomDataset"):
        name = "Case" + name
    return name


@dataclass
class Written:
    case_id: str
    abbr: str
    model_abbr: str
    model_key: str  # equal for cases whose model configs are identical (batchable)
    eval_file: Path


def skip_reason(case: dict[str, Any], golden: dict[str, Any]) -> str | None:
    """Why a case is not part of the OpenCompass-dir comparison (None: it is)."""
    if golden.get("status") != "ok":
        return f"reference status {golden.get('status')!r}"
    if case.get("options"):
        return f"options {sorted(case['options'])} cannot be written in a config"
    kind = golden.get("inferencer")
    if kind not in SUPPORTED_INFERENCERS:
        return f"inferencer {kind!r}"
    if kind == "ChatInferencer" and golden.get("infer_mode") == "every":
        return (
            "ChatInferencer 'every' mode: the reference replies are the stand-in model's "
            "ORACLE_REPLY, which the CLI cannot supply"
        )
    return None


def unique_abbrs(cases: list[dict[str, Any]]) -> dict[str, str]:
    """case id -> dataset abbr: the case abbr when no other case uses it, else one with the id."""
    counts = Counter(c["dataset"].get("abbr") for c in cases)
    out = {}
    for c in cases:
        abbr = c["dataset"].get("abbr")
        if abbr is None:
            out[c["id"]] = c["id"]
        elif counts[abbr] == 1:
            out[c["id"]] = abbr
        else:
            out[c["id"]] = f"{abbr}@{c['id']}"
    return out


def write_case(root: Path, case: dict[str, Any], abbr: str) -> Written:
    """Write the configs and rows of one case under ``root``."""
    cid = case["id"]
    mod = module_name(cid)
    ds = case["dataset"]
    model = case["model"]
    configs = root / "configs"
    for sub in ("datasets", "models"):
        (configs / sub).mkdir(parents=True, exist_ok=True)

    # -- dataset config ---------------------------------------------------------------
    imports: dict[str, set[str]] = {}
    infer: dict[str, Any] = {}
    for part, value in ds["infer_cfg"].items():
        value = dict(value)
        if part in PART_MODULE and isinstance(value.get("type"), str):
            imports.setdefault(PART_MODULE[part], set()).add(value["type"])
            value["type"] = ClassName(value["type"])
        infer[part] = value
    loader = loader_class(cid)
    lines = [f"# generated from conformance case {cid}"]
    for module in sorted(imports):
        lines.append(f"from {module} import {', '.join(sorted(imports[module]))}")
    lines.append(f"from opencompass.datasets import {loader}")
    lines.append("")
    entry: dict[str, Any] = {
        "abbr": abbr,
        "type": ClassName(loader),
        "path": f"opencompass/{abbr}",
        "reader_cfg": ds["reader_cfg"],
        "infer_cfg": infer,
    }
    lines.append(f"{mod}_datasets = [")
    lines.append(f"    {py(entry)},")
    lines.append("]")
    (configs / "datasets" / f"{mod}.py").write_text("\n".join(lines) + "\n", encoding="utf-8")

    # -- model config -------------------------------------------------------------------
    cls = MODEL_CLASS[model["parser"]]
    model_entry: dict[str, Any] = {
        "abbr": model["name"],
        "type": ClassName(cls),
        "source": model["source"],
        "meta_template": model["meta_template"],
        "max_seq_len": model["max_seq_len"],
        "batch_size": model["batch_size"],
    }
    head = f"from opencompass.models import {cls}\n\n"
    if model["parser"] == "hf_chat" and ds["infer_cfg"]["inferencer"]["type"] in SCORING:
        # OpenCompass's chat-template classes cannot score (compat mode raises, as it does):
        # the reference prompts are compared through the renderer alone.
        del model_entry["type"]
        model_entry["renderer"] = "hf_chat"
        head = ""
    (configs / "models" / f"{mod}.py").write_text(
        f"# generated from conformance case {cid}\n{head}"
        f"models = [\n    {py(model_entry)},\n]\n",
        encoding="utf-8",
    )

    # -- eval config --------------------------------------------------------------------
    eval_file = configs / f"eval_{mod}.py"
    eval_file.write_text(
        "from mmengine.config import read_base\n\n"
        "with read_base():\n"
        f"    from .datasets.{mod} import {mod}_datasets\n"
        f"    from .models.{mod} import models as {mod}_models\n\n"
        f"datasets = [*{mod}_datasets]\n"
        f"models = [*{mod}_models]\n",
        encoding="utf-8",
    )

    # -- rows -----------------------------------------------------------------------------
    data = root / "data"
    if "rows" in ds:
        data.mkdir(parents=True, exist_ok=True)
        _write_jsonl(data / f"{abbr}.jsonl", ds["rows"])
    else:
        for split, rows in ds["splits"].items():
            _write_jsonl(data / abbr / f"{split}.jsonl", rows)

    key = json.dumps([model, "renderer" in model_entry], sort_keys=True, ensure_ascii=False,
                     default=repr)
    return Written(cid, abbr, model["name"], key, eval_file)


def _write_jsonl(path: Path, rows: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


# -- expected / actual prompts ------------------------------------------------------------


def expected_prompts(golden: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The golden prompts as ``(index, label-or-turn, prompt)`` in record order, each as
    the model class receives it (see :func:`as_received`)."""
    kind, parser = golden["inferencer"], golden.get("parser")
    out: list[tuple[Any, ...]] = []
    for row in golden["rows"]:
        if kind == "GenInferencer":
            prompt = row["chat_messages"] if parser == "hf_chat" else row["prompt"]
            out.append((row["index"], None, as_received(prompt, parser)))
        elif kind == "PPLInferencer":
            for entry in row["per_label"]:
                prompt = entry.get("chat_messages", entry["prompt"])
                out.append((row["index"], entry["label"], as_received(prompt, parser)))
        elif kind == "CLPInferencer":
            out.append((row["index"], None, as_received(row["prompt"], parser)))
        elif kind == "ChatInferencer":
            prompts = row["chat_messages"] if parser == "hf_chat" else row["prompts"]
            out.extend((row["index"], turn, as_received(p, parser))
                       for turn, p in enumerate(prompts))
        else:  # pragma: no cover - filtered by skip_reason
            raise ValueError(kind)
    if kind == "PPLInferencer" and golden.get("labels_order_from_set"):
        out.sort(key=lambda t: (t[0], repr(t[1])))
    return out


_OC_TO_OPENAI = {"HUMAN": "user", "BOT": "assistant", "SYSTEM": "system"}


def _is_openai(prompt: Any) -> bool:
    return isinstance(prompt, list) and bool(prompt) and all(
        isinstance(m, dict) and m.get("role") in _OC_TO_OPENAI.values() and "content" in m
        for m in prompt)


def as_received(prompt: Any, parser: str | None) -> Any:
    """What the model class of ``MODEL_CLASS[parser]`` is handed for an OpenCompass prompt.

    Written from OpenCompass 0.5.4's own code: ``OpenAI._preprocess_messages``
    (``openai_api.py``: a str is one user message, each HUMAN/BOT/SYSTEM item one message)
    and ``_convert_chat_messages`` (``huggingface_above_v4_33.py``: the same roles, empty
    prompts skipped, consecutive same-role messages merged with a newline).
    """
    if parser == "lm" or _is_openai(prompt):
        return prompt
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if parser == "api":
        return [{"role": _OC_TO_OPENAI[m["role"]], "content": m["prompt"]} for m in prompt]
    merged: list[dict[str, Any]] = []
    for m in prompt:
        if not m["prompt"]:
            continue
        role = _OC_TO_OPENAI[m["role"]]
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"] += "\n" + m["prompt"]
        else:
            merged.append({"role": role, "content": m["prompt"]})
    return merged


def actual_prompts(records: list[dict[str, Any]], golden: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The CLI's records in the shape of :func:`expected_prompts`."""
    out = []
    for rec in records:
        mark = rec.get("label") if rec["mode"] == "ppl" else rec.get("turn")
        out.append((rec["index"], mark, rec["prompt"]))
    if golden["inferencer"] == "PPLInferencer" and golden.get("labels_order_from_set"):
        out.sort(key=lambda t: (t[0], repr(t[1])))
    return out


def first_difference(expected: list[Any], actual: list[Any]) -> str | None:
    for n, (e, a) in enumerate(zip(expected, actual, strict=False)):
        if e != a or type(e[1]) is not type(a[1]):
            return (
                f"record {n} (index {e[0]}, label/turn {e[1]!r}) differs:\n"
                f"  expected: {json.dumps(e, ensure_ascii=False)[:1500]}\n"
                f"  actual:   {json.dumps(a, ensure_ascii=False)[:1500]}"
            )
    if len(expected) != len(actual):
        return f"expected {len(expected)} records, got {len(actual)}"
    return None
