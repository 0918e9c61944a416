"""SIGINT, SIGTERM and SIGHUP end the command with one line and ``128 + signal``.

From the first line of the process (:func:`install`, run by ``prompt_compiler/__init__.py``
when the command line is ``compile-prompts`` or ``python -m prompt_compiler``) to its last,
a stop signal prints ``compile-prompts: stopped by SIGTERM`` once and exits with status
143 (130 for SIGINT, 129 for SIGHUP) at once with ``os._exit``: no traceback from an import,
a pool's teardown or the interpreter's shutdown can follow. A run that has something to
clean up (the compile command: its staging folder) takes the signals over meanwhile
(:func:`stopping`): the first one raises :class:`Stopped` in the main thread, which
unwinds the run, and later ones are ignored until the run has reported the stop; inside
a :func:`prompt_compiler.safety.interrupts.deferred` stretch (queue, lock and pool operations)
it waits for the stretch's end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from types import FrameType

from ..safety.interrupts import defer

__all__ = ["Stopped", "finished", "install", "reported", "stopped", "stopping"]

_NAMES = ("SIGINT", "SIGTERM", "SIGHUP")
_state: dict[str, int] = {}
"""``first``: the signal the process is stopping for, once one arrived."""


def _signals() -> list[int]:
    return [getattr(signal, n) for n in _NAMES if hasattr(signal, n)]


class Stopped(BaseException):
    """A stop signal arrived; unwinds like KeyboardInterrupt so staging is removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _line(signum: int) -> bytes:
    return f"compile-prompts: stopped by {signal.Signals(signum).name}\n".encode()


def reported(signum: int) -> int:
    """Print the stop line for ``signum`` (once per process); the exit status to return."""
    first = _state.setdefault("first", signum)
    if not _state.get("printed"):
        _state["printed"] = 1
        with contextlib.suppress(OSError):
            os.write(2, _line(first))
    return 128 + first


def stopped() -> bool:
    """Whether a stop signal arrived."""
    return "first" in _state


def _quit(signum: int, frame: FrameType | None) -> None:
    """Outside a run's clean-up: flush what was printed, one line, exit now."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    status = reported(signum)
    os._exit(status)


def install() -> None:
    """Make every stop signal end the process at once (see the module docstring)."""
    with contextlib.suppress(ValueError, OSError):  # ValueError: not the main thread
        for sig in _signals():
            signal.signal(sig, _quit)


def finished() -> None:
    """The command has its exit status: block the stop signals until the process ends.

    The interpreter's shutdown puts the default handlers back; a SIGTERM arriving then would
    kill the finished command (status -15, after its output and error line were written).
    Blocked, it is simply not delivered: the command ends with its own status."""
    if hasattr(signal, "pthread_sigmask"):
        with contextlib.suppress(ValueError, OSError):
            signal.pthread_sigmask(signal.SIG_BLOCK, _signals())


# Code that an exception raised from a signal handler can break: locks, queues, pools,
# at-fork hooks, context managers' exits, imports; and finalizers (``__del__``), where an
# exception is only printed ("Exception ignored in ...") and the signal lost.
_FRAGILE = tuple(os.path.normcase(os.path.join(os.path.dirname(os.__file__), name)) for name in (
    "threading.py", "queue.py", "concurrent", "multiprocessing", "logging", "weakref.py",
    "contextlib.py", "importlib", "selectors.py", "subprocess.py"))


def _fragile(frame: FrameType | None) -> bool:
    """Whether unwinding from ``frame`` (the one the signal interrupted) now could break
    something (see ``_FRAGILE``)."""
    if frame is None:
        return False
    name = os.path.normcase(frame.f_code.co_filename)
    if name.startswith(_FRAGILE) or name.startswith("<frozen") or frame.f_code.co_name in (
            "__exit__", "__enter__"):
        return True
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _stop(signum: int, frame: FrameType | None) -> None:
    if "first" in _state or defer(signum):
        return  # the run is already stopping, or the signal comes back when it may
    if _fragile(frame) and hasattr(signal, "setitimer"):
        _state["later"] = signum  # try again in 10 ms, wherever the main thread is then
        signal.signal(signal.SIGALRM, _again)
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        return
    _state["first"] = signum
    raise Stopped(signum)


def _again(_: int, frame: FrameType | None) -> None:
    signum = _state.pop("later", None)
    if signum is None:
        return
    if _state.get("active"):
        _stop(signum, frame)
    else:  # the run has ended meanwhile: stop the process as outside a run
        _quit(signum, frame)


@contextlib.contextmanager
def stopping() -> Iterator[None]:
    """While the block runs, a stop signal raises :class:`Stopped` in the main thread
    (once); afterwards the handlers are what they were (in the command: :func:`install`'s)."""
    _state.clear()
    try:
        old = {sig: signal.signal(sig, _stop) for sig in _signals()}
    except ValueError:  # not the main thread (a library caller): leave signals alone
        yield
        return
    _state["active"] = 1
    try:
        yield
    finally:
        _state.pop("active", None)
        for sig, handler in old.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        later = _state.pop("later", None)
        if later is not None:  # a signal still waiting for a safe moment: it ends the process
            if hasattr(signal, "setitimer"):
                signal.setitimer(signal.ITIMER_REAL, 0)
            if old.get(later) is _quit:
                _quit(later, None)
            else:
                signal.raise_signal(later)
