"""RawPromptTemplate: a dataset template that is already an OpenAI-style message list."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import TemplateError, TemplateTypeError
from ..policy import Policy
from .fill import RowValues
from .oc_ops import fill_text
from .prompt_template import Ice, mask_row

__all__ = ["RawPromptTemplate"]

_RAW_ROLES = ("system", "user", "assistant")


@dataclass(frozen=True, slots=True)
class RawPromptTemplate:
    """A template that is already an OpenAI-style message list.

    Elements are ``{"role", "content"}`` messages (content filled from the row),
    ``{"expand_column": col}`` (splices the row's list of messages), or the
    ``ice_token`` string (splices the in-context messages).
    """

    messages: tuple[Any, ...]
    format_variables: bool = True
    ice_token: str | None = "</E>"
    where: str = "template"
    sep_token: None = field(default=None, init=False)

    @classmethod
    def build(cls, messages: Sequence[Any], format_variables: bool = True,
              ice_token: str | None = "</E>", *, where: str = "template") -> RawPromptTemplate:
        # OpenCompass 0.5.4's own wording (RawPromptTemplate._validate_messages), and its
        # exception classes: TypeError for a wrong type, ValueError for a wrong message.
        if not isinstance(messages, (list, tuple)):
            text = f"messages must be a list, got {type(messages)}"
            raise TemplateTypeError(text, key_path=f"{where}.messages",
                                    reference=("TypeError", text))
        for i, msg in enumerate(messages):
            path = f"{where}.messages[{i}]"
            if isinstance(msg, str):
                continue
            if not isinstance(msg, Mapping):
                text = f"messages[{i}] must be a dict or str, got {type(msg)}"
                raise TemplateTypeError(text, key_path=path, reference=("TypeError", text))
            if "expand_column" in msg:
                continue
            for key in ("role", "content"):
                if key not in msg:
                    text = f"messages[{i}] missing '{key}' key"
                    raise TemplateError(text, key_path=path, reference=("ValueError", text))
            if msg["role"] not in _RAW_ROLES:
                text = f"messages[{i}] has invalid role: {msg['role']}"
                raise TemplateError(f"{text} (expected one of {', '.join(_RAW_ROLES)})",
                                    key_path=path, reference=("ValueError", text))
        return cls(tuple(copy.deepcopy(list(messages))), format_variables, ice_token, where)

    kind = "raw"

    def _messages(self, row: Mapping[str, Any], ice: Ice | None, with_strings: bool,
                  policy: Policy) -> list[Any]:
        values = RowValues.of(row)
        out: list[Any] = []
        for msg in self.messages:
            if isinstance(msg, str):
                if with_strings and msg == self.ice_token and isinstance(ice, list) and ice:
                    out.extend(copy.deepcopy(ice))
                continue
            if "expand_column" in msg:
                value = row.get(msg["expand_column"])
                if isinstance(value, list):
                    out.extend(copy.deepcopy(value))
                continue
            new = copy.deepcopy(dict(msg))
            if self.format_variables and isinstance(new.get("content"), str):
                # OpenCompass re-reads inserted values as template text (D1).
                new["content"] = fill_text(new["content"], values,
                                            sequential=not policy.fixes("D1"))
            out.append(new)
        return out

    def ice_item(self, row: Mapping[str, Any], label: Any, policy: Policy) -> list[Any]:
        return self._messages(row, None, with_strings=False, policy=policy)

    def gen_item(self, row: Mapping[str, Any], ice: Ice, policy: Policy, *,
                 output_column: str | None = None, replace_token: str = "") -> list[Any]:
        if policy.fixes("D15") and output_column is not None:
            row = mask_row(row, output_column, replace_token)
        return self._messages(row, ice, with_strings=True, policy=policy)

    def label_item(self, row: Mapping[str, Any], ice: Ice, label: Any, policy: Policy, *,
                   remain_sep: bool = False) -> list[Any]:
        return self._messages(row, ice, with_strings=True, policy=policy)

    @property
    def labels(self) -> list[Any]:
        return []
