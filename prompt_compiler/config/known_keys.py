"""Which keys a dataset or model dict may hold, and what a misspelt key turns into.

A misspelt key changes prompts silently unless someone says so: ``infer_cgf`` turns a
dataset into a path-only custom dataset, ``meta_templat`` drops the meta template,
``abr`` renames the dataset after its file. The tables here say which keys are known:

* :data:`PROJECT_MODEL_KEYS`: model keys this project reads (beyond OpenCompass's own).
  **The one table to extend** when a model key is added (one line each).
* :data:`OPENCOMPASS_BUILD_KEYS`: model keys OpenCompass 0.5.4 removes before it builds the
  model (``build_model_from_cfg``), plus ``type``.
* :data:`OPENCOMPASS_MODEL_PARAMS` (a view of :mod:`prompt_compiler.model.classes`): for
  each OpenCompass 0.5.4 model class, the keyword parameters of its ``__init__`` and whether
  it also takes ``**kwargs`` (it then logs ``Unused argument k=v`` and goes on).
* :data:`READER_CFG_KEYS`: the parameters of OpenCompass's ``DatasetReader`` (``reader_cfg``
  is passed to it as keywords, so another key is a ``TypeError`` there).
* :data:`INFER_CFG_KEYS`, :data:`DATASET_KEYS`: the keys of ``infer_cfg`` and of a dataset
  dict this project and OpenCompass read.

What follows from a key outside them (see :func:`model_key_notes`, :func:`dataset_key_notes`):

* a model key its OpenCompass class does not take: an error in compat mode when that class
  has fixed keyword parameters (OpenCompass fails building the model with a ``TypeError``,
  attached as ``reference``), a warning otherwise; with a did-you-mean;
* a ``reader_cfg`` key ``DatasetReader`` does not take: the same (a ``TypeError`` there);
* a key of ``infer_cfg``, of a dataset dict or of a model without a known class that both
  OpenCompass and this project ignore: a warning when it is close to a known key;
* a dataset without ``abbr``, ``reader_cfg`` or ``infer_cfg`` whose dict holds a key close
  to it: an error naming both (:func:`check_required_spelling`), never a silent fallback.

Warnings are carried on the loaded records (``DatasetConfig.notes``, ``ModelConfig.notes``)
and raised or printed when a pair is compiled, so ``--strict`` fails on them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ConfigError, PromptCompilerError, UnexpectedKeyError
from ..model.classes import MODEL_CLASSES, ScoringMethod

__all__ = [
    "SCORING_CALLS",
    "DATASET_KEYS",
    "INFER_CFG_KEYS",
    "OPENCOMPASS_BUILD_KEYS",
    "OPENCOMPASS_MODEL_PARAMS",
    "PROJECT_MODEL_KEYS",
    "READER_CFG_KEYS",
    "check_required_spelling",
    "close_key",
    "dataset_key_notes",
    "model_key_notes",
    "scoring_class",
    "scoring_failure",
]

PROJECT_MODEL_KEYS = frozenset({
    "abbr", "name", "type", "renderer", "parser", "meta_template", "source",
    "max_seq_len", "batch_size", "max_out_len", "min_out_len",
    "system_role", "template_kwargs", "api_format", "prompter", "tokenizer", "chat_template",
    # chat template inputs (chat_template_kwargs is also a VLLMwithChatTemplate parameter)
    "chat_template_kwargs", "date", "assistant_prefix", "tools", "documents",
    "tokenize", "stop_words", "path", "data_special_tokens",
})
"""Model keys this project reads. Add a new model key here (and to docs/configs.md)."""

OPENCOMPASS_BUILD_KEYS = frozenset({
    "type", "run_cfg", "max_out_len", "batch_size", "abbr", "summarizer_abbr",
    "pred_postprocessor", "min_out_len",
})

OPENCOMPASS_MODEL_PARAMS: dict[str, tuple[frozenset[str], bool]] = {
    name: (row.params, row.takes_kwargs) for name, row in MODEL_CLASSES.items()
    if row.params is not None}
"""OpenCompass 0.5.4 model class -> (its ``__init__`` keyword parameters, takes ``**kwargs``)."""

_ALL_MODEL_PARAMS = frozenset().union(*(p for p, _ in OPENCOMPASS_MODEL_PARAMS.values()))

READER_CFG_KEYS = frozenset({
    "input_columns", "output_column", "input_template", "output_template",
    "train_split", "train_range", "test_split", "test_range",
})
INFER_CFG_KEYS = frozenset({"ice_template", "prompt_template", "retriever", "inferencer"})
DATASET_KEYS = frozenset({
    "abbr", "type", "path", "data_files", "name", "reader_cfg", "infer_cfg", "eval_cfg",
    "rows", "splits", "fewshot",
    # chat inputs a dataset sets for its prompts (over the model's): docs/chat_templates.md
    "assistant_prefix", "tools", "documents",
})
# Dataset keys that OpenCompass's loaders commonly take although close to a key above.
_LOADER_KEYS = frozenset({"split"})
_REQUIRED_DATASET_KEYS = ("abbr", "reader_cfg", "infer_cfg")
_CUTOFF = 0.75


def close_key(key: str, known: Iterable[str], cutoff: float = _CUTOFF) -> list[str]:
    """The known keys ``key`` is a likely misspelling of (closest first)."""
    return difflib.get_close_matches(key, sorted(known), n=2, cutoff=cutoff)


def _mean(close: list[str]) -> str:
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def check_required_spelling(entry: Mapping[str, Any], config_path: str, key_path: str) -> None:
    """A dataset missing ``abbr``/``reader_cfg``/``infer_cfg`` but holding a key close to it.

    Raises:
        ConfigError: Naming both keys (a typo would otherwise change the prompts silently).
    """
    for required in _REQUIRED_DATASET_KEYS:
        if required in entry:
            continue
        near = [k for k in entry if isinstance(k, str) and k not in DATASET_KEYS
                and k not in _LOADER_KEYS and close_key(k, [required])]
        if near:
            raise ConfigError(
                f"the dataset has no {required!r} but has {near[0]!r}: a misspelling of "
                f"{required!r}?", config_path=config_path, key_path=f"{key_path}.{near[0]}",
                dataset=entry.get("abbr") if isinstance(entry.get("abbr"), str) else None,
                hint=f"rename {near[0]!r} to {required!r}")


def model_key_notes(entry: Mapping[str, Any], class_name: str | None, config_path: str,
                    key_path: str, abbr: str, read: Iterable[str] = ()
                    ) -> tuple[PromptCompilerError, ...]:
    """Warnings (and compat-mode errors: those with a ``reference``) for a model's keys.

    ``read``: further keys the caller reads (normalize's pass-through keys), known too."""
    notes: list[PromptCompilerError] = []
    ours = PROJECT_MODEL_KEYS | frozenset(read)
    where: dict[str, Any] = {"config_path": config_path, "model": abbr}
    params = OPENCOMPASS_MODEL_PARAMS.get(class_name or "")
    for key in entry:
        if not isinstance(key, str) or key in ours or key in OPENCOMPASS_BUILD_KEYS:
            continue
        sub = f"{key_path}.{key}"
        if params is None:  # no OpenCompass class known: only a near miss is worth a word
            if key in _ALL_MODEL_PARAMS:
                continue
            close = close_key(key, ours | _ALL_MODEL_PARAMS | OPENCOMPASS_BUILD_KEYS)
            if close:
                notes.append(ConfigError(
                    f"model key {key!r} is read neither by this project nor by OpenCompass"
                    f"{_mean(close)}", key_path=sub, **where))
            continue
        taken, kwargs = params
        if key in taken:
            continue
        close = close_key(key, taken | ours | OPENCOMPASS_BUILD_KEYS)
        if kwargs:
            notes.append(ConfigError(
                f"OpenCompass's {class_name} takes no key {key!r}{_mean(close)}; OpenCompass "
                f"0.5.4 logs 'Unused argument {key}=...' and ignores it", key_path=sub, **where))
            continue
        notes.append(UnexpectedKeyError(
            f"OpenCompass's {class_name} takes no key {key!r}{_mean(close)}: OpenCompass 0.5.4 "
            "fails building such a model (compat mode stops), the default mode ignores the key",
            key_path=sub,
            reference=("TypeError",
                       f"{class_name}.__init__() got an unexpected keyword argument '{key}'"),
            **where))
    return tuple(notes)


def dataset_key_notes(entry: Mapping[str, Any], config_path: str, key_path: str,
                      abbr: Any) -> tuple[PromptCompilerError, ...]:
    """Warnings (and compat-mode errors) for a dataset's keys and its reader_cfg/infer_cfg keys,
    after :func:`check_required_spelling` (``abbr``: the dataset's, as the notes name it).

    Raises:
        ConfigError: As :func:`check_required_spelling`.
    """
    check_required_spelling(entry, config_path, key_path)
    notes: list[PromptCompilerError] = []
    where: dict[str, Any] = {"config_path": config_path, "dataset": abbr}
    for key in entry:
        if not isinstance(key, str) or key in DATASET_KEYS or key in _LOADER_KEYS:
            continue
        close = [c for c in close_key(key, DATASET_KEYS) if c not in entry]
        if close:
            notes.append(ConfigError(
                f"dataset key {key!r} is read neither by this project nor by OpenCompass's "
                f"prompt building{_mean(close)}", key_path=f"{key_path}.{key}", **where))
    reader = entry.get("reader_cfg")
    for key in reader if isinstance(reader, Mapping) else ():
        if isinstance(key, str) and key not in READER_CFG_KEYS:
            notes.append(UnexpectedKeyError(
                f"reader_cfg takes no key {key!r}{_mean(close_key(key, READER_CFG_KEYS))}: "
                "OpenCompass 0.5.4 fails building such a dataset (compat mode stops), the "
                "default mode ignores the key",
                key_path=f"{key_path}.reader_cfg.{key}",
                reference=("TypeError",
                           f"DatasetReader.__init__() got an unexpected keyword argument '{key}'"),
                **where))
    infer = entry.get("infer_cfg")
    for key in infer if isinstance(infer, Mapping) else ():
        if not isinstance(key, str) or key in INFER_CFG_KEYS:
            continue
        close = close_key(key, INFER_CFG_KEYS)
        if close:
            notes.append(ConfigError(
                f"infer_cfg key {key!r} is read neither by this project nor by OpenCompass"
                f"{_mean(close)}", key_path=f"{key_path}.infer_cfg.{key}", **where))
    return tuple(notes)


_NOT_PPL = ("NotImplementedError", "{cls} does not support ppl-based evaluation yet, try "
            "gen-based instead.")

SCORING_CALLS: dict[str, tuple[ScoringMethod, str, str]] = {
    # inferencer -> (the model method it calls, what OpenCompass raises when the class lacks it)
    "PPLInferencer": ("get_ppl", *_NOT_PPL),
    "PPLOnlyInferencer": ("get_ppl", *_NOT_PPL),
    # get_ppl_tokenwise_from_template passes (inputs, label, mask_length) to BaseModel's
    # get_ppl_tokenwise(inputs, mask_length): the call fails before the method's own raise
    "InferencePPLOnlyInferencer": ("get_ppl_tokenwise", "TypeError",
                                   "BaseModel.get_ppl_tokenwise() takes from 2 to 3 positional "
                                   "arguments but 4 were given"),
    "LLInferencer": ("get_loglikelihood", "AttributeError",
                     "'{cls}' object has no attribute 'get_loglikelihood'"),
    "CLPInferencer": ("get_logits", "AttributeError",
                      "'{cls}' object has no attribute 'get_logits'"),
}
"""The scoring method each OpenCompass 0.5.4 inferencer calls on the model, and what
OpenCompass raises when the model's class lacks it (``lacks`` in
:mod:`prompt_compiler.model.classes`)."""


def scoring_failure(model_class: str | None, inferencer: str) -> tuple[str, str] | None:
    """``(exception type, message)`` OpenCompass 0.5.4 raises scoring with this pair, or None."""
    call = SCORING_CALLS.get(inferencer)
    entry = MODEL_CLASSES.get(model_class or "")
    if call is None or entry is None or call[0] not in entry.lacks:
        return None
    return call[1], call[2].format(cls=model_class)


_SCORERS = ("HuggingFaceCausalLM", "HuggingFaceBaseModel", "HuggingFace", "VLLM")


def scoring_class(inferencer: str) -> str | None:
    """A model class OpenCompass 0.5.4 scores this inferencer with (for a hint), or None."""
    call = SCORING_CALLS.get(inferencer)
    if call is None:
        return None
    return next((name for name in _SCORERS if call[0] not in MODEL_CLASSES[name].lacks), None)
