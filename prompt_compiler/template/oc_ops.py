"""OpenCompass's template operations on a str or a PromptList, and the errors they raise.

``oc_replace`` and ``oc_format`` are ``str.replace``/``PromptList.replace`` and ``safe_format``
exactly as OpenCompass 0.5.4 applies them (compat mode re-reads inserted text as template
syntax: defect D1); ``fill_text`` fills ``{column}`` placeholders either that way or in one pass.
"""

from __future__ import annotations

from typing import Any

from .. import limits
from ..errors import LimitError, RenderError
from ..promptlist import Item, PromptList, RoleItem
from .fill import Pattern, RowValues

__all__ = ["Ice", "Rendered", "fill_text", "non_str_prompt", "oc_format", "oc_replace",
           "role_with_list_ice", "str_template_with_list_ice"]

# What a template produces for one row, and what an in-context block is.
Rendered = str | PromptList
Ice = str | PromptList | list[Any]


def non_str_prompt(prompt: Any, where: str | None) -> RenderError:
    return RenderError(f"a role prompt must be a str, got {prompt!r}", key_path=where,
                       reference=("AttributeError", f"'{type(prompt).__name__}' object has no "
                                  "attribute 'replace'"))


def role_with_list_ice(token: str | None, where: str) -> RenderError:
    return RenderError(
        f"the ice_token {token!r} sits inside a role's prompt, but the in-context examples "
        "are a PromptList (a meta ice template) and cannot be put inside one prompt",
        key_path=where, hint="put the ice_token in its own string item, e.g. begin='</E>'",
        reference=("TypeError", f"Found keyword {token} in a dictionary's prompt key. "
                   "Cannot replace with a PromptList."),
    )


def str_template_with_list_ice(where: str) -> RenderError:
    return RenderError(
        "a str prompt template cannot take in-context examples built by a meta "
        "(begin/round/end) ice template",
        key_path=where, hint="make both templates str, or both meta dicts",
        reference=("TypeError", "replace() argument 2 must be str, not PromptList"),
    )


def oc_replace(tp: Rendered, src: str, dst: Ice, *, where: str = "template") -> Rendered:
    """``str.replace`` / ``PromptList.replace`` exactly as OpenCompass does them."""
    if isinstance(tp, str):
        if isinstance(dst, str):
            check_growth(tp, src, dst)
            return tp.replace(src, dst)
        raise str_template_with_list_ice(where)
    out: list[Item] = []
    for item in tp:
        if isinstance(item, str):
            if isinstance(dst, str):
                check_growth(item, src, dst)
                out.append(item.replace(src, dst))
            elif isinstance(dst, PromptList):
                pieces = item.split(src)
                for i, piece in enumerate(pieces):
                    if piece:
                        out.append(piece)
                    if i < len(pieces) - 1:
                        out.extend(dst.items)
            # any other dst (a plain list) silently drops the str item
        elif isinstance(item, RoleItem) and isinstance(item.prompt, str) and src in item.prompt:
            if isinstance(dst, PromptList):
                raise role_with_list_ice(src, where)
            if not isinstance(dst, str):
                raise RenderError("cannot put a message list inside a role prompt", key_path=where,
                                  reference=("TypeError", "replace() argument 2 must be str"))
            out.append(item.with_prompt(item.prompt.replace(src, dst)))
        else:
            out.append(item)
    return PromptList(tuple(out))


def check_growth(text: str, src: str, dst: str) -> None:
    """Refuse ``text.replace(src, dst)`` when its result would pass the prompt-size limit."""
    if len(dst) > len(src) and src:
        count = text.count(src)
        if count > 1:
            limit = limits.current().prompt_chars
            size = len(text) + count * (len(dst) - len(src))
            if size > limit:
                raise LimitError(f"putting the in-context examples at each of the {count:,} "
                                 f"{src[:40]!r} would build {size:,} characters; "
                                 + limits.describe("prompt_chars", limit, "characters"))


def oc_format(tp: Rendered, values: RowValues) -> Rendered:
    """OpenCompass's ``safe_format`` over a str or every str item / role prompt."""
    if isinstance(tp, str):
        return fill_text(tp, values)
    out: list[Item] = []
    for item in tp:
        if isinstance(item, str):
            out.append(fill_text(item, values))
        elif isinstance(item, RoleItem) and item.has("prompt"):
            prompt = item.prompt
            if not isinstance(prompt, str):
                raise non_str_prompt(prompt, None)
            out.append(item.with_prompt(fill_text(prompt, values)))
        else:
            out.append(item)
    return PromptList(tuple(out))


def fill_text(text: str, values: RowValues, *, sequential: bool = True) -> str:
    """Placeholders filled from ``values``: OpenCompass's sequential filling, or one pass."""
    if "{" not in text:
        return text
    return Pattern.parse(text).fill(values, sequential=sequential)
