"""The output folder as one unit: locked, built beside itself, swapped in whole.

A run into ``OUT`` (``P/N``) works with these entries of ``P``, all on OUT's file system:

* ``.N.compile-prompts-lock`` — held (``flock``) for the whole run, removed at the end; a
  second run into the same OUT fails at once and names it.
* ``.N.compile-prompts-staging-XXXXXXXX`` — the new OUT, built while the lock is held.
* ``.N.compile-prompts-old`` — the old OUT for an instant during the fallback swap.

The commit swaps staging and OUT with one ``renameat2(RENAME_EXCHANGE)`` (Linux), or
else with two renames (OUT -> old, staging -> OUT); signals are held back meanwhile. A
SIGKILL at any instant leaves the complete old or the complete new OUT, except between
the two fallback renames, where OUT is absent and the old one is complete in ``old``.
The next run into OUT, once it holds the lock, recovers deterministically *before*
anything else: every staging folder is a dead run's and is removed (no run holds the
lock, so none is alive — no guessing by age); ``old`` goes back to OUT if OUT is absent,
and is removed otherwise.

OUT is replaced only if it is this tool's output (its ``manifest.json`` says so and
lists every file in it) or empty, unless ``replace_foreign`` is set. A symlink OUT is
followed: the folder it points to is replaced and the link kept.

Test hooks (for the test suite only): ``PROMPT_COMPILER_TEST_KILL_AT=<point>`` makes the
process SIGKILL itself at ``before-swap``, ``after-move-old`` (fallback only) or
``after-swap``; ``PROMPT_COMPILER_TEST_NO_EXCHANGE=1`` forces the two-rename fallback.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import queue
import re
import secrets
import shutil
import signal
import stat
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from ..errors import OutputError, PromptCompilerWarning
from .manifest import is_ours, manifest_bytes
from .names import MANIFEST
from .records import record_bytes

__all__ = ["BlockFile", "OutputDir", "write_blocks", "write_jsonl"]

_TAG = "compile-prompts"
_OLD_STAGING = re.compile(r"\.[a-z0-9_]{8}\.tmp")  # what versions before 0.2 left behind


def _error(what: str, exc: OSError, hint: str | None = None) -> OutputError:
    reason = exc.strerror or str(exc)
    return OutputError(f"cannot {what}: {reason}", hint=hint)


@contextlib.contextmanager
def _os(what: str, hint: str | None = None) -> Iterator[None]:
    """Turn an OSError into an OutputError that says what was being done to which path."""
    try:
        yield
    except OutputError:
        raise
    except OSError as exc:
        raise _error(what, exc, hint) from None


def write_jsonl(path: Path, lines: Iterable[Any], *, shown: str,
                encode: Callable[[Any], bytes] = record_bytes) -> tuple[int, str]:
    """Write one JSON object per line to ``path``; returns (line count, sha256 of the bytes).

    ``shown`` is the file's name for messages (where it will end up, not the staging path);
    ``encode`` makes one line's bytes, newline included.
    Errors of the objects' producer pass through; an OS error is an OutputError.
    """
    with _os(f"write {shown}"):
        path.parent.mkdir(parents=True, exist_ok=True)
        fh: IO[bytes] = path.open("wb", buffering=1 << 20)
    h = hashlib.sha256()
    count = 0
    try:
        for obj in lines:
            data = encode(obj)
            with _os(f"write {shown}"):
                fh.write(data)
            h.update(data)
            count += 1
    except BaseException:
        with contextlib.suppress(OSError):
            fh.close()
        raise
    with _os(f"write {shown}"):
        fh.close()
    return count, h.hexdigest()


def write_blocks(path: Path, blocks: Iterable[bytes], *, shown: str) -> str:
    """Write byte blocks (whole JSON lines) to ``path``; returns the sha256 of the bytes.

    ``shown`` is the file's name for messages; errors of the blocks' producer pass
    through, an OS error is an OutputError.
    """
    out = BlockFile(path, shown=shown)
    try:
        for block in blocks:
            out.write(block)
    except BaseException:
        out.abort()
        raise
    return out.close()


class BlockFile:
    """A file written from byte blocks, and the sha256 of its bytes.

    A helper thread writes and hashes the blocks while the caller builds the next ones
    (both release the GIL on large buffers), so a second core does that part. Whole files
    can be appended too (:meth:`append`, the parts of a pair split across processes): the
    kernel copies them and the thread hashes them.
    """

    def __init__(self, path: Path, *, shown: str, digest: bool = True) -> None:
        self.shown = shown
        self._digest = digest
        with _os(f"write {shown}"):
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        self._hash = hashlib.sha256()
        self._queue: queue.Queue[bytes | Path | None] = queue.Queue(maxsize=4)
        self._failed: list[BaseException] = []
        self._thread = threading.Thread(target=self._drain, name="block-writer", daemon=True)
        self._thread.start()

    def write(self, block: bytes) -> None:
        """Queue ``block`` (whole lines) to be written."""
        self._check()
        self._queue.put(block)

    def append(self, part: Path) -> None:
        """Queue the whole file ``part`` to be appended (and deleted afterwards)."""
        self._check()
        self._queue.put(part)

    def close(self) -> str:
        """Write what is queued, close the file and return its sha256 (``""`` when the
        file was made with ``digest=False``)."""
        self._finish()
        with _os(f"write {self.shown}"):
            self._check()
            os.close(self._fd)
        return self._hash.hexdigest() if self._digest else ""

    def abort(self) -> None:
        """Stop writing (the file is left as it is, for the caller to remove)."""
        self._finish()
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def _finish(self) -> None:
        self._queue.put(None)
        self._thread.join()

    def _check(self) -> None:
        if self._failed:
            with _os(f"write {self.shown}"):
                raise self._failed[0]

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._failed:
                continue  # keep taking blocks, so that the caller never waits on a full queue
            try:
                if isinstance(item, Path):
                    self._append(item)
                else:
                    _write_all(self._fd, item)
                    if self._digest:
                        self._hash.update(item)
            except BaseException as exc:  # raised in the caller's thread by _check()
                self._failed.append(exc)

    def _append(self, part: Path) -> None:
        with part.open("rb", buffering=0) as fh:
            size = os.fstat(fh.fileno()).st_size
            if self._digest:  # read through a small buffer: a memory map would count as RSS
                buf = memoryview(bytearray(1 << 20))
                while n := fh.readinto(buf):
                    self._hash.update(buf[:n])
            _copy(fh.fileno(), self._fd, size)
        part.unlink()


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _copy(src: int, dst: int, size: int) -> None:
    """Append the first ``size`` bytes of ``src`` to ``dst``: in the kernel where it can."""
    copied = 0
    try:
        while copied < size:
            n = os.copy_file_range(src, dst, size - copied, copied)
            if n == 0:
                break
            copied += n
    except (AttributeError, OSError):  # no copy_file_range here (or not between these files)
        pass
    while copied < size:
        data = os.pread(src, min(size - copied, 1 << 20), copied)
        if not data:
            raise OSError(f"the part file ended at byte {copied} of {size}")
        _write_all(dst, data)
        copied += len(data)


# --- swapping two folders ------------------------------------------------------------------

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2); False where that is not available."""
    if not sys.platform.startswith("linux") or os.environ.get("PROMPT_COMPILER_TEST_NO_EXCHANGE"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    import errno

    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False  # the kernel or this file system cannot exchange: use two renames
    raise OSError(err, os.strerror(err), str(b))


def _hook(point: str) -> None:
    """Test hook: die here, as a SIGKILL would (see the module docstring)."""
    if os.environ.get("PROMPT_COMPILER_TEST_KILL_AT") == point:
        os.kill(os.getpid(), signal.SIGKILL)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP back while the folders swap; they take effect afterwards.

    In the main thread the Python handlers are swapped for one that only records the
    signal (this also catches a signal whose handler was already due but had not run yet);
    the signals are blocked at the OS level too. Afterwards the first one is raised again.
    """
    sigs = [getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)]
    pending: list[int] = []
    old: dict[int, Any] = {}
    try:
        for sig in sigs:
            old[sig] = signal.signal(sig, lambda signum, frame: pending.append(signum))
    except ValueError:  # not the main thread: the OS-level block below still holds them
        pass
    mask = (signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
            if hasattr(signal, "pthread_sigmask") else None)
    try:
        yield
    finally:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for sig, handler in old.items():
            if handler is not None:  # None: installed outside Python, cannot be put back
                signal.signal(sig, handler)
        if pending:
            signal.raise_signal(pending[0])


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


# --- the lock ------------------------------------------------------------------------------

def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


_HELD: set[int] = set()


def _close_held_in_child() -> None:
    # A forked worker must not keep the parent's lock alive after the parent dies.
    for fd in list(_HELD):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_held_in_child)


class OutputDir:
    """One run's hold on an output folder: lock, recover, stage, then commit or abort.

    Use :meth:`open` (or ``with``) first; write files with :meth:`write_lines` /
    :meth:`write_bytes`, or into :attr:`staging` and :meth:`adopt` them; then
    :meth:`commit` swaps the staging folder in as OUT, :meth:`abort` deletes it. Every
    OS error is an :class:`OutputError` naming the path as the user gave it.
    """

    def __init__(self, out: str | os.PathLike[str], *, replace_foreign: bool = False) -> None:
        self.shown = os.fspath(out).rstrip("/\\") or os.fspath(out)
        self.path = Path(os.path.realpath(out))
        self.replace_foreign = replace_foreign
        self._lock_fd: int | None = None
        self._lock_path = self.path.parent / f".{self.path.name}.{_TAG}-lock"
        self._old = self.path.parent / f".{self.path.name}.{_TAG}-old"
        self._staging: Path | None = None
        self._files: list[str] = []

    # -- opening -------------------------------------------------------------------------

    def recover(self) -> None:
        """Only the first step of :meth:`open`: lock, clean what dead runs left, unlock.

        Run before anything slow (loading configs), so a half-finished swap is repaired
        and a concurrent run is reported at once, even if this run fails later.
        """
        if self._lock_fd is not None or not self.path.parent.is_dir():
            return
        self._lock()
        try:
            self._recover()
        finally:
            self._unlock()

    def open(self) -> OutputDir:
        """Lock OUT, recover what dead runs left, check OUT may be replaced, make staging."""
        if self._staging is not None:
            return self
        if not self.path.name or self.path == self.path.parent:
            raise OutputError(f"cannot use {self.shown} as the output folder",
                              hint="give a folder to create or replace, e.g. -o out")
        self._make_parent()
        self._lock()
        try:
            self._recover()
            mode = self._check_target()
            name = f".{self.path.name}.{_TAG}-staging-{secrets.token_hex(4)}"
            staging = self.path.parent / name
            with _os(f"create the staging folder {staging}"):
                staging.mkdir()
                if mode is not None:
                    os.chmod(staging, mode)
            self._staging = staging
        except BaseException:
            self._unlock()
            raise
        return self

    def _make_parent(self) -> None:
        parent = self.path.parent
        for folder in (parent, *parent.parents):
            if os.path.lexists(folder):
                if not folder.is_dir():
                    raise OutputError(
                        f"cannot create {self.shown}: {folder} is a file, not a folder")
                break
        with _os(f"create the folder {parent}"):
            parent.mkdir(parents=True, exist_ok=True)

    def __enter__(self) -> OutputDir:
        return self.open()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.abort()

    @property
    def staging(self) -> Path:
        """The folder the new OUT is built in (beside OUT, same file system)."""
        return self.open()._staging  # type: ignore[return-value]

    def _lock(self) -> None:
        lock = self._lock_path
        while True:
            with _os(f"create the lock file {lock}"):
                fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
            if not _try_lock(fd):
                holder = ""
                with contextlib.suppress(OSError, ValueError):
                    os.lseek(fd, 0, os.SEEK_SET)
                    holder = f" (pid {int(os.read(fd, 32).decode().strip())})"
                os.close(fd)
                raise OutputError(
                    f"{self.shown}: another compile-prompts run{holder} is writing this output "
                    f"folder; it holds the lock {lock}", hint="wait for it to finish or stop it")
            try:  # the last holder may have removed the file between our open and our lock
                same = os.stat(lock).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        with contextlib.suppress(OSError):  # the holder's pid, for the message above
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd
        _HELD.add(fd)

    def _unlock(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            self._lock_path.unlink()  # while still holding it; see _lock
        _HELD.discard(fd)
        os.close(fd)

    def _recover(self) -> None:
        """Clean what dead runs left beside OUT (no other run is alive: we hold the lock)."""
        prefix = f".{self.path.name}."
        staging = f"{prefix}{_TAG}-staging-"
        with _os(f"list the folder {self.path.parent}"):
            names = sorted(os.listdir(self.path.parent))
        for name in names:
            rest = name[len(prefix):] if name.startswith(prefix) else None
            dead = rest is not None and (
                (name.startswith(staging) and len(name) == len(staging) + 8)
                or _OLD_STAGING.fullmatch("." + rest) is not None)
            if dead and (self.path.parent / name).is_dir():
                with _os(f"remove {self.path.parent / name}, left by a run that died"):
                    _remove(self.path.parent / name)
        if os.path.lexists(self._old):
            if os.path.lexists(self.path):  # the swap had finished: the old copy is garbage
                with _os(f"remove {self._old}, left by a run that died"):
                    _remove(self._old)
            else:  # died between the two renames: put the old OUT back
                with _os(f"restore {self.shown} from {self._old}"):
                    os.rename(self._old, self.path)

    def _check_target(self) -> int | None:
        """OUT's permission bits if it exists (the new OUT keeps them); raise if it may not go."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _error(f"use {self.shown} as the output folder", exc) from None
        if not stat.S_ISDIR(st.st_mode):
            raise OutputError(f"{self.shown} is a file, not a folder",
                              hint="give a folder to create or replace with -o")
        if os.path.ismount(self.path):
            raise OutputError(f"{self.shown} is a mount point and cannot be replaced as a whole",
                              hint="give a folder inside it, e.g. -o "
                                   f"{os.path.join(self.shown, 'prompts')}")
        reason = self._foreign()
        if reason and not self.replace_foreign:
            raise OutputError(
                f"{self.shown} is not empty and not an output of compile-prompts ({reason}); "
                "refusing to replace it",
                hint="give a new or empty folder, or pass --overwrite-foreign to replace it")
        return stat.S_IMODE(st.st_mode)

    def _foreign(self) -> str | None:
        """Why OUT is not this tool's output (None if it is, or is empty)."""
        with _os(f"read the folder {self.shown}"):
            with os.scandir(self.path) as entries:
                if next(entries, None) is None:
                    return None
            try:
                manifest = json.loads((self.path / MANIFEST).read_bytes())
            except FileNotFoundError:
                return f"it has no {MANIFEST}"
            except ValueError:
                manifest = None
            if not is_ours(manifest):
                return f"its {MANIFEST} was not written by compile-prompts"
            files = {MANIFEST, *manifest["outputs"]}
            folders = {str(Path(f).parent.as_posix()) for f in files} - {"."}
            for top, dirs, names in os.walk(self.path):
                rel = Path(top).relative_to(self.path)
                for name in sorted(dirs) + sorted(names):
                    item = (rel / name).as_posix()
                    if item not in (folders if name in dirs and not (Path(top) / name).is_symlink()
                                    else files):
                        return f"{item} is not listed in its {MANIFEST}"
        return None

    # -- writing -------------------------------------------------------------------------

    def shown_path(self, rel: str) -> str:
        """How a file in OUT is named in messages."""
        return f"{self.shown}/{rel}"

    def adopt(self, rel: str) -> None:
        """Take over a file written into :attr:`staging` by someone else (a worker)."""
        if rel not in self._files:
            self._files.append(rel)

    def write_lines(self, rel: str, lines: Iterable[Any]) -> tuple[int, str]:
        """Write JSON lines to ``rel``; returns (line count, sha256 of the bytes)."""
        self.adopt(rel)
        return write_jsonl(self.staging / rel, lines, shown=self.shown_path(rel))

    def write_blocks(self, rel: str, blocks: Iterable[bytes]) -> str:
        """Write byte blocks to ``rel`` (see :func:`write_blocks`); returns their sha256."""
        self.adopt(rel)
        return write_blocks(self.staging / rel, blocks, shown=self.shown_path(rel))

    def write_bytes(self, rel: str, data: bytes) -> None:
        self.adopt(rel)
        path = self.staging / rel
        with _os(f"write {self.shown_path(rel)}"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

    def write_json(self, rel: str, obj: Any) -> None:
        """Write ``obj`` as the manifest is written (indented JSON, one final newline)."""
        self.write_bytes(rel, manifest_bytes(obj))

    # -- finishing -----------------------------------------------------------------------

    def commit(self) -> None:
        """Make the staging folder OUT, as one step; the old OUT is removed afterwards."""
        staging = self.staging
        _hook("before-swap")
        how = f"replace {self.shown}"
        leftover: Path | None = None
        with _signals_held():
            if not os.path.lexists(self.path):
                with _os(f"create {self.shown}"):
                    os.rename(staging, self.path)
            else:
                with _os(how):
                    if _exchange(staging, self.path):
                        leftover = staging
                    else:
                        os.rename(self.path, self._old)
                        _hook("after-move-old")
                        try:
                            os.rename(staging, self.path)
                        except OSError:
                            os.rename(self._old, self.path)
                            raise
                        leftover = self._old
            self._staging = None
            self._files.clear()
        _hook("after-swap")
        try:
            if leftover is not None:
                _remove(leftover)
        except OSError as exc:  # the new OUT is in place; the next run retries the removal
            warnings.warn(PromptCompilerWarning(
                f"cannot remove the previous output {leftover}: {exc.strerror or exc}; "
                "the next run into this folder removes it"), stacklevel=2)
        finally:
            self._unlock()

    def abort(self) -> None:
        """Delete the staging folder (OUT stays as it was) and release the lock."""
        staging, self._staging = self._staging, None
        self._files.clear()
        try:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
        finally:
            self._unlock()
