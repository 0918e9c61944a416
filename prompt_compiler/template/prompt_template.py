"""Dataset prompt templates: rows -> PromptList (or a message list for raw templates).

:class:`PromptTemplate` accepts OpenCompass's three template shapes:

* a ``str``;
* a *meta* dict whose keys are all among ``begin``/``round``/``end`` (role items,
  strings, ``fallback_role``);
* a *label* dict (any other dict), label -> str or meta dict, for PPL scoring.

The template is validated and encoded once; rows are then filled per call. In
compat mode the steps follow OpenCompass's order exactly (in-context examples are
inserted *before* the row is formatted, so their text is formatted again); the
default mode fills the template pieces around ``ice_token`` first and inserts the
examples untouched (defects D1, D2).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from ..errors import LabelError, MissingTokenError, RenderError, TemplateError
from ..policy import Policy
from ..promptlist import Item, Marker, PromptList, RoleItem, item_from_obj
from .fill import Pattern, RowValues

__all__ = ["Ice", "PromptTemplate", "RawPromptTemplate", "Rendered", "mask_row"]

# What a template produces for one row, and what an in-context block is.
Rendered = Union[str, PromptList]
Ice = Union[str, PromptList, list[Any]]

_META_KEYS = ("begin", "round", "end")


def mask_row(row: Mapping[str, Any], column: str | None, token: str) -> dict[str, Any]:
    """A copy of ``row`` whose output column shows ``token`` (the answer hidden)."""
    out = dict(row)
    if column is not None:
        out[column] = token
    return out


# Looked up by name or joined into the prompt text (a non-str prompt: RenderError when filled).
_ROLE_TEXT_KEYS = ("role", "fallback_role", "begin", "end", "api_role")
_PRESENT_MEANS_STR = ("begin", "end", "api_role")  # these override the meta role's text


def _role_item(obj: Any) -> Item:
    """One template item; a role's name and text fields must be strings (TypeError if not)."""
    item = item_from_obj(obj)
    if isinstance(item, RoleItem):
        for key in _ROLE_TEXT_KEYS:  # looked up by name or joined into the prompt text
            value = item.get(key)
            if item.has(key) and not isinstance(value, str) and (
                    value is not None or key in _PRESENT_MEANS_STR):
                raise TypeError(f"a role item's {key!r} must be a str, got "
                                f"{type(value).__name__}")
    return item


@dataclass(frozen=True, slots=True)
class _Piece:
    """One template text split at ``ice_token``, each part pre-parsed."""

    parts: tuple[Any, ...]
    """Fillers (:class:`Pattern` or a Jinja2 filler), one per part between ice tokens."""
    raw_nonempty: tuple[bool, ...]


