"""Rows of a loader class that has no native reader: OpenCompass's own ``load()``, run by
OpenCompass in another interpreter, and the rows cached.

The interpreter is the one a user names with ``--opencompass-python PATH`` (or the
environment variable :data:`PYTHON_ENV`, or ``CompileSettings.opencompass_python``); it runs
``oc_runner.py`` (shipped beside this module, passed by path) in a child process. OpenCompass
is never imported into this process. The child writes the class's splits as Parquet into a
temporary folder this process owns, with the list of files and folders the loader read; the
splits are then moved into the user cache (``$XDG_CACHE_HOME/prompt_compiler/opencompass-rows``,
else ``~/.cache/...``) under a key of the class, its arguments, the working folder, the
environment that steers OpenCompass's data paths and the interpreter. An entry is used again
while every file it records keeps its size, modification time and sha256 and every folder its
list of names: a second run reads Parquet and starts no process. :func:`prefetch` loads the
datasets of a whole run in one process before its pairs compile.

Without an interpreter, a class that is not native is one error line naming the class and the
flag. The child is bounded by ``PROMPT_COMPILER_MAX_OPENCOMPASS_SECONDS``; its failure is one
line ending with the child's last stderr line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import DataError, LimitError
from ...safety import limits
from ..parquet import ParquetRows, require_pyarrow
from ..rows import LoadedRows, Row

__all__ = [
    "PYTHON_ENV",
    "RUNNER",
    "BridgeCall",
    "cache_root",
    "files_read",
    "load_with_opencompass",
    "opencompass_python",
    "prefetch",
]

PYTHON_ENV = "PROMPT_COMPILER_OPENCOMPASS_PYTHON"
"""The environment variable naming OpenCompass's interpreter (the flag wins over it)."""
RUNNER = Path(__file__).with_name("oc_runner.py")
"""The script the OpenCompass interpreter runs."""
_FLAG = "--opencompass-python"
_FORMAT = 1
"""The cache entry's layout; a new layout is a new key."""
_PATH_ENV = ("COMPASS_DATA_CACHE", "DATASET_SOURCE")
"""Environment that decides where OpenCompass's ``get_data_path`` reads."""


def opencompass_python(given: str | os.PathLike[str] | None) -> Path | None:
    """The interpreter to run OpenCompass's loaders: ``given``, else :data:`PYTHON_ENV`; a
    relative path is taken from the working folder, a bare name that is no file there is
    looked up on ``PATH`` (``python3``)."""
    text = str(given) if given is not None and str(given) != "" else os.environ.get(PYTHON_ENV)
    if not text:
        return None
    if Path(text).name == text and not os.path.exists(text):
        found = shutil.which(text)
        return Path(found) if found else Path(text)
    return Path(os.path.abspath(text))


