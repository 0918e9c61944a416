"""OpenCompass's ChatML datasets: ``chatml_datasets = [dict(abbr=..., path=..., evaluator=...)]``.

OpenCompass 0.5.4 (``utils/run.py`` ``consturct_chatml_datasets``, called by ``run.py`` when
an eval config sets ``chatml_datasets``) turns each entry into a dataset of the loader
``ChatMLDataset``: its ``reader_cfg`` and ``infer_cfg`` are copies of the ones in the configs
folder's ``datasets/chatobj_custom/chatobj_custom_gen.py`` (``test_range`` and ``n`` taken
from the entry), and the datasets are appended to the config's ``datasets``. Those two
settings are read from that file, here as there; the rows are read by
:func:`prompt_compiler.data.sources.chatml_rows`.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .oc_configs import ENV_VAR

__all__ = ["CHATML_KEY", "chatml_entries"]

CHATML_KEY = "chatml_datasets"
_SOURCE = ("configs", "datasets", "chatobj_custom", "chatobj_custom_gen.py")


def chatml_entries(top: dict[str, Any], display: str, root: Path | None) -> list[Any]:
    """The dataset dicts OpenCompass builds from the config's ``chatml_datasets`` ([] if none).

    Raises:
        ConfigError: ``chatml_datasets`` is not a list of dicts with ``abbr``, ``path`` and
            ``evaluator`` (OpenCompass asserts these), or the configs folder is missing.
    """
    value = top.get(CHATML_KEY)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"expected a list of dataset dicts, got {type(value).__name__}",
                          config_path=display, key_path=CHATML_KEY)
    if not value:
        return []
    base = _chatobj_settings(display, root)
    out = []
    for i, entry in enumerate(value):
        where = f"{CHATML_KEY}[{i}]"
        missing = [k for k in ("abbr", "path", "evaluator") if not isinstance(entry, dict)
                   or k not in entry]
        if missing:
            raise ConfigError(
                f"a ChatML dataset needs {', '.join(repr(k) for k in missing)} (OpenCompass "
                "asserts 'abbr', 'path' and 'evaluator')", config_path=display,
                key_path=where)
        dataset: dict[str, Any] = {"abbr": entry["abbr"], "path": entry["path"]}
        if "n" in entry:
            dataset["n"] = entry["n"]
        reader = copy.deepcopy(base["chatobj_custom_reader_cfg"])
        if "test_range" in entry:
            reader["test_range"] = entry["test_range"]
        dataset["reader_cfg"] = reader
        dataset["infer_cfg"] = copy.deepcopy(base["chatobj_custom_infer_cfg"])
        dataset.update(copy.deepcopy(base["chatobj_custom_datasets"]))  # the loader type
        out.append(dataset)
    return out


def _chatobj_settings(display: str, root: Path | None) -> dict[str, Any]:
    from .python import load_python_config

    file = root.joinpath(*_SOURCE) if root is not None else None
    if file is None or not file.is_file():
        raise ConfigError(
            "chatml_datasets are built from OpenCompass's "
            "configs/datasets/chatobj_custom/chatobj_custom_gen.py"
            + (", which the configs folder lacks" if root is not None else
               ", and no OpenCompass configs folder was found"),
            config_path=display, key_path=CHATML_KEY,
            hint=f"give --opencompass-configs DIR or set {ENV_VAR}=DIR (OpenCompass's configs/)")
    settings = load_python_config(file, str(file), root)
    for name in ("chatobj_custom_reader_cfg", "chatobj_custom_infer_cfg",
                 "chatobj_custom_datasets"):
        if not isinstance(settings.get(name), dict):
            raise ConfigError(f"{file} has no dict {name!r} (OpenCompass 0.5.4's has)",
                              config_path=display, key_path=CHATML_KEY)
    return settings
