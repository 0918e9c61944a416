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
anything else, from what the dead run recorded in the lock file (its staging folder's
name and the (device, inode) of every folder it made): that staging folder is removed;
``old`` goes back to OUT if OUT is absent, and is removed otherwise. No run holds the
lock, so none is alive — no guessing by age — and nothing unrecorded is ever removed.

All of these are made through a descriptor of ``P``, never through a link, and must
belong to the user running (see :class:`OutputDir`): a foreign object at one of these
names is an error naming it. OUT may not lie inside another output of this tool, nor
hold one (or another run's lock), and it is checked again just before the swap.

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
import re
import secrets
import shutil
import signal
import stat
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from ..errors import OutputError, PromptCompilerWarning
from ..safety.interrupts import deferred
from .blockfile import BlockFile, write_blocks
from .blockfile import os_error as _error
from .blockfile import os_errors as _os
from .manifest import is_ours, listed_files, manifest_bytes
from .names import MANIFEST, from_disk, on_disk
from .records import record_bytes
from .shards import LocalSink

__all__ = ["BlockFile", "OutputDir", "write_blocks", "write_jsonl"]

_TAG = "compile-prompts"


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


# --- the folder beside OUT: names opened relative to it, never through a link -------------

_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_DIR_FD = (os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd
           and hasattr(os, "O_DIRECTORY"))
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_MANIFEST_MAX = 64 << 20  # a manifest.json larger than this is not one of ours
_MISSING = object()


def _euid() -> int | None:
    return os.geteuid() if hasattr(os, "geteuid") else None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "a file"


def _not_ours(st: os.stat_result, *, folder: bool = False) -> str | None:
    """Why an object this tool is about to use as its own is not (None: it may be)."""
    if (stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)) is False:
        return f"it is {_kind(st.st_mode)}, not a {'folder' if folder else 'regular file'}"
    euid = _euid()
    if euid is not None and st.st_uid != euid:
        return f"it belongs to another user (uid {st.st_uid})"
    if not folder and st.st_nlink > 1:
        return "it has other hard links"
    return None


def _refuse(path: Path | str, why: str) -> OutputError:
    return OutputError(f"{path}: refusing to use it, {why}; this run did not create it",
                       hint="remove it if no compile-prompts run is using it, "
                            "or write the output to another folder")


