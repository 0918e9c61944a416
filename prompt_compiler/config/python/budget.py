"""The bounds a Python config loads in: steps, CPU seconds, memory, and value sizes.

While a config runs, :class:`Guard` bounds it: every loop turn, comprehension item and call
of the config is a step (``PROMPT_COMPILER_MAX_CONFIG_STEPS``; counted, so the outcome does
not depend on the machine's load), CPU seconds are a far backstop
(``PROMPT_COMPILER_MAX_CONFIG_SECONDS``), and on Linux the address space is capped at the
current size plus ``PROMPT_COMPILER_MAX_CONFIG_BYTES``. ``**``, ``*`` and ``<<`` (rewritten
by :mod:`.check` into :func:`guarded_pow`, :func:`guarded_mul` and :func:`guarded_lshift`)
refuse an integer of more than 4,300 digits and a repeated string or list over the prompt
size limit *before* computing it. Stopping is a :class:`~prompt_compiler.errors.LimitError`
(or :class:`~prompt_compiler.errors.ConfigError`) naming the file and line, which config code
cannot catch (it is raised as :class:`Stop`, a ``BaseException``, until it leaves the config).
"""

from __future__ import annotations

import math
import os
import sys
import time
import types
import typing
from typing import Any

from ...errors import LimitError, PromptCompilerError
from ...safety import limits

__all__ = ["MAX_INT_DIGITS", "Guard", "Stop", "guarded_lshift", "guarded_mul", "guarded_pow",
           "config_line", "refuse", "tick"]

MAX_INT_DIGITS = 4300
_MAX_INT_BITS = int(MAX_INT_DIGITS * math.log2(10)) + 1
_GUARD_FILES = frozenset(os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
                         for name in ("budget.py", "check.py", "stand_ins.py"))
"""The guards' own files: their frames are not config code."""


class Stop(BaseException):
    """Carries a refusal through config code (an ``except Exception`` there cannot catch it)."""

    def __init__(self, error: PromptCompilerError) -> None:
        super().__init__(str(error))
        self.error = error



def refuse(error: PromptCompilerError) -> typing.NoReturn:
    """Stop the load with ``error``, at the config file whose code met it (a base config's
    refusal names the base config, not the eval config that imported it)."""
    if error.config_path is None:
        error.config_path = _base_file()
    raise Stop(error)


