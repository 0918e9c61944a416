"""Stretches of the main thread that a stop signal must not break into.

The command's handler for SIGINT/SIGTERM/SIGHUP raises an exception in the main thread
(:mod:`prompt_compiler.cli.signals`), wherever that thread is. Raised in the middle of a
queue, lock or process-pool operation it could leave them broken: a helper thread
waiting forever for a block that never comes, a pool's lock never released. Code doing
such operations wraps them in :func:`deferred`; a signal that arrives meanwhile is
delivered again (``signal.raise_signal``) as the outermost such stretch ends, at a point
where unwinding is safe. Other threads are never affected (handlers run in the main one).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["defer", "deferred"]

_depth = 0
_pending: list[int] = []


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold stop signals back (see the module docstring) while the block runs."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if not _depth and _pending:
            signum = _pending[0]
            _pending.clear()
            signal.raise_signal(signum)


def defer(signum: int) -> bool:
    """For a signal handler: keep ``signum`` for the end of the current stretch and return
    True if the main thread is in one; False if the handler may act now."""
    if _depth:
        _pending.append(signum)
        return True
    return False
