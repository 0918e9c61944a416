"""A model's special tokens, read from its meta template and chat template.

Control tokens such as ``<|im_end|>``, ``<start_of_turn>``, ``[INST]`` or ``</s>`` are
what a tokenizer turns into single control ids; dataset text containing one can end a
turn early. The tokens are read off the model's own templates: every token-shaped
substring of a role's ``begin``/``end``, the meta template's ``begin``/``end``, the
chat template's literal text and the tokenizer's named tokens (``eos_token`` ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["TOKEN_RE", "model_special_tokens", "tokens_in"]

TOKEN_RE = re.compile(
    r"<\|[^<>|\s]{1,48}\|>"            # <|im_end|>, <|start_header_id|>
    r"|<｜[^<>｜]{1,48}｜>"              # <｜User｜> (full-width bars)
    r"|<<?/?[A-Za-z_][\w./:-]{0,48}>>?"  # <s>, </s>, <start_of_turn>, <<SYS>>
    r"|\[/?[A-Za-z_]{2,48}\]"           # [INST], [/INST], [gMASK], [UNUSED_TOKEN_146]
)
"""What a special token looks like in template text."""


def tokens_in(text: str) -> list[str]:
    """The token-shaped substrings of ``text``, in order, without repeats."""
    return list(dict.fromkeys(TOKEN_RE.findall(text)))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _meta_strings(meta: Any) -> Iterator[str]:
    if not isinstance(meta, Mapping):  # an API meta template of messages: their contents
        for item in meta:
            if isinstance(item, Mapping):
                yield from _strings(item.get("content"))
        return
    for key in ("begin", "end"):
        yield from _strings(meta.get(key))
    for key in ("round", "reserved_roles"):
        for item in meta.get(key) or ():
            if isinstance(item, str):
                yield item
            elif isinstance(item, Mapping):
                for k in ("begin", "end"):
                    yield from _strings(item.get(k))


def model_special_tokens(meta: Mapping[str, Any] | None, chat_template: Any = None,
                         extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The special tokens of a model, sorted longest first (so matches prefer them).

    Args:
        meta: The model's meta template dict (or ``None``).
        chat_template: A :class:`~prompt_compiler.render.chat_template.ChatTemplate`, or ``None``.
        extra: More texts to read tokens from (e.g. a prompter's slots).
    """
    found: dict[str, None] = {}
    texts: list[str] = list(_meta_strings(meta)) if meta else []
    if chat_template is not None:
        texts.append(chat_template.source)
        for value in chat_template.special_tokens.values():
            if isinstance(value, str) and value.strip():
                found[value] = None
    texts.extend(extra)
    for text in texts:
        for tok in tokens_in(text):
            found[tok] = None
    return tuple(sorted(found, key=lambda t: (-len(t), t)))
