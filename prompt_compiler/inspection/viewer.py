"""The ``view`` command's HTML report: one self-contained static page showing what every
model receives.

Built from the records the CLI wrote (:mod:`prompt_compiler.inspection.outputs`), never from the
configs again. The page needs no server, network or external file: styles and the small
search script are inline, and every prompt is in the markup itself (a browser with
scripts disabled still shows everything). Whitespace and special tokens are made visible
with :func:`prompt_compiler.inspection.viewer.segments`, the cuts ``--show`` uses; records compiled
with ``--spans`` are coloured by origin. With two outputs the page shows the items that
differ, side by side. The same inputs give the same bytes.
"""

from __future__ import annotations

import bisect
import difflib
import hashlib
import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .diff import PairDiff, diff_outputs, field_line
from .outputs import Output, item_key, output_manifest, record_files, shown
from .visible import GLYPHS, Segment, segments, visible

__all__ = ["GLYPHS", "Segment", "diff_report", "report", "segments", "visible"]
# GLYPHS, Segment, segments, visible: prompt_compiler.inspection.visible (here for importers of
# this module from before the view command moved in)

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5em 3em;color:#222}
header{position:sticky;top:0;background:#fff;padding:.6em 0;border-bottom:1px solid #ccc;z-index:1}
h1{font-size:1.3em;margin:.2em 0}h2{font-size:1.1em;margin:1.5em 0 .4em}
#q{width:28em;padding:.3em}
table.index{border-collapse:collapse;margin:.8em 0}
.index td,.index th{border:1px solid #ccc;padding:.2em .6em;text-align:right}
.index th{background:#f3f3f3}.index th.ds{text-align:left}
.item{border:1px solid #ddd;border-radius:4px;margin:.6em 0;padding:.3em .6em}
.meta{color:#555;font-size:.9em}.meta a{margin-left:.5em}
pre{white-space:pre-wrap;word-break:break-word;margin:.3em 0;font:13px/1.35 ui-monospace,monospace}
.msg{border-left:4px solid #8aa;margin:.3em 0;padding-left:.5em}
.role{font-weight:600;font-size:.85em;color:#366}
.role-system,.role-SYSTEM{border-color:#b8a}.role-assistant,.role-BOT{border-color:#7a7}
.tok{background:#ffe08a;border-radius:2px;outline:1px solid #d9b100}
.ws{color:#b77}
.o-template{background:#eef3ff}.o-meta{background:#f4e8ff}.o-separator{background:#eee}
.o-test{background:#e3f7e3}.o-train{background:#fff1dc;border-bottom:2px dashed #e0a040}
.ice{border-left:4px dashed #e0a040}
.legend span{padding:0 .4em;margin-right:.4em}
.side{display:grid;grid-template-columns:1fr 1fr;gap:.6em}
.del{background:#ffd7d7}.ins{background:#d4f5d4}
.note{color:#a33}.hidden{display:none}
"""

_JS = """
const q=document.getElementById('q');
function filter(){const t=q.value.toLowerCase();
for(const el of document.querySelectorAll('.item')){
el.classList.toggle('hidden',t!==''&&!el.textContent.toLowerCase().includes(t));}}
q.addEventListener('input',filter);
const given=new URLSearchParams(location.search).get('q');
if(given){q.value=given;filter();}
"""


def _esc(s: str) -> str:
    return html.escape(s, quote=True)


def _anchor(*parts: Any) -> str:
    raw = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return "i" + hashlib.sha1(raw.encode("utf-8")).hexdigest()[:12]


def _origin_class(origin: Any) -> tuple[str, str]:
    """CSS class and tooltip of a span origin."""
    if not isinstance(origin, dict):
        return "", ""
    kind = str(origin.get("kind", ""))
    if kind == "column":
        split = str(origin.get("split", ""))
        title = f"column {origin.get('column')} ({split} row {origin.get('row')})"
        return f"o-{split}", title
    return f"o-{kind}", kind + (" (in-context example)" if origin.get("split") == "train" else "")


def _text_html(text: str, spans: Sequence[Any] | None = None) -> str:
    """``text`` with whitespace and special tokens visible; coloured by ``spans`` if given."""
    cuts = sorted({0, len(text)} | {int(p) for s in (spans or ()) for p in s[:2]})
    cut_at = bisect.bisect_right
    origin_at: dict[int, Any] = {int(s[0]): s[2] for s in (spans or ()) if len(s) >= 3}
    out = []
    current = None
    segs = segments(text)
    for a, b, kind in segs:
        pos = a
        while pos < b:
            i = cut_at(cuts, pos)
            nxt = min(cuts[i], b) if i < len(cuts) else b
            if pos in origin_at:
                if current is not None:
                    out.append("</span>")
                cls, title = _origin_class(origin_at[pos])
                out.append(f'<span class="{cls}" title="{_esc(title)}">')
                current = cls
            piece = text[pos:nxt]
            if kind == "special":
                out.append(f'<span class="tok">{_esc(piece)}</span>')
            elif kind == "text":
                out.append(_esc(piece))
            elif kind == "newline":
                out.append('<span class="ws">↵</span>\n' * len(piece))
            else:
                out.append(f'<span class="ws">{GLYPHS[kind] * len(piece)}</span>')
            pos = nxt
    if current is not None:
        out.append("</span>")
    return "".join(out) + '<span class="ws" title="end of text">∎</span>'


def _is_ice(spans: Sequence[Any] | None) -> bool:
    return any(
        isinstance(s[2], dict) and s[2].get("split") == "train" for s in spans or () if len(s) >= 3
    )


def _prompt_html(prompt: Any, spans: Any = None) -> str:
    if isinstance(prompt, str):
        return f"<pre>{_text_html(prompt, spans)}</pre>"
    if not isinstance(prompt, list):
        return f"<pre>{_esc(json.dumps(prompt, ensure_ascii=False))}</pre>"
    parts = []
    for n, msg in enumerate(prompt):
        msg_spans = spans[n] if isinstance(spans, list) and n < len(spans) else None
        if isinstance(msg, str):
            role, body = "raw", msg
        else:
            role = str(msg.get("role", "?"))
            body = msg.get("prompt", msg.get("content"))
        inner = (
            _text_html(body, msg_spans)
            if isinstance(body, str)
            else _esc(json.dumps(body, ensure_ascii=False, indent=1))
        )
        ice = " ice" if _is_ice(msg_spans) else ""
        parts.append(
            f'<div class="msg role-{_esc(role)}{ice}"><div class="role">{_esc(role)}</div>'
            f"<pre>{inner}</pre></div>"
        )
    return "".join(parts)


def _where(rec: dict[str, Any]) -> str:
    mode = rec.get("mode", "")
    extra = f" label={rec.get('label')!r}" if mode == "ppl" else ""
    extra += f" turn={rec.get('turn')}" if mode == "chat" else ""
    return f"[{mode}] row {rec.get('index')}{extra}"


def _page(title: str, body: Iterable[str], legend: bool) -> str:
    keys = (
        (
            '<p class="legend">Origins: <span class="o-template">template</span>'
            '<span class="o-meta">model template</span><span class="o-test">test value</span>'
            '<span class="o-train">in-context example value</span>'
            '<span class="o-separator">separator</span> · <span class="tok">special token</span> '
            '<span class="ws">↵ → · ∎</span> line end, tab, trailing space, end of text; '
            "report.html?q=TEXT opens filtered</p>"
        )
        if legend
        else ""
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>"
        f'<header><h1>{_esc(title)}</h1><input id="q" type="search" '
        'placeholder="filter items by text (prompt, dataset, model, row)">'
        f"{keys}</header>" + "".join(body) + f"<script>{_JS}</script></body></html>\n"
    )


@dataclass(frozen=True, slots=True)
class _Pair:
    """One record file as the report needs it: its first records, counted in full."""

    model: str
    dataset: str
    shown: list[dict[str, Any]]
    total: int
    over_limit: int


def _pairs(root: Output, max_items: int) -> list[_Pair]:
    """Per record file, streamed: only the first ``max_items`` records are kept (0: all)."""
    out = []
    for f in record_files(root):
        shown: list[dict[str, Any]] = []
        total = over = 0
        first: dict[str, Any] | None = None
        for rec in f.records():
            first = first or rec
            total += 1
            over += bool(rec.get("over_limit"))
            if max_items <= 0 or len(shown) < max_items:
                shown.append(rec)
        parts = f.rel.removesuffix(".jsonl").split("/")
        model = str(first.get("model")) if first else parts[0]
        dataset = str(first.get("dataset")) if first else parts[-1]
        out.append(_Pair(model, dataset, shown, total, over))
    return out


def _index(models: list[str], datasets: list[str], cells: dict[tuple[str, str], str]) -> str:
    head = "".join(f"<th>{_esc(m)}</th>" for m in models)
    rows = []
    for d in datasets:
        tds = "".join(f"<td>{cells.get((m, d), '')}</td>" for m in models)
        rows.append(f'<tr><th class="ds">{_esc(d)}</th>{tds}</tr>')
    corner = '<th class="ds">dataset \\ model</th>'
    return f'<table class="index"><tr>{corner}{head}</tr>{"".join(rows)}</table>'


def report(root: Output, *, max_items: int = 200, title: str | None = None) -> str:
    """The report of one output folder or ``s3://`` output (or record file): an index of
    datasets x models with record counts, then per pair its first ``max_items`` prompts
    (0: all)."""
    pairs = _pairs(root, max_items)
    models = sorted({p.model for p in pairs})
    datasets = sorted({p.dataset for p in pairs})
    # links only to items that are on the page
    present = {(p.model, p.dataset, item_key(r)) for p in pairs for r in p.shown}
    manifest = _manifest(root)
    cells = {}
    body = []
    for pair in sorted(pairs, key=lambda p: (p.dataset, p.model)):
        model, dataset, shown = pair.model, pair.dataset, pair.shown
        pid = _anchor(model, dataset)
        over = pair.over_limit
        cells[(model, dataset)] = f'<a href="#{pid}">{pair.total}</a>' + (
            f' <span class="note">({over} over limit)</span>' if over else ""
        )
        body.append(
            f'<section id="{pid}"><h2>{_esc(dataset)} × {_esc(model)}</h2>'
            f'<p class="meta">{pair.total} prompts'
            + (f", showing the first {len(shown)} (--max-items)" if len(shown) < pair.total else "")
            + "</p>"
        )
        for rec in shown:
            key = item_key(rec)
            spans = rec.get("spans")
            links = "".join(
                f'<a href="#{_anchor(m, dataset, key)}">{_esc(m)}</a>'
                for m in models
                if m != model and (m, dataset, key) in present
            )
            notes = []
            if rec.get("dropped_ice_ids"):
                notes.append(f"dropped by max_seq_len: {rec['dropped_ice_ids']}")
            if rec.get("over_limit"):
                notes.append("over max_seq_len")
            note = f' <span class="note">{_esc("; ".join(notes))}</span>' if notes else ""
            body.append(
                f'<div class="item" id="{_anchor(model, dataset, key)}">'
                f'<div class="meta"><b>{_esc(dataset)} × {_esc(model)}</b> {_esc(_where(rec))} '
                f"in-context examples {_esc(json.dumps(rec.get('ice_ids', [])))}{note}"
                + (f" · same item for:{links}" if links else "")
                + "</div>"
                + _prompt_html(rec.get("prompt"), spans)
                + "</div>"
            )
        body.append("</section>")
    mode = f" ({manifest['mode']} mode)" if isinstance(manifest.get("mode"), str) else ""
    intro = (
        f'<p class="meta">{sum(p.total for p in pairs)} prompts in {len(pairs)} '
        f"dataset x model pair{'s' if len(pairs) != 1 else ''}{_esc(mode)}.</p>"
    )
    return _page(
        title or f"Prompts: {_name(root)}",
        [intro, _index(models, datasets, cells), *body],
        legend=True,
    )


def _name(out: Output) -> str:
    """The last name of an output's path or URI."""
    return shown(out).rsplit("/", 1)[-1]


def _manifest(root: Output) -> dict[str, Any]:
    return output_manifest(root) or {}


def _side_by_side(a: Any, b: Any) -> str:
    """Two prompts' visible forms, changed lines highlighted."""
    # ∎ for visible()'s end mark: fonts cover it more widely than ␃
    la = visible(a).replace("␃", "∎").split("\n") if a is not None else []
    lb = visible(b).replace("␃", "∎").split("\n") if b is not None else []
    left, right = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
        cls_a, cls_b = ("", "") if op == "equal" else ("del", "ins")
        left += [f'<span class="{cls_a}">{_esc(x)}</span>' if cls_a else _esc(x) for x in la[i1:i2]]
        right += [
            f'<span class="{cls_b}">{_esc(x)}</span>' if cls_b else _esc(x) for x in lb[j1:j2]
        ]
    return (
        f'<div class="side"><pre>{chr(10).join(left) or "(absent)"}</pre>'
        f"<pre>{chr(10).join(right) or '(absent)'}</pre></div>"
    )


def diff_report(a: Output, b: Output, *, max_items: int = 200, title: str | None = None,
                only: str | None = None) -> str:
    """The items that differ between two outputs, side by side (A left, B right); every
    field of :data:`.diff.FIELDS` is compared (``only="prompt"``: the prompts alone)."""
    pairs: list[PairDiff] = list(diff_outputs(a, b, only=only))
    models = sorted({p.model for p in pairs})
    datasets = sorted({p.dataset for p in pairs})
    cells = {}
    body = []
    for p in pairs:
        pid = _anchor(p.model, p.dataset)
        differ = p.changed + p.only_a + p.only_b
        cells[(p.model, p.dataset)] = f'<a href="#{pid}">{differ} differ</a> / {p.same + differ}'
        items = p.items if max_items <= 0 else p.items[:max_items]
        body.append(
            f'<section id="{pid}"><h2>{_esc(p.dataset)} × {_esc(p.model)}</h2>'
            f'<p class="meta">{p.same} same, {p.changed} changed, {p.only_a} only in A, '
            f"{p.only_b} only in B"
            + (f"; showing the first {len(items)}" if len(items) < len(p.items) else "")
            + "</p>"
        )
        for it in items:
            iid = _anchor(p.model, p.dataset, it.mode, it.index, it.label, it.turn)
            body.append(
                f'<div class="item" id="{iid}">'
                f'<div class="meta"><b>{_esc(it.where)}</b></div>'
                f"{_side_by_side(it.a, it.b)}"
                + "".join(f'<div class="meta">{_esc(field_line(*f, it.tokens).strip())}</div>'
                          for f in it.fields)
                + "</div>"
            )
        body.append("</section>")
    intro = (
        f'<p class="meta">A: {_esc(shown(a))} (left) · B: {_esc(shown(b))} (right) · '
        f"{sum(p.changed for p in pairs)} changed, {sum(p.only_a for p in pairs)} only in A, "
        f"{sum(p.only_b for p in pairs)} only in B, {sum(p.same for p in pairs)} same</p>"
    )
    return _page(
        title or f"Prompt diff: {_name(a)} vs {_name(b)}",
        [intro, _index(models, datasets, cells), *body],
        legend=False,
    )
