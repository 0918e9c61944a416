"""Worker processes that never outlive the run that started them.

:func:`init_worker` is the ``initializer`` of every ``--jobs`` process pool: the worker
asks the Linux kernel to kill it when its parent dies (``PR_SET_PDEATHSIG``), and a
watchdog thread (every platform) exits it within a second once its parent is gone.
SIGINT is left to the parent (which stops the pool), SIGTERM kills the worker.
:func:`stop_workers` ends a pool's processes at once when the run stops early.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: --jobs 1 runs never import multiprocessing
    from concurrent.futures import Future, ProcessPoolExecutor

__all__ = ["init_worker", "stop_workers"]

_PR_SET_PDEATHSIG = 1


def init_worker(parent: int) -> None:
    """Pool initializer; ``parent`` is the pid of the process that made the pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
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


def stop_workers(pool: ProcessPoolExecutor, futures: Iterable[Future[Any]] = ()) -> None:
    """Cancel what has not started and end the pool's processes now (not after their task)."""
    for fut in futures:
        fut.cancel()
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
    pool.shutdown(wait=False, cancel_futures=True)
