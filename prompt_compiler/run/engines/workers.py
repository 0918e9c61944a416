"""Worker processes that never outlive the run that started them.

:func:`init_worker` is the ``initializer`` of every ``--jobs`` process pool: the worker
asks the Linux kernel to kill it when its parent dies (``PR_SET_PDEATHSIG``), and a
watchdog thread (every platform) exits it within a second once its parent is gone.
SIGINT is left to the parent (which stops the pool), SIGTERM kills the worker.
:func:`stop_workers` ends a pool's processes at once when the run stops early.

A worker that dies (SIGKILL, SIGTERM, out of memory) is one error line naming the pair it
held: each task runs :func:`labelled`, which leaves ``.worker-<pid>`` (the pair) in the
staging folder while it runs; :class:`Watch` sees which worker ended first, and
:func:`result` turns the pool's ``BrokenProcessPool`` into a :class:`WorkerError` saying so.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ...errors import WorkerError
from .relay import catching, relay

if TYPE_CHECKING:  # annotations only: --jobs 1 runs never import multiprocessing
    from concurrent.futures import Future, ProcessPoolExecutor

__all__ = ["Watch", "init_worker", "labelled", "pool_context", "result", "stop_workers"]

_PR_SET_PDEATHSIG = 1


def pool_context() -> Any:
    """How the pool starts its workers: forked (they inherit the prepared jobs), unless this
    process has loaded PyTorch (an embedding retriever), whose thread pools do not survive a
    fork: a forked worker using them waits forever on a lock its parent's thread held. Then
    the workers start from a fork server (a fresh interpreter) and prepare their jobs from the
    pairs again."""
    import multiprocessing

    if "torch" in sys.modules and "forkserver" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("forkserver")
    return None


def init_worker(parent: int) -> None:
    """Pool initializer; ``parent`` is the pid of the process that made the pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminated)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    # The process that started us: the run itself (fork) or its fork server, which ends with it.
    watched = os.getppid()
    if watched != parent and not _alive(parent):  # the run died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(watched,), name="parent-watchdog", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _watch(watched: int) -> None:
    while os.getppid() == watched:
        time.sleep(0.5)
    os._exit(1)


