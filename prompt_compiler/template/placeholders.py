"""Placeholders of ``{column}`` templates that match no column (a typo stays in the prompt).

OpenCompass leaves an unknown ``{name}`` verbatim in the prompt, so ``{questoin}``
reaches the model unnoticed. :func:`unknown_placeholders` finds them in a template
config, with a did-you-mean among the columns; lint reports them and the compile path
can warn with the same function.

Only identifier-like names count (``{question}``, ``{ answer }``): braces around other
text, such as a JSON example in an instruction, are literal text and never filled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..promptlist.fill import Pattern

__all__ = ["UnknownPlaceholder", "template_texts", "unknown_placeholders"]

_NAME = re.compile(r"\s*[A-Za-z_][\w.-]*\s*")
_META_KEYS = ("begin", "round", "end")


@dataclass(frozen=True, slots=True)
class UnknownPlaceholder:
    """One ``{name}`` that names no column."""

    name: str
    """The text between the braces."""
    key_path: str
    """Where the template text is, e.g. ``infer_cfg.prompt_template.template.round[0].prompt``."""
    suggestion: str | None
    """The closest column name, if one is close."""

    @property
    def message(self) -> str:
        """One sentence: the placeholder, what happens to it, and the did-you-mean."""
        text = f"placeholder {{{self.name}}} names no column, so it stays in the prompt verbatim"
        return text + (f"; did you mean {{{self.suggestion}}}?" if self.suggestion else "")


def template_texts(template: Any, key_path: str) -> Iterator[tuple[str, str]]:
    """Every template text of a ``template`` value, with its key path.

    ``template`` is a str, a ``begin``/``round``/``end`` dict, or a label dict (label ->
    str or section dict); role items contribute their ``prompt``.
    """
    if isinstance(template, str):
        yield key_path, template
    elif isinstance(template, Mapping):
        for key, value in template.items():
            inner = f"{key_path}.{key}" if key in _META_KEYS else f"{key_path}[{key!r}]"
            yield from template_texts(value, inner)
    elif isinstance(template, (list, tuple)):
        for i, item in enumerate(template):
            if isinstance(item, Mapping):
                if isinstance(item.get("prompt"), str):
                    yield f"{key_path}[{i}].prompt", item["prompt"]
            else:
                yield from template_texts(item, f"{key_path}[{i}]")


def unknown_placeholders(template_cfg: Any, columns: Iterable[str], key_path: str
                         ) -> list[UnknownPlaceholder]:
    """The placeholders of a template config (``{type, template, ...}``) naming no column.

    Args:
        template_cfg: A ``PromptTemplate`` config dict (Jinja2 templates are skipped:
            they fail on undefined names already).
        columns: The row's columns (``subdivision`` and ``idx`` included).
        key_path: The config's key path, e.g. ``infer_cfg.prompt_template``.
    """
    if not isinstance(template_cfg, Mapping) or template_cfg.get("engine", "format") != "format":
        return []
    cols = list(columns)
    out = []
    for path, text in template_texts(template_cfg.get("template"), f"{key_path}.template"):
        for name in dict.fromkeys(Pattern.parse(text).slots):
            if name in cols or not _NAME.fullmatch(name):
                continue
            import difflib  # only for a did-you-mean

            close = difflib.get_close_matches(name.strip(), cols, n=1, cutoff=0.6)
            out.append(UnknownPlaceholder(name, path, close[0] if close else None))
    return out
