"""Turn loaded config data into case-format ``dataset`` / ``model`` dicts.

Input is plain data from any config format (Python configs may still hold
:class:`~prompt_compiler.config.records.TypeRef` values); output are the frozen
:class:`DatasetConfig` / :class:`ModelConfig` records. Every error names the config file
and the key path of the offending value.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError, PromptCompilerError
from ..model.classes import check_renderer, find_class, resolve_renderer
from ..safety.values import find_problem, join_path
from ..template.prompt_template import require_template
from .chatml import CHATML_KEY
from .known_keys import (
    close_key,
    dataset_key_notes,
    model_key_notes,
)
from .origins import Origin, relocate
from .records import CUSTOM_KEY, DERIVED_ABBR_KEY, DatasetConfig, ModelConfig, TypeRef, Unsupported

__all__ = [
    "CUSTOM_KEY",
    "DERIVED_ABBR_KEY",
    "check_values",
    "collect_entries",
    "derive_abbr",
    "is_custom_dataset",
    "normalize_dataset",
    "normalize_entries",
    "normalize_model",
]

DEFAULT_DATASET_ABBR = "dataset"  # OpenCompass's BaseDataset default
_INFER_PARTS = ("ice_template", "prompt_template", "retriever", "inferencer")
_DROPPED_DATASET_KEYS = frozenset({"eval_cfg"})  # evaluation only; never affects prompts
_MODEL_OPTIONAL_KEYS = ("max_out_len", "min_out_len")
# Model keys handed to the compiler as written (validated by building the model below).
_MODEL_PASS_KEYS = ("template_kwargs", "api_format", "prompter", "tokenizer",
                    "chat_template_kwargs", "assistant_prefix", "tools", "documents", "date",
                    "stop_words", "tokenize", "tokenizer_kwargs", "data_special_tokens")
# OpenCompass's own key, read where the model's class takes it: still noted where it does not
_NOTED_PASS_KEYS = tuple(k for k in _MODEL_PASS_KEYS if k != "tokenizer_kwargs")


def collect_entries(
    top: Mapping[str, Any], kind: str, config_path: str
) -> list[tuple[str, Any]]:
    """The ``(key_path, entry)`` pairs of one kind (``datasets`` or ``models``).

    A top-level ``datasets`` list wins; without it every top-level ``*_datasets`` list is
    collected in definition order (likewise ``models`` / ``*_models``); there an entry
    that appears unchanged in two variables is kept once.
    """
    if kind in top:
        value = top[kind]
        if not isinstance(value, list):
            raise ConfigError(
                f"expected a list of {kind[:-1]} dicts, got {_type_name(value)}",
                config_path=config_path,
                key_path=kind,
            )
        sources = [(kind, value)]
    else:
        suffix = "_" + kind
        # chatml_datasets are not dataset configs: OpenCompass builds datasets from them
        # (see .chatml)
        sources = [(k, v) for k, v in top.items() if k.endswith(suffix) and isinstance(v, list)
                   and k != "chatml_datasets"]
    out: list[tuple[str, Any]] = []
    for name, items in sources:
        for index, entry in enumerate(items):
            if name != kind:
                check_values(entry, config_path, f"{name}[{index}]")  # before comparing
            if name != kind and any(entry == seen for _, seen in out):
                continue  # the same entry reached through two *_datasets variables
            out.append((f"{name}[{index}]", entry))
    return out


def normalize_dataset(
    entry: Any, config_path: str, key_path: str, *, abbr_optional: bool = False
) -> DatasetConfig:
    """Validate one dataset entry and return it in the case format.

    Args:
        entry: The dataset dict as loaded.
        config_path: The config file (for errors and provenance).
        key_path: Where the entry is, e.g. ``datasets[0]``.
        abbr_optional: Accept a missing ``abbr`` (JSON compile jobs; default ``dataset``).

    Raises:
        ConfigError: A required key is missing or has the wrong shape.
    """
    entry = _require_dict(entry, "a dataset dict", config_path, key_path)
    check_values(entry, config_path, key_path)
    entry = _unwrap_reader_cfg(entry)
    derived = False
    abbr = entry.get("abbr")
    if abbr is None and "abbr" not in entry and abbr_optional:
        abbr = DEFAULT_DATASET_ABBR
    elif "abbr" not in entry and isinstance(entry.get("path"), str) and entry["path"]:
        abbr, derived = derive_abbr(entry), True
    # the entry's keys in one look: a misspelt required key raises before anything else
    notes = dataset_key_notes(entry, config_path, key_path, abbr)
    if not isinstance(abbr, str) or not abbr:
        raise ConfigError(
            "a dataset needs an 'abbr' (a non-empty string naming it) or a 'path'"
            if "abbr" not in entry
            else f"'abbr' must be a non-empty string, got {_type_name(abbr)}",
            config_path=config_path,
            key_path=f"{key_path}.abbr",
            hint="add abbr='...' to the dataset dict",
        )
    where: dict[str, Any] = {"config_path": config_path, "dataset": abbr}
    if is_custom_dataset(entry):
        return _custom_dataset(entry, abbr, derived, config_path, key_path)
    for key in ("reader_cfg", "infer_cfg"):
        if key not in entry:
            raise ConfigError(f"the dataset has no '{key}'", key_path=f"{key_path}.{key}", **where)
        _require_dict(entry[key], "a dict", config_path, f"{key_path}.{key}", abbr)
    infer = entry["infer_cfg"]
    # A missing retriever is an error, from files and in the library (Compiler.job).
    if "inferencer" not in infer:
        near = [k for k in infer if isinstance(k, str) and close_key(k, ["inferencer"])]
        raise ConfigError(
            "infer_cfg has no 'inferencer'"
            + (f" but has {near[0]!r}: a misspelling of 'inferencer'?" if near else ""),
            key_path=f"{key_path}.infer_cfg.{near[0] if near else 'inferencer'}",
            hint=f"rename {near[0]!r} to 'inferencer'" if near else None, **where,
        )
    try:
        require_template("ice_template" in infer, "prompt_template" in infer,
                         f"{key_path}.infer_cfg")
    except PromptCompilerError as err:
        raise err.located(**where) from None
    for part in _INFER_PARTS:
        if part in infer:
            part_path = f"{key_path}.infer_cfg.{part}"
            value = _require_dict(infer[part], "a dict", config_path, part_path, abbr)
            if "type" not in value:
                raise ConfigError(f"'{part}' has no 'type'", key_path=part_path, **where)
    if "path" in entry and not isinstance(entry["path"], str):
        raise ConfigError(
            f"'path' must be a string, got {_type_name(entry['path'])}",
            key_path=f"{key_path}.path",
            **where,
        )
    spec = {
        key: _clean(value, f"{key_path}.{key}", config_path, abbr)
        for key, value in entry.items()
        if key not in _DROPPED_DATASET_KEYS
    }
    if derived:
        spec = {"abbr": abbr, DERIVED_ABBR_KEY: True, **spec}
    return DatasetConfig(abbr=abbr, config_path=config_path, key_path=key_path, spec=spec,
                         notes=notes)


def normalize_entries(
    top: Mapping[str, Any], display: str, *, defer: bool, origins: dict[str, Origin],
    chatml: Callable[[], list[Any]] | None = None,
) -> tuple[tuple[DatasetConfig, ...], tuple[ModelConfig, ...],
           tuple[tuple[tuple[DatasetConfig, ...], tuple[ModelConfig, ...]], ...]]:
    """A config's datasets, models and ``model_dataset_combinations``, each entry's errors
    and notes named where it is defined (``origins``: by abbr, the base configs that define
    entries); ``chatml`` gives the dataset dicts of its ``chatml_datasets``, appended to the
    datasets. ``defer``: see :func:`_model`."""
    datasets = tuple(_dataset(entry, display, key, origins)
                     for key, entry in collect_entries(top, "datasets", display))
    if chatml is not None:
        datasets += tuple(normalize_dataset(entry, display, f"{CHATML_KEY}[{i}]")
                          for i, entry in enumerate(chatml()))
    models = tuple(_model(entry, display, key, defer, origins)
                   for key, entry in collect_entries(top, "models", display))
    return datasets, models, _combinations(top, display, defer, origins)


COMBINATIONS = "model_dataset_combinations"


def _combinations(top: Mapping[str, Any], display: str, defer: bool, origins: dict[str, Origin]
                  ) -> tuple[tuple[tuple[DatasetConfig, ...], tuple[ModelConfig, ...]], ...]:
    """OpenCompass's ``model_dataset_combinations = [dict(models=[...], datasets=[...]), ...]``:
    its partitioners pair each entry's models with that entry's datasets, and only those."""
    value = top.get(COMBINATIONS)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError(f"expected a list of dict(models=[...], datasets=[...]), got "
                          f"{type(value).__name__}", config_path=display, key_path=COMBINATIONS)
    out = []
    for i, comb in enumerate(value):
        where = f"{COMBINATIONS}[{i}]"
        if not isinstance(comb, dict) or not isinstance(comb.get("models"), list) or \
                not isinstance(comb.get("datasets"), list):
            raise ConfigError("expected dict(models=[...], datasets=[...]) (OpenCompass reads "
                              "both lists)", config_path=display, key_path=where)
        datasets = tuple(_dataset(entry, display, f"{where}.datasets[{j}]", origins)
                         for j, entry in enumerate(comb["datasets"]))
        models = tuple(_model(entry, display, f"{where}.models[{j}]", defer, origins)
                       for j, entry in enumerate(comb["models"]))
        out.append((datasets, models))
    return tuple(out)


def _origin(entry: Any, origins: dict[str, Origin]) -> Origin | None:
    """Where a base config defines the entry (by its abbr), if one does."""
    abbr = entry.get("abbr") if isinstance(entry, dict) else None
    return origins.get(abbr) if isinstance(abbr, str) else None


def _dataset(entry: Any, display: str, key: str, origins: dict[str, Origin]) -> DatasetConfig:
    """A dataset entry, its errors and notes named where it is defined."""
    origin = _origin(entry, origins)
    try:
        dataset = normalize_dataset(entry, display, key)
    except PromptCompilerError as err:
        relocate(err, origin, display, key)
        raise
    if origin is None:
        return dataset
    return dataclasses.replace(dataset, origin=origin, notes=tuple(
        relocate(note, origin, display, key) for note in dataset.notes))


def _model(entry: Any, display: str, key: str, defer: bool,
           origins: dict[str, Origin] | None = None) -> ModelConfig:
    """A model entry, its errors and notes named where it is defined; an invalid one with a
    usable abbr is kept with its error, raised only if the model is paired (``--models``
    may leave it out)."""
    origin = _origin(entry, origins or {})
    try:
        model = normalize_model(entry, display, key, origin)
        if origin is None:
            return model
        return dataclasses.replace(model, origin=origin, notes=tuple(
            relocate(note, origin, display, key) for note in model.notes))
    except PromptCompilerError as err:
        relocate(err, origin, display, key)
        if not defer:
            raise
        abbr = entry.get("abbr", entry.get("name")) if isinstance(entry, dict) else None
        if not isinstance(abbr, str) or not abbr:  # (abbr='' too): named by where it is, so
            abbr = f"<{display}:{key}>"  # --model can replace it and --models leave it out
        return ModelConfig(abbr, display, key, {"name": abbr}, error=err, origin=origin)


def derive_abbr(entry: Mapping[str, Any]) -> str:
    """The abbr OpenCompass gives a dataset without one: ``path`` (``_name`` appended when
    the entry has a ``name``), every ``/`` replaced by ``_``."""
    abbr = str(entry["path"])
    if "name" in entry:
        abbr += "_" + str(entry["name"])
    return abbr.replace("/", "_")


def derive_model_abbr(entry: Mapping[str, Any]) -> str | None:
    """The abbr OpenCompass 0.5.4 gives a model without one (``model_abbr_from_cfg``):
    its ``type`` as the config names it (``opencompass.models.OpenAISDK`` for a class
    imported from ``opencompass.models``), ``_``, and the last two parts of
    ``os.path.realpath(path)`` joined by ``_``; None without a ``type`` and a ``path``."""
    raw_type, path = entry.get("type"), entry.get("path")
    if isinstance(raw_type, TypeRef):
        type_text = raw_type.qualified_name
    elif isinstance(raw_type, str) and raw_type:
        type_text = raw_type
    else:
        return None
    if not isinstance(path, str) or not path:
        return None
    tail = "_".join(os.path.realpath(path).split("/")[-2:])
    return (type_text + "_" + tail).replace("/", "_")


def is_custom_dataset(entry: Mapping[str, Any]) -> bool:
    """A path-only custom dataset: no loader ``type``; OpenCompass builds its reader and
    infer config from the data file's first row (see :mod:`prompt_compiler.config.custom`)."""
    return "type" not in entry and isinstance(entry.get("path"), str) and "infer_cfg" not in entry


