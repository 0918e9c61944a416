"""Rows of a dataset whose ``type`` is an OpenCompass loader class (``MMLUDataset`` ...).

The rows are the ones the class's ``load(**kwargs)`` returns, read from the path OpenCompass's
``get_data_path`` resolves (:mod:`.paths`): by a native reader when the class has one
(:mod:`.registry`; the families :mod:`.exams`, :mod:`.lines`, :mod:`.jsonsets`), else by
OpenCompass's own loader in another interpreter (:mod:`.bridge`). The data layer asks here
after ``--data-dir``, which keeps precedence. ``reader_cfg`` is applied afterwards, as for any
rows.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ...config.records import CUSTOM_KEY, DERIVED_ABBR_KEY
from ...errors import ConfigError, DataError, PromptCompilerError
from ..rows import LoadedRows
from .checked import CheckedRows
from .paths import resolve
from .registry import NativeReader, NotNative

__all__ = ["NOT_LOAD_KEYS", "load_kwargs", "loader_files", "loader_rows", "native_reader"]

NOT_LOAD_KEYS = frozenset({
    "type", "abbr", "reader_cfg", "infer_cfg", "eval_cfg", "k", "n",
    # this project's own dataset keys (docs/chat_templates.md, fewshot)
    "fewshot", "assistant_prefix", "tools", "documents",
    # keys the config loader adds (an abbr derived from the path, a path-only dataset)
    DERIVED_ABBR_KEY, CUSTOM_KEY,
})
"""Dataset keys that OpenCompass does not pass to ``load`` (``BaseDataset`` takes
``abbr``, ``reader_cfg``, ``k``, ``n``; the runner drops ``infer_cfg`` and ``eval_cfg``)."""


@cache
def native_readers() -> dict[str, NativeReader]:
    """Every native reader by class name (each family module lists its own)."""
    from . import babilong, benches, choices, code, exams, hf, jsonsets, lines, needles, qa

    found: dict[str, NativeReader] = {}
    for family in (exams, lines, code, jsonsets, choices, qa, hf, benches, needles, babilong):
        readers: Sequence[NativeReader] = family.READERS
        for reader in readers:
            if reader.name in found:
                raise RuntimeError(f"two native readers for {reader.name}")
            found[reader.name] = reader
    return found


def native_reader(type_name: str) -> NativeReader | None:
    """The native reader of an OpenCompass loader class, if it has one."""
    return native_readers().get(type_name)


def load_kwargs(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments OpenCompass passes to the class's ``load``."""
    return {k: v for k, v in spec.items() if k not in NOT_LOAD_KEYS}


def _root(reader: NativeReader, arguments: Mapping[str, Any], elsewhere: str = "",
          hint: str = "") -> str:
    path = arguments.get(reader.path_key)
    if not isinstance(path, str):
        raise ConfigError(f"{reader.name}: {reader.path_key!r} must be a dataset id or a path, "
                          f"got {type(path).__name__}")
    if not reader.data_path:
        if not os.path.exists(path):
            raise DataError(f"{reader.name}: no data at {os.path.abspath(path)} (its loader "
                            f"reads {reader.path_key}={path!r} as given, from the working "
                            f"folder){elsewhere}", hint=hint.removeprefix("; ") or None)
        return path
    local_mode = reader.local_mode
    if local_mode is None:
        local_mode = bool(arguments.get("local_mode", False))
    return resolve(path, local_mode=local_mode, elsewhere=elsewhere, hint=hint).text


def loader_rows(type_name: str, spec: Mapping[str, Any], opencompass_python: Any = None, *,
                elsewhere: str = "", hint: str = "") -> LoadedRows:
    """The rows of a dataset of OpenCompass loader class ``type_name`` (``elsewhere``,
    ``hint``: added to a missing-data error, see :func:`.paths.resolve`;
    ``opencompass_python``: the interpreter of :mod:`.bridge`, for a class with no native
    reader).

    Raises:
        DataError: The data is not where OpenCompass would read it (the message names the
            path), a file is malformed (file and line), or the class has no native reader
            and OpenCompass cannot be run.
        ConfigError: The config's arguments are ones ``load`` would reject.
    """
    kwargs = load_kwargs(spec)
    reader = native_reader(type_name)
    try:
        if reader is None:
            raise NotNative(f"{type_name} has no native reader")
        arguments = reader.arguments(kwargs)
        root = _root(reader, arguments, elsewhere, hint)
        rows = reader.load(root, arguments)
    except NotNative:
        from .bridge import load_with_opencompass

        return load_with_opencompass(type_name, kwargs, opencompass_python)
    where = f"{type_name} rows from {root}"
    if isinstance(rows, dict):
        return LoadedRows(None, {name: CheckedRows(split, f"{where}, split {name!r}",
                                                   check=not reader.text_only)
                                 for name, split in rows.items()}, root)
    return LoadedRows(CheckedRows(rows, where, check=not reader.text_only), None, root)


def loader_files(type_name: str, spec: Mapping[str, Any],
                 opencompass_python: Any = None) -> list[Path]:
    """The files a native reader reads for this dataset (for the manifest), or those
    OpenCompass's own loader read (:mod:`.bridge`'s cache); none when its data is not found."""
    reader = native_reader(type_name)
    try:
        if reader is None:
            raise NotNative(f"{type_name} has no native reader")
        arguments = reader.arguments(load_kwargs(spec))
        files = reader.data_files(_root(reader, arguments), arguments)
    except NotNative:
        from .bridge import files_read

        return files_read(type_name, load_kwargs(spec), opencompass_python)
    except PromptCompilerError:
        return []
    return [f for f in files if f.is_file()]
