"""The intermediate representation: a PromptList of role items, section markers and text.

A dataset template compiles each row into a :class:`PromptList`, which a model's
meta template then renders. The items keep OpenCompass's well-known shape so that
``repr`` and :meth:`PromptList.to_list` read like OpenCompass's own ``PromptList``:

* ``str`` -- literal text;
* :class:`RoleItem` -- ``dict(role='HUMAN', prompt='...', fallback_role=..., **extra)``;
* :class:`Marker` -- ``dict(section='round', pos='begin')``, bracketing the
  ``begin`` / ``round`` / ``ice`` / ``end`` sections.

Sections are stored as marker pairs because OpenCompass's behaviour (including its
defects, reproduced in compat mode) is defined on that flat form; the renderers
(:func:`prompt_compiler.render.meta.walk`) read them back as nested sections in one place.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import DataError

__all__ = ["Item", "Marker", "PromptList", "RoleItem", "canonical_prompt", "item_from_obj",
           "json_default", "prompt_sha256"]

SECTION_NAMES = ("begin", "round", "end", "ice")


@dataclass(frozen=True, slots=True)
class Marker:
    """Opens (``pos='begin'``) or closes (``pos='end'``) a section."""

    section: str
    """One of ``begin``, ``round``, ``ice``, ``end``."""
    pos: str
    """``begin`` or ``end``."""

    def to_obj(self) -> dict[str, str]:
        return {"section": self.section, "pos": self.pos}

    def __repr__(self) -> str:
        return f"dict(section={self.section!r}, pos={self.pos!r})"


@dataclass(frozen=True, slots=True)
class RoleItem:
    """A role turn, with its keys in the order they were written.

    ``role``, ``prompt`` and ``fallback_role`` are the common keys; any other key
    (``begin``, ``end``, ``generate`` ...) overrides the meta template's role entry
    for this turn, as in OpenCompass.
    """

    fields: tuple[tuple[str, Any], ...]
    """All keys and values, in order."""

    @classmethod
    def of(cls, role: str, prompt: str | None = None, **extra: Any) -> RoleItem:
        """Build an item: ``RoleItem.of('HUMAN', 'Hi')``."""
        pairs: list[tuple[str, Any]] = [("role", role)]
        if prompt is not None:
            pairs.append(("prompt", prompt))
        pairs.extend(extra.items())
        return cls(tuple(pairs))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RoleItem:
        return cls(tuple(data.items()))

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.fields:
            if k == key:
                return v
        return default

    def has(self, key: str) -> bool:
        return any(k == key for k, _ in self.fields)

    @property
    def role(self) -> Any:
        return self.get("role")

    @property
    def prompt(self) -> Any:
        return self.get("prompt")

    @property
    def fallback_role(self) -> Any:
        return self.get("fallback_role")

    def with_prompt(self, prompt: str) -> RoleItem:
        """A copy whose ``prompt`` is replaced (kept in place; added last if absent)."""
        if not self.has("prompt"):
            return RoleItem((*self.fields, ("prompt", prompt)))
        return RoleItem(tuple((k, prompt if k == "prompt" else v) for k, v in self.fields))

    def to_obj(self) -> dict[str, Any]:
        return dict(self.fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" if k.isidentifier() else f"**{{{k!r}: {v!r}}}"
                          for k, v in self.fields)
        return f"dict({inner})"


Item = str | RoleItem | Marker


def item_from_obj(obj: Any) -> Item:
    """Convert one element of OpenCompass's list form into an :data:`Item`."""
    if isinstance(obj, str):
        return obj
    if isinstance(obj, (RoleItem, Marker)):
        return obj
    if isinstance(obj, Mapping):
        if "section" in obj:
            return Marker(str(obj["section"]), str(obj.get("pos")))
        return RoleItem.from_mapping(obj)
    raise TypeError(f"a PromptList item must be a str or a dict, got {type(obj).__name__}: {obj!r}")


@dataclass(frozen=True, slots=True)
class PromptList:
    """An immutable sequence of prompt items (see the module docstring)."""

    items: tuple[Item, ...] = ()

    @classmethod
    def from_list(cls, objs: Iterable[Any]) -> PromptList:
        """Read OpenCompass's list-of-dicts-and-strings form."""
        return cls(tuple(item_from_obj(o) for o in objs))

    def to_list(self) -> list[Any]:
        """OpenCompass's list-of-dicts-and-strings form (JSON-ready)."""
        return [i if isinstance(i, str) else i.to_obj() for i in self.items]

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Item:
        return self.items[index]

    def __add__(self, other: PromptList | str | Iterable[Any] | None) -> PromptList:
        if not other:
            return self
        if isinstance(other, str):
            return PromptList((*self.items, other))
        if isinstance(other, PromptList):
            return PromptList(self.items + other.items)
        return PromptList(self.items + tuple(item_from_obj(o) for o in other))

    def __radd__(self, other: str | None) -> PromptList:
        if not other:
            return self
        if isinstance(other, str):
            return PromptList((other, *self.items))
        return NotImplemented

    def __str__(self) -> str:
        """The text of all str items and role prompts, concatenated (markers add nothing)."""
        out = []
        for item in self.items:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, RoleItem) and item.has("prompt"):
                out.append(str(item.prompt))
        return "".join(out)

    def __repr__(self) -> str:
        return f"PromptList([{', '.join(repr(i) for i in self.items)}])"

    def roles(self) -> list[RoleItem]:
        """The role items, in order."""
        return [i for i in self.items if isinstance(i, RoleItem)]


def json_default(value: Any) -> Any:
    """``json.dumps``'s ``default`` for prompts: a PromptList as its list form."""
    if isinstance(value, PromptList):
        return value.to_list()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def canonical_prompt(prompt: Any) -> str:
    """The text a prompt's hash covers: a string as it is, a message list as compact JSON.

    Raises:
        ValueError: A message list holds NaN/Infinity (no strict JSON form).
    """
    return prompt if isinstance(prompt, str) else json.dumps(
        prompt, ensure_ascii=False, separators=(",", ":"), sort_keys=False, default=json_default,
        allow_nan=False)


def prompt_sha256(prompt: Any) -> str:
    """Content hash of a compiled prompt (what the model receives, not the config): the
    sha256 of :func:`canonical_prompt`'s UTF-8 bytes, as the records' ``prompt_sha256``.

    Raises:
        DataError: The prompt holds a lone surrogate (it has no UTF-8 form).
    """
    try:
        return hashlib.sha256(canonical_prompt(prompt).encode("utf-8")).hexdigest()
    except UnicodeEncodeError as exc:
        raise DataError(f"the prompt holds a lone surrogate ({exc.object[exc.start]!r} at "
                        f"character {exc.start}), which has no UTF-8 form",
                        hint="fix the text in the data or config") from None
