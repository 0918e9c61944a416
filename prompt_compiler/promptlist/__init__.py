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
from typing import Any, cast, overload

from ..errors import DataError, LimitError, RenderError
from ..safety import limits

__all__ = ["Ice", "Item", "Marker", "PromptList", "Rendered", "RoleItem", "canonical_prompt",
           "check_growth", "item_from_obj", "json_default", "prompt_sha256", "replace_in",
           "role_with_list_ice", "str_template_with_list_ice"]

SECTION_NAMES = ("begin", "round", "end", "ice")


@dataclass(frozen=True, slots=True)
class Marker:
    """Opens (``pos='begin'``) or closes (``pos='end'``) a section.

    Equal to its dict form (``Marker('round', 'begin') == {'section': 'round', 'pos':
    'begin'}``), as OpenCompass's markers are dicts.
    """

    section: str
    """One of ``begin``, ``round``, ``ice``, ``end``."""
    pos: str
    """``begin`` or ``end``."""

    def to_obj(self) -> dict[str, str]:
        return {"section": self.section, "pos": self.pos}

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Marker):
            return (self.section, self.pos) == (other.section, other.pos)
        if isinstance(other, Mapping):
            return self.to_obj() == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.section, self.pos))

    def __repr__(self) -> str:
        return f"dict(section={self.section!r}, pos={self.pos!r})"


@dataclass(frozen=True, slots=True)
class RoleItem:
    """A role turn, with its keys in the order they were written.

    ``role``, ``prompt`` and ``fallback_role`` are the common keys; any other key
    (``begin``, ``end``, ``generate`` ...) overrides the meta template's role entry
    for this turn, as in OpenCompass. Compared as a dict is: equal to an item or a dict
    with the same keys and values, in any order.
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

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RoleItem):
            return self.fields == other.fields or dict(self.fields) == dict(other.fields)
        if isinstance(other, Mapping):
            return dict(self.fields) == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self.fields))

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


_ITEM_TYPES = (str, RoleItem, Marker)


def _items(objs: Iterable[Any]) -> tuple[Item, ...]:
    """``objs`` as a tuple of items (a tuple that already holds only items is kept)."""
    if type(objs) is tuple and all(type(o) in _ITEM_TYPES for o in objs):
        return cast("tuple[Item, ...]", objs)
    if isinstance(objs, (str, Mapping)):
        raise TypeError(f"a PromptList is built from a list of items, got {type(objs).__name__}")
    return tuple(item_from_obj(o) for o in objs)


@dataclass(frozen=True, slots=True, init=False)
class PromptList:
    """An immutable sequence of prompt items (see the module docstring).

    ``PromptList(['text', {'role': 'HUMAN', 'prompt': 'Hi'}])`` reads OpenCompass's list form
    (strings, role dicts, section dicts; anything else is a ``TypeError``), and a PromptList
    equals the list it was read from. Unlike OpenCompass's ``list`` subclass it never
    changes: :meth:`format`, :meth:`replace`, ``+`` and ``+=`` return a new one.
    """

    items: tuple[Item, ...]

    def __init__(self, items: Iterable[Any] = ()) -> None:
        object.__setattr__(self, "items", _items(items))

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

    @overload
    def __getitem__(self, index: int) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> PromptList: ...

    def __getitem__(self, index: int | slice) -> Item | PromptList:
        """An item, or a slice of the items as a PromptList."""
        if isinstance(index, slice):
            return PromptList(self.items[index])
        return self.items[index]

    def __eq__(self, other: object) -> bool:
        """Equal to a PromptList with equal items, or to a list of equal items (a role
        item equals its dict, a marker its ``{'section', 'pos'}`` dict)."""
        if isinstance(other, PromptList):
            return self.items == other.items
        if isinstance(other, list):
            return len(self.items) == len(other) and all(
                a == b for a, b in zip(self.items, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.items)

    def __add__(self, other: PromptList | str | Iterable[Any] | None) -> PromptList:
        """A str is appended as one item, a list or PromptList concatenated; a falsy
        ``other`` (``''``, ``[]``, ``None``) adds nothing (OpenCompass's rules)."""
        if not other:
            return self
        if isinstance(other, str):
            return PromptList((*self.items, other))
        if isinstance(other, PromptList):
            return PromptList(self.items + other.items)
        return PromptList(self.items + tuple(item_from_obj(o) for o in other))

    def __radd__(self, other: str | list[Any] | None) -> PromptList:
        """``'text' + pl`` prepends the string; ``[items] + pl`` concatenates (OpenCompass
        recurses forever on a non-empty list there)."""
        if not other:
            return self
        if isinstance(other, str):
            return PromptList((other, *self.items))
        if isinstance(other, list):
            return PromptList(tuple(item_from_obj(o) for o in other) + self.items)
        return NotImplemented

    def format(self, policy: Any = None, /, **values: Any) -> PromptList:
        """Fill ``{name}`` placeholders in every str item and role ``prompt`` from ``values``.

        Unknown placeholders and lone braces stay as written. ``policy`` (a
        :class:`~prompt_compiler.policy.Policy`, ``"default"`` or ``"opencompass"``): the
        default fills each text in one pass; ``"opencompass"`` fills one key after the
        other, as OpenCompass's ``safe_format`` does, so a value holding ``{later_key}``
        is filled again (defect D1).
        """
        from ..policy import Policy
        from .fill import RowValues, fill_text

        sequential = not Policy.of(policy).fixes("D1")
        row = RowValues.of(values)
        out: list[Item] = []
        for item in self.items:
            if isinstance(item, str):
                out.append(fill_text(item, row, sequential=sequential))
            elif isinstance(item, RoleItem) and item.has("prompt"):
                prompt = item.prompt
                if not isinstance(prompt, str):
                    raise TypeError(f"a role item's prompt must be a str to be formatted, "
                                    f"got {type(prompt).__name__}")
                out.append(item.with_prompt(fill_text(prompt, row, sequential=sequential)))
            else:
                out.append(item)
        return PromptList(tuple(out))

    def replace(self, src: str, dst: str | PromptList) -> PromptList:
        """Every ``src`` in the str items and role prompts replaced by ``dst``.

        A str ``dst`` replaces text. A PromptList ``dst`` splits each str item at ``src``
        and puts its items in between (empty pieces are left out); ``src`` inside a role's
        prompt cannot take a PromptList (``TypeError``). Markers are kept as they are.
        """
        if isinstance(dst, PromptList):
            for i, item in enumerate(self.items):
                if isinstance(item, RoleItem) and isinstance(item.prompt, str) \
                        and src in item.prompt:
                    raise RenderError(
                        f"{src!r} occurs in the prompt of item {i} ({item!r}), and a "
                        "PromptList cannot be put inside one prompt",
                        hint="replace it with a str, or put it in a str item of its own",
                        reference=("TypeError", f"Found keyword {src} in a dictionary's "
                                   "prompt key. Cannot replace with a PromptList."))
        out = replace_in(self, src, dst, where="PromptList.replace")
        assert isinstance(out, PromptList)
        return out

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


# -- OpenCompass's replace on a str or a PromptList (templates put their ice blocks in with it) --

Rendered = str | PromptList
"""What a template produces for one row."""
Ice = str | PromptList | list[Any]
"""An in-context block."""


def replace_in(tp: Rendered, src: str, dst: Ice, *, where: str = "template") -> Rendered:
    """``str.replace`` / ``PromptList.replace`` exactly as OpenCompass does them (a str
    ``dst`` grows the text by at most the prompt-size limit)."""
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
