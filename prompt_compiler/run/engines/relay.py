"""Warnings raised where a run's work runs (a pool worker, a Ray task), shown where the run
runs: the same lines, in pair order, as when everything compiles in one process.

A worker's function runs under :func:`catching`, which keeps the warnings it raises instead
of printing them (a Ray worker's output never reaches the terminal; a pool worker's would
interleave with the run's); they travel back with the result, and the run's process raises
them again with :func:`relay`. A warning class with ``once_per_pair = True`` (one that a
compile raises once per job, naming the first row concerned) is raised once for a pair whose
rows were compiled in several pieces: the first piece's.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

from ...errors import PromptCompilerWarning

__all__ = ["Caught", "catching", "relay"]

Caught = list[tuple[type[Warning], str]]
"""Warnings kept: each one's class and text (they pickle: a class by its name)."""


@contextlib.contextmanager
def catching() -> Iterator[Caught]:
    """Keep the warnings (not deprecations) raised meanwhile, in order, instead of showing
    them; the filters still decide which are raised."""
    caught: Caught = []
    previous = warnings.showwarning

    def keep(message: Any, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        if issubclass(category, DeprecationWarning):
            previous(message, category, filename, lineno, file, line)
        else:
            caught.append((category, str(message)))

    warnings.showwarning = keep
    try:
        yield caught
    finally:
        warnings.showwarning = previous


def relay(caught: Iterable[tuple[type[Warning], str]], seen: set[type[Warning]] | None = None
          ) -> None:
    """Raise kept warnings here, in order; ``seen``: the ``once_per_pair`` classes already
    raised for the pair (filled)."""
    for category, text in caught:
        if seen is not None and getattr(category, "once_per_pair", False):
            if category in seen:
                continue
            seen.add(category)
        try:
            message: Warning = category(text)
        except Exception:  # noqa: BLE001 - a class that needs more: the text is what is shown
            message = PromptCompilerWarning(text)
        warnings.warn(message, stacklevel=2)
