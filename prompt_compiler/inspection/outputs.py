"""Reading compiled records back: an output folder or one record file, as the CLI wrote them.

The diff and the HTML report read exactly the JSON lines the compile command wrote
(``OUT/<model>/<dataset>.jsonl``, or with ``--shard-rows`` the shards the manifest lists for
``OUT/<model>/<dataset>/``, in order), never a second rendering of the configs. An item is
identified within one file by its key ``(mode, index, label, turn)``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError

__all__ = ["RecordFile", "item_key", "read_output", "read_records", "record_files"]


@dataclass(frozen=True, slots=True)
class RecordFile:
    """One ``<model>/<dataset>.jsonl`` of an output (or a record file given on its own), or
    the shards of one pair, read as one file."""

    rel: str
    """The path within its output folder (``model/dataset.jsonl``, also for a sharded pair),
    or a lone file's name."""
    path: Path
    """The file (a sharded pair's first shard, or its folder when it has none)."""
    parts: tuple[Path, ...] = ()
    """A sharded pair's shards, in order (empty: ``path`` is the whole file)."""

    def records(self) -> Iterator[dict[str, Any]]:
        """The records, shard after shard (:func:`read_records`)."""
        for part in self.parts or (self.path,):
            yield from read_records(part)


def record_files(root: Path) -> list[RecordFile]:
    """The record files of an output folder (``*/*.jsonl``), or ``root`` itself if a file.

    Raises:
        DataError: ``root`` is a folder that is no output of compile-prompts (no
            ``manifest.json`` written by it, and no ``<model>/<dataset>.jsonl``).
    """
    if root.is_file():
        return [RecordFile(root.name, root)]
    fmt = _engine_format(root)
    if fmt is not None:
        raise DataError(f"this output holds engine files (--format {fmt}), not records",
                        config_path=str(root),
                        hint="compile again with --format records (the default) to diff or "
                             "view it")
    found = [
        RecordFile(p.relative_to(root).as_posix(), p)
        for p in sorted(root.glob("*/*.jsonl"))
        if p.is_file()
    ]
    found = sorted(found + _sharded(root), key=lambda f: f.rel)
    if not found and not _has_our_manifest(root):
        raise DataError("not an output folder of compile-prompts (it has no manifest.json "
                        "and no <model>/<dataset>.jsonl record files)", config_path=str(root),
                        hint="give the folder compile-prompts -o wrote, or a record file")
    return found


def read_output(out: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Every record of an output folder of compile-prompts (sharded or not), pair after pair
    in name order, a sharded pair's shards in order; only the shards its manifest lists.

    Raises:
        DataError: ``out`` is no output folder of compile-prompts, holds engine files
            (``--format``), or a record file cannot be read.
    """
    from ..storage import object_uri

    uri = object_uri(out)
    if uri is not None:  # an output on object storage: the shards its manifest lists
        from ..emit.objstore import read_shards

        for name, lines in read_shards(uri):
            for n, line in enumerate(lines, 1):
                if line.strip():
                    yield _record(line, n, f"{uri}/{name}")
        return
    for f in record_files(Path(out)):
        yield from f.records()


def _engine_format(root: Path) -> str | None:
    """The ``--format`` of an output folder whose manifest lists engine files, else None."""
    from ..emit.manifest import is_ours

    try:
        manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not is_ours(manifest):
        return None
    for entry in manifest["outputs"].values():
        if isinstance(entry, dict) and isinstance(entry.get("format"), str):
            return str(entry["format"])
    return None


def _sharded(root: Path) -> list[RecordFile]:
    """The sharded pairs of an output folder: the shards its manifest lists (no others)."""
    from ..emit.manifest import is_ours
    from ..emit.names import on_disk

    try:
        manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not is_ours(manifest):
        return []
    out = []
    for key, entry in sorted(manifest["outputs"].items()):
        shards = entry.get("shards") if isinstance(entry, dict) else None
        if not isinstance(shards, list):
            continue
        parts = tuple(root / on_disk(str(s["name"])) for s in shards)
        out.append(RecordFile(f"{key}.jsonl", parts[0] if parts else root / on_disk(key),
                              parts))
    return out


def _has_our_manifest(root: Path) -> bool:
    from ..emit.manifest import is_ours

    try:
        return is_ours(json.loads((root / "manifest.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return False


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