def _custom_dataset(
    entry: dict[str, Any], abbr: str, derived: bool, config_path: str, key_path: str
) -> DatasetConfig:
    spec = {
        key: _clean(value, f"{key_path}.{key}", config_path, abbr)
        for key, value in entry.items()
        if key not in _DROPPED_DATASET_KEYS
    }
    # OpenCompass names such a dataset after its file, unless the entry names it.
    spec = {"abbr": abbr, CUSTOM_KEY: True, **spec}
    if derived:
        spec["abbr"] = Path(str(entry["path"])).name.split(".")[0]
    return DatasetConfig(abbr=spec["abbr"], config_path=config_path, key_path=key_path, spec=spec)


def _unwrap_reader_cfg(entry: dict[str, Any]) -> dict[str, Any]:
    """``reader_cfg=(dict(...),)`` (a stray trailing comma) reads as the dict itself."""
    value = entry.get("reader_cfg")
    if isinstance(value, (list, tuple)) and len(value) == 1 and isinstance(value[0], Mapping):
        return {**entry, "reader_cfg": value[0]}
    return entry


def normalize_model(entry: Any, config_path: str, key_path: str,
                    origin: Origin | None = None) -> ModelConfig:
    """Validate one model entry and return it in the case format.

    The renderer (kept under ``parser`` in the case-format spec, the key the conformance cases
    use) comes from, in order: an explicit ``renderer`` (or ``parser``) key; the model class
    (see ``docs/configs.md``); the
    renderer of a meta template referred to by name. ``origin``: the base config that
    defines the entry, where its relative file names are read first.

    Raises:
        ConfigError: A key is missing or has the wrong shape.
        RegistryError: The renderer name or model class is unknown.
    """
    entry = _require_dict(entry, "a model dict", config_path, key_path)
    check_values(entry, config_path, key_path)
    abbr = entry.get("abbr", entry.get("name"))
    if abbr is None and "abbr" not in entry and "name" not in entry:
        abbr = derive_model_abbr(entry)
    if abbr == "" and entry.get("abbr") == "":
        raise _empty_abbr(entry, config_path, key_path)
    if not isinstance(abbr, str) or not abbr:
        raise ConfigError(
            "a model needs an 'abbr' (a non-empty string naming it)"
            if "abbr" not in entry else "'abbr' must be a non-empty string, got "
            + ("an empty string" if abbr == "" else _type_name(abbr)),
            config_path=config_path,
            key_path=f"{key_path}.abbr",
            hint="add abbr='...' to the model dict (without one OpenCompass names a model "
            "after its 'type' and 'path')",
        )
    where: dict[str, Any] = {"config_path": config_path, "model": abbr}

    class_name: str | None = None
    if "type" in entry:
        raw_type = entry["type"]
        if isinstance(raw_type, TypeRef):
            class_name = raw_type.name
        elif isinstance(raw_type, str) and raw_type:
            class_name = raw_type.rsplit(".", 1)[-1]
        else:
            raise ConfigError(
                f"'type' must be a model class or its name, got {_type_name(raw_type)}",
                key_path=f"{key_path}.type",
                **where,
            )
    renderer = resolve_renderer(entry, class_name, where=key_path, **where)

    meta: Any = entry.get("meta_template")
    meta_path = f"{key_path}.meta_template"
    if isinstance(meta, str):
        template = _library_template(meta, Path(config_path).parent, meta_path, where)
        meta = template.meta_template
        if renderer is None:
            renderer = check_renderer(template.renderer, meta_path, **where)
    elif meta is not None and not isinstance(meta, (dict, list)):
        raise ConfigError(
            f"'meta_template' must be a dict, a list of messages (API models), a template name "
            f"or None, got {_type_name(meta)}",
            key_path=meta_path,
            **where,
        )
    if isinstance(meta, list) and meta and renderer == "lm":
        raise ConfigError(
            "'meta_template' of an lm model must be a dict, a template name or None (a list "
            "of messages is a meta template of API models), got list",
            key_path=meta_path, reference=("AssertionError", "round is required in meta template"),
            **where,
        )
    if renderer is None:
        raise ConfigError(
            "cannot tell which renderer consumes this model's prompts",
            key_path=key_path,
            hint="give the model a 'type' (its OpenCompass class) or renderer='lm' | 'api' | "
            "'hf_chat'",
            **where,
        )

    source = entry.get("source")
    spec: dict[str, Any] = {
        "name": abbr,
        "source": source if isinstance(source, str) else f"{config_path}:{key_path}",
        "parser": renderer,
        "meta_template": _clean(meta, meta_path, config_path, None, abbr),
        # the int keys are checked once, by building the model (_check_model)
        "max_seq_len": entry.get("max_seq_len"),
        "batch_size": entry.get("batch_size"),
    }
    if class_name is not None:
        spec["type"] = class_name
    if isinstance(entry.get("meta_template"), str) and template.default_system is not None:
        spec["default_system"] = template.default_system  # a built-in template's (D24)
    for key in _MODEL_OPTIONAL_KEYS:
        if key in entry:
            spec[key] = entry[key]
    if "system_role" in entry:
        spec["system_role"] = entry["system_role"]  # checked by building the model below
    entry_class = find_class(class_name)
    request_keys = entry_class.request_keys if entry_class is not None else ()
    for key in _MODEL_PASS_KEYS + request_keys:
        if entry.get(key) is not None:
            spec[key] = _clean(entry[key], f"{key_path}.{key}", config_path, None, abbr)
    if isinstance(entry.get("path"), str):  # the served model's name (--format openai-batch)
        spec["path"] = entry["path"]
    if isinstance(spec.get("date"), (datetime.date, datetime.datetime)):
        spec["date"] = spec["date"].isoformat()  # YAML reads an unquoted 2025-01-31 as a date
    files: list[str] = []
    template_file = getattr(template, "path", None) if isinstance(entry.get("meta_template"), str) \
        else None
    if template_file is not None:
        files.append(str(template_file))
    if spec.get("tokenizer") is None:  # the class's tokenizer_path / path, where it is
        _model_tokenizer({**entry, "type": class_name}, spec, Path(config_path).parent)
    if isinstance(spec.get("tokenizer"), str):
        spec["tokenizer"], tokenizer_files = _tokenizer_source(spec["tokenizer"],
                                                               Path(config_path).parent)
        files += tokenizer_files
    if entry.get("chat_template") is not None:
        spec["chat_template"] = _chat_template_source(
            entry["chat_template"], _model_folders(config_path, origin),
            f"{key_path}.chat_template", where)
        if not _is_template_text(spec["chat_template"]):
            files.append(spec["chat_template"])
    model = ModelConfig(abbr=abbr, config_path=config_path, key_path=key_path, spec=spec,
                        files=tuple(files))
    _check_model(model, key_path, where)
    return dataclasses.replace(model, notes=model_key_notes(
        entry, class_name, config_path, key_path, abbr, _NOTED_PASS_KEYS))


