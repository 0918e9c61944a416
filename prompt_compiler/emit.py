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
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .assemble.base import Record
from .promptlist import PromptList

__all__ = ["AtomicWriter", "prompt_sha256", "record_json", "sha256_file"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, PromptList):
        return value.to_list()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def _canonical(prompt: Any) -> str:
    return prompt if isinstance(prompt, str) else json.dumps(
        prompt, ensure_ascii=False, separators=(",", ":"), sort_keys=False, default=_jsonable)


def prompt_sha256(prompt: Any) -> str:
    """Content hash of a compiled prompt (what the model receives, not the config)."""
    return hashlib.sha256(_canonical(prompt).encode("utf-8")).hexdigest()


def record_json(rec: Record) -> dict[str, Any]:
    """The JSON object written for one record (see the module docstring)."""
    # Chat-template models take OpenAI messages when generating; scored (ppl) prompts stay
    # what OpenCompass's parser gave the model.
    chat = rec.chat_messages if rec.mode in ("gen", "chat") else None
    given = rec.model_input if rec.model_input is not None else (chat if chat is not None else rec.prompt)
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
    """Writes files under ``root`` so that a run leaves all of them or none.

    Files are written into a staging folder beside ``root`` (same file system);
    :meth:`commit` moves each into place with an atomic rename, :meth:`abort` deletes
    the staging folder. Nothing, not even an empty ``root``, exists before commit.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._staging: Path | None = None
        self._files: list[str] = []

    @property
    def staging(self) -> Path:
        """The staging folder (created on first use)."""
        if self._staging is None:
            parent = self.root.absolute().parent
            parent.mkdir(parents=True, exist_ok=True)
            self._staging = Path(tempfile.mkdtemp(prefix=f".{self.root.name}.", suffix=".tmp", dir=parent))
        return self._staging

    def adopt(self, rel: str) -> None:
        """Take over a file written into :attr:`staging` by someone else (a worker)."""
        if rel not in self._files:
            self._files.append(rel)

    def write_lines(self, rel: str, lines: Iterable[dict[str, Any]]) -> tuple[int, str]:
        """Write JSON lines to ``rel``; returns (line count, sha256 of the bytes)."""
        path = self.staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        self.adopt(rel)
        h = hashlib.sha256()
        count = 0
        with path.open("wb") as fh:
            for obj in lines:
                data = (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")
                fh.write(data)
                h.update(data)
                count += 1
        return count, h.hexdigest()

    def write_json(self, rel: str, obj: Any) -> None:
        path = self.staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        self.adopt(rel)
        with path.open("w", encoding="utf-8") as fh:
            json.dump(obj, fh, ensure_ascii=False, indent=1)
            fh.write("\n")

    def commit(self) -> None:
        for rel in self._files:
            final = self.root / rel
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.staging / rel, final)
        self._files.clear()
        self.abort()

    def abort(self) -> None:
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)
            self._staging = None
        self._files.clear()