_MARK: list[str] = []
"""In a worker: the label file of the task it runs."""
_FOLDER: list[str] = []
"""In a worker: the folder of its label files."""


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM in a worker: stamp the task's label file with the time (the first worker
    to die is the one that was killed; the pool then terminates the others), then die of
    the signal as before."""
    when = time.monotonic_ns()
    with contextlib.suppress(OSError):
        if _MARK:
            os.rename(_MARK[0], f"{_MARK[0]}.{when}")
        elif _FOLDER:  # between tasks
            os.close(os.open(os.path.join(_FOLDER[0], f".worker-{os.getpid()}.{when}"),
                             os.O_WRONLY | os.O_CREAT, 0o600))
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def labelled(folder: str, label: str, fn: Callable[[Any], Any], arg: Any) -> Any:
    """In a worker: ``fn(arg)``, with ``folder/.worker-<pid>`` holding ``label`` meanwhile;
    the value and the warnings it raised (:func:`result` raises them in the run's process)."""
    mark = os.path.join(folder, f".worker-{os.getpid()}")
    with open(mark, "w", encoding="utf-8") as fh:
        fh.write(label)
    _MARK[:] = [mark]
    _FOLDER[:] = [folder]
    try:
        with catching() as caught:
            value = fn(arg)
        return value, caught
    finally:
        _MARK.clear()
        with contextlib.suppress(OSError):
            os.unlink(mark)


class Watch:
    """Which of a pool's workers ended first, and what it was compiling (see the module
    docstring). :meth:`start` once the pool has its processes (after the first submit)."""

    def __init__(self, pool: ProcessPoolExecutor, folder: str) -> None:
        self.pool = pool
        self.folder = folder
        self.first: int | None = None
        self.procs: dict[int, Any] = {}

    def start(self) -> None:
        self.procs = dict(getattr(self.pool, "_processes", None) or {})
        if self.procs:
            threading.Thread(target=self._wait, name="worker-watch", daemon=True).start()

    def _wait(self) -> None:
        from multiprocessing.connection import wait

        by_sentinel = {p.sentinel: pid for pid, p in self.procs.items()}
        with contextlib.suppress(Exception):
            ended = wait(list(by_sentinel))
            if len(ended) == 1:
                self.first = by_sentinel[ended[0]]

    def error(self) -> WorkerError:
        """The error for a pool whose worker died."""
        held: dict[int, str] = {}
        stamped: dict[int, int] = {}  # pid -> when SIGTERM reached it
        with contextlib.suppress(OSError), os.scandir(self.folder) as entries:
            for entry in entries:
                name, _, when = entry.name.partition(".worker-")[2].partition(".")
                if not name.isdigit() or int(name) not in self.procs:
                    continue
                with contextlib.suppress(OSError), open(entry.path, encoding="utf-8") as fh:
                    held[int(name)] = fh.read()
                if when.isdigit():
                    stamped[int(name)] = int(when)
        codes = {worker: getattr(p, "exitcode", None) for worker, p in self.procs.items()}
        term = -int(signal.SIGTERM)
        odd = [p for p in self.procs if codes.get(p) not in (None, term)]
        pid: int | None = None
        if len(odd) == 1:  # killed otherwise than by the pool's SIGTERM
            pid = odd[0]
        elif stamped:  # SIGTERM: the first to receive it
            pid = min(stamped, key=stamped.__getitem__)
        elif self.first in codes:
            pid = self.first
        else:
            found = sorted(held)
            pid = found[0] if found else None
        code = codes.get(pid) if pid is not None else None
        how = (f"killed by {signal.Signals(-code).name}" if code is not None and code < 0
               and -code in signal.valid_signals() else
               f"exit status {code}" if code is not None else "ended")
        label = held.get(pid, "") if pid is not None else ""
        what = f" while compiling {label}" if label else ""
        who = f" (pid {pid})" if pid is not None else ""
        return WorkerError(f"a worker process{who} died ({how}){what}; the output folder is "
                           "unchanged", hint="out of memory or killed from outside? run again, "
                           "or with --jobs 1")


def result(fut: Future[Any], watch: Watch) -> Any:
    """``fut``'s result (a :func:`labelled` call's value, its warnings raised here), waited
    for in short stretches that a stop signal does not break into; a dead worker is a
    :class:`WorkerError` naming the pair it held."""
    from concurrent.futures import wait
    from concurrent.futures.process import BrokenProcessPool

    from ...safety.interrupts import deferred

    while True:
        with deferred():
            done, _ = wait([fut], timeout=0.1)
        if done:
            break
    try:
        value, caught = fut.result()
    except BrokenProcessPool:
        # A stop signal sent to the whole process group kills the workers too: let this
        # process's own handler act first, so the run ends as stopped, not as a dead worker.
        time.sleep(0.05)
        raise watch.error() from None
    relay(caught)
    return value


def stop_workers(pool: ProcessPoolExecutor, futures: Iterable[Future[Any]] = ()) -> None:
    """End the pool's processes now (not after their task) and wait for its manager thread.

    Futures are not cancelled first: the pool's manager thread marks every pending future
    failed once its workers are gone, and a cancelled one would make it raise
    ``InvalidStateError`` (a traceback from a thread). Signals wait until this is done.
    """
    from ...safety.interrupts import deferred

    with deferred():
        procs = list((getattr(pool, "_processes", None) or {}).values())
        for proc in procs:
            with contextlib.suppress(Exception):
                proc.terminate()
        for proc in procs:
            with contextlib.suppress(Exception):
                proc.join(5)
                if proc.is_alive():
                    proc.kill()
                    proc.join(1)
        with contextlib.suppress(Exception):
            pool.shutdown(wait=False)
        manager = getattr(pool, "_executor_manager_thread", None)
        if manager is not None:
            with contextlib.suppress(Exception):
                manager.join(5)
