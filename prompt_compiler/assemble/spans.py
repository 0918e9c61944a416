"""Span provenance: which part of a compiled prompt came from where (``--spans``).

A record's ``spans`` are ``[start, end, origin]`` triples covering its text prompt (for a
message list: one such list per message, covering its content) without gaps, in order.
``origin`` is one of::

    {"kind": "template"}                     literal text of the dataset's templates
    {"kind": "meta"}                         the model's meta/chat template: role markers,
                                             special tokens
    {"kind": "column", "column": NAME, "split": "train"|"test", "row": ID}
                                             a dataset value, as inserted
    {"kind": "separator"}                    the retriever's example separator and end token

How: spans are computed only when asked, after the record itself was built as usual (its
in-context ids already decided by ``max_seq_len`` on the untagged text). The record is built
again through the same generic path with its ids fixed, but with row values, meta template
strings and separators wrapped in private-use sentinel characters; stripping the sentinels
then gives each character's origin. The stripped text must equal the record's prompt; where
it does not (text that already holds the sentinels, a compat-mode re-fill that a sentinel
would split), ``spans`` is ``null`` rather than a guess. A value re-filled inside another
value (compat mode, defect D1) belongs to the outer value, which is then the value *as
inserted*. Jinja2 (``engine: jinja2``) templates see untagged values: their output counts as
template text.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..promptlist import fill
from .base import SPANS_UNKNOWN as UNKNOWN
from .base import Job, Record

__all__ = ["UNKNOWN", "DataSplit", "add_spans", "record_ids", "strip_tags"]

OPEN, CLOSE = "\ue000", "\ue001"
_CODE = 0xF0000  # origin k is written as two characters right after OPEN: its high and low
_BITS = 16  # 16 bits, each as chr(_CODE + part) (planes 15 and 16: private use)
_SENTINEL = re.compile(f"[{OPEN}{CLOSE}]")
TEMPLATE: dict[str, Any] = {"kind": "template"}
META: dict[str, Any] = {"kind": "meta"}
SEPARATOR: dict[str, Any] = {"kind": "separator"}


class Tags:
    """The origins of one compile, each wrapped text naming its origin by number.

    A test row's origins are dropped once the records have moved past that row
    (:meth:`release_before`), so a job's table holds the templates', the separators' and the
    in-context examples' origins, and those of the row at hand: bounded by the train split,
    not by the test rows traced."""

    def __init__(self) -> None:
        self.origins: dict[int, dict[str, Any]] = {}
        self._index: dict[str, int] = {}
        self._rows: dict[int, list[str]] = {}  # a test row's origin keys
        self._next = 0

    def wrap(self, origin: dict[str, Any], text: str) -> str:
        if not text:
            return text
        key = json.dumps(origin, sort_keys=True)
        k = self._index.get(key)
        if k is None:
            k = self._index[key] = self._next
            self._next += 1
            self.origins[k] = origin
            row = origin.get("row")
            if origin.get("split") == "test" and type(row) is int:
                self._rows.setdefault(row, []).append(key)
        return f"{OPEN}{chr(_CODE + (k >> _BITS))}{chr(_CODE + (k & 0xFFFF))}{text}{CLOSE}"

    def origin(self, high: str, low: str) -> dict[str, Any]:
        """The origin written as the two characters after an OPEN."""
        found = self.origins.get(((ord(high) - _CODE) << _BITS) | (ord(low) - _CODE))
        if found is None:
            raise ValueError("a span sentinel names no origin")
        return found

    def release_before(self, row: int) -> None:
        """Drop the origins of the test rows before ``row``."""
        for old in [r for r in self._rows if r < row]:
            for key in self._rows.pop(old):
                self.origins.pop(self._index.pop(key), None)


def strip_tags(text: str, tags: Tags, default: dict[str, Any]) -> tuple[str, list[list[Any]]]:
    """The text without sentinels, and its spans.

    A character's origin is the outermost enclosing non-template origin (a value re-filled
    inside another value belongs to the outer one), else ``template`` if any template
    wrapper encloses it, else ``default``.
    """
    out: list[str] = []
    spans: list[list[Any]] = []
    stack: list[dict[str, Any]] = []
    pos = 0  # in the stripped text
    i = 0  # in ``text``

    def emit(piece: str) -> None:
        nonlocal pos
        if not piece:
            return
        origin = next((o for o in stack if o["kind"] != "template"),
                      TEMPLATE if stack else default)
        out.append(piece)
        if spans and spans[-1][2] is origin:
            spans[-1][1] += len(piece)
        else:
            spans.append([pos, pos + len(piece), origin])
        pos += len(piece)

    for m in _SENTINEL.finditer(text):
        if m.start() < i:
            continue  # a code character after an OPEN
        emit(text[i:m.start()])
        if m.group() == OPEN:
            if m.end() + 1 >= len(text):
                raise ValueError("unbalanced span sentinel")
            stack.append(tags.origin(text[m.end()], text[m.end() + 1]))
            i = m.end() + 2
        else:
            if not stack:
                raise ValueError("unbalanced span sentinel")
            stack.pop()
            i = m.end()
    emit(text[i:])
    if stack:
        raise ValueError("unbalanced span sentinel")
    return "".join(out), spans


# -- building the tagged twin of a job ------------------------------------------------------


class _Origin(dict):  # type: ignore[type-arg]
    """A row that knows its split and index (train rows reach the templates as they are)."""

    origin: tuple[str, int] = ("test", 0)


def _train_row(row: Any, index: int) -> Any:
    out = _Origin(row)
    out.origin = ("train", index)
    return out


class _Rows(Sequence[Any]):
    """A split whose rows are made over when read (tagged), none held: the tagged twin of a
    job reads the rows it needs, as the job itself does."""

    def __init__(self, rows: Sequence[Any], make: Callable[[Any, int], Any]) -> None:
        self.rows, self.make = rows, make

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self.rows)
        i = index + n if index < 0 else index
        return self.make(self.rows[index], i)

    def __iter__(self) -> Iterator[Any]:
        for i, row in enumerate(self.rows):
            yield self.make(row, i)


def _tag_meta(value: Any, tags: Tags, key: str = "") -> Any:
    """The meta template with its text (role begin/end, literal strings) tagged ``meta``."""
    if isinstance(value, str):
        return tags.wrap(META, value) if key in ("", "begin", "end", "prompt") else value
    if isinstance(value, Mapping):
        return {k: _tag_meta(v, tags, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_tag_meta(v, tags, "") for v in value]
    return value


def _tag_chat_row(row: Mapping[str, Any], index: int, tags: Tags) -> dict[str, Any]:
    """A chat row with its text values tagged (ChatInferencer reads values directly)."""

    def origin(col: str) -> dict[str, Any]:
        return {"kind": "column", "column": col, "split": "test", "row": index}

    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, str):
            out[k] = tags.wrap(origin(str(k)), v)
        elif isinstance(v, list) and all(isinstance(x, str) for x in v):
            out[k] = [tags.wrap(origin(str(k)), x) for x in v]
        elif isinstance(v, list) and all(isinstance(x, dict) for x in v):
            out[k] = [{**m, "content": tags.wrap(origin(str(k)), m["content"])}
                      if isinstance(m.get("content"), str) else m for m in v]
        else:
            out[k] = v
    return out


class _WrapContent:
    """A chat template (or prompter) whose messages' contents are marked as template text,
    so that the text it adds around them counts as ``meta``."""

    def __init__(self, inner: Any, tags: Tags) -> None:
        self.inner, self.tags = inner, tags

    def render(self, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> Any:
        wrapped = [{**m, "content": self.tags.wrap(TEMPLATE, m["content"])}
                   if isinstance(m.get("content"), str) else m for m in messages]
        return self.inner.render(wrapped, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _tagged_job(job: Job, kind: str, tags: Tags) -> Job:
    from ..render.meta import MetaTemplate

    model = job.model
    meta = None
    if model.meta is not None and model.meta.messages is not None:
        meta = model.meta  # API messages merged into the prompt's: their text is not traced
    elif model.meta is not None:
        meta = MetaTemplate.parse(_tag_meta(dict(model.meta.raw), tags),
                                  where="meta_template", lm=model.renderer == "lm")
    changes: dict[str, Any] = {"meta": meta, "max_seq_len": None}
    if model.chat_template is not None:
        changes["chat_template"] = _WrapContent(model.chat_template, tags)
    tagged_model = dataclasses.replace(model, **changes)
    retriever = job.retriever
    try:
        retriever = dataclasses.replace(
            retriever,  # type: ignore[type-var]
            ice_separator=tags.wrap(SEPARATOR, retriever.ice_separator),
            ice_eos_token=tags.wrap(SEPARATOR, retriever.ice_eos_token))
    except TypeError:  # a plugin retriever that is not a dataclass: separators untagged
        pass
    test: Sequence[Any] = job.rows.test
    if kind == "chat":
        test = _Rows(test, lambda row, i: _tag_chat_row(row, i, tags))
    rows = dataclasses.replace(job.rows, train=_Rows(job.rows.train, _train_row), test=test)
    return dataclasses.replace(job, rows=rows, retriever=retriever, model=tagged_model,
                               token_lens=False, _ice_cache={}, _token_cache={})


@contextlib.contextmanager
def _tagging(job: Job, tags: Tags) -> Iterator[None]:
    """Row values filled into templates come out wrapped in their column origin."""

    def tag(row: Mapping[str, Any], column: str, value: str) -> str:
        split, rid = getattr(row, "origin", None) or ("test", job.row)
        return tags.wrap({"kind": "column", "column": column, "split": split, "row": rid}, value)

    token = fill.VALUE_TAGGER.set(tag)
    try:
        yield
    finally:
        fill.VALUE_TAGGER.reset(token)


# -- spans of records -----------------------------------------------------------------------


def _copied(spans: list[list[Any]]) -> list[list[Any]]:
    """Each span with its own origin dict (records must not share mutable state)."""
    return [[a, b, dict(o)] for a, b, o in spans]


def _spans_of(tagged: Any, plain: Any, tags: Tags, default: dict[str, Any]) -> Any:
    """Spans of one written prompt, given its tagged twin (UNKNOWN when they disagree)."""
    try:
        if isinstance(plain, str) and isinstance(tagged, str):
            text, spans = strip_tags(tagged, tags, default)
            return _copied(spans) if text == plain else UNKNOWN
        if isinstance(plain, list) and isinstance(tagged, list) and len(plain) == len(tagged):
            out: list[list[list[Any]] | None] = []
            for p, t in zip(plain, tagged, strict=True):
                key = "content" if isinstance(p, dict) and "content" in p else "prompt"
                pc = p.get(key) if isinstance(p, dict) else p
                tc = t.get(key) if isinstance(t, dict) else t
                if not isinstance(pc, str) or not isinstance(tc, str):
                    out.append(None)
                    continue
                text, spans = strip_tags(tc, tags, TEMPLATE)
                if text != pc:
                    return UNKNOWN
                out.append(_copied(spans))
            return out
    except (ValueError, IndexError):
        pass
    return UNKNOWN


def add_spans(job: Job, kind: str, params: Mapping[str, Any], records: Iterator[Record],
              labels: Sequence[Any] | None, written: Callable[[Record], Any]) -> Iterator[Record]:
    """``records`` with :attr:`Record.spans` set (``written(rec)`` is the prompt as written)."""
    from .gen import gen_record
    from .ppl import ppl_row_records

    tags = Tags()
    tjob = _tagged_job(job, kind, tags)
    policy = job.policy
    # deliver() output (chat template text, prompter) is the model's own text outside the
    # messages; everything else starts as dataset template text
    default = META if (job.model.chat_template is not None or job.model.prompter is not None) \
        else TEMPLATE
    chat_twins: Iterator[Record] | None = None
    ppl_row: tuple[Any, list[Record]] | None = None
    if kind == "chat":
        from .chat import chat_records

        chat_twins = chat_records(tjob, infer_mode=params.get("infer_mode", "last"))
    for rec in records:  # built untagged, outside the tagging context
        if type(rec.index) is int:
            tags.release_before(rec.index)
        twin: Record | None = None
        try:
            with _tagging(tjob, tags):
                if kind == "gen":
                    twin = gen_record(tjob, rec.index, rec.ice_ids,
                                      params.get("gen_field_replace_token", ""))
                elif kind == "ppl" and labels is not None and rec.extra == {}:
                    key = (rec.index, rec.ice_ids)  # compat (D5): ids may differ by label
                    if ppl_row is None or ppl_row[0] != key:
                        ppl_row = (key, ppl_row_records(tjob, rec.index, rec.ice_ids, labels))
                    twin = next((r for r in ppl_row[1] if r.label == rec.label
                                 and type(r.label) is type(rec.label)), None)
                elif kind == "clp":
                    tjob.row = rec.index
                    prompt = tjob.gen_prompt(rec.index, tjob.build_ice(rec.ice_ids))
                    if len(rec.ice_ids) == len(rec.retrieved_ids) or policy.fixes("D9"):
                        prompt = tjob.model.render(prompt, "gen", policy)
                    twin = dataclasses.replace(rec, **tjob.final(prompt, "gen"))
                elif kind == "chat" and chat_twins is not None:
                    twin = next(chat_twins, None)
        except Exception:  # noqa: BLE001 - provenance is best effort; the record stands
            twin = None
        spans = UNKNOWN
        if twin is not None:
            spans = _spans_of(written(twin), written(rec), tags, default)
        yield dataclasses.replace(rec, spans=spans)


# -- data's special-token text (D23) --------------------------------------------------------


class DataSplit:
    """Where a record's data put special-token text, from its spans (default mode, D23).

    Only records whose values (the test row's, the in-context examples') hold an added
    token's text are traced (once each, through :func:`add_spans`); chat records are all
    traced, as their twins are built in order.
    """

    def __init__(self, job: Job, kind: str, params: Mapping[str, Any],
                 labels: Sequence[Any] | None, tokens: Any) -> None:
        self.job, self.kind, self.params, self.labels = job, kind, params, labels
        self.tokens = tokens
        self.queue: deque[Record] = deque()
        self.written: Callable[[Record], Any] = lambda rec: None
        self.out: Iterator[Record] | None = None

    def _feed(self) -> Iterator[Record]:
        while self.queue:
            yield self.queue.popleft()

    def holds(self, rec: Record) -> bool:
        """Whether the record's data hold an added token's text."""
        job = self.job
        try:
            rows = [job.rows.test[rec.index]]
            rows += [job.rows.train[i] for i in rec.ice_ids if type(i) is int]
        except (IndexError, TypeError, KeyError):
            return False
        return any(self.tokens.row_holds(row) for row in rows)

    def ranges(self, rec: Record, text_of: Callable[[Record], str]
               ) -> list[tuple[int, int]] | None:
        """The ``(start, end)`` ranges of ``text_of(rec)`` that came from data, or None when
        the record's data hold no special-token text."""
        from ..errors import UnsupportedError

        chat = self.kind == "chat"
        if not self.holds(rec) and not chat:
            return None
        if self.out is None:
            self.written = text_of
            self.out = add_spans(self.job, self.kind, self.params, self._feed(), self.labels,
                                 lambda r: self.written(r))
        self.queue.append(rec)
        spans = next(self.out).spans
        if chat and not self.holds(rec):
            return None
        if spans is UNKNOWN or not all(isinstance(s, list) and len(s) == 3
                                       and isinstance(s[2], Mapping) for s in spans):
            raise UnsupportedError(
                "a row value holds special-token text, and which of the prompt's token text "
                "came from data cannot be told for this record, so it cannot be encoded as "
                "ordinary text", row=rec.index,
                hint="set the model's data_special_tokens: parse to let it become control "
                     "tokens, or remove it from the data")
        return [(a, b) for a, b, o in spans if o.get("kind") == "column"]


def record_ids(job: Job, kind: str, params: Mapping[str, Any],
               labels: Sequence[Any] | None) -> Any:
    """What gives a job's records their ids (a :class:`~prompt_compiler.model.token_ids.
    RecordIds`): every record with ``tokenize``; without it, in default mode, the records whose
    data hold special-token text, where the model has a tokenizer (D23); else None."""
    from ..model.data_tokens import for_model
    from ..model.token_ids import RecordIds

    tokens = for_model(job.model, job.policy)
    split = None if tokens is None else DataSplit(job, kind, params, labels, tokens)
    if job.model.tokenize:
        return RecordIds(job, split)
    return None if split is None else RecordIds(job, split, only_split=True)
