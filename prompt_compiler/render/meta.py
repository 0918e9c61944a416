"""Meta templates and the section walk shared by every PromptList renderer.

A model's meta template says how each role is wrapped (``begin`` + prompt + ``end``),
which role generates (``generate=True``), the API role names (``api_role``), and an
optional global ``begin``/``end``. :func:`walk` reads a PromptList's marker pairs back
as sections (the one place that does so) and yields what a renderer must emit;
:func:`split_rounds` and :func:`merge_roles` implement OpenCompass's round logic.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import MetaTemplateError, SectionError, TemplateError, UnknownRoleError
from ..promptlist import SECTION_NAMES, Marker, PromptList, RoleItem

__all__ = ["Dialogue", "MetaTemplate", "RoleText", "Text", "merge_meta_messages", "merge_roles",
           "split_rounds", "walk"]

RoleTable = dict[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class MetaTemplate:
    """A validated model meta template.

    Attributes:
        round: The meta round: role dicts and literal strings, in order.
        roles: Role name -> role config, from ``round`` then ``reserved_roles``.
        begin: Text put before everything (``''`` when absent).
        end: Text put after everything unless generation stopped first.
        raw: The original dict (or list, for ``messages``).
        messages: An API model's meta template given as OpenAI messages (``[{"role":
            "system", "content": ...}]``), merged into message prompts (RawPromptTemplate,
            :func:`merge_meta_messages`); ``round`` and ``roles`` are then empty.
        default_system: The family's default system turn as it stands in ``begin`` (a
            built-in template's ``default_system`` in its SYSTEM role), or ``None``: in
            default mode a prompt that starts with its own system turn replaces it (D24).
    """

    round: tuple[str | Mapping[str, Any], ...]
    roles: Mapping[str, Mapping[str, Any]]
    begin: Any
    end: Any
    raw: Any
    messages: tuple[Mapping[str, Any], ...] | None = None
    default_system: str | None = None

    @classmethod
    def parse(cls, meta: Mapping[str, Any] | Sequence[Any] | None, *,
              where: str = "meta_template",
              lm: bool = True) -> MetaTemplate | None:
        """Validate ``meta`` (``None``/empty -> no meta template)."""
        if not meta:
            return None
        if isinstance(meta, (list, tuple)):
            return cls._parse_messages(meta, where=where, lm=lm)
        if not isinstance(meta, Mapping):
            raise MetaTemplateError(f"a meta template must be a dict, got {type(meta).__name__}",
                                    key_path=where)
        if "round" not in meta:
            raise MetaTemplateError(
                "the meta template needs a 'round' list", key_path=where,
                reference=("AssertionError", "round is required in meta template"))
        roles: RoleTable = {}
        for key in ("round", "reserved_roles"):
            if key not in meta:
                continue
            items = meta[key]
            if not isinstance(items, list):
                raise MetaTemplateError(f"{key} must be a list, got {type(items).__name__}",
                                        key_path=f"{where}.{key}", reference=("AssertionError", ""))
            for i, item in enumerate(items):
                path = f"{where}.{key}[{i}]"
                if isinstance(item, str):
                    continue
                if not isinstance(item, Mapping) or not isinstance(item.get("role"), str):
                    raise MetaTemplateError(
                        "each entry must be a role dict with a str 'role' (or a str), got "
                        f"{item!r}",
                        key_path=path, reference=("AssertionError", ""))
                if item["role"] in roles:
                    raise MetaTemplateError(
                        f"role {item['role']!r} is declared twice", key_path=path,
                        reference=("AssertionError", "role in meta prompt must be unique!"))
                for k in ("begin", "end"):
                    if lm and isinstance(item.get(k), list):
                        raise MetaTemplateError(
                            f"role {k} given as a list of special tokens is not supported; "
                            "write it as a string", key_path=f"{path}.{k}",
                            reference=("NotImplementedError", ""))
                _check_role_fields(item, path)
                roles[item["role"]] = dict(item)
        for k in ("begin", "end"):
            if not lm and k == "begin" and isinstance(meta.get(k), Mapping):
                # OpenCompass's APITemplateParser puts a dict begin in front of the
                # messages as it is: a role item such as dict(role='SYSTEM', prompt='...').
                _check_begin_item(meta[k], f"{where}.{k}")
                continue
            if meta.get(k) is not None and not isinstance(meta[k], str):
                raise MetaTemplateError(
                    f"the meta template's {k} must be a string, got {type(meta[k]).__name__}",
                    key_path=f"{where}.{k}",
                    reference=("TypeError", f"can only concatenate str (not "
                               f"\"{type(meta[k]).__name__}\") to str"))
        return cls(tuple(meta["round"]), roles, meta.get("begin"), meta.get("end"), meta)

    @classmethod
    def _parse_messages(cls, meta: Sequence[Any], *, where: str, lm: bool) -> MetaTemplate:
        """OpenCompass's APITemplateParser takes a list of ``system``/``user``/``assistant``
        messages as its meta template; its LMTemplateParser does not."""
        if lm:
            raise MetaTemplateError(
                "an LM model's meta template is a dict with a 'round' list; a list of "
                "messages is a meta template of API models", key_path=where,
                reference=("AssertionError", "round is required in meta template"))
        for i, item in enumerate(meta):
            if not (isinstance(item, Mapping) and item.get("role") in _MESSAGE_ROLES):
                raise MetaTemplateError(
                    f"a meta template given as a list holds messages with a role 'system', "
                    f"'user' or 'assistant', got {item!r:.80}", key_path=f"{where}[{i}]",
                    reference=("AssertionError", f"meta_template is {list(meta)}, not a list "
                               "of dicts"))
            if not isinstance(item.get("content"), str):
                raise MetaTemplateError(
                    f"a meta template message needs a str 'content', got {item!r:.80}",
                    key_path=f"{where}[{i}].content", reference=("KeyError", "'content'"))
        return cls((), {}, None, None, list(meta), tuple(dict(item) for item in meta))

    def role_names(self) -> str:
        return ", ".join(self.roles) or "none"

    def round_roles(self) -> dict[str, int]:
        return {r["role"]: i for i, r in enumerate(self.round) if not isinstance(r, str)}


_MESSAGE_ROLES = ("system", "user", "assistant")


def merge_meta_messages(meta: Sequence[Mapping[str, Any]], prompt: Sequence[Any]) -> list[Any]:
    """A message prompt with an API meta template of messages merged in, as OpenCompass's
    APITemplateParser merges them: walking both in order, a meta message whose role is the
    prompt's next message's role is prefixed to its content; one whose role does not occur
    in the rest of the prompt is inserted there; what is left of either comes last."""
    out: list[Any] = []
    m = p = 0
    while m < len(meta):
        if p < len(prompt) and meta[m]["role"] == prompt[p]["role"]:
            merged = copy.deepcopy(dict(prompt[p]))
            merged["content"] = meta[m]["content"] + merged["content"]
            out.append(merged)
            m += 1
            p += 1
        elif p < len(prompt) and any(q["role"] == meta[m]["role"] for q in prompt[p:]):
            out.append(copy.deepcopy(prompt[p]))
            p += 1
        else:
            out.append(copy.deepcopy(dict(meta[m])))
            m += 1
    out.extend(copy.deepcopy(q) for q in prompt[p:])
    return out


_TEXT_FIELDS = ("begin", "end", "api_role")  # when present: str (None is no text either)
_OPTIONAL_TEXT_FIELDS = ("prompt", "fallback_role")  # str or None


def _check_begin_item(item: Mapping[str, Any], path: str) -> None:
    """An API meta template's dict ``begin``: one message, a str ``role`` and ``prompt``."""
    if not isinstance(item.get("role"), str) or not isinstance(item.get("prompt"), str):
        raise MetaTemplateError(
            "a meta template's begin given as a dict is one message: it needs a str 'role' "
            f"and a str 'prompt', got {dict(item)!r}", key_path=path,
            reference=("KeyError", "'prompt'"))


