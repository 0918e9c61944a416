"""The Jinja2 sandbox every user-supplied template is rendered in.

Configs are data: a YAML/JSON config, a dataset template with ``engine: jinja2``, an
AdalFlow-style prompt or a Hugging Face chat template must never run code. Templates are therefore
rendered in jinja2's :class:`~jinja2.sandbox.ImmutableSandboxedEnvironment` (no underscore
attributes, no ``str.format`` attribute tricks, no mutation of lists or dicts), tightened in
three ways that keep the output a pure, reproducible function of the inputs:

* ``*`` and ``**`` refuse results beyond :data:`MAX_REPEAT` items or :data:`MAX_POWER_BITS` bits,
  so ``'a' * 10**10`` is an error instead of exhausting memory;
* ``lipsum`` (random text) is not a global;
* printing a function, method or any object whose text shows a memory address
  (``<... at 0x7f...>``) is an error, since that text differs between runs.

A blocked operation raises :class:`jinja2.sandbox.SecurityError`; the callers turn it into a
:class:`~prompt_compiler.errors.TemplateError` naming where the template came from.
"""

from __future__ import annotations

import inspect
import operator
import re
from typing import Any, Final

from jinja2.exceptions import SecurityError
from jinja2.runtime import Context, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = ["MAX_POWER_BITS", "MAX_REPEAT", "PromptSandbox", "SecurityError"]

MAX_REPEAT: Final = 10_000_000
"""Most items (characters of a str, elements of a list) that ``seq * n`` may produce."""
MAX_POWER_BITS: Final = 100_000
"""Most bits an ``int ** int`` result may have (about 30,000 decimal digits)."""

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_PLAIN = (str, int, float, type(None), Undefined)


def _finalize(value: Any) -> Any:
    """Refuse printed values whose text is not reproducible (functions, ``<... at 0x...>``)."""
    if isinstance(value, _PLAIN):
        return value
    if inspect.isroutine(value) or _ADDRESS.search(str(value)):
        raise SecurityError(
            f"the template prints a {type(value).__name__} object, whose text shows a memory "
            "address and changes from run to run; print data, not functions or objects"
        )
    return value


def _repeat_size(left: Any, right: Any) -> int | None:
    """Items ``left * right`` would hold when it repeats a sequence, else None."""
    for seq, times in ((left, right), (right, left)):
        if isinstance(seq, (str, bytes, list, tuple)) and isinstance(times, int):
            return len(seq) * max(times, 0)
    return None


class PromptSandbox(ImmutableSandboxedEnvironment):
    """jinja2's immutable sandbox with bounded ``*``/``**``, no ``lipsum``, reproducible prints.

    Accepts the keyword arguments of :class:`jinja2.Environment` (``finalize`` is set here).
    """

    intercepted_binops = frozenset({"*", "**"})

    def __init__(self, **options: Any) -> None:
        super().__init__(finalize=_finalize, **options)
        self.globals.pop("lipsum", None)

    def call_binop(self, context: Context, operator_: str, left: Any, right: Any) -> Any:
        """Apply an intercepted operator, refusing results too large to be meant."""
        if operator_ == "*":
            size = _repeat_size(left, right)
            if size is not None and size > MAX_REPEAT:
                raise SecurityError(f"'*' would build {size:,} items; the sandbox allows "
                                    f"{MAX_REPEAT:,}")
            return operator.mul(left, right)
        if (isinstance(left, int) and isinstance(right, int)
                and right > 0 and abs(left) > 1 and right * left.bit_length() > MAX_POWER_BITS):
            raise SecurityError(f"'**' would build an integer of about "
                                f"{right * left.bit_length():,} bits; the sandbox allows "
                                f"{MAX_POWER_BITS:,}")
        return super().call_binop(context, operator_, left, right)
