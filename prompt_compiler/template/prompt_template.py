"""PromptTemplate: OpenCompass-style dataset templates, rows -> str or PromptList.

It accepts OpenCompass's three template shapes (message-list templates are
:mod:`~prompt_compiler.template.raw_template`):

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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import (
    ConfigError,
    LabelError,
    MissingTokenError,
    TemplateError,
    TemplateTypeError,
)
from ..policy import Policy
from ..promptlist import Item, Marker, PromptList, RoleItem, item_from_obj
from ..promptlist.fill import Pattern, RowValues
from .oc_ops import (
    Ice,
    Rendered,
    non_str_prompt,
    oc_format,
    oc_replace,
    role_with_list_ice,
    str_template_with_list_ice,
)

__all__ = ["Ice", "PromptTemplate", "Rendered", "mask_row", "require_template"]

_META_KEYS = ("begin", "round", "end")


def require_template(has_ice: bool, has_prompt: bool, key_path: str = "infer_cfg") -> None:
    """The one check that an ``infer_cfg`` has a template to build prompts from (config files,
    library dicts and hand-built jobs alike)."""
    if not has_ice and not has_prompt:
        raise ConfigError("infer_cfg needs a prompt_template or an ice_template",
                          key_path=key_path, reference=("AssertionError", ""))


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
                raise TemplateTypeError(
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
                named = isinstance(k, str) and k in _META_KEYS
                self._check_jinja(v, f"{path}.{k}" if named else f"{path}[{k!r}]")
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
                raise err.located(key_path=path or self.where) from None
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
                raise TemplateTypeError(
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

    def encode(self, label: Any = None, *, ice: bool, policy: Policy,
               first: bool = False) -> Rendered:
        """The template for ``label`` with its sections encoded (cached)."""
        per_label = label if self.kind == "labels" and not first else None
        key = (per_label, ice, first, policy.fixes("D3"))
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
        self, row: Mapping[str, Any], ice: Ice, label: Any, policy: Policy, *,
        remain_sep: bool = False,
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

    # -- OpenCompass's method names ------------------------------------------------

    @property
    def prompt_type(self) -> str:
        """OpenCompass's name for the shape: ``'meta'`` (begin/round/end) or ``'origin'``
        (a str or a label dict)."""
        return "meta" if self.kind == "meta" else "origin"

    def generate_ice_item(self, entry: Mapping[str, Any], label: Any = None, *,
                          policy: Policy | str | None = None) -> Rendered:
        """OpenCompass's name for :meth:`ice_item`: one in-context example from ``entry``
        (its answer shown; a label dict picks ``template[label]``).

        ``policy``: ``"default"`` (the default) or ``"opencompass"`` (compat mode).
        """
        return self.ice_item(entry, label, Policy.of(policy))

    def generate_item(self, entry: Mapping[str, Any], output_field: str | None = None,
                      output_field_replace_token: str = "", ice_field_replace_token: Ice = "",
                      *, policy: Policy | str | None = None) -> Rendered:
        """OpenCompass's name for :meth:`gen_item`: the generation prompt for ``entry``,
        ``ice_field_replace_token`` (the in-context examples) at the ``ice_token``, the
        ``output_field`` column shown as ``output_field_replace_token``.

        ``policy``: ``"default"`` (the default) or ``"opencompass"`` (compat mode).
        """
        return self.gen_item(entry, ice_field_replace_token, Policy.of(policy),
                             output_column=output_field,
                             replace_token=output_field_replace_token)

    def generate_label_prompt_item(self, entry: Mapping[str, Any], ice: Ice, label: Any,
                                   remain_sep: bool = False, *,
                                   policy: Policy | str | None = None) -> Rendered:
        """OpenCompass's name for :meth:`label_item`: the PPL prompt of ``label`` for
        ``entry`` (not masked), ``ice`` at the ``ice_token``; ``remain_sep`` keeps the
        ``sep_token``.

        ``policy``: ``"default"`` (the default) or ``"opencompass"`` (compat mode).
        """
        return self.label_item(entry, ice, label, Policy.of(policy), remain_sep=remain_sep)

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
                    raise non_str_prompt(item.prompt, None)
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
                raise str_template_with_list_ice(self.where)
            return _join(plan[0], values, ice)
        out: list[Item] = []
        for entry in plan:
            if isinstance(entry, _Piece):
                if splice:
                    assert isinstance(ice, PromptList)
                    pairs = zip(entry.parts, entry.raw_nonempty, strict=True)
                    for i, (pat, nonempty) in enumerate(pairs):
                        if nonempty:
                            out.append(pat.fill(values))
                        if i < len(entry.parts) - 1:
                            out.extend(ice.items)
                else:
                    out.append(_join(entry, values, ice))
            elif isinstance(entry, tuple):
                item, pc = entry
                if splice and len(pc.parts) > 1:
                    raise role_with_list_ice(self.ice_token, self.where)
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