def _read_manifest(path: Path) -> Any:
    """``path`` parsed as JSON, without following a link or blocking on a pipe;
    ``_MISSING`` if absent, None if it is not a readable regular JSON file."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except FileNotFoundError:
        return _MISSING
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MANIFEST_MAX:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return json.loads(b"".join(chunks))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)


def _renameat2(dir_fd: int | None, a: str, b: str, flags: int) -> bool:
    """``renameat2(2)`` of two names in one folder (Linux); False where not available."""
    if not sys.platform.startswith("linux") or os.environ.get("PROMPT_COMPILER_TEST_NO_EXCHANGE"):
        return False
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    fd = _AT_FDCWD if dir_fd is None else dir_fd
    rc = fn(fd, os.fsencode(a), fd, os.fsencode(b), flags)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    import errno

    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False  # the kernel or this file system cannot: use plain renames
    raise OSError(err, os.strerror(err), b)


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
    with deferred():  # and a stop the command's handler put off to a later moment (its timer)
        with _handlers_held():
            yield


@contextlib.contextmanager
def _handlers_held() -> Iterator[None]:
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

    Everything made beside OUT is made through a descriptor of OUT's parent folder and
    never through a link: the lock is opened with ``O_NOFOLLOW`` and must be a regular
    file of this user with one link; the staging folder is new (``mkdir``), private
    (``0700``) until the swap, and checked to be this user's. The lock records which
    staging folder and which folders (device, inode) this run made; a later run removes
    only those, so nothing else beside OUT is ever deleted.
    """

    def __init__(self, out: str | os.PathLike[str], *, replace_foreign: bool = False) -> None:
        self.given = os.fspath(out)
        self.shown = self.given.rstrip("/\\") or self.given
        self.path = Path(os.path.realpath(out))
        self.replace_foreign = replace_foreign
        self._parent = self.path.parent
        self._pfd: int | None = None
        self._lock_fd: int | None = None
        self._lock_name = f".{self.path.name}.{_TAG}-lock"
        self._lock_path = self._parent / self._lock_name
        self._old_name = f".{self.path.name}.{_TAG}-old"
        self._old = self._parent / self._old_name
        self._staging: Path | None = None
        self._staging_fd: int | None = None
        self._staging_id: tuple[int, int] | None = None
        self._mode: int | None = None
        self._previous = b""
        self._record: dict[str, Any] = {}
        self._files: list[str] = []
        self._keep_lock = False

    # -- names beside OUT ----------------------------------------------------------------

    def _at(self, name: str) -> tuple[str, dict[str, Any]]:
        """``name`` in OUT's parent as (path argument, keyword arguments) of an os call."""
        if self._pfd is not None:
            return name, {"dir_fd": self._pfd}
        return str(self._parent / name), {}

    def _lstat(self, name: str) -> os.stat_result | None:
        where, kw = self._at(name)
        try:
            return os.stat(where, follow_symlinks=False, **kw)
        except FileNotFoundError:
            return None

    def _rename(self, a: str, b: str) -> None:
        pa, pb = self._names(a, b)
        if self._pfd is not None:
            os.rename(pa, pb, src_dir_fd=self._pfd, dst_dir_fd=self._pfd)
        else:
            os.rename(pa, pb)

    def _rmtree(self, name: str) -> None:
        where, kw = self._at(name)
        if kw and shutil._use_fd_functions:  # type: ignore[attr-defined]
            shutil.rmtree(where, **kw)  # fd-based: never follows a link inside
        else:
            shutil.rmtree(self._parent / name)

    def _remove_if_made(self, name: str, made: set[tuple[int, int]], *,
                        empty: bool = False) -> bool:
        """Remove the folder ``name`` if it is one this tool made (its (device, inode) is
        recorded), or, with ``empty``, an empty folder of this user; True if removed."""
        st = self._lstat(name)
        if st is None or _not_ours(st, folder=True):
            return False
        if (st.st_dev, st.st_ino) in made:
            self._rmtree(name)
            return True
        if empty:
            where, kw = self._at(name)
            with contextlib.suppress(OSError):
                os.rmdir(where, **kw)
                return True
        return False

    # -- opening -------------------------------------------------------------------------

    def recover(self) -> None:
        """Only the first step of :meth:`open`: lock, clean what dead runs left, unlock.

        Run before anything slow (loading configs), so a half-finished swap is repaired
        and a concurrent run is reported at once, even if this run fails later.
        """
        if self._lock_fd is not None or not self._parent.is_dir():
            return
        self._check_link()
        with _signals_held():  # a stop signal now would leave the lock file behind
            try:
                self._open_parent()
                self._lock()
                self._recover()
            finally:
                self._release()

    def open(self) -> OutputDir:
        """Lock OUT, recover what dead runs left, check OUT may be replaced, make staging."""
        if self._staging is not None:
            return self
        if not self.path.name or self.path == self.path.parent:
            raise OutputError(f"cannot use {self.shown} as the output folder",
                              hint="give a folder to create or replace, e.g. -o out")
        self._check_link()
        self._make_parent()
        try:
            with _signals_held():  # a stop signal takes effect once the lock and staging are held
                self._open_parent()
                self._lock()
                self._recover()
                self._check_ancestors()
                self._mode = self._check_target()
                if self._mode is None:
                    umask = os.umask(0o022)
                    os.umask(umask)
                    self._mode = 0o777 & ~umask
                self._make_staging()
        except BaseException:  # also the held stop signal, raised as the block ends
            self.abort()
            raise
        return self

    def _make_parent(self) -> None:
        parent = self._parent
        for folder in (parent, *parent.parents):
            if os.path.lexists(folder):
                if not folder.is_dir():
                    raise OutputError(
                        f"cannot create {self.shown}: {folder} is a file, not a folder")
                break
        with _os(f"create the folder {parent}"):
            parent.mkdir(parents=True, exist_ok=True)

    def _check_link(self) -> None:
        """A symlink on the way to OUT (OUT itself included) is followed only if this user
        or root made it: another user's link in a shared folder could send the output (and
        the lock and staging folder) anywhere."""
        euid = _euid()
        if euid is None:
            return
        path = os.path.abspath(self.given)
        parts = Path(path).parts
        for i in range(1, len(parts)):
            step = os.path.join(*parts[: i + 1])
            try:
                st = os.lstat(step)
            except OSError:
                return
            if stat.S_ISLNK(st.st_mode) and st.st_uid not in (euid, 0):
                shown = self.shown if i == len(parts) - 1 else step
                raise _refuse(shown, f"it is a symbolic link of another user (uid {st.st_uid})")

    def _open_parent(self) -> None:
        if self._pfd is None and _DIR_FD:
            with _os(f"open the folder {self._parent}"):
                self._pfd = os.open(self._parent, os.O_RDONLY | os.O_DIRECTORY)

    def _make_staging(self) -> None:
        name = f".{self.path.name}.{_TAG}-staging-{secrets.token_hex(4)}"
        staging = self._parent / name
        self._record = {"staging": name, "made": []}
        self._write_record()
        where, kw = self._at(name)
        with _os(f"create the staging folder {staging}"):
            os.mkdir(where, 0o700, **kw)
            fd = os.open(where, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW, **kw)
        st = os.fstat(fd)
        why = _not_ours(st, folder=True)
        if why:
            os.close(fd)
            raise _refuse(staging, why)
        self._staging_fd, self._staging_id = fd, (st.st_dev, st.st_ino)
        self._record["made"].append(list(self._staging_id))
        self._write_record()
        self._staging = staging

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
        where, kw = self._at(self._lock_name)
        while True:
            try:
                fd = os.open(where, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _NONBLOCK, 0o644, **kw)
            except OSError as exc:
                st = self._lstat(self._lock_name)
                if st is not None and not stat.S_ISREG(st.st_mode):
                    raise _refuse(lock, f"it is {_kind(st.st_mode)}, not a regular file") from None
                raise _error(f"create the lock file {lock}", exc) from None
            why = _not_ours(os.fstat(fd))
            if why:
                os.close(fd)
                raise _refuse(lock, why)
            if not _try_lock(fd):
                holder = ""
                with contextlib.suppress(OSError, ValueError):
                    first = os.pread(fd, 64, 0).split(b"\n", 1)[0]
                    holder = f" (pid {int(first.decode().strip())})"
                os.close(fd)
                raise OutputError(
                    f"{self.shown}: another compile-prompts run{holder} is writing this output "
                    f"folder; it holds the lock {lock}", hint="wait for it to finish or stop it")
            # the last holder may have removed the file between our open and our lock
            st = self._lstat(self._lock_name)
            if st is not None and st.st_ino == os.fstat(fd).st_ino:
                break
            os.close(fd)
        with contextlib.suppress(OSError):
            self._previous = os.pread(fd, 1 << 16, 0)  # what a dead holder recorded
        self._lock_fd = fd
        _HELD.add(fd)
        self._record = {}
        self._write_record()

    def _write_record(self) -> None:
        """The lock's content: this run's pid, then (JSON) what it made beside OUT."""
        fd = self._lock_fd
        if fd is None:
            return
        data = f"{os.getpid()}\n{json.dumps(self._record, sort_keys=True)}\n".encode()
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)

    def _release(self) -> None:
        """Close the staging folder's descriptor, remove and release the lock, close OUT's
        parent."""
        sfd, self._staging_fd = self._staging_fd, None
        if sfd is not None:
            with contextlib.suppress(OSError):
                os.close(sfd)
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            with contextlib.suppress(OSError):  # while still holding it; see _lock
                st = self._lstat(self._lock_name)
                if st is not None and st.st_ino == os.fstat(fd).st_ino and not self._keep_lock:
                    where, kw = self._at(self._lock_name)
                    os.unlink(where, **kw)
            _HELD.discard(fd)
            os.close(fd)
        pfd, self._pfd = self._pfd, None
        if pfd is not None:
            with contextlib.suppress(OSError):
                os.close(pfd)

    def _recover(self) -> None:
        """Clean what a dead run recorded in the lock (no other run is alive: we hold it).

        Only the folders it made, by name and (device, inode), are removed; a folder
        beside OUT that merely looks like a staging folder is left alone.
        """
        try:
            record = json.loads(self._previous.split(b"\n", 1)[1] or b"{}")
        except (IndexError, ValueError, RecursionError):
            record = {}
        self._previous = b""
        if not isinstance(record, dict):
            return
        made = {(int(m[0]), int(m[1])) for m in record.get("made") or ()
                if isinstance(m, list) and len(m) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in m)}
        staging = record.get("staging")
        pattern = rf"\.{re.escape(self.path.name)}\.{_TAG}-staging-[0-9a-f]{{8}}"
        if isinstance(staging, str) and re.fullmatch(pattern, staging):
            with _os(f"remove {self._parent / staging}, left by a run that died"):
                self._remove_if_made(staging, made, empty=True)
        st = self._lstat(self._old_name)
        if st is None or _not_ours(st, folder=True) or (st.st_dev, st.st_ino) not in made:
            return
        if self._lstat(self.path.name) is None:  # died between the two renames: put it back
            with _os(f"restore {self.shown} from {self._old}"):
                self._rename(self._old_name, self.path.name)
        else:  # the swap had finished: the old copy is garbage
            with _os(f"remove {self._old}, left by a run that died"):
                self._rmtree(self._old_name)

    def _check_ancestors(self) -> None:
        """OUT may not lie inside another output of this tool (replacing that would delete
        it, and this run would make that one foreign)."""
        for folder in self.path.parents:
            if is_ours(_read_manifest(folder / MANIFEST)):
                raise OutputError(
                    f"{self.shown} is inside {folder}, an output folder of compile-prompts "
                    f"(its {MANIFEST} says so), which is replaced as a whole",
                    hint=f"write the output outside {folder}")

    def _check_target(self, again: bool = False) -> int | None:
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
        when = " (it changed during this run)" if again else ""
        if reason and not self.replace_foreign:
            raise OutputError(
                f"{self.shown} is not empty and not an output of compile-prompts ({reason}){when}; "
                "refusing to replace it",
                hint="give a new or empty folder, or pass --overwrite-foreign to replace it")
        if reason:
            self._check_nested()
        return stat.S_IMODE(st.st_mode)

    def _foreign(self) -> str | None:
        """Why OUT is not this tool's output (None if it is, or is empty)."""
        with _os(f"read the folder {self.shown}"):
            with os.scandir(self.path) as entries:
                if next(entries, None) is None:
                    return None
            manifest = _read_manifest(self.path / MANIFEST)
            if manifest is _MISSING:
                return f"it has no {MANIFEST}"
            if not is_ours(manifest):
                return f"its {MANIFEST} was not written by compile-prompts"
            files = {MANIFEST, *listed_files(manifest)}
            folders = {p.as_posix() for f in files for p in Path(f).parents} - {"."}
            for top, dirs, names in os.walk(self.path):
                rel = Path(top).relative_to(self.path)
                for name in sorted(dirs) + sorted(names):
                    item = from_disk((rel / name).as_posix())
                    if item not in (folders if name in dirs and not (Path(top) / name).is_symlink()
                                    else files):
                        return f"{item} is not listed in its {MANIFEST}"
        return None

    def _check_nested(self) -> None:
        """Even with ``replace_foreign``: OUT may not hold another output of this tool or a
        run's lock (a run writing inside OUT)."""
        lock = re.compile(rf"\..+\.{_TAG}-lock")
        with _os(f"read the folder {self.shown}"):
            for top, _dirs, names in os.walk(self.path):
                rel = Path(top).relative_to(self.path)
                for name in sorted(names):
                    inner = f"{self.shown}/{from_disk((rel / name).as_posix())}"
                    if lock.fullmatch(name):
                        raise OutputError(
                            f"{self.shown} holds {inner}, the lock of another compile-prompts "
                            "output folder; refusing to replace it",
                            hint="wait for that run to finish, or write the output elsewhere")
                    if top != str(self.path) and name == MANIFEST and is_ours(
                            _read_manifest(Path(top) / name)):
                        raise OutputError(
                            f"{self.shown} holds {os.path.dirname(inner)}, another output folder "
                            "of compile-prompts; refusing to replace it",
                            hint="write the output to another folder")

    # -- writing -------------------------------------------------------------------------

    def shown_path(self, rel: str) -> str:
        """How a file in OUT is named in messages."""
        return f"{self.shown}/{rel}"

    def sink(self) -> LocalSink:
        """Where shards go (``--shard-rows``): the staging folder."""
        return LocalSink(self.staging, self.shown)

    def adopt(self, rel: str) -> None:
        """Take over a file written into :attr:`staging` by someone else (a worker)."""
        if rel not in self._files:
            self._files.append(rel)

    def discard(self, rel: str) -> None:
        """Remove a file this run staged (one converted into another format)."""
        if rel in self._files:
            self._files.remove(rel)
        with _os(f"remove {self.shown_path(rel)}"):
            (self.staging / rel).unlink(missing_ok=True)

    def write_lines(self, rel: str, lines: Iterable[Any]) -> tuple[int, str]:
        """Write JSON lines to ``rel``; returns (line count, sha256 of the bytes)."""
        self.adopt(rel)
        return write_jsonl(self.staging / on_disk(rel), lines, shown=self.shown_path(rel))

    def write_blocks(self, rel: str, blocks: Iterable[bytes]) -> str:
        """Write byte blocks to ``rel`` (see :func:`write_blocks`); returns their sha256."""
        self.adopt(rel)
        return write_blocks(self.staging / on_disk(rel), blocks, shown=self.shown_path(rel))

    def write_bytes(self, rel: str, data: bytes) -> None:
        self.adopt(rel)
        path = self.staging / on_disk(rel)
        with _os(f"write {self.shown_path(rel)}"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

    def write_json(self, rel: str, obj: Any) -> None:
        """Write ``obj`` as the manifest is written (indented JSON, one final newline)."""
        self.write_bytes(rel, manifest_bytes(obj))

    # -- finishing -----------------------------------------------------------------------

    def _staging_name(self) -> str:
        """The staging folder's name, checked to be still the folder this run made."""
        staging = self.staging
        st = self._lstat(staging.name)
        if st is None or (st.st_dev, st.st_ino) != self._staging_id:
            raise OutputError(f"the staging folder {staging} was moved or replaced during the run",
                              hint="do not touch the folders beside OUT while a run writes it")
        return staging.name

    def commit(self) -> None:
        """Make the staging folder OUT, as one step; the old OUT is removed afterwards."""
        try:
            self._commit()
        except BaseException:
            self.abort()
            raise

    def _commit(self) -> None:
        name = self._staging_name()
        _hook("before-swap")
        self._check_target(again=True)  # e.g. a run into OUT/child started meanwhile
        with _os(f"replace {self.shown}"):
            assert self._staging_fd is not None and self._mode is not None
            os.fchmod(self._staging_fd, self._mode)
        out = self.path.name
        leftover: str | None = None
        with _signals_held():
            current = self._lstat(out)
            if current is None:
                with _os(f"create {self.shown}"):
                    if not _renameat2(self._pfd, *self._names(name, out), _RENAME_NOREPLACE):
                        self._rename(name, out)
            else:
                self._record["made"].append([current.st_dev, current.st_ino])
                self._write_record()  # a dead run's next run may remove the old OUT
                with _os(f"replace {self.shown}"):
                    if _renameat2(self._pfd, *self._names(name, out), _RENAME_EXCHANGE):
                        leftover = name
                    else:
                        if self._lstat(self._old_name) is not None:
                            raise _refuse(self._old, "it is in the way of the swap")
                        self._rename(out, self._old_name)
                        _hook("after-move-old")
                        try:
                            self._rename(name, out)
                        except OSError:
                            self._rename(self._old_name, out)
                            raise
                        leftover = self._old_name
            self._staging = None
            self._files.clear()
            _hook("after-swap")
            if leftover is not None:  # removed whole, with the lock, whatever arrives meanwhile
                try:
                    self._remove_if_made(leftover, {(m[0], m[1]) for m in self._record["made"]})
                except OSError as exc:  # the new OUT is in place; the next run retries
                    warnings.warn(PromptCompilerWarning(
                        f"cannot remove the previous output {self._parent / leftover}: "
                        f"{exc.strerror or exc}; the next run into this folder removes it"),
                        stacklevel=3)
                    self._keep_lock = True  # the lock file and its record, for that run
            self._check_in_place()
            self._release()

    def _names(self, a: str, b: str) -> tuple[str, str]:
        return self._at(a)[0], self._at(b)[0]

    def _check_in_place(self) -> None:
        """After the swap: OUT is the folder built here, in the folder this run opened
        (another process replacing OUT's parent meanwhile would have taken it away)."""
        try:
            st = os.stat(self.path)
            same_parent = self._pfd is None or os.stat(self._parent).st_ino == os.fstat(
                self._pfd).st_ino
        except OSError:
            st, same_parent = None, False
        if st is None or not same_parent or (st.st_dev, st.st_ino) != self._staging_id:
            raise OutputError(
                f"{self.shown} is not in place after the run: its parent folder {self._parent} "
                "was replaced or moved by another process meanwhile",
                hint="do not replace a folder while a run writes inside it")

    def abort(self) -> None:
        """Delete the staging folder (OUT stays as it was) and release the lock."""
        with _signals_held():  # removed whole, with the lock, whatever arrives meanwhile
            staging, self._staging = self._staging, None
            self._files.clear()
            try:
                if staging is not None and self._staging_id is not None:
                    with contextlib.suppress(OSError):
                        self._remove_if_made(staging.name, {self._staging_id})
            finally:
                self._release()