def _check_role_fields(item: Mapping[str, Any], path: str) -> None:
    """A role's text fields are strings: they are concatenated into the prompt."""
    for k in (*_TEXT_FIELDS, *_OPTIONAL_TEXT_FIELDS):
        value = item.get(k)
        if k in item and not isinstance(value, str) and (value is not None
                                                          or k in _TEXT_FIELDS):
            raise MetaTemplateError(
                f"role {item.get('role')!r}: {k} must be a string, got {type(value).__name__}",
                key_path=f"{path}.{k}",
                reference=("TypeError", f"can only concatenate str (not "
                           f"\"{type(value).__name__}\") to str"))


@dataclass(frozen=True, slots=True)
class Text:
    """A literal string item."""

    text: str


@dataclass(frozen=True, slots=True)
class RoleText:
    """A role item of a ``begin`` or ``end`` section (rendered on its own)."""

    item: RoleItem


@dataclass(frozen=True, slots=True)
class Dialogue:
    """The content of a closed ``round`` or ``ice`` section, rendered round by round."""

    section: str
    items: tuple[Any, ...]


def walk(prompt: PromptList) -> Iterator[Text | RoleText | Dialogue]:
    """Read the sections of ``prompt`` in order; raises when it reaches a malformed one.

    Lazy on purpose: a gen-mode render stops at the generating role, and nothing
    after that point can fail (OpenCompass behaves the same way).
    """
    stack: list[tuple[str, int]] = []
    items = prompt.items
    for i, item in enumerate(items):
        if isinstance(item, str):
            yield Text(item)
        elif isinstance(item, Marker):
            if item.pos == "end":
                if not stack:
                    raise SectionError(
                        f"section marker {item!r} closes a section that was never opened",
                        key_path=f"prompt[{i}]",
                        hint="OpenCompass opens 'end' sections with pos='end' (defect D3); "
                             "the default mode fixes it",
                        reference=("IndexError", "pop from empty list"))
                name, start = stack.pop()
                if name != item.section:
                    raise SectionError(f"section {name!r} is closed by {item!r}",
                                       key_path=f"prompt[{i}]", reference=("AssertionError", ""))
                if name in ("round", "ice"):
                    yield Dialogue(name, items[start:i])
            elif item.pos == "begin":
                if item.section not in SECTION_NAMES:
                    raise SectionError(f"unknown section {item.section!r}", key_path=f"prompt[{i}]",
                                       reference=("AssertionError", ""))
                stack.append((item.section, i + 1))
            else:
                raise SectionError(f"invalid marker position {item.pos!r}", key_path=f"prompt[{i}]",
                                   reference=("ValueError", f"Invalid pos {item.pos}"))
        else:
            if not stack:
                raise SectionError(
                    f"role item {item!r} is outside any begin/round/end section",
                    key_path=f"prompt[{i}]", reference=("IndexError", "list index out of range"))
            if stack[-1][0] in ("begin", "end"):
                yield RoleText(item)


