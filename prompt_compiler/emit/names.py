"""File names inside the output folder, made from dataset and model abbrs.

An abbr is user data: it may hold ``/``, ``\\``, ``..``, control characters or be
thousands of bytes long. :func:`file_name` maps any abbr to one safe path component
(never ``.``/``..``, no separator, no control character, at most 255 bytes), always the
same one; :func:`check_unique` rejects two abbrs that land on the same file, also on
case-insensitive or Unicode-normalising file systems (macOS, Windows).
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from collections.abc import Mapping

from ..errors import ConfigError

__all__ = ["MANIFEST", "NAME_MAX", "check_unique", "file_name", "from_disk", "on_disk",
           "output_name"]

NAME_MAX = 255
"""Bytes in one path component on the common file systems (ext4, APFS, NTFS in UTF-16 units)."""

MANIFEST = "manifest.json"
"""The manifest's name in OUT; no output file may take it."""

_KEEP = frozenset("-_.+")


def file_name(abbr: str, suffix: str = "") -> str:
    """``abbr`` as one safe path component, ``suffix`` appended (e.g. ``.jsonl``).

    Characters other than letters, digits and ``-_.+`` become ``_``; a leading ``.``
    becomes ``_`` (so never ``.``, ``..`` or a hidden file); an empty abbr is ``_``.
    A name longer than 255 UTF-8 bytes is cut at a character boundary and ends with
    ``-`` and 16 hex digits of the abbr's sha256, so long abbrs stay distinct.
    """
    name = "".join(c if (c.isalnum() and c.isprintable()) or c in _KEEP else "_" for c in abbr)
    if name.startswith("."):
        name = "_" + name[1:]
    name = name or "_"
    limit = NAME_MAX - len(suffix.encode("utf-8"))
    if len(name.encode("utf-8")) > limit:
        digest = hashlib.sha256(abbr.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        head = name.encode("utf-8")[: limit - 17].decode("utf-8", "ignore")
        name = f"{head}-{digest}"
    return name + suffix


def output_name(model: str, dataset: str) -> str:
    """The record file of one dataset x model, relative to OUT: ``<model>/<dataset>.jsonl``."""
    return f"{file_name(model)}/{file_name(dataset, '.jsonl')}"


def on_disk(rel: str) -> str:
    """``rel`` (a name in OUT, as the manifest lists it) as the ``str`` this platform's file
    calls take for the file named by its UTF-8 bytes: output file names are UTF-8 on disk
    whatever the locale (under ``LC_ALL=C`` Python's file-system encoding is ASCII)."""
    return os.fsdecode(rel.encode("utf-8", "surrogateescape"))


def from_disk(name: str) -> str:
    """The inverse of :func:`on_disk`: a name read from the disk as the manifest lists it."""
    return os.fsencode(name).decode("utf-8", "surrogateescape")


def _fold(name: str) -> str:
    # How a case-insensitive, normalising file system compares names.
    return unicodedata.normalize("NFC", name).casefold()


def check_unique(models: Mapping[str, str | None], datasets: Mapping[str, str | None]) -> None:
    """Raise if two abbrs share an output folder (models) or file (datasets).

    Both map abbr -> the config file that defines it (named in the error).
    """
    for kind, abbrs, suffix in (("model", models, ""), ("dataset", datasets, ".jsonl")):
        seen: dict[str, str] = {}
        for abbr, where in abbrs.items():
            name = file_name(abbr, suffix)
            if kind == "model" and _fold(name) == _fold(MANIFEST):
                raise ConfigError(f"model abbr {abbr!r} would be the output folder {name!r}, "
                                  "the manifest's own name", config_path=where,
                                  hint="give the model another abbr")
            other = seen.setdefault(_fold(name), abbr)
            if other != abbr:
                what = "folder" if kind == "model" else "file"
                raise ConfigError(f"{kind} abbrs {other!r} and {abbr!r} map to the same output "
                                  f"{what} {name!r}", config_path=where,
                                  hint="give one of them a different abbr")
