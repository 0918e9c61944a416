"""Size limits on hostile or accidental inputs, each with one documented way to raise it.

Every limit is far above what a real suite reaches; it exists so that an input that never ends
or explodes (a YAML alias bomb, a 2 GB JSONL line, a CSV of 100,000 columns, a template that
builds a string of a billion characters) stops with one clean :class:`~.errors.LimitError`
naming the file, key or row and the limit, instead of exhausting memory or time.

A limit is raised (or lowered) with an environment variable, read once per process (``--jobs``
workers see the same values; :func:`reload` reads them again)::

    PROMPT_COMPILER_MAX_YAML_ALIAS_NODES=50000000 compile-prompts suite.yaml

``docs/limits.md`` lists them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Final

from ..errors import ConfigError

__all__ = ["ENV_PREFIX", "Limits", "current", "describe", "env_name", "reload"]

ENV_PREFIX: Final = "PROMPT_COMPILER_MAX_"


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits in force (defaults below; see :func:`current`)."""

    yaml_alias_nodes: int = 1_000_000
    """Nodes that YAML aliases (``*name``) add when expanded, per YAML file."""
    line_bytes: int = 64 * 1024 * 1024
    """Bytes of one line of a JSON Lines file (one row)."""
    columns: int = 10_000
    """Columns of one row (CSV header fields, keys of a JSON row)."""
    file_bytes: int = 1024 * 1024 * 1024
    """Bytes of a data file read whole (JSON, CSV); JSON Lines and Parquet stream."""
    prompt_chars: int = 16_000_000
    """Characters of one prompt, and of any one value built while rendering it."""
    template_steps: int = 1_000_000
    """Loop turns (``{% for %}`` items) one render of a sandboxed template may run in all."""
    template_chars: int = 256_000_000
    """Characters (and list items) one render of a sandboxed template may build in all."""
    config_source_bytes: int = 1024 * 1024
    """Bytes of a Python config file (and of each base config)."""
    config_steps: int = 10_000_000
    """Steps (loop turns, comprehension items, function calls) a Python config may run while
    it loads (its bases included): counted, so the outcome never depends on the machine's
    load (OpenCompass's heaviest real suites take about 15,000)."""
    config_seconds: int = 120
    """CPU seconds a Python config may run while it loads: a backstop far above any real
    config (the step count decides first)."""
    config_bytes: int = 1024 * 1024 * 1024
    """Bytes of memory a Python config may take while it loads (Linux: address space)."""
    opencompass_seconds: int = 900
    """Seconds OpenCompass's own loader may run in its interpreter (``--opencompass-python``)."""


_DEFAULTS: Final = Limits()


def env_name(name: str) -> str:
    """``line_bytes`` -> ``PROMPT_COMPILER_MAX_LINE_BYTES``."""
    return ENV_PREFIX + name.upper()


def current() -> Limits:
    """The limits in force: the defaults, each overridden by its environment variable.

    The variables are read once per process (checks run on every prompt); after changing them
    in a running process, call :func:`reload`.

    Raises:
        ConfigError: A variable is set but is not a positive integer.
    """
    global _cached
    if _cached is not None:
        return _cached[1]
    raw = tuple(map(os.environ.get, _ENV_NAMES))
    values = {}
    for name, env, given in zip(_FIELDS, _ENV_NAMES, raw, strict=True):
        if given is not None:
            text = given.strip().replace("_", "")
            if not (text.isascii() and text.isdigit() and len(text) < 19 and int(text) > 0):
                raise ConfigError(f"environment variable {env}={given[:40]!r}: "
                                  "expected a positive integer")
            values[name] = int(text)
    found = Limits(**values) if values else _DEFAULTS
    _cached = (raw, found)
    return found


_FIELDS: Final = tuple(f.name for f in fields(Limits))
_ENV_NAMES: Final = tuple(env_name(name) for name in _FIELDS)
_cached: tuple[tuple[str | None, ...], Limits] | None = None


def reload() -> Limits:
    """Read the environment variables again (see :func:`current`)."""
    global _cached
    _cached = None
    return current()


def describe(name: str, value: int, unit: str = "") -> str:
    """The tail of an error message: ``the limit is 67,108,864 bytes (PROMPT_COMPILER_MAX_LINE_BYTES
    raises it)``."""
    return f"the limit is {value:,}{' ' + unit if unit else ''} ({env_name(name)} raises it)"