def split_rounds(items: Sequence[Any], meta: MetaTemplate, *,
                 use_fallback: bool) -> list[list[Any]]:
    """Cut a dialogue into rounds: a new round starts when a role's meta-round
    position is not after the previous one's. ``use_fallback`` lets a role absent
    from the round take its ``fallback_role``'s position (API parsers; LM with D12)."""
    positions = meta.round_roles()
    cuts = [0]
    last = -1
    for idx, item in enumerate(items):
        if isinstance(item, str):
            continue
        if isinstance(item, Marker):
            raise TemplateError(
                "in-context examples built as sections cannot sit inside a round",
                key_path=f"prompt round item {idx}",
                hint="put the ice_token in 'begin' (e.g. begin='</E>') or as its own item "
                "before the round",
                reference=("KeyError", "'role'"))
        role = item.role
        pos = positions.get(role)
        if pos is None:
            fallback = item.fallback_role
            if use_fallback and fallback in positions:
                pos = positions[fallback]
            elif use_fallback:
                message = f"{item.to_obj()} neither has an appropriate role nor a fallback role."
                raise UnknownRoleError(
                    f"role {role!r} (fallback {fallback!r}) is not in the meta template's round; "
                    f"round roles: {', '.join(positions) or 'none'}",
                    reference=("KeyError", repr(message)))
            else:
                raise UnknownRoleError(
                    f"role {role!r} is not in the meta template's round "
                    f"(round roles: {', '.join(positions) or 'none'}); OpenCompass's LM parser "
                    "ignores fallback_role inside rounds",
                    hint="add the role to the meta template's round, or compile in the default "
                         "mode, which uses fallback_role (defect D12)",
                    reference=("KeyError", repr(role)))
        if pos <= last:
            cuts.append(idx)
        last = pos
    cuts.append(len(items))
    return [list(items[a:b]) for a, b in zip(cuts, cuts[1:], strict=False)]


def merge_roles(meta: MetaTemplate, items: Sequence[Any]) -> RoleTable:
    """The role table for one round: each item's keys override its role's config."""
    table: RoleTable = dict(meta.roles)  # type: ignore[arg-type]
    for item in items:
        if not isinstance(item, RoleItem):
            continue
        role = item.role
        if role not in meta.roles:
            role = item.fallback_role
            if role not in meta.roles:
                raise UnknownRoleError(
                    f"role {item.role!r} is not declared by the meta template and its "
                    f"fallback_role {role!r} is not either; declared roles: {meta.role_names()}",
                    hint="use a declared role or give the item a declared fallback_role",
                    reference=("KeyError", repr(role)))
        table[role] = {**table[role], **dict(item.fields)}
    return table


def lookup(table: RoleTable, cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """The merged config for a meta-round role or a begin/end item."""
    found = table.get(cfg.get("role"))  # type: ignore[arg-type]
    if found is None:
        found = table.get(cfg.get("fallback_role"))  # type: ignore[arg-type]
    if found is None:
        raise UnknownRoleError(
            f"role {cfg.get('role')!r} is not declared by the meta template",
            reference=("AttributeError", "'NoneType' object has no attribute 'get'"))
    return found
