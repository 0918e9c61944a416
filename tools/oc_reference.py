"""Record what OpenCompass itself builds for a compile job (run with OpenCompass installed).

    /path/to/opencompass-venv/bin/python tools/oc_reference.py CASE.json... --out GOLDEN_DIR

For each case (the shared conformance case format: dataset + rows + model) this builds
OpenCompass's own dataset, retriever, templates and inferencer, runs the inferencer with a
stand-in model, and writes what the model was given (the golden format of
../shared/conformance/README.md, extended for PPLOnly, InferencePPLOnly, LL, SC, SWCELoss
and multiround Gen; see docs/opencompass-corpus.md). The stand-in model counts tokens as
whitespace words, answers every generation with ``ORACLE_REPLY`` and scores everything 0.

This file only drives OpenCompass as a library; it never ships with or runs inside
prompt_compiler.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

ORACLE_REPLY = "ORACLE_REPLY"


def decode(pairs: list[tuple[str, Any]]) -> dict[Any, Any]:
    if len(pairs) == 1 and pairs[0][0] == "__items__":
        return {k: v for k, v in pairs[0][1]}
    return dict(pairs)


def encode(value: Any) -> Any:
    from opencompass.utils.prompt import PromptList

    if isinstance(value, PromptList):
        return {"__promptlist__": [encode(v) for v in value]}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"__items__": [[k, encode(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def build(case: dict[str, Any]):  # noqa: C901 - one place that wires OpenCompass together
    import numpy as np
    import torch
    from datasets import Dataset, DatasetDict
    from opencompass.datasets.base import BaseDataset
    from opencompass.models.base import BaseModel
    from opencompass.models.base_api import BaseAPIModel
    from opencompass.openicl import icl_inferencer as inf
    from opencompass.openicl import icl_retriever as ret
    from opencompass.openicl.icl_prompt_template import PromptTemplate
    from opencompass.openicl.icl_raw_prompt_template import RawPromptTemplate

    ds_cfg, model_cfg = case["dataset"], case["model"]
    calls: list[dict[str, Any]] = []

    class Rows(BaseDataset):
        @staticmethod
        def load(**kwargs):
            if "rows" in ds_cfg:
                return Dataset.from_list(ds_cfg["rows"])
            return DatasetDict({k: Dataset.from_list(v) for k, v in ds_cfg["splits"].items()})

    class Tok:
        vocab_size = 1000

        def encode(self, text, *a, **k):
            calls.append({"call": "encode", "text": text})
            return [1]

    class Mixin:
        def get_token_len(self, prompt):
            return len(str(prompt).split())

        def generate(self, inputs, max_out_len=None, **kwargs):
            calls.append({"call": "generate", "inputs": encode(list(inputs))})
            return [ORACLE_REPLY for _ in inputs]

        def get_ppl(self, inputs, mask_length=None):
            calls.append({"call": "get_ppl", "inputs": encode(list(inputs))})
            return np.zeros(len(inputs))

        def get_ppl_tokenwise(self, inputs, label, mask_length=None):
            calls.append({"call": "get_ppl_tokenwise", "inputs": encode(list(inputs)),
                          "label": encode(list(label))})
            return [0.0 for _ in inputs], [1 for _ in inputs]

        def get_loglikelihood(self, inputs, conts, mask_length=None):
            calls.append({"call": "get_loglikelihood", "inputs": encode(list(inputs)),
                          "conts": encode(list(conts))})
            return torch.zeros(len(inputs))

    parser = model_cfg.get("parser", "lm")
    meta = model_cfg.get("meta_template")
    if parser == "hf_chat":
        from opencompass.models.huggingface_above_v4_33 import (
            _convert_chat_messages,
            _get_meta_template,
        )

        class Model(Mixin, BaseModel):  # HuggingFacewithChatTemplate's parser and messages
            def __init__(self):
                BaseModel.__init__(self, path="stand-in", meta_template=meta)
                self.template_parser = _get_meta_template(meta)
                self.tokenizer = Tok()

            def generate(self, inputs, max_out_len=None, **kwargs):
                messages = _convert_chat_messages(inputs)
                calls.append({"call": "generate", "inputs": encode(list(inputs)),
                              "chat_messages": messages})
                return [ORACLE_REPLY for _ in inputs]
    elif parser == "api":
        class Model(Mixin, BaseAPIModel):
            is_api = True

            def __init__(self):
                BaseAPIModel.__init__(self, path="stand-in", meta_template=meta)
    else:
        class Model(Mixin, BaseModel):
            def __init__(self):
                BaseModel.__init__(self, path="stand-in", meta_template=meta)
                self.tokenizer = Tok()
    model = Model()

    reader = dict(ds_cfg["reader_cfg"])
    dataset = Rows(reader_cfg=reader, abbr=ds_cfg.get("abbr", "dataset"))
    infer = ds_cfg["infer_cfg"]

    def template(cfg):
        if cfg is None:
            return None
        cfg = dict(cfg)
        kind = cfg.pop("type")
        if kind.startswith("OlympiadBench"):
            from opencompass.datasets import OlympiadBench

            return getattr(OlympiadBench, kind)(**cfg)
        return (PromptTemplate if kind == "PromptTemplate" else RawPromptTemplate)(**cfg)

    ice_t = template(infer.get("ice_template"))
    prompt_t = template(infer.get("prompt_template"))
    rcfg = dict(infer["retriever"])
    rkind = rcfg.pop("type")
    if not hasattr(ret, rkind):  # XiezhiRetriever lives with its dataset
        import opencompass.datasets as ds_module

        retriever = getattr(ds_module, rkind)(dataset, **rcfg)
    else:
        retriever = getattr(ret, rkind)(dataset, **rcfg)
    icfg = dict(infer["inferencer"])
    kind = icfg.pop("type")
    if model_cfg.get("max_seq_len") is not None:
        icfg["max_seq_len"] = model_cfg["max_seq_len"]
    if kind in ("GenInferencer", "SCInferencer"):
        icfg.setdefault("max_out_len", 100)
    icfg.setdefault("batch_size", model_cfg.get("batch_size") or 1)  # the config's wins
    inferencer = getattr(inf, kind)(model=model, **icfg)
    if kind == "CLPInferencer":  # the scoring step: record its texts, uniform probabilities
        def cond_prob(input_texts, target_pos, choice_ids):
            calls.append({"call": "cond_prob", "inputs": encode(list(input_texts))})
            return [[1 / len(choice_ids)] * len(choice_ids) for _ in input_texts]

        inferencer._get_cond_prob = cond_prob
    return kind, model, inferencer, retriever, ice_t, prompt_t, calls, icfg


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": case["id"], "format_version": 1, "opencompass_version": "0.5.4",
                           "inferencer": case["dataset"]["infer_cfg"]["inferencer"]["type"],
                           "parser": case["model"].get("parser", "lm")}
    try:
        kind, model, inferencer, retriever, ice_t, prompt_t, calls, icfg = build(case)
    except Exception as exc:  # OpenCompass refused the configuration itself
        out.update(status="error", error={"type": type(exc).__name__, "message": str(exc)},
                   error_origin=traceback.extract_tb(exc.__traceback__)[-1].name, calls=[])
        return out
    if icfg.get("multiround"):
        out["multiround"] = True
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if kind == "SWCELossInferencer":
                inferencer.get_encoding_from_retriever_indices(
                    retriever.retrieve(), retriever, max_seq_len=inferencer.max_seq_len,
                    prompt_template=prompt_t)
            else:
                extra = {}
                if (case.get("options") or {}).get("normalizing_str") is not None:
                    extra["normalizing_str"] = case["options"]["normalizing_str"]
                inferencer.inference(retriever, ice_template=ice_t, prompt_template=prompt_t,
                                     output_json_filepath=tmp, output_json_filename="p.json",
                                     **extra)
                saved = json.loads((Path(tmp) / "p.json").read_text())
                out["saved"] = saved
    except Exception as exc:  # OpenCompass itself raised: that is the expected behaviour
        out["status"] = "error"
        out["error"] = {"type": type(exc).__name__, "message": str(exc)}
        out["error_origin"] = traceback.extract_tb(exc.__traceback__)[-1].name
        out["calls"] = calls
        return out
    out["status"] = "ok"
    out["error"] = None
    out["calls"] = calls
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="+", type=Path)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for file in args.cases:
        case = json.loads(file.read_text(encoding="utf-8"), object_pairs_hook=decode)
        result = run_case(case)
        (args.out / file.name).write_text(
            json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"{file.name}: {result['status']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
