"""A model's tokenizer where OpenCompass finds it: ``tokenizer_path``, else ``path``, offline.

OpenCompass's local model classes (Hugging Face, ModelScope, vLLM, lmdeploy: the rows of
:mod:`.classes` marked ``hub``) load ``AutoTokenizer.from_pretrained(tokenizer_path or path)``.
The same value names the tokenizer here when a model config has no ``tokenizer`` key (that key
still wins):

1. a local folder: relative to the working folder (as OpenCompass reads it), then to the
   config's folder;
2. a hub id (``org/name``), in the Hugging Face hub cache as ``huggingface_hub`` lays it out:
   ``models--org--name/snapshots/<commit>/``, the commit read from ``refs/<revision>``
   (``main`` unless the config names a ``revision``: ``tokenizer_kwargs``, then ``model_kwargs``,
   then the model's own key; a 40-hex commit is used as it is). The cache folder is the
   model's ``hf_cache_dir``, else ``HF_HUB_CACHE``, ``HUGGINGFACE_HUB_CACHE``,
   ``HF_HOME/hub``, ``XDG_CACHE_HOME/huggingface/hub``, ``~/.cache/huggingface/hub``, the first
   one set (huggingface_hub's order);
3. then the ModelScope cache: the model's ``ms_cache_dir``, else ``MODELSCOPE_CACHE``, else
   ``~/.cache/modelscope/hub``; a model as ``models/org/name`` (a ``.`` in the name written
   ``___``, as modelscope stores it) or ``org/name`` (older releases).

Nothing is downloaded. A hub id found nowhere leaves the model's default counter; where a
tokenizer is needed (``--tokenize``) :func:`missing_tokenizer` names every folder looked in.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .classes import find_class

__all__ = ["FETCH_HINT", "TokenizerLookup", "find_tokenizer", "hf_hub_cache", "missing_tokenizer",
           "model_tokenizer", "modelscope_cache"]

FETCH_HINT = ("fetch it once where the cache is (e.g. `hf download ORG/NAME --include "
              "'*.json'`), or set the model's tokenizer key to a tokenizer folder")
"""The hint of a tokenizer found nowhere."""

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")
_COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True, slots=True)
class TokenizerLookup:
    """Where a model's ``tokenizer_path``/``path`` was looked for, and what was found."""

    key: str
    """The model key that named it: ``tokenizer_path`` or ``path``."""
    value: str
    """What that key holds."""
    folder: Path | None
    """The tokenizer folder found (``None``: found nowhere)."""
    looked_in: tuple[str, ...]
    """Every folder tried, in order."""

    def describe(self) -> str:
        """Where it was looked for (for the error of a tokenizer found nowhere)."""
        where = "; ".join(dict.fromkeys(self.looked_in))
        return (f"its {self.key} {self.value!r} is no local folder and is in no hub cache "
                f"(looked in: {where}); nothing is downloaded")


