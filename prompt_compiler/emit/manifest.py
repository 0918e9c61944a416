"""The manifest (``OUT/manifest.json``): what a compilation read and wrote, reproducibly.

It holds the tool name and version, the mode, every input file with its sha256 and
every output file with its record count and sha256, and nothing that depends on the
machine, the working directory, the time or the Python version, so the same inputs give
the same bytes everywhere.

Input paths are written relative to the *input root*: the deepest folder that holds the
folders of all given paths (``compile-prompts configs/`` -> the folder holding
``configs``, so ``configs/eval_demo.py``; ``compile-prompts a/x.py a/y.py`` -> ``a``, so
``x.py``). A file outside the root is written with ``..`` segments. :func:`input_path`
is the one normalisation; use it for every input that shapes the output. A file of the
OpenCompass configs folder that ``opencompass.configs`` resolved to is written
``opencompass:configs/...`` (:mod:`prompt_compiler.config.oc_configs`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .names import from_disk
from .records import sha256_file

__all__ = ["TOOL", "build_manifest", "input_path", "input_root", "is_ours", "listed_files",
           "manifest_bytes"]

TOOL = "prompt_compiler"
"""The ``tool`` value that marks a folder as this tool's output."""


def input_root(paths: Sequence[str | os.PathLike[str]]) -> Path:
    """The folder input paths are written relative to (see the module docstring)."""
    parents = [os.path.dirname(os.path.realpath(p)) for p in paths] or [os.path.realpath(".")]
    return Path(os.path.commonpath(parents))


def input_path(path: str | os.PathLike[str], root: Path) -> str:
    """``path`` relative to ``root``, with ``/`` separators, the same on every machine.

    A file shipped inside this package (a built-in model template) is written as
    ``prompt_compiler/...`` wherever the package is installed.
    """
    real = os.path.realpath(path)
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if real.startswith(package + os.sep):
        return Path("prompt_compiler", os.path.relpath(real, package)).as_posix()
    from ..config.oc_configs import manifest_name

    named = manifest_name(real)
    if named is not None:  # OpenCompass's configs, wherever they lie on this machine
        return named
    try:
        rel = os.path.relpath(real, root)
    except ValueError:  # another drive (Windows): no relative path exists
        return from_disk(Path(real).as_posix())
    return from_disk(Path(rel).as_posix())


def build_manifest(*, version: str, mode: str, inputs: Iterable[str | os.PathLike[str]],
                   root: Path, outputs: Mapping[str, Mapping[str, Any]],
                   arguments: Mapping[str, Any] | None = None,
                   models: Mapping[str, Mapping[str, Any]] | None = None,
                   environment: Mapping[str, str | None] | None = None,
                   digests: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The manifest as a dict; inputs and outputs sorted by path, each input hashed.

    ``arguments``: the CLI arguments that shape the output (``--only``, ``--limit``, ...),
    written as given after the mode, when there are any. ``models``: per model abbr, the
    chat-template settings no input file shows (the ``date`` its template prints, its
    ``chat_template_kwargs`` and their sha256), when any model has some. ``environment``:
    the environment variables the Python configs read, each with the sha256 of its value
    (``None``: unset), when they read any. ``digests``: inputs already hashed elsewhere (by
    a worker that read them), by real path. An input on object storage is listed by its
    ``s3://`` URI.
    """
    from ..storage import object_digests, object_uri

    inputs = list(inputs)
    files = {input_path(p, root): Path(p) for p in inputs
             if object_uri(p) is None and Path(p).is_file()}
    known = digests or {}
    objects = {uri: known.get(uri) for p in inputs if (uri := object_uri(p)) is not None}
    objects.update(object_digests(uri for uri, digest in objects.items() if digest is None))
    head: dict[str, Any] = {"tool": TOOL, "version": version, "mode": mode}
    if arguments:
        head["arguments"] = dict(arguments)
    if models:
        head["models"] = {name: dict(models[name]) for name in sorted(models)}
    if environment:
        head["environment"] = {name: environment[name] for name in sorted(environment)}
    return {
        **head,
        "inputs": [{"path": name, "sha256": objects[name] if name in objects else
                    known.get(os.path.realpath(files[name])) or sha256_file(files[name])}
                   for name in sorted([*files, *objects])],
        "outputs": {name: dict(outputs[name]) for name in sorted(outputs)},
    }


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    """The manifest file's exact bytes."""
    return (json.dumps(manifest, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def is_ours(manifest: Any) -> bool:
    """Whether a parsed ``manifest.json`` was written by this tool."""
    return (isinstance(manifest, dict) and manifest.get("tool") == TOOL
            and isinstance(manifest.get("outputs"), dict))


def listed_files(manifest: Mapping[str, Any]) -> list[str]:
    """Every file a manifest (of this tool) names in OUT, the manifest itself left out: an
    output entry's key, or, for a sharded pair (an entry with ``shards``), each shard's
    ``name`` (:mod:`prompt_compiler.emit.shards`). Readers, the replace check and ``gc``
    trust these names and no others."""
    files: list[str] = []
    for key, entry in manifest["outputs"].items():
        shards = entry.get("shards") if isinstance(entry, Mapping) else None
        if isinstance(shards, list):
            files += [str(s["name"]) for s in shards
                      if isinstance(s, Mapping) and isinstance(s.get("name"), str)]
        else:
            files.append(str(key))
    return files
