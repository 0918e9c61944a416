"""A tokenizer folder's encoder as transformers 5 builds it (``AutoTokenizer.from_pretrained``).

transformers 5 does not always run a ``tokenizer.json`` as written. It picks a tokenizer class
(``tokenizer_config.json``'s ``tokenizer_class``, overruled for some ``config.json`` model types)
and several classes rebuild the pipeline around the file's vocabulary and merges with their own
normalizer and pre-tokenizer, keeping only the file's post-processor:

* ``LlamaTokenizer`` (Llama 2, Mistral v0.x, Yi, ...; not when the file is byte-level, as Llama
  3's is): no normalizer, a ``Metaspace`` pre-tokenizer that prepends ``▁`` to the first piece
  only (``prepend_scheme="first"``) unless the config says ``legacy: true`` (then to every
  piece between special tokens) or ``add_prefix_space: false`` (never); a leading space of the
  text is no longer doubled (``" Hi"`` is ``▁Hi``, the file's normalizer gave ``▁▁Hi``);
* ``GemmaTokenizer``: spaces replaced by ``▁``, split after each;
* ``GPT2Tokenizer``: no normalizer, byte-level pre-tokenizer with the config's
  ``add_prefix_space``;
* ``GPTNeoXTokenizer``: NFC, byte-level with ``add_prefix_space``/``trim_offsets``, and a
  post-processor that adds nothing (``add_bos_token``/``add_eos_token`` of a folder with a
  ``tokenizer.json`` are dropped by transformers).
* ``CodeLlamaTokenizer``: as Llama's, ``▁`` for the first piece only, a BOS always added;
* ``Qwen2Tokenizer``/``Qwen3_5Tokenizer``: NFC, the class's own split regex, byte-level;
* ``CohereTokenizer``: NFC, single digits, byte-level;
* ``T5Tokenizer`` (a Unigram file): only the file's sentencepiece ``Precompiled`` normalizer,
  whitespace split then ``▁`` before every word, ``</s>`` after the text, and the sentinels
  ``<extra_id_0>`` ... (``extra_ids``, default 100) as special tokens.

Every class then adds the folder's named special tokens (``bos_token`` ... and
``additional_special_tokens``/``extra_special_tokens``) and its ``added_tokens_decoder`` that the
file lacks, as special tokens, and ``split_special_tokens: true`` makes special-token text plain
text. ``add_bos_token``/``add_eos_token`` given to ``from_pretrained`` (OpenCompass's
``tokenizer_kwargs``) rewrite the post-processor: ``[bos] $A [eos]``.

Other classes run the file as written (what ``TokenizersBackend`` does). A folder with no
``tokenizer.json`` (a sentencepiece ``tokenizer.model``, ``tekken.json``, a tiktoken file) is
converted by transformers with libraries not used here: :func:`missing_tokenizer_json` says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["REBUILT", "build_backend", "effective_class", "missing_tokenizer_json"]

REBUILT = ("LlamaTokenizer", "CodeLlamaTokenizer", "GemmaTokenizer", "GPT2Tokenizer",
           "GPTNeoXTokenizer", "Qwen2Tokenizer", "Qwen3_5Tokenizer", "CohereTokenizer",
           "T5Tokenizer")
"""The classes whose pipeline is rebuilt here as transformers 5 rebuilds it."""

# config.json model types whose declared tokenizer_class transformers 5 overrules:
# the generic backend (the file as written), or the class it registers for them.
_GENERIC_TYPES = frozenset({
    "arctic", "chatlm", "ernie4_5", "ernie4_5_moe", "fuyu", "h2ovl_chat", "hyperclovax",
    "internlm2", "internlm3", "jamba", "llava", "llava_next", "minicpm3", "minicpmv",
    "minimax_m2", "nemotron", "phi3", "phi3_v", "phimoe", "mistral", "mixtral", "ministral",
    "mistral3", "glm", "glm4", "stablelm", "granite", "olmo2", "umt5", "qwen3_5",
    "qwen3_5_moe"})
_REGISTERED = {"gemma": "GemmaTokenizer", "gemma2": "GemmaTokenizer", "gemma3": "GemmaTokenizer",
               "gemma3_text": "GemmaTokenizer", "phi": "GPT2Tokenizer", "gpt2": "GPT2Tokenizer",
               "starcoder2": "GPT2Tokenizer", "codegen": "GPT2Tokenizer", "opt": "GPT2Tokenizer",
               "gpt_neox": "GPTNeoXTokenizer", "olmo": "GPTNeoXTokenizer",
               "mpt": "GPTNeoXTokenizer", "qwen2": "Qwen2Tokenizer", "qwen3": "Qwen2Tokenizer",
               "t5": "T5Tokenizer", "mt5": "T5Tokenizer", "bert": "BertTokenizer",
               "cohere": "CohereTokenizer"}
_INCORRECT_HUB = frozenset({"qwen2", "phi3", "phi3_v", "phimoe", "internlm2", "internlm3",
                            "jamba"})
_SPECIAL_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                  "mask_token")
_ENDOFTEXT = "<|endoftext|>"
_CLASS_TOKENS: dict[str, dict[str, str]] = {
    "LlamaTokenizer": {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"},
    "GemmaTokenizer": {"unk_token": "<unk>", "bos_token": "<bos>", "eos_token": "<eos>",
                       "pad_token": "<pad>", "mask_token": "<mask>"},
    "GPT2Tokenizer": {"unk_token": _ENDOFTEXT, "bos_token": _ENDOFTEXT, "eos_token": _ENDOFTEXT},
    "GPTNeoXTokenizer": {"unk_token": _ENDOFTEXT, "bos_token": _ENDOFTEXT,
                         "eos_token": _ENDOFTEXT, "pad_token": "<|padding|>"},
    "CodeLlamaTokenizer": {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>",
                           "prefix_token": "\u2581<PRE>", "middle_token": "\u2581<MID>",
                           "suffix_token": "\u2581<SUF>", "eot_token": "\u2581<EOT>",
                           "fill_token": "<FILL_ME>"},
    "Qwen2Tokenizer": {"unk_token": _ENDOFTEXT, "eos_token": _ENDOFTEXT, "pad_token": _ENDOFTEXT},
    "Qwen3_5Tokenizer": {"unk_token": _ENDOFTEXT, "eos_token": _ENDOFTEXT,
                         "pad_token": _ENDOFTEXT},
    "T5Tokenizer": {"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"},
    "CohereTokenizer": {"unk_token": "<UNK>", "bos_token": "<BOS_TOKEN>",
                        "eos_token": "<|END_OF_TURN_TOKEN|>", "pad_token": "<PAD>",
                        "cls_token": "<CLS>", "sep_token": "<SEP>", "mask_token": "<MASK_TOKEN>"},
}
# The split of the Qwen 2 and Qwen 3.5 classes (their pre-tokenizers are fixed in the class).
_QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN3_5_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|"
                  r" ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
"""The special tokens a rebuilt class names by default (its ``__init__``'s defaults), where the
folder's config does not set the key."""


def _bare(name: Any) -> str | None:
    if not isinstance(name, str) or not name:
        return None
    return name[:-4] if name.endswith("Fast") and name != "PreTrainedTokenizerFast" else name


def _model_type(folder: Path) -> str | None:
    file = folder / "config.json"
    if not file.is_file():
        return None
    try:
        found = json.loads(file.read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) else None


def _byte_level(data: Mapping[str, Any]) -> bool:
    """The file's pre-tokenizer or decoder is (or holds) ``ByteLevel`` (Llama 3 style)."""
    text = json.dumps([data.get("pre_tokenizer"), data.get("decoder")])
    return '"ByteLevel"' in text


def effective_class(config: Mapping[str, Any], data: Mapping[str, Any],
                    model_type: str | None) -> str:
    """The tokenizer class transformers 5's ``AutoTokenizer`` picks (bare name, no ``Fast``);
    ``TokenizersBackend`` where it runs the file as written."""
    declared = _bare(config.get("tokenizer_class"))
    if declared == "LlamaTokenizer" and model_type not in _INCORRECT_HUB \
            and model_type not in ("mistral", "mixtral", "ministral", "mistral3") \
            and _byte_level(data):
        return "TokenizersBackend"
    if model_type is not None and declared is not None:
        registered = "TokenizersBackend" if model_type in _GENERIC_TYPES \
            else _REGISTERED.get(model_type)
        if registered is not None and registered != declared:
            if registered != "TokenizersBackend":
                return registered if model_type in _INCORRECT_HUB else declared
            return "TokenizersBackend"
    if declared is None:
        registered = _REGISTERED.get(model_type or "")
        return registered or "TokenizersBackend"
    return declared


def _bpe(data: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    model = dict(data.get("model") or {})
    keep = {k: model[k] for k in ("type", "vocab", "merges") if k in model}
    return {**keep, "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
            "ignore_merges": False, **options}


def _byte_level_pre(add_prefix_space: bool, trim_offsets: bool = True) -> dict[str, Any]:
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space,
            "trim_offsets": trim_offsets, "use_regex": True}


def _template(bos: tuple[str, int] | None, eos: tuple[str, int] | None) -> dict[str, Any]:
    """``update_post_processor``: ``[bos] $A [eos]`` (and the pair form)."""
    def seq(part: str, type_id: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if bos:
            out.append({"SpecialToken": {"id": bos[0], "type_id": type_id}})
        out.append({"Sequence": {"id": part, "type_id": type_id}})
        if eos:
            out.append({"SpecialToken": {"id": eos[0], "type_id": type_id}})
        return out

    specials = {t[0]: {"id": t[0], "ids": [t[1]], "tokens": [t[0]]} for t in (bos, eos) if t}
    return {"type": "TemplateProcessing", "single": seq("A", 0),
            "pair": seq("A", 0) + seq("B", 1), "special_tokens": specials}


def _rebuild(cls: str, data: dict[str, Any], config: Mapping[str, Any]) -> bool:
    """Rewrite ``data`` (a tokenizer.json) as ``cls``'s ``__init__`` builds it; False when the
    class is not one rebuilt here or the file's model does not fit it."""
    model_type = (data.get("model") or {}).get("type")
    if cls == "T5Tokenizer" and model_type == "Unigram":
        model = data.get("model") or {}
        data["model"] = {"type": "Unigram", "unk_id": 2, "vocab": model.get("vocab"),
                         "byte_fallback": False}
        data["normalizer"] = _precompiled(data.get("normalizer"))
        data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"},
            {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
             "split": True}]}
        return True
    if cls not in REBUILT or model_type != "BPE":
        return False
    if cls == "CodeLlamaTokenizer":
        prefix = config.get("add_prefix_space")
        prefix = True if prefix is None else bool(prefix)
        unk = _token_content(config.get("unk_token", "<unk>")) or "<unk>"
        data["model"] = _bpe(data, fuse_unk=True, byte_fallback=True, unk_token=unk)
        data["normalizer"] = None
        data["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581",
                                 "prepend_scheme": "first" if prefix else "never",
                                 "split": False}
    elif cls in ("Qwen2Tokenizer", "Qwen3_5Tokenizer"):
        split = _QWEN2_SPLIT if cls == "Qwen2Tokenizer" else _QWEN3_5_SPLIT
        data["model"] = _bpe(data, continuing_subword_prefix="", end_of_word_suffix="")
        data["normalizer"] = {"type": "NFC"}
        data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": split}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": bool(config.get("add_prefix_space", False)),
             "trim_offsets": True, "use_regex": False}]}
    elif cls == "CohereTokenizer":
        data["model"] = _bpe(data, continuing_subword_prefix="", end_of_word_suffix="")
        data["normalizer"] = {"type": "NFC"}
        data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            _byte_level_pre(bool(config.get("add_prefix_space", False)))]}
    elif cls == "LlamaTokenizer":
        prefix = config.get("add_prefix_space")
        prefix = True if prefix is None else bool(prefix)
        scheme = ("first" if not config.get("legacy", False) else "always") if prefix \
            else "never"
        data["model"] = _bpe(data, fuse_unk=True, byte_fallback=True)
        data["normalizer"] = None
        data["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581",
                                 "prepend_scheme": scheme, "split": False}
    elif cls == "GemmaTokenizer":
        gemma_unk = _token_content(config.get("unk_token", "<unk>"))
        data["model"] = _bpe(data, fuse_unk=True, byte_fallback=True, unk_token=gemma_unk)
        data["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
        data["pre_tokenizer"] = {"type": "Split", "pattern": {"String": " "},
                                 "behavior": "MergedWithPrevious", "invert": False}
    elif cls == "GPT2Tokenizer":
        data["model"] = _bpe(data, continuing_subword_prefix="", end_of_word_suffix="")
        data["normalizer"] = None
        data["pre_tokenizer"] = _byte_level_pre(bool(config.get("add_prefix_space", False)))
    else:  # GPTNeoXTokenizer
        data["model"] = _bpe(data, continuing_subword_prefix="", end_of_word_suffix="")
        data["normalizer"] = {"type": "NFC"}
        data["pre_tokenizer"] = _byte_level_pre(bool(config.get("add_prefix_space", False)),
                                                bool(config.get("trim_offsets", True)))
        data["post_processor"] = _template(None, None)
    return True


def _flags(token: Any) -> tuple[bool, ...]:
    return (bool(token.single_word), bool(token.lstrip), bool(token.rstrip),
            bool(token.normalized), bool(token.special))


def _precompiled(normalizer: Any) -> dict[str, Any] | None:
    """The file's sentencepiece ``Precompiled`` normalizer alone (T5's rebuild keeps only it)."""
    found = normalizer if isinstance(normalizer, Mapping) else None
    steps = found.get("normalizers") if found and found.get("type") == "Sequence" else [found]
    for step in steps or []:
        if isinstance(step, Mapping) and step.get("type") == "Precompiled":
            return dict(step)
    return None


def _token_content(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def _added(value: Any, special: bool) -> Any:
    from tokenizers import AddedToken

    if isinstance(value, Mapping):
        flags = {k: bool(value[k]) for k in ("single_word", "lstrip", "rstrip", "normalized")
                 if k in value}
        is_special = bool(value.get("special", special))
        flags.setdefault("normalized", not is_special)
        return AddedToken(str(value["content"]), special=is_special, **flags)
    return AddedToken(str(value), special=special, normalized=not special)


def build_backend(file: Path, folder: Path, config: Mapping[str, Any],
                  special: Mapping[str, str] | None = None,
                  kwargs: Mapping[str, Any] | None = None) -> tuple[Any, str, dict[str, str]]:
    """The ``tokenizers.Tokenizer`` transformers 5 encodes with for this folder, and the class
    it stands for. ``special``: the folder's named special tokens (``tokenizer_config.json``
    with ``special_tokens_map.json``); ``kwargs``: what ``from_pretrained`` is given besides
    the folder (a model's ``tokenizer_kwargs``), which win over the config's keys.

    Also returns the named special tokens the tokenizer ends up with (``special``, the class's
    defaults for the keys the config does not set, ``kwargs``' tokens): what transformers'
    ``tokenizer.eos_token`` ... and a chat template's ``bos_token`` are."""
    import tokenizers

    kwargs = dict(kwargs or {})
    merged = {**config, **kwargs}
    text = file.read_text(encoding="utf-8")
    data = json.loads(text)
    cls = effective_class(config, data, _model_type(folder))
    if _rebuild(cls, data, merged):
        backend = tokenizers.Tokenizer.from_str(json.dumps(data))
    else:
        backend = tokenizers.Tokenizer.from_str(text)
    backend.no_truncation()
    backend.no_padding()
    if not isinstance(data, dict):
        return backend, cls, dict(special or {})
    # added tokens: the config's added_tokens_decoder, then the named special tokens
    # (one a file holds with other flags is added again: the config's flags win, as there)
    present = {str(t.content): _flags(t) for t in backend.get_added_tokens_decoder().values()}
    wanted: list[Any] = []
    decoder = config.get("added_tokens_decoder")
    if isinstance(decoder, Mapping):
        for _, value in sorted(decoder.items(), key=lambda kv: int(kv[0])
                               if str(kv[0]).isdigit() else 0):
            if _token_content(value) is None:
                continue
            token = _added(value, bool(isinstance(value, Mapping)
                                       and value.get("special", False)))
            if present.get(str(token.content)) != _flags(token):
                wanted.append(token)
    present_text = set(present)
    defaults = {k: v for k, v in _CLASS_TOKENS.get(cls, {}).items() if k not in merged}
    named = {**defaults, **(special or {}),
             **{k: merged[k] for k in _SPECIAL_NAMES if k in kwargs}}
    names = [_token_content(v) for v in named.values()]
    extra = merged.get("extra_special_tokens") or merged.get("additional_special_tokens")
    if cls == "T5Tokenizer":  # its sentinels <extra_id_0> ... unless the config lists them
        count = merged.get("extra_ids", 100)
        listed = [str(_token_content(v)) for v in (extra if isinstance(extra, list) else [])]
        if not any("<extra_id_" in t for t in listed) and isinstance(count, int):
            extra = [*listed, *(f"<extra_id_{i}>" for i in range(count))]
    if isinstance(extra, Mapping):
        names += [_token_content(v) for v in extra.values()]
    elif isinstance(extra, list):
        names += [_token_content(v) for v in extra]
    seen = present_text | {str(t.content) for t in wanted}
    for name in names:
        if name and name not in seen:
            seen.add(name)
            wanted.append(_added(name, True))
    for token in wanted:  # one at a time: new tokens take the next ids in this order
        if token.special:
            backend.add_special_tokens([token])
        else:
            backend.add_tokens([token])
    if merged.get("split_special_tokens"):
        backend.encode_special_tokens = True
    if cls == "T5Tokenizer" and _rebuilt_t5(data):
        from tokenizers import processors

        eos = _token_content(named.get("eos_token")) or "</s>"
        eos_id = backend.token_to_id(eos)
        if eos_id is not None:
            backend.post_processor = processors.TemplateProcessing(
                single=f"$A:0 {eos}:0", pair=f"$A:0 {eos}:0 $B:1 {eos}:1",
                special_tokens=[(eos, eos_id)])
    # CodeLlamaTokenizer hands its add_bos_token (default True) on as if given
    flags = {"add_bos_token": True, **kwargs} if cls == "CodeLlamaTokenizer" else kwargs
    if "add_bos_token" in flags or "add_eos_token" in flags:
        # update_post_processor(): "[bos] $A [eos]" from the two flags given (each False when
        # not given), a token the vocabulary lacks left out
        from tokenizers import processors

        marks: list[tuple[str, int]] = []
        for flag, key in (("add_bos_token", "bos_token"), ("add_eos_token", "eos_token")):
            token = _token_content(named.get(key))
            token_id = backend.token_to_id(token) if token else None
            marks.append((str(token), token_id) if flags.get(flag) and token_id is not None
                         else ("", -1))
        (bos, bos_id), (eos, eos_id) = marks
        single = " ".join(x for x in (f"{bos}:0" if bos else "", "$A:0",
                                      f"{eos}:0" if eos else "") if x)
        pair = " ".join(x for x in (single, f"{bos}:1" if bos else "", "$B:1",
                                    f"{eos}:1" if eos else "") if x)
        backend.post_processor = processors.TemplateProcessing(
            single=single, pair=pair,
            special_tokens=[(t, i) for t, i in ((bos, bos_id), (eos, eos_id)) if t])
    if kwargs.get("fix_mistral_regex") and backend.get_vocab_size() > 100000 \
            and backend.pre_tokenizer is not None and _mistral_config(folder):
        _fix_mistral_regex(backend)
    effective = {k: str(t) for k, t in ((k, _token_content(v)) for k, v in named.items())
                 if t is not None}
    return backend, cls, effective


_MISTRAL_TYPES = ("mistral", "mistral3", "voxtral", "ministral", "pixtral")
_MISTRAL_SPLIT = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
                  r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|"
                  r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def _rebuilt_t5(data: Mapping[str, Any]) -> bool:
    return (data.get("model") or {}).get("type") == "Unigram"


def _mistral_config(folder: Path) -> bool:
    """transformers' test for its Mistral pre-tokenizer fix: a ``config.json`` written before
    transformers 5 whose model type is a Mistral one (or unnamed)."""
    file = folder / "config.json"
    if not file.is_file():
        return False
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(config, dict):
        return False
    version = config.get("transformers_version")
    try:
        major = int(str(version).split(".")[0]) if version else 0
    except ValueError:
        major = 0
    if major >= 5:
        return False
    model_type = config.get("model_type")
    return model_type is None or model_type in _MISTRAL_TYPES


def _fix_mistral_regex(backend: Any) -> None:
    """``fix_mistral_regex=True``: transformers' corrected split put first in the
    pre-tokenizer (a ``Metaspace`` one becomes byte-level behind it)."""
    from tokenizers import Regex, pre_tokenizers

    split = pre_tokenizers.Split(pattern=Regex(_MISTRAL_SPLIT), behavior="isolated")
    current = backend.pre_tokenizer
    if isinstance(current, pre_tokenizers.Sequence):
        current[0] = split
        return
    if isinstance(current, pre_tokenizers.Metaspace):
        current = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.pre_tokenizer = pre_tokenizers.Sequence([split, current])


def missing_tokenizer_json(folder: Path) -> str:
    """Why a folder without ``tokenizer.json`` cannot be read here, naming what it holds."""
    held = [name for name in ("tokenizer.model", "tekken.json", "tiktoken.model", "qwen.tiktoken",
                              "vocab.json", "merges.txt", "vocab.txt", "spiece.model",
                              "sentencepiece.bpe.model", "tokenizer_config.json")
            if (folder / name).is_file()]
    held += sorted(p.name for p in folder.glob("*.tiktoken") if p.name not in held) \
        if folder.is_dir() else []
    what = f" (it holds {', '.join(held)})" if held else ""
    return (f"no tokenizer.json in {folder}{what}: token ids and counts need the fast "
            "tokenizer file, which transformers converts sentencepiece, tekken and tiktoken "
            "vocabularies into")