def _empty_abbr(entry: dict[str, Any], config_path: str, key_path: str) -> ConfigError:
    """``abbr=''``: an error in the default mode; OpenCompass loads it, so the error carries
    the model compat mode compiles in its place (``compat_model``), named as OpenCompass names
    a model without ``abbr`` (its own output folder would be the run's folder itself)."""
    err = ConfigError("'abbr' must be a non-empty string, got an empty string",
                      config_path=config_path, key_path=f"{key_path}.abbr",
                      hint="name the model (compat mode loads it as OpenCompass does, named "
                           "after its 'type' and 'path')")
    derived = {k: v for k, v in entry.items() if k != "abbr"}
    try:
        model = normalize_model(derived, config_path, key_path)
        err.compat_model = model  # type: ignore[attr-defined]
    except PromptCompilerError:
        pass  # (without a type and a path there is no name: the error stands)
    return err


# What a tokenizer folder contributes to a count (prompt_compiler.model.tokenize reads these).
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                    "chat_template.jinja", "chat_template.json")


def check_model_tokenizer(model: ModelConfig, tokenizer: str) -> tuple[dict[str, Any],
                                                                       tuple[str, ...]]:
    """``model``'s spec and files with ``tokenizer`` set (``--tokenizer``: relative to the
    working directory), checked by building the model.

    Raises:
        PromptCompilerError: The model does not take that tokenizer (named at the flag).
    """
    value, tokenizer_files = _tokenizer_source(tokenizer, Path.cwd())
    spec = {k: v for k, v in model.spec.items() if k != "tokenizer_missing"}
    spec["tokenizer"] = value
    try:
        _check_model(dataclasses.replace(model, spec=spec), model.key_path,
                     {"config_path": model.config_path, "model": model.abbr})
    except PromptCompilerError as err:
        err.key_path, err.config_path = "--tokenizer", None  # the flag, not the template file
        raise err from None
    return spec, (*model.files, *tokenizer_files)


