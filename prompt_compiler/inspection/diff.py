"""A prompt diff of two compilations, item by item.

``A`` and ``B`` are two output folders (matched file by file by ``<model>/<dataset>.jsonl``)
or two record files (e.g. two models of one run). Within a pair of files, records are
matched by ``(mode, index, label, turn)`` and compared by every field a record carries that
its model is fed or generates with (:data:`FIELDS`: ``prompt``, ``input_ids``, ``stop``,
``stop_token_ids``, ``max_out_len``, ``mask_length``, ``messages``), or by ``prompt`` alone
(``only="prompt"``, ``--only prompt``): an item is *same*, *changed*, *only in A* or *only in
B*. The text form shows each changed prompt with whitespace and special tokens made visible as
``--show`` does (:func:`prompt_compiler.inspection.viewer.visible`), as a unified diff, and
each other differing field on its own line (for ``input_ids``: the first position where they
differ and the two ids there, each decoded with its side's tokenizer, :class:`TokenText`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..storage import object_uri
from .outputs import Output, item_key, read_records, record_files
from .visible import visible

__all__ = ["FIELDS", "ItemDiff", "PairDiff", "TokenText", "diff_outputs", "diff_text",
           "field_line", "to_json"]

FIELDS = ("prompt", "input_ids", "stop", "stop_token_ids", "max_out_len", "mask_length",
          "messages")
"""The fields compared (besides the record's key): what the model is fed and generates with."""


@dataclass(frozen=True, slots=True)
class ItemDiff:
    """One item whose prompt differs (``a`` or ``b`` is None when it exists on one side only)."""

    model: str
    dataset: str
    mode: str
    index: Any
    label: Any
    turn: Any
    a: Any
    b: Any
    fields: tuple[tuple[str, Any, Any], ...] = ()
    """The other fields that differ: ``(name, A's value, B's value)``."""
    tokens: tuple[str, str] | None = None
    """Where ``input_ids`` differ: the text of each side's token at the first differing
    position (:class:`TokenText`), or why it is not known."""

    @property
    def where(self) -> str:
        extra = f" label={self.label!r}" if self.mode == "ppl" else ""
        extra += f" turn={self.turn}" if self.mode == "chat" else ""
        return f"{self.dataset} x {self.model} [{self.mode}] row {self.index}{extra}"


@dataclass(frozen=True, slots=True)
class PairDiff:
    """The comparison of one dataset x model (one file of A with its match in B)."""

    model: str
    dataset: str
    same: int
    changed: int
    only_a: int
    only_b: int
    items: tuple[ItemDiff, ...]
    """Changed items first-seen order (A's), then those only in A or only in B."""

    @property
    def identical(self) -> bool:
        return not (self.changed or self.only_a or self.only_b)


def _names(recs: list[dict[str, Any]], rel: str, field: str) -> str:
    if recs and isinstance(recs[0].get(field), str):
        return str(recs[0][field])
    parts = rel.removesuffix(".jsonl").split("/")
    return parts[-1] if field == "dataset" else (parts[0] if len(parts) > 1 else "?")


def _joined(a: str, b: str) -> str:
    return a if a == b or not b else (b if not a else f"{a} | {b}")


def _same(a: Any, b: Any) -> bool:
    return bool(a == b and type(a) is type(b))


Decoder = Callable[[int], str]


class TokenText:
    """The text of one token id of an output's records: the tokenizer is the
    ``tokenizer.json`` its manifest lists as an input, found from the working folder or the
    output's parent folder (where the manifest's paths start for a run made there) and used
    only when its sha256 is the manifest's. Otherwise :meth:`of` says why there is none."""

    def __init__(self, out: Output) -> None:
        self.decode: Decoder | None = None
        self.missing = ""
        try:
            if not isinstance(out, Path) or object_uri(out) is not None:
                raise _NoTokenizer("the output is in an object store")
            self.decode = self._load(out)
        except _NoTokenizer as why:
            self.missing = str(why)

    def of(self, token: Any) -> str:
        """``"<|begin_of_text|>"`` (JSON-quoted), ``(not decoded: why)``, or ``""`` past the
        last id."""
        if token == "(end)":
            return ""
        if self.decode is None:
            return f"(not decoded: {self.missing})"
        try:
            return json.dumps(self.decode(int(token)), ensure_ascii=False)
        except Exception:  # an id the vocabulary does not have
            return "(not in the vocabulary)"

    @staticmethod
    def _load(out: Path) -> Decoder:
        folder = out if out.is_dir() else out.parent.parent  # <model>/<dataset>.jsonl
        try:
            manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
            inputs = [i for i in manifest["inputs"]
                      if os.path.basename(str(i["path"])) == "tokenizer.json"]
        except (OSError, ValueError, KeyError, TypeError):
            raise _NoTokenizer(f"no manifest.json in {folder}") from None
        if not inputs:
            raise _NoTokenizer("its manifest lists no tokenizer.json")
        if len(inputs) > 1:
            raise _NoTokenizer(f"its manifest lists {len(inputs)} tokenizer.json files and "
                               "does not say which is this model's")
        rel, digest = str(inputs[0]["path"]), inputs[0].get("sha256")
        for base in (Path.cwd(), folder.resolve().parent):
            path = base / rel
            try:
                if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                    continue
            except OSError:
                continue
            try:
                from tokenizers import Tokenizer
            except ImportError:
                raise _NoTokenizer("the tokenizers package is not installed") from None
            tok = Tokenizer.from_file(str(path))
            return lambda i: str(tok.decode([i], skip_special_tokens=False))
        raise _NoTokenizer(f"its tokenizer {rel} is not found from here with the manifest's "
                           "sha256")


class _NoTokenizer(Exception):
    pass


def _first_differ(a: list[Any], b: list[Any]) -> tuple[int, Any, Any]:
    k = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
             min(len(a), len(b)))
    return k, a[k] if k < len(a) else "(end)", b[k] if k < len(b) else "(end)"