def _env(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    return value if value else None


def hf_hub_cache(env: Mapping[str, str] | None = None) -> Path:
    """The Hugging Face hub cache folder, as ``huggingface_hub`` reads the environment."""
    env = os.environ if env is None else env
    found = _env(env, "HF_HUB_CACHE") or _env(env, "HUGGINGFACE_HUB_CACHE")
    if found is None:
        home = _env(env, "HF_HOME") or os.path.join(
            _env(env, "XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
            "huggingface")
        found = os.path.join(home, "hub")
    return Path(os.path.expandvars(os.path.expanduser(found)))


def modelscope_cache(env: Mapping[str, str] | None = None) -> Path:
    """The ModelScope cache folder (``MODELSCOPE_CACHE``, else ``~/.cache/modelscope/hub``)."""
    env = os.environ if env is None else env
    found = _env(env, "MODELSCOPE_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "modelscope", "hub")
    return Path(os.path.expanduser(found))


def _revision(cfg: Mapping[str, Any]) -> str:
    for holder in (cfg.get("tokenizer_kwargs"), cfg.get("model_kwargs"), cfg):
        if isinstance(holder, Mapping) and isinstance(holder.get("revision"), str) \
                and holder["revision"]:
            return str(holder["revision"])
    return "main"


def _hf_snapshot(cache: Path, repo: str, revision: str) -> tuple[Path, Path | None]:
    """``(the repo's folder, its snapshot of revision or None)`` in a hub cache."""
    folder = cache / ("models--" + repo.replace("/", "--"))
    commit: str | None = revision if _COMMIT.fullmatch(revision) else None
    if commit is None:
        try:
            commit = (folder / "refs" / revision).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError, ValueError):
            return folder, None
    if not _COMMIT.fullmatch(commit):
        return folder, None
    snapshot = folder / "snapshots" / commit
    return folder, snapshot if snapshot.is_dir() else None


def _local(value: str, config_dir: Path | None) -> tuple[Path | None, list[str]]:
    """``value`` as an existing folder (or file): the working folder, then the config's."""
    tried: list[str] = []
    bases: list[Path | None] = [None]
    if config_dir is not None and not os.path.isabs(os.path.expanduser(value)):
        bases.append(config_dir)
    for base in bases:
        try:
            path = Path(value).expanduser()
            if base is not None:
                path = base / path
            tried.append(str(path.absolute()))
            if path.exists():
                return path.resolve(), tried
        except (OSError, ValueError, RuntimeError):
            continue
    return None, tried


def find_tokenizer(cfg: Mapping[str, Any], *, config_dir: str | Path | None = None,
                   env: Mapping[str, str] | None = None) -> TokenizerLookup | None:
    """The tokenizer folder a model config's class would load, or ``None`` when the config
    gives ``tokenizer`` (the project's key wins), its class loads no Hugging Face tokenizer
    (an API class, an unknown class), or it names neither ``tokenizer_path`` nor ``path``.

    Args:
        cfg: The model config (an OpenCompass model dict or a case-format spec).
        config_dir: The folder of the config file (a relative path is tried there second).
        env: The environment to read the cache variables from (default: ``os.environ``).
    """
    if cfg.get("tokenizer") is not None:
        return None
    entry = find_class(cfg.get("type"))
    if entry is None or not entry.hub:
        return None
    key = "tokenizer_path" if isinstance(cfg.get("tokenizer_path"), str) \
        and cfg["tokenizer_path"] else "path"
    value = cfg.get(key)
    if not isinstance(value, str) or not value:
        return None
    base = Path(config_dir) if config_dir is not None else None
    found, tried = _local(value, base)
    if found is not None or not _HUB_ID.fullmatch(value):
        return TokenizerLookup(key, value, found, tuple(tried))
    env = os.environ if env is None else env
    hf = cfg.get("hf_cache_dir")
    hf_cache = Path(os.path.expanduser(hf)) if isinstance(hf, str) and hf else hf_hub_cache(env)
    folder, snapshot = _hf_snapshot(hf_cache, value, _revision(cfg))
    tried.append(str(folder))
    if snapshot is not None:
        return TokenizerLookup(key, value, snapshot, tuple(tried))
    ms = cfg.get("ms_cache_dir")
    ms_cache = Path(os.path.expanduser(ms)) if isinstance(ms, str) and ms \
        else modelscope_cache(env)
    org, _, name = value.rpartition("/")
    for candidate in (ms_cache / "models" / org / name.replace(".", "___"),
                      ms_cache / org / name):
        tried.append(str(candidate))
        if candidate.is_dir():
            return TokenizerLookup(key, value, candidate.resolve(), tuple(tried))
    return TokenizerLookup(key, value, None, tuple(tried))


def missing_tokenizer(cfg: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(key, where it was looked for)`` for a model whose ``tokenizer_path``/``path``
    was found nowhere (a file's model carries it as ``tokenizer_missing``, the lookup done
    where its config's folder is known); ``None`` when there is nothing of the kind."""
    known = cfg.get("tokenizer_missing")
    if isinstance(known, (list, tuple)) and len(known) == 2:
        return str(known[0]), str(known[1])
    if cfg.get("tokenizer") is not None:
        return None
    lookup = find_tokenizer(cfg)
    if lookup is None or lookup.folder is not None:
        return None
    return lookup.key, lookup.describe()


def model_tokenizer(cfg: Mapping[str, Any]) -> str | None:
    """The folder a model dict without ``tokenizer`` loads its tokenizer from (a file's
    model has it resolved already, or ``tokenizer_missing``; a library dict is looked up
    here), else ``None``."""
    if "tokenizer" in cfg or "tokenizer_missing" in cfg:
        return None
    lookup = find_tokenizer(cfg)
    return str(lookup.folder) if lookup is not None and lookup.folder is not None else None