def _model_tokenizer(entry: Mapping[str, Any], spec: dict[str, Any], config_dir: Path) -> None:
    """A model without ``tokenizer`` whose class loads one from ``tokenizer_path``/``path``
    (:mod:`prompt_compiler.model.hub`): the folder found becomes its ``tokenizer``; a folder
    found nowhere is kept as ``tokenizer_missing`` (``[key, where it was looked for]``) for
    the error of whatever needs it (``--tokenize``)."""
    from ..model.hub import find_tokenizer

    found = find_tokenizer(entry, config_dir=config_dir)
    if found is None:
        return
    if found.folder is not None:
        spec["tokenizer"] = str(found.folder)
    else:
        spec["tokenizer_missing"] = [found.key, found.describe()]


def _tokenizer_source(value: str, config_dir: Path) -> tuple[str, list[str]]:
    """A tokenizer path resolved against the config's folder, then the working directory
    (as ``chat_template``), plus the files it reads for the manifest; a counter name, a
    tiktoken name or a missing path is left as written (the loader reports it)."""
    from ..model.tokenize import existing_path, token_counters

    if value.startswith("tiktoken:") or value in token_counters():
        return value, []
    for base in (config_dir, None):  # beside the config first, then the working directory
        found = existing_path(value, base)
        if found is None:
            continue
        folder = found if found.is_dir() else found.parent
        files = [str(folder / name) for name in _TOKENIZER_FILES
                 if (folder / name).is_file()]
        if found.is_file() and str(found) not in files:
            files.insert(0, str(found))
        return str(found), files
    return value, []