def _tokens(fields: tuple[tuple[str, Any, Any], ...],
            texts: tuple[TokenText, TokenText] | None) -> tuple[str, str] | None:
    ids = next(((a, b) for name, a, b in fields if name == "input_ids"), None)
    if texts is None or ids is None or not all(isinstance(x, list) for x in ids):
        return None
    _, at_a, at_b = _first_differ(*ids)
    return texts[0].of(at_a), texts[1].of(at_b)


def _compare(
    a_recs: list[dict[str, Any]], b_recs: list[dict[str, Any]], rel_a: str, rel_b: str,
    fields: tuple[str, ...] = FIELDS, texts: tuple[TokenText, TokenText] | None = None,
) -> PairDiff:
    model = _joined(
        _names(a_recs, rel_a, "model") if rel_a else "",
        _names(b_recs, rel_b, "model") if rel_b else "",
    )
    dataset = _joined(
        _names(a_recs, rel_a, "dataset") if rel_a else "",
        _names(b_recs, rel_b, "dataset") if rel_b else "",
    )
    b_by_key = {item_key(r): r for r in b_recs}
    a_keys = set()
    same = changed = only_a = 0
    changed_items: list[ItemDiff] = []
    one_sided: list[ItemDiff] = []

    def item(rec: dict[str, Any], a: Any, b: Any,
             others: tuple[tuple[str, Any, Any], ...] = ()) -> ItemDiff:
        return ItemDiff(
            model,
            dataset,
            str(rec.get("mode", "")),
            rec.get("index"),
            rec.get("label"),
            rec.get("turn"),
            a,
            b,
            others,
            _tokens(others, texts),
        )

    for rec in a_recs:
        key = item_key(rec)
        a_keys.add(key)
        other = b_by_key.get(key)
        if other is None:
            only_a += 1
            one_sided.append(item(rec, rec["prompt"], None))
            continue
        others = tuple((f, rec.get(f), other.get(f)) for f in fields
                       if f != "prompt" and not _same(rec.get(f), other.get(f)))
        if _same(other["prompt"], rec["prompt"]) and not others:
            same += 1
        else:
            changed += 1
            changed_items.append(item(rec, rec["prompt"], other["prompt"], others))
    b_only = [r for r in b_recs if item_key(r) not in a_keys]
    one_sided.extend(item(r, None, r["prompt"]) for r in b_only)
    return PairDiff(
        model, dataset, same, changed, only_a, len(b_only), tuple(changed_items + one_sided)
    )


def diff_outputs(a: Output, b: Output, *, only: str | None = None) -> Iterator[PairDiff]:
    """Compare two output folders or ``s3://`` outputs (file by file) or two record files, one
    pair at a time; ``only="prompt"`` compares the prompts alone (else every field of
    :data:`FIELDS`).

    Raises:
        DataError: a record file cannot be read or holds a line that is not a record.
    """
    fields = ("prompt",) if only == "prompt" else FIELDS
    texts = None if only == "prompt" else _Lazy(a, b)
    if isinstance(a, Path) and isinstance(b, Path) and object_uri(a) is None and (
            a.is_file() or b.is_file()):
        yield _compare(list(read_records(a)), list(read_records(b)), a.name, b.name, fields,
                       texts.pair() if texts else None)
        return
    files_a = {f.rel: f for f in record_files(a)}
    files_b = {f.rel: f for f in record_files(b)}
    for rel in sorted(files_a.keys() | files_b.keys()):
        fa, fb = files_a.get(rel), files_b.get(rel)
        yield _compare(
            list(fa.records()) if fa else [],
            list(fb.records()) if fb else [],
            rel if fa else "",
            rel if fb else "",
            fields,
            texts.pair() if texts else None,
        )


