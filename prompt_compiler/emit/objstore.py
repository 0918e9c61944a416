"""An output on object storage (``-o s3://bucket/prefix``): shards first, the manifest last.

An object store has no rename, so OUT cannot be swapped in whole as a folder is
(:mod:`prompt_compiler.emit.outdir`). Instead a run writes under ``PREFIX``:

* ``PREFIX/.compile-prompts-lock`` — created only if absent (a conditional write,
  :func:`prompt_compiler.storage.create_if_absent`) and deleted at the end: a second run
  into the same prefix fails at once and names the run holding it;
* ``PREFIX/runs/<run id>/<model>/<dataset>/part-NNNNN.<ext>`` — the run's shards, written by
  whoever compiles them (this process, ``--jobs`` processes, Ray workers);
* ``PREFIX/manifest.json`` — last; its ``root`` names the run's folder, and readers read the
  shards it lists there and nothing else.

Until the manifest is written, readers see the previous run's manifest and shards, whole;
afterwards the new ones. The previous run's folder is deleted after the commit; the folder
of a run that died is never listed and is deleted by the next run (which holds the lock, so
no run is alive to own it) or by ``compile-prompts gc OUT``. A dead run's lock stays: the
next run refuses, naming it, and ``compile-prompts gc OUT --unlock`` removes it.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import OutputError
from ..safety.interrupts import deferred
from ..storage import create_if_absent, filesystem, join, split
from .manifest import is_ours, listed_files, manifest_bytes
from .names import MANIFEST
from .outdir import _hook
from .shards import ShardFile

__all__ = ["LOCK", "RUNS", "ObjectOutput", "StoreSink", "collect_garbage", "object_lines",
           "read_manifest"]

LOCK = ".compile-prompts-lock"
RUNS = "runs"


def _path(uri: str) -> str:
    bucket, key = split(uri)
    return f"{bucket}/{key}" if key else bucket


class _StoreFile:
    """An object being written, hashed as it goes."""

    def __init__(self, stream: Any, shown: str) -> None:
        import hashlib

        self.stream, self.shown, self.hash = stream, shown, hashlib.sha256()

    def write(self, data: bytes) -> None:
        try:
            self.stream.write(data)
        except OSError as exc:
            raise OutputError(f"cannot write {self.shown}: {exc}") from None
        self.hash.update(data)

    def close(self) -> str:
        try:
            self.stream.close()
        except OSError as exc:
            raise OutputError(f"cannot write {self.shown}: {exc}") from None
        return self.hash.hexdigest()

    def abort(self) -> None:
        try:
            self.stream.close()
        except OSError:
            pass


class StoreSink:
    """Shards under a run's folder of an object store; it pickles (a worker gets it and
    opens its own connection)."""

    def __init__(self, root: str, shown: str) -> None:
        self.root, self._shown = root, shown
        self._fs: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "shown": self._shown}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.root, self._shown, self._fs = state["root"], state["shown"], None

    def create(self, rel: str) -> ShardFile:
        if self._fs is None:
            self._fs = filesystem()
        try:
            stream = self._fs.open_output_stream(_path(join(self.root, rel)))
        except OSError as exc:
            raise OutputError(f"cannot write {self.shown(rel)}: {exc}") from None
        return _StoreFile(stream, self.shown(rel))

    def shown(self, rel: str) -> str:
        return f"{self._shown}/{rel}"


def read_manifest(uri: str, store: Any = None) -> dict[str, Any] | None:
    """The manifest of the output at ``uri`` (None: there is none, or it is not ours)."""
    store = store or filesystem()
    try:
        with store.open_input_stream(_path(join(uri, MANIFEST))) as fh:
            found = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    return found if is_ours(found) else None


def _delete_run(store: Any, uri: str, run: str) -> bool:
    """Delete a run's folder; True if it held any object. (Stores that keep folder entries
    of their own may list the empty folder afterwards; it holds nothing.)"""
    from pyarrow import fs as pafs

    path = _path(join(uri, RUNS, run))
    files = store.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
    for info in files:
        if info.type == pafs.FileType.File:
            store.delete_file(info.path)
    try:
        store.delete_dir(path)
    except OSError:
        pass  # no folder object, or the store's own entry: nothing is left in it
    return any(info.type == pafs.FileType.File for info in files)


def _runs(store: Any, uri: str) -> list[str]:
    from pyarrow import fs as pafs

    found = store.get_file_info(pafs.FileSelector(_path(join(uri, RUNS)), allow_not_found=True))
    return sorted(f.base_name for f in found if f.type == pafs.FileType.Directory)


def collect_garbage(uri: str, *, unlock: bool = False) -> list[str]:
    """Delete the run folders under ``uri`` that its manifest does not name (runs that died
    before their manifest); returns their URIs. ``unlock``: first delete the lock a dead run
    left (never do it while a run is alive).

    Raises:
        OutputError: A run holds the lock (without ``unlock``).
    """
    store = filesystem()
    lock = _path(join(uri, LOCK))
    if _exists(store, lock):
        if not unlock:
            raise OutputError(f"{uri}: a compile-prompts run holds the lock {join(uri, LOCK)} "
                              f"({_holder(store, lock)}); its shards are not garbage",
                              hint="wait for it; if it died, run compile-prompts gc OUT "
                                   "--unlock")
        store.delete_file(lock)
    manifest = read_manifest(uri, store)
    keep = _root_run(manifest)
    removed = []
    for run in _runs(store, uri):
        if run != keep and _delete_run(store, uri, run):
            removed.append(join(uri, RUNS, run))
    return removed


def _root_run(manifest: dict[str, Any] | None) -> str | None:
    root = (manifest or {}).get("root")
    if isinstance(root, str) and root.startswith(RUNS + "/"):
        return root[len(RUNS) + 1:]
    return None


def _exists(store: Any, path: str) -> bool:
    from pyarrow import fs as pafs

    try:
        return bool(store.get_file_info(path).type != pafs.FileType.NotFound)
    except OSError as exc:
        raise OutputError(f"cannot reach s3://{path}: {exc}") from None


def _holder(store: Any, lock: str) -> str:
    try:
        with store.open_input_stream(lock) as fh:
            held = json.loads(fh.read())
        return (f"run {held.get('run')}, pid {held.get('pid')} on {held.get('host')}, "
                f"started {held.get('started')}")
    except (OSError, ValueError, AttributeError):
        return "its holder is unknown"


class ObjectOutput:
    """One run's hold on an object store prefix: lock, clean, write shards, commit or abort.

    Used as :class:`~prompt_compiler.emit.outdir.OutputDir` is by the engines: :meth:`sink`
    is where shards go, :meth:`adopt` notes each, :meth:`write_json` the manifest (written by
    :meth:`commit`, last). :attr:`staging` is a local folder for the workers' bookkeeping
    only (never a shard).
    """

    def __init__(self, uri: str, *, replace_foreign: bool = False) -> None:
        self.uri = uri.rstrip("/")
        self.shown = self.uri
        self.replace_foreign = replace_foreign
        self.run = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{secrets.token_hex(4)}"
        self.root = f"{RUNS}/{self.run}"
        self._store: Any = None
        self._locked = False
        self._files: list[str] = []
        self._manifest: dict[str, Any] | None = None
        self._previous: str | None = None
        self.staging = Path(".")

    def open(self) -> ObjectOutput:
        """Take the lock, check the prefix may be written, delete runs that died."""
        self._store = filesystem()
        bucket, _ = split(self.uri)
        if not _exists(self._store, bucket):
            raise OutputError(f"{self.uri}: the bucket {bucket!r} does not exist (or is not "
                              "readable with these credentials)",
                              hint="create it first, or check AWS_ENDPOINT_URL and the keys")
        old = read_manifest(self.uri, self._store)
        if old is None and not self.replace_foreign:
            self._check_empty()
        body = json.dumps({"run": self.run, "pid": os.getpid(), "host": socket.gethostname(),
                           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        lock = join(self.uri, LOCK)
        with deferred():  # a stop signal waits until the lock is recorded as ours
            self._locked = create_if_absent(lock, body.encode())
        if not self._locked:
            raise OutputError(
                f"{self.uri}: another compile-prompts run is writing this output; it holds the "
                f"lock {lock} ({_holder(self._store, _path(lock))})",
                hint="wait for it to finish; if it died, run compile-prompts gc OUT --unlock")
        try:
            self._previous = _root_run(old)
            for run in _runs(self._store, self.uri):  # runs that died: no run is alive now
                if run != self._previous:
                    _delete_run(self._store, self.uri, run)
            self.staging = Path(tempfile.mkdtemp(prefix="compile-prompts-run-"))
        except BaseException:
            self._unlock()
            raise
        return self

    def _check_empty(self) -> None:
        from pyarrow import fs as pafs

        found = self._store.get_file_info(pafs.FileSelector(_path(self.uri), recursive=True,
                                                            allow_not_found=True))
        for info in found:
            name = info.path[len(_path(self.uri)) + 1:]
            if info.type == pafs.FileType.File and name != LOCK and not name.startswith(
                    RUNS + "/"):
                raise OutputError(
                    f"{self.uri} is not empty and not an output of compile-prompts ({name} is "
                    f"there and it has no {MANIFEST} of compile-prompts); refusing to write it",
                    hint="give a new or empty prefix, or pass --overwrite-foreign (nothing "
                         "already there is deleted)")

    def shown_path(self, rel: str) -> str:
        return f"{self.uri}/{rel}"

    def sink(self) -> StoreSink:
        """Where this run's shards go."""
        return StoreSink(join(self.uri, self.root), self.uri)

    def adopt(self, rel: str) -> None:
        if rel not in self._files:
            self._files.append(rel)

    def write_json(self, rel: str, obj: dict[str, Any]) -> None:
        """Keep the manifest for :meth:`commit` (it names this run's folder as ``root``)."""
        if rel != MANIFEST:
            raise OutputError(f"internal error: only {MANIFEST} is written at the end, not {rel}")
        self._manifest = {**obj, "root": self.root}

    def commit(self) -> None:
        """Write the manifest (the run becomes what readers see), then delete the previous
        run's folder and the lock."""
        try:
            if self._manifest is None:
                raise OutputError("internal error: commit without a manifest")
            missing = set(listed_files(self._manifest)) - set(self._files)
            if missing:
                raise OutputError(f"internal error: {sorted(missing)[0]} is listed but was "
                                  "not written")
            _hook("before-swap")  # test hook: die with the shards written, the manifest not
            try:
                with self._store.open_output_stream(_path(join(self.uri, MANIFEST))) as fh:
                    fh.write(manifest_bytes(self._manifest))
            except OSError as exc:
                raise OutputError(f"cannot write {self.uri}/{MANIFEST}: {exc}") from None
        except BaseException:
            self.abort()
            raise
        try:
            if self._previous and self._previous != self.run:
                _delete_run(self._store, self.uri, self._previous)
        except OSError:
            pass  # garbage for the next run or gc
        self._unlock()

    def abort(self) -> None:
        """Delete this run's folder (the previous output stays as it was); unlock."""
        if self._store is not None and self._locked:
            try:
                _delete_run(self._store, self.uri, self.run)
            except OSError:
                pass  # garbage for the next run or gc
        self._unlock()

    def _unlock(self) -> None:
        import shutil

        if self.staging != Path("."):
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = Path(".")
        if self._locked:
            self._locked = False
            try:
                self._store.delete_file(_path(join(self.uri, LOCK)))
            except OSError:
                pass


def object_lines(uri: str, store: Any = None) -> Iterator[bytes]:
    """The lines of the object ``uri`` (a shard), streamed; an unreadable object is a
    :class:`~prompt_compiler.errors.OutputError` naming it."""
    store = store or filesystem()
    try:
        with store.open_input_stream(_path(uri)) as fh:
            rest = b""
            while chunk := fh.read(1 << 22):
                *whole, rest = (rest + chunk).split(b"\n")
                yield from whole
            if rest:
                yield rest
    except OSError as exc:
        raise OutputError(f"cannot read {uri}: {exc}") from None