def _is_template_text(value: str) -> bool:
    """Chat-template text (as :meth:`ChatTemplate.load` tells it from a path)."""
    return "{" in value or "\n" in value


def _model_folders(config_path: str, origin: Origin | None) -> list[Path]:
    """Where a model's relative file names resolve: the folder of the file that defines the
    model (a model file an eval config imports), then the eval config's folder."""
    folders = [Path(origin.file).parent] if origin is not None else []
    return [*folders, *([Path(config_path).parent] if Path(config_path).parent not in folders
                        else [])]


def _chat_template_source(value: Any, folders: list[Path], key_path: str,
                          where: dict[str, Any]) -> str:
    """Template text as is; a path resolved against ``folders`` (the model file's, the eval
    config's), then the working directory."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise ConfigError(
            "'chat_template' must be template text or the path of a .jinja file, a "
            f"tokenizer_config.json or a model folder, got {_type_name(value)}",
            key_path=key_path, **where)
    if _is_template_text(value):
        return value
    path = Path(value).expanduser()
    tried = [path] if path.is_absolute() else [*(f / path for f in folders), path]
    for candidate in tried:
        if candidate.exists():
            return str(candidate.resolve())
    looked = ", ".join(dict.fromkeys(str(c.absolute()) for c in tried))
    raise ConfigError(
        f"chat template file {value!r} does not exist (looked for {looked})",
        key_path=key_path, hint="a relative path is read beside the file that sets it",
        **where)


def _check_model(model: ModelConfig, key_path: str, where: dict[str, Any]) -> None:
    """Build the model, so a bad key fails at load time with its key path; the model is kept
    (:func:`~prompt_compiler.model.spec.build_model`) for the compiler, which builds it from
    the same dict (:meth:`ModelConfig.model_dict`)."""
    from ..model.spec import build_model

    try:
        build_model(model.model_dict(), where=key_path)
    except PromptCompilerError as err:
        if err.key_path is None or not err.key_path.startswith(key_path):
            err.key_path = key_path if err.key_path is None else f"{key_path}.{err.key_path}"
        raise err.located(**where) from None


def check_values(value: Any, config_path: str, key_path: str) -> None:
    """Refuse values no prompt can hold (see :mod:`prompt_compiler.safety.values`), naming where.

    Raises:
        ConfigError: a huge integer, nesting over ``MAX_DEPTH`` levels, or a lone surrogate.
    """
    found = find_problem(value)
    if found is not None:
        sub, why = found
        raise ConfigError(why, config_path=config_path, key_path=join_path(key_path, sub))


def _library_template(name: str, config_dir: Path, key_path: str, where: dict[str, Any]) -> Any:
    """Look a meta template up by name (or path) in ``prompt_compiler.model.meta_library``."""
    try:
        from ..model.meta_library import (  # type: ignore[import-not-found,unused-ignore]
            load_model_template,
        )
    except ImportError as exc:
        raise ConfigError(
            f"meta_template {name!r} refers to a template by name, but "
            "prompt_compiler.model.meta_library is not available",
            key_path=key_path,
            **where,
        ) from exc
    looks_like_path = name.endswith((".py", ".yaml", ".yml", ".json")) or "/" in name
    target = name
    try:
        if looks_like_path and not Path(name).is_absolute() and (config_dir / name).exists():
            target = str(config_dir / name)
    except OSError:  # e.g. a name longer than the file system allows: not a file here
        pass
    try:
        return load_model_template(target)
    except PromptCompilerError as err:
        raise err.located(key_path=key_path, **where) from None


def _clean(
    value: Any, key_path: str, config_path: str, dataset: str | None, model: str | None = None
) -> Any:
    """A deep copy (mappings as dicts, tuples as lists), class references as class names."""
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and key.isidentifier():
                sub = f"{key_path}.{key}"
            else:
                sub = f"{key_path}[{key!r}]"
            cleaned = _clean(item, sub, config_path, dataset, model)
            if key == "type" and isinstance(cleaned, str):
                cleaned = cleaned.rsplit(".", 1)[-1]  # 'opencompass.x.FixKRetriever' -> name
            out[key] = cleaned
        return out
    if isinstance(value, (list, tuple)):
        return [
            _clean(item, f"{key_path}[{i}]", config_path, dataset, model)
            for i, item in enumerate(value)
        ]
    if isinstance(value, TypeRef):
        return value.name
    if isinstance(value, Unsupported):
        raise ConfigError(
            f"a value of type {value.type_name!r} is not config data "
            "(expected dicts, lists, strings, numbers, booleans, None or classes)",
            config_path=config_path,
            dataset=dataset,
            model=model,
            key_path=key_path,
        )
    return value


def _require_dict(
    value: Any, what: str, config_path: str, key_path: str, dataset: str | None = None
) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise ConfigError(
            f"expected {what}, got {_type_name(value)}",
            config_path=config_path,
            dataset=dataset,
            key_path=key_path,
        )
    return value


def _type_name(value: Any) -> str:
    if isinstance(value, TypeRef):
        return f"class {value.qualified_name}"
    if isinstance(value, Unsupported):
        return value.type_name
    return type(value).__name__
