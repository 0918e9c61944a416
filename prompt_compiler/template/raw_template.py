"""RawPromptTemplate: a dataset template that is already an OpenAI-style message list."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import TemplateError, TemplateTypeError
from ..policy import Policy
from ..promptlist.fill import RowValues
from .oc_ops import fill_text
from .prompt_template import Ice, mask_row

__all__ = ["RawPromptTemplate"]

_RAW_ROLES = ("system", "user", "assistant")


@dataclass(frozen=True, slots=True, init=False)
class RawPromptTemplate:
    """A template that is already an OpenAI-style message list.

    Elements are ``{"role", "content"}`` messages (role ``system``, ``user`` or
    ``assistant``; content filled from the row unless ``format_variables`` is false),
    ``{"expand_column": col}`` (splices the row's list of messages), or strings: the
    ``ice_token`` splices the in-context messages, any other string is left out.

    Raises:
        TemplateTypeError: ``messages`` is not a list, or an element is not a dict or str
            (a ``TypeError``).
        TemplateError: A message lacks ``role`` or ``content``, or has another role (a
            ``ValueError``).
    """

    messages: list[Any]
    """The messages as given (a deep copy)."""
    format_variables: bool
    ice_token: str | None
    where: str
    sep_token: None

    def __init__(self, messages: Sequence[Any], format_variables: bool = True,
                 ice_token: str | None = "</E>", *, where: str = "template") -> None:
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
        for name, value in (("messages", copy.deepcopy(list(messages))),
                            ("format_variables", format_variables), ("ice_token", ice_token),
                            ("where", where), ("sep_token", None)):
            object.__setattr__(self, name, value)

    @classmethod
    def build(cls, messages: Sequence[Any], format_variables: bool = True,
              ice_token: str | None = "</E>", *, where: str = "template") -> RawPromptTemplate:
        """The same as the constructor (kept for callers of the earlier name)."""
        return cls(messages, format_variables, ice_token, where=where)

    @property
    def prompt_type(self) -> str:
        """OpenCompass's name for this shape: ``'raw_messages'``."""
        return "raw_messages"

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
        """The gen messages without in-context examples and unmasked: OpenCompass's
        ``generate_label_prompt_item`` is ``generate_item(entry)``, whatever ``ice`` holds."""
        return self._messages(row, None, with_strings=True, policy=policy)

    @property
    def labels(self) -> list[Any]:
        return []

    # -- OpenCompass's method names ------------------------------------------------

    def generate_item(self, entry: Mapping[str, Any], output_field: str | None = None,
                      output_field_replace_token: str = "", ice_field_replace_token: Ice = "",
                      *, policy: Policy | str | None = None) -> list[Any]:
        """OpenCompass's name for :meth:`gen_item`: the messages for ``entry``, the
        in-context messages at the ``ice_token``. The default mode shows ``output_field``
        as ``output_field_replace_token`` (defect D15); ``policy="opencompass"`` keeps the
        answer, as OpenCompass does.
        """
        return self.gen_item(entry, ice_field_replace_token, Policy.of(policy),
                             output_column=output_field,
                             replace_token=output_field_replace_token)

    def generate_ice_item(self, entry: Mapping[str, Any], label: Any = None, *,
                          policy: Policy | str | None = None) -> list[Any]:
        """OpenCompass's name for :meth:`ice_item`: one example's messages (strings left
        out)."""
        return self.ice_item(entry, label, Policy.of(policy))

    def generate_label_prompt_item(self, entry: Mapping[str, Any], ice: Ice, label: Any,
                                   remain_sep: bool = False, *,
                                   policy: Policy | str | None = None) -> list[Any]:
        """OpenCompass's name for :meth:`label_item`: the messages for ``entry`` (neither the
        label nor ``ice`` changes them)."""
        return self.label_item(entry, ice, label, Policy.of(policy), remain_sep=remain_sep)
