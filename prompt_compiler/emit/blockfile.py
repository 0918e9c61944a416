"""Files written from byte blocks by a helper thread, hashed as they are written.

:func:`write_blocks` is the one place that opens such a file, writes it, appends part files,
and closes it (or aborts it on an error); :class:`BlockFile` is the writer. A part file is
the output of another process (a row range of a pair split across ``--jobs``), copied in
the kernel where it can be.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import OutputError
from ..safety.interrupts import deferred

__all__ = ["BlockFile", "os_error", "os_errors", "write_blocks"]


def os_error(what: str, exc: OSError, hint: str | None = None) -> OutputError:
    """An OSError as the OutputError saying what was being done (``what`` names the path)."""
    reason = exc.strerror or str(exc)
    return OutputError(f"cannot {what}: {reason}", hint=hint)


@contextlib.contextmanager
def os_errors(what: str, hint: str | None = None) -> Iterator[None]:
    """Turn an OSError into an OutputError that says what was being done to which path."""
    try:
        yield
    except OutputError:
        raise
    except OSError as exc:
        raise os_error(what, exc, hint) from None


def write_blocks(path: Path, blocks: Iterable[bytes], *, shown: str, digest: bool = True,
                 parts: Iterable[Path | bytes] = ()) -> str:
    """Write byte blocks (whole JSON lines) to ``path``, then what ``parts`` yields in order:
    a part file is appended (and deleted once appended), bytes are written; returns the
    sha256 of the file's bytes (``""`` with ``digest=False``).

    ``shown`` is the file's name for messages; errors of the blocks' or the parts' producer
    pass through (the file is left for the caller's folder to remove), an OS error is an
    OutputError.
    """
    out = BlockFile(path, shown=shown, digest=digest)
    try:
        for block in blocks:
            out.write(block)
        for part in parts:
            if isinstance(part, Path):
                out.append(part)
            else:
                out.write(part)
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
        with os_errors(f"write {shown}"):
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
        with deferred():  # a stop signal inside put() could leave the queue's lock taken
            self._queue.put(block)

    def append(self, part: Path) -> None:
        """Queue the whole file ``part`` to be appended (and deleted afterwards)."""
        self._check()
        with deferred():
            self._queue.put(part)

    def close(self) -> str:
        """Write what is queued, close the file and return its sha256 (``""`` when the
        file was made with ``digest=False``)."""
        self._finish()
        with os_errors(f"write {self.shown}"):
            self._check()
            os.close(self._fd)
        return self._hash.hexdigest() if self._digest else ""

    def abort(self) -> None:
        """Stop writing (the file is left as it is, for the caller to remove)."""
        self._finish()
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def _finish(self) -> None:
        with deferred():  # the thread is told to stop and joined, whatever arrives meanwhile
            if self._thread.is_alive():
                self._queue.put(None)
                self._thread.join()

    def _check(self) -> None:
        if self._failed:
            with os_errors(f"write {self.shown}"):
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