class PromptTemplate:
    """An OpenCompass-style prompt or in-context-example template.

    Args:
        template: A str, a ``begin``/``round``/``end`` dict, or a label dict.
        ice_token: Marks where in-context examples go (e.g. ``'</E>'``).
        sep_token: Splits context from answer for normalized PPL scoring.
        where: Key path of this template in its config, for error messages.
    """

    kind: str
    """``"str"``, ``"meta"`` or ``"labels"``."""

    def __init__(
        self,
        template: str | Mapping[Any, Any],
        ice_token: str | None = None,
        sep_token: str | None = None,
        *,
        where: str = "template",
        engine: str = "format",
    ) -> None:
        self.where = where
        if engine not in ("format", "jinja2"):
            raise TemplateError(f"engine must be 'format' ({{column}} filling) or 'jinja2', "
                                f"got {engine!r}", key_path=f"{where}.engine")
        self.engine = engine
        if not isinstance(template, (str, Mapping)):
            raise TemplateError(
                f"a template must be a str or a dict, got {type(template).__name__}",
                key_path=where, reference=("AssertionError", ""),
            )
        for name, tok in (("ice_token", ice_token), ("sep_token", sep_token)):
            if tok is not None and not isinstance(tok, str):
                raise TemplateError(
                    f"{name} must be a str or None, got {type(tok).__name__}",
                    key_path=f"{where}.{name}", reference=("TypeError", ""),
                )
            if tok == "":  # it would match between every two characters
                raise TemplateError(f"{name} must not be empty (leave it out instead)",
                                    key_path=f"{where}.{name}",
                                    reference=("ValueError", "empty separator"))
        self.template = template
        self.ice_token = ice_token
        self.sep_token = sep_token
        if isinstance(template, str):
            self.kind = "str"
        else:
            self.kind = "meta" if all(k in _META_KEYS for k in template) else "labels"
        self._validate()
        self._jinja: dict[str, Any] = {}
        if engine == "jinja2":
            self._check_jinja(template, where)
        self._encoded: dict[tuple[Any, bool, bool, bool], Rendered] = {}
        self._plans: dict[tuple[Any, bool, bool], tuple[Any, ...]] = {}

    # -- construction -------------------------------------------------------------

    def _check_jinja(self, value: Any, path: str) -> None:
        """Parse every template text now, so syntax errors name their key path."""
        if isinstance(value, str):
            self._filler(value, path)
        elif isinstance(value, Mapping):
            for k, v in value.items():
                self._check_jinja(v, f"{path}[{k!r}]" if not isinstance(k, str) or k not in _META_KEYS
                                  else f"{path}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self._check_jinja(v.get("prompt") if isinstance(v, Mapping) else v, f"{path}[{i}]")

    def _filler(self, text: str, path: str | None = None) -> Any:
        """A compiled filler for one text: a ``{column}`` Pattern or a Jinja2 template."""
        if self.engine == "format":
            return Pattern.parse(text)
        found = self._jinja.get(text)
        if found is None:
            from .jinja_engine import compile_jinja

            try:
                found = _JinjaFiller(compile_jinja(text, strict=True))
            except TemplateError as err:
                raise err.located(key_path=path or self.where)
            self._jinja[text] = found
        return found

    def _validate(self) -> None:
        tok = self.ice_token
        if isinstance(self.template, str):
            if tok and tok not in self.template:
                raise MissingTokenError(
                    f"ice_token {tok!r} does not occur in the template",
                    key_path=self.where, hint="put the ice_token where the examples go",
                    reference=("LookupError", f"'{tok}' not in '{self.template}'"),
                )
            return
        for key, value in self.template.items():
            path = f"{self.where}[{key!r}]"
            if not isinstance(value, (str, list, Mapping)):
                raise TemplateError(
                    f"a template dict value must be a str, list or dict, got {value!r}",
                    key_path=path,
                    reference=("TypeError", "dictionary of template expects a str, list or a "
                               f"dict, but got '{value}'"),
                )
            if isinstance(value, str) and tok and tok not in value:
                raise MissingTokenError(
                    f"ice_token {tok!r} does not occur in this template text",
                    key_path=path, reference=("LookupError", f"'{tok}' not in '{value}'"),
                )

    @property
    def labels(self) -> list[Any]:
        """The dict's keys (label keys keep their type); empty for a str template."""
        return [] if isinstance(self.template, str) else list(self.template)

    def _select(self, label: Any, *, first: bool = False) -> Any:
        if self.kind != "labels":
            return self.template
        assert isinstance(self.template, Mapping)
        if first:
            return next(iter(self.template.values()))
        try:
            return self.template[label]
        except (KeyError, TypeError):
            raise LabelError(
                f"label {label!r} is not a key of the label template; keys: "
                f"{', '.join(repr(k) for k in self.template)}",
                key_path=self.where, reference=("KeyError", repr(label)),
            ) from None

    def encode(self, label: Any = None, *, ice: bool, policy: Policy, first: bool = False) -> Rendered:
        """The template for ``label`` with its sections encoded (cached)."""
        key = (label if self.kind == "labels" and not first else None, ice, first, policy.fixes("D3"))
        try:
            return self._encoded[key]
        except (KeyError, TypeError):
            pass
        raw = self._select(label, first=first)
        encoded = self._encode(raw, ice=ice, policy=policy, path=self.where)
        try:
            self._encoded[key] = encoded
        except TypeError:  # unhashable label: no caching
            pass
        return encoded

    @staticmethod
    def _encode(raw: Any, *, ice: bool, policy: Policy, path: str) -> Rendered:
        if isinstance(raw, str):
            return raw
        if not isinstance(raw, Mapping) or "round" not in raw:
            raise TemplateError(
                "a section template needs a 'round' list",
                key_path=path, reference=("KeyError", "'round'"),
            )
        items: list[Item] = []

        def add(value: Any, section: str, spread: bool) -> None:
            if spread and isinstance(value, list):
                for j, obj in enumerate(value):
                    try:
                        items.append(_role_item(obj))
                    except TypeError as exc:
                        raise TemplateError(str(exc), key_path=f"{path}.{section}[{j}]") from None
            elif spread and isinstance(value, str):
                if value:  # PromptList += '' adds nothing
                    items.append(value)
            else:
                try:
                    items.append(_role_item(value))
                except TypeError as exc:
                    raise TemplateError(str(exc), key_path=f"{path}.{section}") from None

        if "begin" in raw and not ice:
            items.append(Marker("begin", "begin"))
            add(raw["begin"], "begin", isinstance(raw["begin"], list))
            items.append(Marker("begin", "end"))
        section = "ice" if ice else "round"
        items.append(Marker(section, "begin"))
        add(raw["round"], "round", True)
        items.append(Marker(section, "end"))
        if "end" in raw and not ice:
            # OpenCompass opens the end section with pos='end' (D3), which every
            # meta-template parser then rejects.
            items.append(Marker("end", "begin" if policy.fixes("D3") else "end"))
            add(raw["end"], "end", isinstance(raw["end"], list))
            items.append(Marker("end", "end"))
        return PromptList(tuple(items))

    # -- per-row generation -----------------------------------------------------

    def ice_item(self, row: Mapping[str, Any], label: Any, policy: Policy) -> Rendered:
        """One in-context example from a training row (its answer shown)."""
        tp = self.encode(label, ice=True, policy=policy)
        values = RowValues.of(row)
        if policy.compat and self.engine == "format":
            # OpenCompass discards the result of its sep_token removal here (D2).
            if self.ice_token is not None:
                tp = oc_replace(tp, self.ice_token, "")
            return oc_format(tp, values)
        strip = tuple(t for t in (self.sep_token, self.ice_token) if t is not None)
        return self._fill_plan(("ice", label), tp, values, None, strip, policy)

    def gen_item(
        self,
        row: Mapping[str, Any],
        ice: Ice,
        policy: Policy,
        *,
        output_column: str | None = None,
        replace_token: str = "",
    ) -> Rendered:
        """The generation prompt: examples inserted, output column masked."""
        first = self.kind == "labels"
        tp = self.encode(None, ice=False, policy=policy, first=first)
        values = RowValues.of(mask_row(row, output_column, replace_token) if output_column
                              is not None else row)
        if policy.compat and self.engine == "format":
            if self.ice_token is not None:
                tp = oc_replace(tp, self.ice_token, ice, where=self.where)
            if self.sep_token is not None:
                tp = oc_replace(tp, self.sep_token, "")
            return oc_format(tp, values)
        strip = (self.sep_token,) if self.sep_token is not None else ()
        return self._fill_plan(("gen", first), tp, values, ice, strip, policy)

    def label_item(
        self, row: Mapping[str, Any], ice: Ice, label: Any, policy: Policy, *, remain_sep: bool = False
    ) -> Rendered:
        """The PPL prompt for one label (the row is not masked)."""
        tp = self.encode(label, ice=False, policy=policy)
        values = RowValues.of(row)
        strip_sep = not remain_sep and self.sep_token is not None
        if policy.compat and self.engine == "format":
            if strip_sep:
                assert self.sep_token is not None
                tp = oc_replace(tp, self.sep_token, "")
            if self.ice_token is not None:
                tp = oc_replace(tp, self.ice_token, ice, where=self.where)
            return oc_format(tp, values)
        strip = (self.sep_token,) if strip_sep and self.sep_token is not None else ()
        return self._fill_plan(("ppl", label, remain_sep), tp, values, ice, strip, policy)

    # -- default mode: fill template pieces, then splice examples -----------------

    def _plan(self, key: Any, tp: Rendered, strip: tuple[str, ...]) -> tuple[Any, ...]:
        try:
            return self._plans[key]
        except (KeyError, TypeError):
            pass
        token = self.ice_token

        def piece(text: str) -> _Piece:
            raw = text.split(token) if token else [text]
            cleaned = []
            for part in raw:
                for s in strip:
                    if s:
                        part = part.replace(s, "")
                cleaned.append(self._filler(part))
            return _Piece(tuple(cleaned), tuple(bool(p) for p in raw))

        if isinstance(tp, str):
            plan: tuple[Any, ...] = (piece(tp),)
        else:
            entries: list[Any] = []
            for item in tp:
                if isinstance(item, str):
                    entries.append(piece(item))
                elif isinstance(item, RoleItem) and isinstance(item.prompt, str):
                    entries.append((item, piece(item.prompt)))
                elif isinstance(item, RoleItem) and item.has("prompt"):
                    raise _non_str_prompt(item.prompt, None)
                else:
                    entries.append(item)
            plan = tuple(entries)
        try:
            self._plans[key] = plan
        except TypeError:
            pass
        return plan

    def _fill_plan(
        self, key: Any, tp: Rendered, values: RowValues, ice: Ice | None,
        strip: tuple[str, ...], policy: Policy,
    ) -> Rendered:
        plan = self._plan((key, strip, policy.fixes("D3")), tp, strip)
        splice = isinstance(ice, PromptList) and self.ice_token is not None
        if isinstance(tp, str):
            if isinstance(ice, PromptList) and len(plan[0].parts) > 1:
                raise _str_template_with_list_ice(self.where)
            return _join(plan[0], values, ice)
        out: list[Item] = []
        for entry in plan:
            if isinstance(entry, _Piece):
                if splice:
                    assert isinstance(ice, PromptList)
                    for i, (pat, nonempty) in enumerate(zip(entry.parts, entry.raw_nonempty)):
                        if nonempty:
                            out.append(pat.fill(values))
                        if i < len(entry.parts) - 1:
                            out.extend(ice.items)
                else:
                    out.append(_join(entry, values, ice))
            elif isinstance(entry, tuple):
                item, pc = entry
                if splice and len(pc.parts) > 1:
                    raise _role_with_list_ice(self.ice_token, self.where)
                out.append(item.with_prompt(_join(pc, values, ice)))
            else:
                out.append(entry)
        return PromptList(tuple(out))


@dataclass(frozen=True, slots=True)
class _JinjaFiller:
    """A Jinja2 template text, filled from the row's typed values."""

    compiled: Any
    """A :class:`~prompt_compiler.template.jinja_engine.CompiledJinja`."""

    def fill(self, values: RowValues) -> str:
        return str(self.compiled.render(dict(values.raw or values.values)))


def _join(piece: _Piece, values: RowValues, ice: Ice | None) -> str:
    filled: list[str] = [p.fill(values) for p in piece.parts]
    if len(filled) == 1:
        return filled[0]
    return (ice if isinstance(ice, str) else "").join(filled)


def _non_str_prompt(prompt: Any, where: str | None) -> RenderError:
    return RenderError(f"a role prompt must be a str, got {prompt!r}", key_path=where,
                       reference=("AttributeError", f"'{type(prompt).__name__}' object has no "
                                  "attribute 'replace'"))


def _role_with_list_ice(token: str | None, where: str) -> RenderError:
    return RenderError(
        f"the ice_token {token!r} sits inside a role's prompt, but the in-context examples "
        "are a PromptList (a meta ice template) and cannot be put inside one prompt",
        key_path=where, hint="put the ice_token in its own string item, e.g. begin='</E>'",
        reference=("TypeError", f"Found keyword {token} in a dictionary's prompt key. "
                   "Cannot replace with a PromptList."),
    )


def _str_template_with_list_ice(where: str) -> RenderError:
    return RenderError(
        "a str prompt template cannot take in-context examples built by a meta "
        "(begin/round/end) ice template",
        key_path=where, hint="make both templates str, or both meta dicts",
        reference=("TypeError", "replace() argument 2 must be str, not PromptList"),
    )


# -- OpenCompass's PromptList operations (compat mode) ---------------------------


def oc_replace(tp: Rendered, src: str, dst: Ice, *, where: str = "template") -> Rendered:
    """``str.replace`` / ``PromptList.replace`` exactly as OpenCompass does them."""
    if isinstance(tp, str):
        if isinstance(dst, str):
            return tp.replace(src, dst)
        raise _str_template_with_list_ice(where)
    out: list[Item] = []
    for item in tp:
        if isinstance(item, str):
            if isinstance(dst, str):
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
                raise _role_with_list_ice(src, where)
            if not isinstance(dst, str):
                raise RenderError("cannot put a message list inside a role prompt", key_path=where,
                                  reference=("TypeError", "replace() argument 2 must be str"))
            out.append(item.with_prompt(item.prompt.replace(src, dst)))
        else:
            out.append(item)
    return PromptList(tuple(out))


def oc_format(tp: Rendered, values: RowValues) -> Rendered:
    """OpenCompass's ``safe_format`` over a str or every str item / role prompt."""
    if isinstance(tp, str):
        return _fill_text(tp, values)
    out: list[Item] = []
    for item in tp:
        if isinstance(item, str):
            out.append(_fill_text(item, values))
        elif isinstance(item, RoleItem) and item.has("prompt"):
            prompt = item.prompt
            if not isinstance(prompt, str):
                raise _non_str_prompt(prompt, None)
            out.append(item.with_prompt(_fill_text(prompt, values)))
        else:
            out.append(item)
    return PromptList(tuple(out))


def _fill_text(text: str, values: RowValues, *, sequential: bool = True) -> str:
    """Placeholders filled from ``values``: OpenCompass's sequential filling, or one pass."""
    if "{" not in text:
        return text
    return Pattern.parse(text).fill(values, sequential=sequential)


# -- raw OpenAI-style messages ---------------------------------------------------

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
        if not isinstance(messages, (list, tuple)):
            raise TemplateError(f"messages must be a list, got {type(messages).__name__}",
                                key_path=f"{where}.messages",
                                reference=("TypeError", f"messages must be a list, got {type(messages)}"))
        for i, msg in enumerate(messages):
            path = f"{where}.messages[{i}]"
            if isinstance(msg, str):
                continue
            if not isinstance(msg, Mapping):
                raise TemplateError(f"a message must be a dict or str, got {msg!r}", key_path=path,
                                    reference=("TypeError", f"messages[{i}] must be a dict, got {type(msg)}"))
            if "expand_column" in msg:
                continue
            for key in ("role", "content"):
                if key not in msg:
                    raise TemplateError(f"message is missing its {key!r} key", key_path=path,
                                        reference=("ValueError", f"messages[{i}] missing '{key}' key"))
            if msg["role"] not in _RAW_ROLES:
                raise TemplateError(
                    f"invalid role {msg['role']!r}; expected one of {', '.join(_RAW_ROLES)}",
                    key_path=path, reference=("ValueError", f"messages[{i}] has invalid role: {msg['role']}"))
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
                new["content"] = _fill_text(new["content"], values,
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
