"""OpenCompass's template operations on a str or a PromptList, and the errors they raise.

``oc_replace`` and ``oc_format`` are ``str.replace``/``PromptList.replace`` and ``safe_format``
exactly as OpenCompass 0.5.4 applies them (compat mode re-reads inserted text as template
syntax: defect D1); ``fill_text`` fills ``{column}`` placeholders either that way or in one pass.
"""

from __future__ import annotations

from typing import Any

from ..errors import RenderError
from ..promptlist import (
    Ice,
    Item,
    PromptList,
    Rendered,
    RoleItem,
    check_growth,
    role_with_list_ice,
    str_template_with_list_ice,
)
from ..promptlist import replace_in as oc_replace
from ..promptlist.fill import RowValues, fill_text

__all__ = ["Ice", "Rendered", "check_growth", "fill_text", "non_str_prompt", "oc_format",
           "oc_replace", "role_with_list_ice", "str_template_with_list_ice"]


def non_str_prompt(prompt: Any, where: str | None) -> RenderError:
    return RenderError(f"a role prompt must be a str, got {prompt!r}", key_path=where,
                       reference=("AttributeError", f"'{type(prompt).__name__}' object has no "
                                  "attribute 'replace'"))


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