def _config_frame() -> types.FrameType | None:
    """The innermost frame of config code (the guards' own frames skipped)."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename in _GUARD_FILES:
        frame = frame.f_back
    return frame


def config_line() -> str:
    """``line N`` of the innermost config frame (for errors raised in guards; the file is
    the one :func:`_refuse` names)."""
    frame = _config_frame()
    return "" if frame is None else f"line {frame.f_lineno}"


def _base_file() -> str | None:
    """The file of the innermost config frame when it is not the config being loaded (a
    base config), shown relative to the working folder where it lies below it; else None."""
    frame = _config_frame()
    guard = Guard._active
    if frame is None or guard is None:
        return None
    file = frame.f_code.co_filename
    if not os.path.isfile(file) or os.path.realpath(file) == os.path.realpath(guard.display):
        return None
    shown = os.path.relpath(file)
    return file if shown.startswith("..") else shown


def _int_limit(what: str) -> typing.NoReturn:
    where = config_line()
    refuse(LimitError(f"{where + ': ' if where else ''}{what} would give an integer of more "
                       f"than {MAX_INT_DIGITS:,} digits (a config value cannot be that long)"))


def _size_limit(what: str, size: int) -> None:
    limit = limits.current().prompt_chars
    if size > limit:
        where = config_line()
        refuse(LimitError(f"{where + ': ' if where else ''}{what} would build {size:,} "
                           f"characters or items; {limits.describe('prompt_chars', limit)}"))


def guarded_pow(a: Any, b: Any, mod: Any = None) -> Any:
    if (isinstance(a, int) and isinstance(b, int) and b > 0 and mod is None
            and abs(a) > 1 and (abs(a).bit_length() - 1) * b > _MAX_INT_BITS):
        _int_limit(f"{_short(a)} ** {_short(b)}")
    return pow(a, b) if mod is None else pow(a, b, mod)


def guarded_mul(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        if a.bit_length() + b.bit_length() > _MAX_INT_BITS + 64:
            _int_limit("the product")
    elif isinstance(b, int) and isinstance(a, (str, bytes, list, tuple)):
        _size_limit("repeating a value", len(a) * b)
    elif isinstance(a, int) and isinstance(b, (str, bytes, list, tuple)):
        _size_limit("repeating a value", len(b) * a)
    return a * b


def guarded_lshift(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and a and b > 0 and \
            a.bit_length() + b > _MAX_INT_BITS:
        _int_limit(f"{_short(a)} << {_short(b)}")
    return a << b


def _short(value: int) -> str:
    return str(value) if value.bit_length() < 64 else "a long integer"



class Guard:
    """Bounds one config load: CPU seconds (counted at every loop turn and function call of
    the config, :func:`_tick`) and memory (Linux: the address space).

    Re-entrant: a nested load (a base config) shares the outer one's budget.
    """

    _active: typing.ClassVar[Guard | None] = None

    @classmethod
    def active(cls) -> Guard | None:
        """The guard of the load under way (the outermost one), if any."""
        return cls._active

    def __init__(self, display: str) -> None:
        self.display = display
        self.tripped: PromptCompilerError | None = None
        self._outer: Guard | None = None
        self._ticks = 0
        self._deadline = 0.0
        self._previous_limit: tuple[int, int] | None = None
        self.environment: dict[str, str | None] = {}
        """The environment variables the config (and its bases) read: name -> value, or
        ``None`` when unset."""

    def __enter__(self) -> Guard:
        if Guard._active is not None:
            self._outer = Guard._active
            return self
        Guard._active = self
        current = limits.current()
        self._deadline = time.process_time() + current.config_seconds
        self._cap_memory(current.config_bytes)
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        if self._outer is not None:
            return
        Guard._active = None
        self._uncap_memory()
        if isinstance(value, MemoryError):
            raise LimitError(
                "the config needs more memory than it may take while it loads; "
                f"{limits.describe('config_bytes', limits.current().config_bytes, 'bytes')}",
                config_path=self.display) from None
        if isinstance(value, Stop):
            raise value.error.located(config_path=self.display) from None
        if isinstance(value, PromptCompilerError):  # a refusal: name the file given
            value.located(config_path=self.display)
        if self.tripped is not None and kind is None:
            raise self.tripped.located(config_path=self.display)

    def tick(self) -> None:
        self._ticks += 1
        if self._ticks & 1023 == 0 or self.tripped is not None:
            if self.tripped is None:
                self.tripped = self._over()
            if self.tripped is not None:
                raise Stop(self.tripped)

    def _over(self) -> LimitError | None:
        """The limit the load has run past: its steps (counted: the same on every machine and
        under any load), else, as a backstop, its CPU seconds."""
        current = limits.current()
        if self._ticks > current.config_steps:
            what = (f"more than {current.config_steps:,} steps (loop turns, comprehension "
                    "items and function calls)")
            why = limits.describe("config_steps", current.config_steps, "steps")
        elif time.process_time() > self._deadline:
            what = f"for more than {current.config_seconds:,} seconds of CPU time"
            why = limits.describe("config_seconds", current.config_seconds, "seconds")
        else:
            return None
        where = config_line()
        return LimitError(f"{where + ': ' if where else ''}the config ran {what} while "
                          f"loading; {why}", config_path=_base_file())

    def _cap_memory(self, budget: int) -> None:
        try:
            import resource

            with open("/proc/self/statm", "rb") as fh:
                pages = int(fh.read().split()[0])
            size = pages * os.sysconf("SC_PAGE_SIZE")
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            target = size + budget
            if hard != resource.RLIM_INFINITY:
                target = min(target, hard)
            if soft != resource.RLIM_INFINITY and soft <= target:
                return
            resource.setrlimit(resource.RLIMIT_AS, (target, hard))
            self._previous_limit = (soft, hard)
        except (ImportError, OSError, ValueError, IndexError):
            self._previous_limit = None

    def _uncap_memory(self) -> None:
        if self._previous_limit is None:
            return
        import resource

        try:
            resource.setrlimit(resource.RLIMIT_AS, self._previous_limit)
        except (OSError, ValueError):  # pragma: no cover - we only lowered it
            pass
        self._previous_limit = None


def tick() -> bool:  # (in SAFE_BUILTINS as __pc_tick)
    """One turn of a config's loop or one call of its functions (true: it sits in
    comprehension conditions)."""
    guard = Guard._active
    if guard is not None:
        guard.tick()
    return True
