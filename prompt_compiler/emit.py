"""The emit stage: records -> JSON lines, written atomically, plus a manifest of hashes.

Record schema (one JSON object per line of ``OUT/<model>/<dataset>.jsonl``)::

    {"dataset", "model", "mode": "gen"|"ppl"|"clp"|"chat", "index",
     "label" (ppl only), "turn" (chat only), "ice_ids", "prompt", "prompt_sha256"}

``prompt`` is exactly what the model receives (a string, or a list of messages);
``prompt_sha256`` hashes its UTF-8 text (a string) or its canonical JSON (a list).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .assemble.base import Record

__all__ = ["AtomicWriter", "prompt_sha256", "record_json", "sha256_file"]


def _canonical(prompt: Any) -> str:
    return prompt if isinstance(prompt, str) else json.dumps(
        prompt, ensure_ascii=False, separators=(",", ":"), sort_keys=False, default=str)


def prompt_sha256(prompt: Any) -> str:
    """Content hash of a compiled prompt (what the model receives, not the config)."""
    return hashlib.sha256(_canonical(prompt).encode("utf-8")).hexdigest()


def record_json(rec: Record) -> dict[str, Any]:
    """The JSON object written for one record (see the module docstring)."""
    # Chat-template models receive the OpenAI messages, not OpenCompass's API prompt.
    given = rec.model_input if rec.model_input is not None else (
        rec.chat_messages if rec.chat_messages is not None else rec.prompt)
    prompt = given if isinstance(given, str) else json.loads(_canonical(given))
    out: dict[str, Any] = {"dataset": rec.dataset, "model": rec.model, "mode": rec.mode,
                           "index": rec.index}
    if rec.mode == "ppl":
        out["label"] = rec.label
    if rec.mode == "chat":
        out["turn"] = rec.turn
    out["ice_ids"] = list(rec.ice_ids)
    out["prompt"] = prompt
    out["prompt_sha256"] = prompt_sha256(prompt)
    return out


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class AtomicWriter:
    """Writes files under a folder so that a run leaves all of them or none.

    Each file is written to a temporary sibling; :meth:`commit` renames them all into
    place (after the caller has finished every file), :meth:`abort` removes them.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._pending: list[tuple[Path, Path]] = []

    @property
    def pending(self) -> list[tuple[Path, Path]]:
        """(temporary, final) paths not yet committed."""
        return list(self._pending)

    def adopt(self, tmp: Path, rel: str) -> None:
        """Take over a temporary file written elsewhere (e.g. by a worker process)."""
        self._pending.append((tmp, self.root / rel))

    def write_lines(self, rel: str, lines: Iterable[dict[str, Any]]) -> tuple[int, str]:
        """Write JSON lines to ``rel``; returns (line count, sha256 of the bytes)."""
        final = self.root / rel
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
        self._pending.append((Path(tmp), final))
        h = hashlib.sha256()
        count = 0
        with os.fdopen(fd, "wb") as fh:
            for obj in lines:
                data = (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")
                fh.write(data)
                h.update(data)
                count += 1
        return count, h.hexdigest()

    def write_json(self, rel: str, obj: Any) -> None:
        final = self.root / rel
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
        self._pending.append((Path(tmp), final))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, ensure_ascii=False, indent=1)
            fh.write("\n")

    def commit(self) -> None:
        for tmp, final in self._pending:
            os.replace(tmp, final)
        self._pending.clear()

    def abort(self) -> None:
        for tmp, _ in self._pending:
            tmp.unlink(missing_ok=True)
        self._pending.clear()
