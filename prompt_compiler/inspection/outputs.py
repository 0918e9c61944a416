"""Reading compiled records back: an output folder or one record file, as the CLI wrote them.

The diff and the HTML report read exactly the JSON lines the compile command wrote
(``OUT/<model>/<dataset>.jsonl``, or with ``--shard-rows`` the shards the manifest lists for
``OUT/<model>/<dataset>/``, in order; on object storage, ``s3://bucket/prefix``, the shards its
manifest lists under its run's folder), never a second rendering of the configs. An item is
identified within one file by its key ``(mode, index, label, turn)``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError

__all__ = ["RecordFile", "item_key", "output_manifest", "read_output", "read_records",
           "record_files", "shown"]

Output = Path | str
"""An output: a folder or record file, or an ``s3://`` URI (also as a ``Path``, which folds
its slashes: :func:`prompt_compiler.storage.object_uri` reads both)."""


def shown(out: Output) -> str:
    """``out`` as the user wrote it (an ``s3://`` URI with its two slashes)."""
    from ..storage import object_uri

    return object_uri(out) or str(out)


@dataclass(frozen=True, slots=True)
class RecordFile:
    """One ``<model>/<dataset>.jsonl`` of an output (or a record file given on its own), or
    the shards of one pair, read as one file."""

    rel: str
    """The path within its output folder (``model/dataset.jsonl``, also for a sharded pair),
    or a lone file's name."""
    path: Path | str
    """The file (a sharded pair's first shard, or its folder when it has none); an ``s3://``
    URI for an output on object storage."""
    parts: tuple[Path | str, ...] | None = None
    """A sharded pair's shards, in order (none for a pair without records; None: ``path`` is
    the whole file); ``s3://`` URIs for an output on object storage."""

    def records(self) -> Iterator[dict[str, Any]]:
        """The records, shard after shard (:func:`read_records`)."""
        for part in (self.path,) if self.parts is None else self.parts:
            if isinstance(part, str):
                from ..emit.objstore import object_lines

                for n, line in enumerate(object_lines(part), 1):
                    if line.strip():
                        yield _record(line, n, part)
            else:
                yield from read_records(part)


def record_files(root: Output) -> list[RecordFile]:
    """The record files of an output folder (``*/*.jsonl``), or ``root`` itself if a file;
    of an output on object storage, the shards its manifest lists.

    Raises:
        DataError: ``root`` is a folder that is no output of compile-prompts (no
            ``manifest.json`` written by it, and no ``<model>/<dataset>.jsonl``), a prefix
            with no manifest of compile-prompts, or an output of engine files.
    """
    from ..storage import join, object_uri

    uri = object_uri(root)
    if uri is not None:
        manifest = output_manifest(uri)
        if manifest is None:
            raise DataError("not an output of compile-prompts (it has no manifest.json of "
                            "compile-prompts)", config_path=uri,
                            hint="give the s3:// prefix compile-prompts -o wrote")
        _refuse_engine_files(manifest, uri)
        base = join(uri, str(manifest.get("root") or ""))
        return _sharded(manifest, lambda name: join(base, name), lambda key: join(uri, key))
    root = Path(root)
    if root.is_file():
        return [RecordFile(root.name, root)]
    manifest = output_manifest(root)
    if manifest is not None:
        _refuse_engine_files(manifest, str(root))
    found = [
        RecordFile(p.relative_to(root).as_posix(), p)
        for p in sorted(root.glob("*/*.jsonl"))
        if p.is_file()
    ]
    if manifest is not None:
        from ..emit.names import on_disk

        found += _sharded(manifest, lambda name: root / on_disk(name), on_disk)
    found = sorted(found, key=lambda f: f.rel)
    if not found and manifest is None:
        raise DataError("not an output folder of compile-prompts (it has no manifest.json "
                        "and no <model>/<dataset>.jsonl record files)", config_path=str(root),
                        hint="give the folder compile-prompts -o wrote, or a record file")
    return found


def read_output(out: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Every record of an output folder of compile-prompts (sharded or not), or of an output
    on object storage (``s3://bucket/prefix``), pair after pair in name order, a sharded
    pair's shards in order; only the shards its manifest lists.

    Raises:
        DataError: ``out`` is no output of compile-prompts, holds engine files
            (``--format``), or a record file cannot be read.
    """
    for f in record_files(out if isinstance(out, str) else Path(out)):
        yield from f.records()


def output_manifest(out: Output) -> dict[str, Any] | None:
    """The manifest of an output folder or ``s3://`` output, if compile-prompts wrote it
    (else None)."""
    from ..emit.manifest import is_ours
    from ..storage import object_uri

    uri = object_uri(out)
    if uri is not None:
        from ..emit.objstore import read_manifest

        return read_manifest(uri)
    try:
        manifest = json.loads((Path(out) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if is_ours(manifest) else None


def _refuse_engine_files(manifest: dict[str, Any], where: str) -> None:
    """Raise if the manifest lists engine files (``--format``), which hold no records."""
    for entry in manifest["outputs"].values():
        if isinstance(entry, dict) and isinstance(entry.get("format"), str):
            raise DataError(f"this output holds engine files (--format {entry['format']}), "
                            "not records", config_path=where,
                            hint="compile again with --format records (the default) to diff "
                                 "or view it")


def _sharded(manifest: dict[str, Any], locate: Callable[[str], Any],
             at: Callable[[str], Any]) -> list[RecordFile]:
    """The sharded pairs a manifest lists, each shard found by ``locate(name)`` (no other
    shard is read); a pair without shards is at ``at(key)``."""
    out = []
    for key, entry in sorted(manifest["outputs"].items()):
        shards = entry.get("shards") if isinstance(entry, dict) else None
        if not isinstance(shards, list):
            continue
        parts = tuple(locate(str(s["name"])) for s in shards)
        out.append(RecordFile(f"{key}.jsonl", parts[0] if parts else at(key), parts))
    return out


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of one JSONL file; a bad line is a :class:`DataError` naming file and line."""
    try:
        fh = path.open(encoding="utf-8")
    except OSError as err:
        raise DataError(
            f"cannot read the record file: {err.strerror}", config_path=str(path)
        ) from None
    with fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            yield _record(line, n, str(path))


def _record(line: str | bytes, n: int, where: str) -> dict[str, Any]:
    """One line of a record file as a record; else a DataError naming the file and line."""
    try:
        rec = json.loads(line)
    except ValueError as err:
        raise DataError(f"line {n} is not JSON ({err})", config_path=where) from None
    if not isinstance(rec, dict) or "prompt" not in rec or "index" not in rec:
        raise DataError(
            f"line {n} is not a compiled record (expected an object with 'index' and 'prompt')",
            config_path=where,
        )
    return rec


def item_key(rec: dict[str, Any]) -> tuple[str, Any, str, Any]:
    """``(mode, index, label, turn)``; the label as JSON so that ``1`` and ``"1"`` stay apart."""
    return (
        str(rec.get("mode", "")),
        rec.get("index"),
        json.dumps(rec.get("label"), ensure_ascii=False, sort_keys=True),
        rec.get("turn"),
    )