class _Lazy:
    """Each side's :class:`TokenText`, loaded on first use."""

    def __init__(self, a: Output, b: Output) -> None:
        self.paths = (a, b)
        self.loaded: tuple[TokenText, TokenText] | None = None

    def pair(self) -> tuple[TokenText, TokenText]:
        if self.loaded is None:
            self.loaded = (TokenText(self.paths[0]), TokenText(self.paths[1]))
        return self.loaded


def _lines(prompt: Any) -> list[str]:
    return [] if prompt is None else visible(prompt).split("\n")


def field_line(name: str, a: Any, b: Any, tokens: tuple[str, str] | None = None) -> str:
    """One differing field, e.g. ``input_ids: first differ at 0: A 128000 "<|begin_of_text|>",
    B 791 "The" (A 14 ids, B 13)`` (``tokens``: the two ids' texts, :class:`TokenText`)."""
    if name == "input_ids" and isinstance(a, list) and isinstance(b, list):
        k, at_a, at_b = _first_differ(a, b)
        ta, tb = (f" {t}" if t else "" for t in tokens or ("", ""))
        return (f"  input_ids: first differ at {k}: A {at_a}{ta}, B {at_b}{tb} "
                f"(A {len(a)} ids, B {len(b)})")
    return f"  {name}: A {json.dumps(a, ensure_ascii=False)}, B {json.dumps(b, ensure_ascii=False)}"


def diff_text(pairs: list[PairDiff], *, context: int = 3, max_items: int = 20) -> str:
    """The human-readable report: a summary line per pair, then the changed items as unified
    diffs of their visible forms (at most ``max_items`` items; 0 shows all)."""
    out = []
    for p in pairs:
        out.append(
            f"{p.dataset} x {p.model}: {p.same} same, {p.changed} changed, "
            f"{p.only_a} only in A, {p.only_b} only in B"
        )
    items = [i for p in pairs for i in p.items]
    shown = items if max_items <= 0 else items[:max_items]
    for it in shown:
        out.append("")
        if it.b is None:
            out.append(f"--- {it.where}: only in A")
            continue
        if it.a is None:
            out.append(f"+++ {it.where}: only in B")
            continue
        out.append(f"*** {it.where}")
        body = difflib.unified_diff(
            _lines(it.a), _lines(it.b), "A", "B", n=max(context, 0), lineterm=""
        )
        out.extend(list(body)[2:])  # the '--- A' / '+++ B' header says nothing here
        out.extend(field_line(name, a, b, it.tokens) for name, a, b in it.fields)
    if len(shown) < len(items):
        out.append("")
        out.append(f"... {len(items) - len(shown)} more differing items (--max-items 0 shows all)")
    changed = sum(p.changed for p in pairs)
    only_a = sum(p.only_a for p in pairs)
    only_b = sum(p.only_b for p in pairs)
    total = sum(p.same + p.changed + p.only_a + p.only_b for p in pairs)
    out.append("")
    if changed or only_a or only_b:
        differing = sum(not p.identical for p in pairs)
        out.append(
            f"differ: {changed} changed, {only_a} only in A, {only_b} only in B "
            f"(in {differing} of {len(pairs)} dataset x model pair{'s' * (len(pairs) != 1)})"
        )
    else:
        out.append(f"identical: {total} prompt{'s' * (total != 1)} in {len(pairs)} dataset x "
                   f"model pair{'s' * (len(pairs) != 1)}")
    return "\n".join(out) + "\n"


def to_json(pairs: list[PairDiff], *, max_items: int = 0) -> dict[str, Any]:
    """``{"pairs": [...], "items": [...]}`` (at most ``max_items`` items; 0 keeps all)."""
    items = [i for p in pairs for i in p.items]
    if max_items > 0:
        items = items[:max_items]
    return {
        "pairs": [
            {
                "model": p.model,
                "dataset": p.dataset,
                "same": p.same,
                "changed": p.changed,
                "only_a": p.only_a,
                "only_b": p.only_b,
            }
            for p in pairs
        ],
        "items": [
            {
                "model": i.model,
                "dataset": i.dataset,
                "mode": i.mode,
                "index": i.index,
                "label": i.label,
                "turn": i.turn,
                "a": i.a,
                "b": i.b,
                # the other fields that differ, where some do
                **({"fields": {name: {"a": a, "b": b} for name, a, b in i.fields}}
                   if i.fields else {}),
            }
            for i in items
        ],
    }
