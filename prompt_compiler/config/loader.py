"""Load config files (Python, YAML, JSON) and folders of them into :class:`SuiteConfig`.

* ``.py``: an OpenCompass-style config read with mmengine (see :mod:`.python`).
* ``.yaml`` / ``.yml``: the same shape as plain YAML (``yaml.safe_load``; Python tags are
  rejected), types written as class-name strings.
* ``.json``: either the same shape, or one conformance case (a *compile job*
  ``{"id", "dataset", "model", "options"}``) = one dataset and one model. Dicts written
  ``{"__items__": [[key, value], ...]}`` are decoded into dicts with non-string keys.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError, LimitError
from ..safety.values import describe_load_error
from ..safety.yaml_loader import load_yaml
from .chatml import CHATML_KEY, chatml_entries
from .normalize import check_values, normalize_dataset, normalize_entries, normalize_model
from .oc_configs import configs_folder, package_root
from .origins import Origin, defined_at
from .python import read_python_config
from .records import DatasetConfig, ModelConfig, SuiteConfig

__all__ = ["CONFIG_SUFFIXES", "load_config", "load_configs", "resolve_root"]

CONFIG_SUFFIXES = (".py", ".yaml", ".yml", ".json")
_JOB_KEYS = frozenset({"dataset", "model"})

PathLike = str | os.PathLike[str]


def load_config(path: PathLike, *, opencompass_root: PathLike | None = None,
                opencompass_configs: PathLike | None = None,
                defer_model_errors: bool = False) -> SuiteConfig:
    """Load one config file.

    Args:
        path: A ``.py``, ``.yaml``, ``.yml`` or ``.json`` file.
        opencompass_root: The folder standing in for the ``opencompass`` package (the
            parent of its ``configs/``) when a Python config imports
            ``opencompass.configs...`` in ``read_base()``.
        opencompass_configs: The folder ``opencompass.configs`` stands for (the one holding
            ``datasets/`` and ``models/``). Without either, see :mod:`.oc_configs` for where
            it is looked for.
        defer_model_errors: Keep an invalid model that has an abbr, with its error in
            ``ModelConfig.error`` (raised when it is paired), instead of raising now.

    Raises:
        ConfigError: The file is missing, malformed, or defines no datasets and no models.
        RegistryError: A renderer or model class is unknown.
    """
    file = Path(path)
    display = str(path)
    if file.is_dir():
        raise ConfigError("is a directory; use load_configs() for folders", config_path=display)
    if not file.is_file():
        kind = _not_a_file(file)
        raise ConfigError(f"{kind}, not a regular file; a config is read from a regular file"
                          if kind else "no such config file", config_path=display)
    suite = _load_file(file, display, resolve_root(opencompass_root, opencompass_configs),
                       named=True, defer=defer_model_errors)
    assert suite is not None  # named files never come back empty
    return suite


def _not_a_file(file: Path) -> str:
    """What ``file`` is when it exists but is not a regular file ("" when it is missing)."""
    import stat

    try:
        mode = file.stat().st_mode
    except OSError:
        return ""
    for test, kind in ((stat.S_ISFIFO, "is a named pipe"), (stat.S_ISCHR, "is a character device"),
                       (stat.S_ISBLK, "is a block device"), (stat.S_ISSOCK, "is a socket")):
        if test(mode):
            return kind
    return "is not a regular file"


def load_configs(
    paths: Sequence[PathLike], *, opencompass_root: PathLike | None = None,
    opencompass_configs: PathLike | None = None, defer_model_errors: bool = False,
) -> tuple[SuiteConfig, ...]:
    """Load config files and folders, in the order given.

    A folder is walked recursively in sorted order for ``*.py``, ``*.yaml``, ``*.yml`` and
    ``*.json`` (hidden entries and ``__pycache__`` skipped); there, files that define no
    datasets and no models (helpers, ``__init__.py``, data files) are skipped silently. A
    file named directly must define something.

    Raises:
        ConfigError: As :func:`load_config`, for the first failing file.
    """
    root = resolve_root(opencompass_root, opencompass_configs)
    suites: list[SuiteConfig] = []
    for path in paths:
        folder = Path(path)
        if not folder.is_dir():
            suites.append(load_config(path, opencompass_root=root,
                                      defer_model_errors=defer_model_errors))
            continue
        for file in _walk(folder):
            display = os.path.join(str(path), file.relative_to(folder).as_posix())
            suite = _load_file(file, display, root, named=False, defer=defer_model_errors)
            if suite is not None:
                suites.append(suite)
    return tuple(suites)


def resolve_root(value: PathLike | None, configs: PathLike | None = None) -> Path | None:
    """The folder ``opencompass`` stands for while Python configs load: the package root
    given, else the one of the configs folder found (``configs``, else the variable, else an
    installed opencompass's); None when there is none."""
    if value is not None:
        return Path(value)
    folder = configs_folder(configs)
    if folder is None:
        return None
    return package_root(folder)


def _walk(folder: Path) -> list[Path]:
    found = []
    for file in folder.rglob("*"):
        rel = file.relative_to(folder)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        if file.suffix in CONFIG_SUFFIXES and file.is_file():
            found.append(file)
    return sorted(found, key=lambda f: f.relative_to(folder).as_posix())


def _load_file(file: Path, display: str, root: Path | None, *, named: bool,
               defer: bool = False) -> SuiteConfig | None:
    suffix = file.suffix
    environment: tuple[tuple[str, str | None], ...] = ()
    origins: dict[str, Origin] = {}
    if suffix == ".py":
        loaded = read_python_config(file, display, root)
        top: Any = loaded.settings
        environment = loaded.environment
        origins = defined_at(loaded.bases, file)
    elif suffix in (".yaml", ".yml"):
        top = _read_yaml(file, display)
    elif suffix == ".json":
        top = _read_json(file, display)
    else:
        raise ConfigError(
            f"unsupported config type {suffix or '(no suffix)'!r}; "
            f"expected one of {', '.join(CONFIG_SUFFIXES)}",
            config_path=display,
        )
    if not isinstance(top, dict):
        if not named:
            return None  # e.g. a JSON list of rows lying in a config folder
        raise ConfigError(
            f"expected a mapping at the top level, got {type(top).__name__}", config_path=display
        )
    if suffix == ".json" and _JOB_KEYS <= top.keys():
        return _compile_job(file, display, top)

    chatml = ((lambda: chatml_entries(top, display, root))  # appended, as run.py does
              if suffix == ".py" and top.get(CHATML_KEY) is not None else None)
    datasets, models, combinations = normalize_entries(top, display, defer=defer,
                                                       origins=origins, chatml=chatml)
    if not datasets and not models and not combinations:
        if not named:
            return None
        raise ConfigError(
            "defines no datasets and no models",
            config_path=display,
            hint="define a top-level `datasets` / `models` list, or `*_datasets` / `*_models` "
            "variables",
        )
    if suffix == ".py" and root is not None:  # where each dataset was defined
        datasets = _rooted(datasets, root)
        combinations = tuple((_rooted(ds, root), ms) for ds, ms in combinations)
    if combinations:  # `datasets`/`models` may be left out: the entries' own then
        datasets = datasets or _distinct(d for ds, _ in combinations for d in ds)
        models = models or _distinct(m for _, ms in combinations for m in ms)
    return SuiteConfig(path=file, datasets=datasets, models=models,
                       opencompass_root=root if suffix == ".py" else None,
                       combinations=combinations,
                       environment=environment)


def _rooted(datasets: tuple[DatasetConfig, ...], root: Path) -> tuple[DatasetConfig, ...]:
    return tuple(dataclasses.replace(d, opencompass_root=root) for d in datasets)


def _distinct(items: Any) -> tuple[Any, ...]:
    out: list[Any] = []
    for item in items:
        if item not in out:
            out.append(item)
    return tuple(out)


def _compile_job(file: Path, display: str, job: dict[str, Any]) -> SuiteConfig:
    """One conformance case file: one dataset, one model, options."""
    dataset: DatasetConfig = normalize_dataset(
        job["dataset"], display, "dataset", abbr_optional=True
    )
    model: ModelConfig = normalize_model(job["model"], display, "model")
    options = job.get("options") or {}
    check_values(options, display, "options")
    if not isinstance(options, dict):
        raise ConfigError(
            f"expected a dict, got {type(options).__name__}",
            config_path=display,
            key_path="options",
        )
    job_id = job.get("id")
    return SuiteConfig(
        path=file,
        datasets=(dataset,),
        models=(model,),
        options=options,
        job_id=job_id if isinstance(job_id, str) else None,
    )


def _read_text(file: Path, display: str) -> str:
    try:
        return file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the config: {exc}", config_path=display) from exc


def _read_yaml(file: Path, display: str) -> Any:
    import yaml  # type: ignore[import-untyped,unused-ignore]  # only YAML configs need it

    text = _read_text(file, display)
    try:
        return load_yaml(text)
    except LimitError as exc:
        raise exc.located(config_path=display) from None
    except yaml.constructor.ConstructorError as exc:
        line = f"line {exc.problem_mark.line + 1}: " if exc.problem_mark else ""
        if "python/" in str(exc.problem):
            raise ConfigError(
                f"{line}YAML tags that construct Python objects are not allowed ({exc.problem})",
                config_path=display,
                hint="write classes as names, e.g. `type: PromptTemplate`",
            ) from None
        raise ConfigError(f"{line}invalid YAML: {exc.problem}", config_path=display) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = exc.problem or exc.context or "malformed document"
        raise ConfigError(f"{where}invalid YAML: {problem}", config_path=display) from None
    except yaml.YAMLError as exc:  # e.g. a reader error; its text spans lines
        raise ConfigError(f"invalid YAML: {' '.join(str(exc).split())}",
                          config_path=display) from None
    except (ValueError, RecursionError) as exc:  # a value PyYAML cannot build
        why = describe_load_error(exc) or f"invalid YAML value: {exc}"
        raise ConfigError(why, config_path=display) from None


def _read_json(file: Path, display: str) -> Any:
    text = _read_text(file, display)
    try:
        return json.loads(text, object_pairs_hook=_decode_items)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}", config_path=display
        ) from None
    except _ItemsError as exc:
        raise ConfigError(f"invalid JSON: {exc}", config_path=display) from None
    except (ValueError, RecursionError) as exc:  # a huge integer, very deep nesting
        why = describe_load_error(exc) or f"invalid JSON value: {exc}"
        raise ConfigError(why, config_path=display) from None


class _ItemsError(ValueError):
    """An ``{"__items__": ...}`` dict that is not a list of hashable ``[key, value]`` pairs."""


def _decode_items(pairs: list[tuple[str, Any]]) -> dict[Any, Any]:
    """JSON object hook: ``{"__items__": [[0, "a"], [1, "b"]]}`` -> ``{0: "a", 1: "b"}``."""
    if len(pairs) != 1 or pairs[0][0] != "__items__":
        return dict(pairs)
    items = pairs[0][1]
    if not isinstance(items, list) or not all(
        isinstance(p, list) and len(p) == 2 and not isinstance(p[0], (list, dict)) for p in items
    ):
        raise _ItemsError('"__items__" must be a list of [key, value] pairs with scalar keys')
    return {key: value for key, value in items}
