"""Chat-template controls a model (or dataset) config sets, checked where they are written.

* ``chat_template_kwargs``: extra template variables (``enable_thinking: false`` ...), as
  transformers' ``apply_chat_template(**kwargs)`` passes them. A name the template never
  reads changes nothing; :func:`unread_kwargs` finds those (lint ``unused-template-kwarg``).
* ``date``: what ``strftime_now`` returns in templates that print the date (Llama 3.x).
  Pinned to :data:`DEFAULT_DATE` unless the config gives one (``"2025-01-31"``, or
  ``today`` for the wall clock), so the same config compiles to the same bytes every day.
* ``assistant_prefix``: text the model's reply starts with. Chat templates render it as
  transformers' ``continue_final_message=True`` does; meta templates append it after the
  generation prompt; API models get it as a final assistant message (a prefill).
* ``tools`` / ``documents``: lists of dicts handed to the chat template as
  ``apply_chat_template(tools=..., documents=...)`` does.
* The special tokens of the model's ``tokenizer`` folder, which a chat template given
  apart from it renders with (:func:`tokenizer_special_tokens`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError

__all__ = ["DATE_TODAY", "DEFAULT_DATE", "check_dicts", "check_prefix", "date_string",
           "kwargs_sha256", "parse_date", "prints_date", "template_variables",
           "tokenizer_special_tokens", "unread_kwargs"]

DEFAULT_DATE = "2024-07-26"
"""The date ``strftime_now`` gives when a config sets none: the date Llama 3.1's own
template falls back to when it cannot read a clock (``"26 Jul 2024"``)."""

DATE_TODAY = "today"
"""The ``date`` value that reads the wall clock (output then changes from day to day)."""


def parse_date(value: Any, *, where: str, model: str | None = None
               ) -> tuple[str, dt.datetime | None]:
    """``(date as written to the manifest, the pinned datetime or None for the clock)``.

    Accepts ``None`` (the default date), ``today``, an ISO date ``YYYY-MM-DD`` or date-time
    ``YYYY-MM-DDTHH:MM[:SS]``, and ``date``/``datetime`` objects (a YAML ``2025-01-31``).
    """
    if value is None:
        value = DEFAULT_DATE
    if isinstance(value, str) and value.strip().lower() == DATE_TODAY:
        return DATE_TODAY, None
    if isinstance(value, dt.datetime):
        return value.isoformat(), value.replace(tzinfo=None)
    if isinstance(value, dt.date):
        return value.isoformat(), dt.datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        try:
            if "T" in value or " " in value.strip():
                parsed = dt.datetime.fromisoformat(value.strip())
                return parsed.isoformat(), parsed.replace(tzinfo=None)
            day = dt.date.fromisoformat(value.strip())
            return day.isoformat(), dt.datetime(day.year, day.month, day.day)
        except ValueError:
            pass
    raise ConfigError(
        f"date must be 'today' or an ISO date like '2025-01-31' (or '2025-01-31T09:30'), "
        f"got {value!r}", key_path=where, model=model)


def date_string(value: Any) -> str | None:
    """The pinned date of a model's ``date`` key (``None``: the default) as Llama 3.x chat
    templates read it from the ``date_string`` variable (``"26 Jul 2024"``), which they print
    instead of ``strftime_now``'s; ``None`` for ``today`` (the engine's clock)."""
    _, now = parse_date(value, where="date")
    if now is None:
        return None
    # (not strftime: its %b follows the locale)
    return f"{now.day:02d} {_MONTHS[now.month - 1]} {now.year}"


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def check_prefix(value: Any, *, where: str, model: str | None = None) -> str | None:
    """An ``assistant_prefix``: a non-empty string, or None."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"assistant_prefix must be a non-empty string (the text the reply "
                          f"starts with), got {value!r:.60}", key_path=where, model=model)
    return value


def check_dicts(value: Any, name: str, *, where: str, model: str | None = None
                ) -> list[dict[str, Any]] | None:
    """``tools`` / ``documents``: a list of dicts (JSON schemas / ``{"title", "text"}``)."""
    if value is None:
        return None
    example = ('{"type": "function", "function": {"name": ..., "parameters": {...}}}'
               if name == "tools" else '{"title": ..., "text": ...}')
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{name} must be a list of dicts like {example}, got "
                          f"{type(value).__name__}", key_path=where, model=model)
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise ConfigError(f"{name}[{i}] must be a dict like {example}, got "
                              f"{type(item).__name__}", key_path=f"{where}[{i}]", model=model)
    return [dict(item) for item in value]


def template_variables(template: Any) -> frozenset[str]:
    """Every variable a chat template (any of its named templates) reads from outside."""
    import jinja2.meta

    from ..safety.jinja_sandbox import PromptSandbox

    # A new sandbox with the template's tags: the template's own environment has globals
    # (strftime_now, raise_exception, ...) that would count as declared. A sandbox, not a
    # plain jinja2 environment: that one folds constant expressions while parsing
    # ('a' * 10**9, 'x'|center(10**9)), building them unbounded before any limit could
    # refuse them.
    env = PromptSandbox(extensions=[type(e) for e in template._env.extensions.values()])
    names: set[str] = set()
    for text in {template.source, *template.alternates.values()}:
        names |= jinja2.meta.find_undeclared_variables(env.parse(text))
    return frozenset(names)


def prints_date(template: Any) -> bool:
    """Whether the template calls ``strftime_now`` (prints the date)."""
    return "strftime_now" in template_variables(template)


def unread_kwargs(template: Any, kwargs: Mapping[str, Any]) -> list[str]:
    """The ``chat_template_kwargs`` names the template never reads, in the order given."""
    used = template_variables(template)
    return [k for k in kwargs if k not in used]


def kwargs_sha256(kwargs: Mapping[str, Any]) -> str:
    """The sha256 of ``chat_template_kwargs`` as canonical JSON (sorted keys, compact)."""
    text = json.dumps(kwargs, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tokenizer_special_tokens(counter: Any) -> dict[str, Any]:
    """The special tokens of a real tokenizer's folder (``bos_token`` ...), as transformers
    gives them to a chat template; empty for tiktoken and the built-in counters."""
    from ..model.tokenize import HFTokenizer
    from ..render.chat_template_files import folder_special_tokens

    if not isinstance(counter, HFTokenizer):
        return {}
    return folder_special_tokens(Path(counter.name).parent)