def cache_root() -> Path:
    """The folder of cached loader rows (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "prompt_compiler" / "opencompass-rows"


@dataclass(frozen=True, slots=True)
class BridgeCall:
    """One call of a loader class: what the child is asked, and the cache key it gets."""

    loader: str
    """The class name, e.g. ``GSMHardDataset``."""
    kwargs: Mapping[str, Any]
    """The keyword arguments of its ``load`` (the dataset entry less the keys OpenCompass
    and this project take for themselves)."""
    python: Path
    """The OpenCompass interpreter."""

    @classmethod
    def of(cls, type_name: str, kwargs: Mapping[str, Any], python: Path) -> BridgeCall:
        """The call of ``type_name.load(**kwargs)``.

        Raises:
            DataError: An argument is not JSON data (a function, a class).
        """
        try:
            json.dumps(kwargs, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise DataError(f"the arguments of {type_name}.load() cannot be sent to "
                            f"OpenCompass's interpreter: {err}") from None
        return cls(type_name, dict(kwargs), python)

    def key(self) -> str:
        """The cache key: class, arguments, working folder, data-path environment, interpreter."""
        python = Path(os.path.abspath(self.python))
        try:
            python = python.resolve()
        except OSError:
            pass
        what = {
            "format": _FORMAT,
            "class": self.loader,
            "kwargs": self.kwargs,
            "cwd": os.getcwd(),
            "env": {name: os.environ.get(name) for name in _PATH_ENV},
            "python": str(python),
            "runner": _sha256(RUNNER),
        }
        text = json.dumps(what, sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(text.encode()).hexdigest()


def load_with_opencompass(type_name: str, kwargs: Mapping[str, Any],
                          python: str | os.PathLike[str] | None) -> LoadedRows:
    """The rows ``type_name.load(**kwargs)`` returns, run by OpenCompass in its own interpreter
    in the working folder (or read from the cache: see the module docstring).

    Raises:
        DataError: No interpreter is given (the class is not native), the interpreter cannot
            run, the loader fails (its last stderr line), or it returns no datasets.
        LimitError: The loader ran past ``PROMPT_COMPILER_MAX_OPENCOMPASS_SECONDS``.
    """
    interpreter = opencompass_python(python)
    if interpreter is None:
        raise DataError(
            f"{type_name} has no native reader in prompt_compiler; its rows need OpenCompass's "
            "own loader",
            hint=f"pass {_FLAG} PATH (the python of a venv with opencompass installed; "
                 f"or set {PYTHON_ENV}), or --data-dir DIR holding DIR/<abbr>/<split>.jsonl")
    call = BridgeCall.of(type_name, kwargs, interpreter)
    entry = cache_root() / call.key()
    found = _cached(entry)
    if found is None:
        _run(call, entry)
        found = _cached(entry)
        if found is None:  # the files changed while the loader read them
            raise DataError(f"{type_name}: its data files changed while OpenCompass read "
                            "them; run again")
    return found


def files_read(type_name: str, kwargs: Mapping[str, Any],
               python: str | os.PathLike[str] | None) -> list[Path]:
    """The data files the cached call of ``type_name.load(**kwargs)`` read (for the
    manifest); empty when there is no interpreter or no cache entry."""
    interpreter = opencompass_python(python)
    if interpreter is None:
        return []
    try:
        entry = cache_root() / BridgeCall.of(type_name, kwargs, interpreter).key()
        meta = json.loads((entry / "entry.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, DataError):
        return []
    return [Path(f["path"]) for f in meta.get("files", ())]


# --- the cache -------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _file_state(path: str) -> dict[str, Any] | None:
    try:
        info = os.stat(path)
        return {"path": path, "size": info.st_size, "mtime_ns": info.st_mtime_ns,
                "sha256": _sha256(Path(path))}
    except OSError:
        return None


def _dir_state(path: str) -> dict[str, Any] | None:
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return None
    return {"path": path, "names": hashlib.sha256("\n".join(names).encode()).hexdigest()}


def _cached(entry: Path) -> LoadedRows | None:
    """The rows of a cache entry whose recorded files and folders are unchanged, else None."""
    try:
        meta = json.loads((entry / "entry.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for file in meta["files"]:
        if _file_state(file["path"]) != file:
            return None
    for folder in meta["dirs"]:
        if _dir_state(folder["path"]) != folder:
            return None
    require_pyarrow(f"{meta['class']} rows cached in {entry}")
    splits = meta["splits"]
    if splits is None:
        return LoadedRows(ParquetRows([entry / "0.parquet"]), None, f"{meta['class']} ({entry})")
    rows: dict[str, Sequence[Row]] = {
        name: ParquetRows([entry / f"{n}.parquet"]) for n, name in enumerate(splits)}
    return LoadedRows(None, rows, f"{meta['class']} ({entry})")


def _run(call: BridgeCall, entry: Path) -> None:
    """Run the loader in OpenCompass's interpreter; its rows become the cache entry.

    Raises:
        DataError: The interpreter cannot run, or the loader fails (its line).
        LimitError: It ran past ``PROMPT_COMPILER_MAX_OPENCOMPASS_SECONDS``.
    """
    failures = _run_calls([(call, entry)])
    if failures:
        raise DataError(f"OpenCompass's {call.loader}.load() failed in {call.python}: "
                        f"{failures[0]}")


def prefetch(calls: Sequence[tuple[str, Mapping[str, Any]]],
             python: str | os.PathLike[str] | None) -> int:
    """Load every ``(class, kwargs)`` call that has no valid cache entry in one OpenCompass
    process (a first run of a suite then starts one process, not one per dataset); returns
    how many were loaded. A call that fails here is left to :func:`load_with_opencompass`,
    which reports it for its dataset."""
    interpreter = opencompass_python(python)
    if interpreter is None:
        return 0
    pending: dict[str, tuple[BridgeCall, Path]] = {}
    for type_name, kwargs in calls:
        try:
            call = BridgeCall.of(type_name, kwargs, interpreter)
        except DataError:
            continue
        entry = cache_root() / call.key()
        if entry.name not in pending and _cached(entry) is None:
            pending[entry.name] = (call, entry)
    if len(pending) < 2:  # one call: the dataset's own load reports its errors
        return 0
    try:
        failures = _run_calls(list(pending.values()))
    except (DataError, LimitError):
        return 0
    return len(pending) - len(failures)


def _run_calls(pending: Sequence[tuple[BridgeCall, Path]]) -> list[str]:
    """One OpenCompass process for every call; each loaded call's rows become its cache
    entry. Returns the failed calls' lines."""
    python = pending[0][0].python
    parent = pending[0][1].parent
    parent.mkdir(parents=True, exist_ok=True)
    with _scratch(parent) as work:
        outs = [work / f"rows-{n}" for n in range(len(pending))]
        for out in outs:
            out.mkdir()
        request = work / "request.json"
        request.write_text(json.dumps({"calls": [
            {"class": call.loader, "kwargs": call.kwargs, "out": str(out)}
            for (call, _), out in zip(pending, outs, strict=True)]}), encoding="utf-8")
        env = dict(os.environ)
        env.update(HF_DATASETS_CACHE=str(work / "hf"), HF_DATASETS_OFFLINE="1",
                   HF_HUB_OFFLINE="1", HF_DATASETS_DISABLE_PROGRESS_BARS="1",
                   PYTHONIOENCODING="utf-8")
        env.pop(PYTHON_ENV, None)
        seconds = limits.current().opencompass_seconds
        names = ", ".join(call.loader for call, _ in pending)
        command = [str(python), "-I", str(RUNNER), str(request)]
        try:
            done = subprocess.run(command, cwd=os.getcwd(), env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  timeout=seconds * len(pending), check=False)
        except subprocess.TimeoutExpired:
            raise LimitError(f"OpenCompass's {names}.load() ran past "
                             f"{seconds * len(pending)} s in {python}; "
                             + limits.describe("opencompass_seconds", seconds, "seconds"),
                             ) from None
        except OSError as err:
            raise DataError(f"cannot run the OpenCompass interpreter {python}: "
                            f"{err.strerror or err}",
                            hint=f"{_FLAG} names a python with opencompass installed") from None
        failures = []
        for (call, entry), out in zip(pending, outs, strict=True):
            if not (out / "result.json").is_file():
                error = out / "error.json"
                failures.append(json.loads(error.read_text(encoding="utf-8"))["error"]
                                if error.is_file() else _last_line(done.stderr)
                                or f"exit status {done.returncode}")
                continue
            result = json.loads((out / "result.json").read_text(encoding="utf-8"))
            (out / "result.json").unlink()
            meta = {
                "class": call.loader,
                "kwargs": call.kwargs,
                "opencompass": result["opencompass"],
                "splits": result["splits"],
                "files": [s for s in map(_file_state, result["files"]) if s is not None],
                "dirs": [s for s in map(_dir_state, result["dirs"]) if s is not None],
            }
            (out / "entry.json").write_text(json.dumps(meta, indent=1, sort_keys=True),
                                            encoding="utf-8")
            _install(out, entry, work / f"old-{out.name}")
        return failures


def _install(new: Path, entry: Path, trash: Path) -> None:
    """``new`` becomes the cache entry. An entry that another process (``--jobs``) made valid
    meanwhile is kept, as it may be read now (rows are read lazily, by path); a stale one is
    moved to ``trash``."""
    if _cached(entry) is not None:
        return
    try:
        entry.rename(trash)
    except OSError:
        pass  # none there
    try:
        new.rename(entry)
    except OSError:  # another process installed its entry between the two renames
        if _cached(entry) is None:
            raise DataError(f"cannot write the cache entry {entry}") from None


class _scratch:
    """A temporary folder beside the cache entries (same file system: a rename moves it),
    removed on exit."""

    def __init__(self, parent: Path) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=".run-", dir=parent))

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _last_line(stderr: bytes) -> str:
    lines: Iterator[str] = (line.strip() for line in
                            stderr.decode("utf-8", "replace").splitlines())
    kept = [line for line in lines if line]
    return kept[-1][:500] if kept else ""
