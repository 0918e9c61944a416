"""The JSON-lines writer of the plan stage: record lines straight from test rows (the CLI's
write path for planned jobs).

The CLI writes records, not :class:`~.assemble.base.Record` objects. For a job that plans
serve, everything in a line but a few values is the same for
every row, so each shape (one plan of one tuple of example ids) is turned into bytes once:
the record's head, and the prompt's first literal (for a FixK job, the whole in-context
block and the text before the first slot) already JSON-escaped and already fed to a sha256.
A row then costs one ``%`` fill of its slot values, the escaping and hashing of that part,
and one join. JSON escaping is per character, so ``dumps(a + b)`` is ``dumps(a)`` and
``dumps(b)`` joined at the quotes; a hash continues from a copy of the literal's state.
The bytes are those :func:`~.emit.record_bytes` writes for :func:`~.emit.record_json`.

Any row the shortcut is not sure of goes through the generic record path, one row at a
time: a row before its shape is compiled, a row :class:`.core.RowPlanner` sends there
(compat-mode braces, a prompt over ``max_seq_len``), a value with no UTF-8 form or a missing
column (the generic path names it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import orjson

from ..assemble.base import Job
from ..emit.records import (
    SLOT,
    TEXT_SLOT,
    plain,
    record_bytes,
    record_json,
    record_object,
    record_pieces,
    value_bytes,
)
from ..errors import DataError
from ..safety import limits
from .core import GENERIC, RowPlanner, job_labels, plannable
from .probe import Plan

__all__ = ["Lines", "plannable"]

BLOCK = 256
"""Lines joined into one block (one write, one hash update, one progress tick burst)."""


def _gold(value: Any) -> bytes:
    """A gold answer as :func:`.emit.record_bytes` writes it after :func:`.emit.record_json`
    (a copy of the data value: :func:`.emit.records.plain`)."""
    kind = type(value)
    if kind is str:
        return orjson.dumps(value)
    if value is None or kind is int:
        return value_bytes(value)
    return value_bytes(plain(value))


@dataclass(frozen=True, slots=True)
class _Shape:
    """One plan of one id tuple, as bytes: what every row of that shape shares."""

    plan: Plan
    head: bytes
    """The line from the label (ppl) or ``ice_ids`` to the prompt's first literal, escaped,
    without its closing quote."""
    digest: Any
    """sha256 state after the first literal's UTF-8 bytes."""
    rest: str
    """``%`` format of the prompt after the first literal (slot values and literals)."""
    values: Callable[[Mapping[str, Any]], tuple[Any, ...]]
    """A row's slot values, in slot order."""


def _shape(plan: Plan, head: bytes) -> _Shape:
    first = plan.literals[0]
    rest = "%s".join(["", *(s.replace("%", "%%") for s in plan.literals[1:])])
    return _Shape(plan, head + orjson.dumps(first)[1:-1], hashlib.sha256(first.encode()), rest,
                  _getter(plan.columns))


_GETTERS: dict[tuple[str, ...], Callable[[Mapping[str, Any]], tuple[Any, ...]]] = {}


def _getter(columns: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """One function per column tuple (shapes compare it by identity)."""
    found = _GETTERS.get(columns)
    if found is None:
        if len(columns) > 1:
            found = itemgetter(*columns)
        elif columns:
            one = itemgetter(columns[0])
            found = lambda row: (one(row),)  # noqa: E731
        else:
            found = lambda row: ()  # noqa: E731
        _GETTERS[columns] = found
    return found


class Lines:
    """The record lines of one planned job (:func:`.core.plannable`), in blocks of whole
    lines.

    Iterating yields the blocks; afterwards :attr:`count` is the number of lines and
    :attr:`over_limit` the number flagged ``over_limit``. ``tick`` is called once per
    finished test row.
    """

    def __init__(self, job: Job, kind: str, params: Mapping[str, Any],
                 retrieved: Sequence[Sequence[int]], *, rows: range | None = None,
                 tick: Callable[[], None] | None = None) -> None:
        self.job, self.kind, self.retrieved = job, kind, retrieved
        self.tick = tick
        self.count = 0
        self.over_limit = 0
        self.labels: list[Any] = [] if kind == "gen" else job_labels(job, params)
        extra = params.get("gen_field_replace_token", "") if kind == "gen" else self.labels
        self.planner = RowPlanner(job, kind, extra, retrieved, rows=rows)
        self.prompt_chars = limits.current().prompt_chars  # longer: the generic path refuses
        self.shapes: dict[tuple[int, ...], list[_Shape]] = {}
        model = job.model
        self.gold = job.reader.output_column
        settings = job.settings
        self.ids: Any = None  # with tokenize: the JSON of a prompt's input_ids
        if model.tokenize:
            from ..model.token_ids import IdsJson

            self.ids = IdsJson(job)
        # the bytes around a line's values, from the record encoder (mask_length: 0 for ppl)
        before, self.end = record_pieces(record_object(
            job.abbr, model.abbr, kind, SLOT, SLOT, label=SLOT, ice_ids=SLOT, prompt=TEXT_SLOT,
            prompt_sha256=TEXT_SLOT, input_ids=None if self.ids is None else SLOT,
            mask_length=0, max_out_len=settings.max_out_len, stop=list(settings.stop),
            stop_token_ids=list(settings.stop_token_ids), gold=SLOT))
        self.head = (before["index"].replace(b"%", b"%%") + b"%d"
                     + before["row"].replace(b"%", b"%%") + b"%d")
        self.label_piece = before.get("label", b"")
        self.ice_piece, self.prompt_piece = before["ice_ids"], before["prompt"]
        self.sha_piece, self.ids_piece = before["prompt_sha256"], before.get("input_ids", b"")
        self.gold_piece = before["gold"]
        from ..assemble.spans import record_ids  # which text came from data (D23)

        self.record_ids: Any = record_ids(job, kind, params, self.labels)

    def over(self, retrieved: Sequence[Sequence[int]], rows: range | None) -> Lines:
        """These lines for other rows of the same job (a batch of a Ray dataset): the plans
        and shapes compiled so far are kept; the counts go on adding up."""
        self.retrieved = retrieved
        self.planner.retarget(retrieved, rows)
        return self

    # -- shapes ---------------------------------------------------------------------

    def _shapes(self, ids: Sequence[int], row: Mapping[str, Any]) -> list[_Shape] | None:
        key = tuple(ids)
        found = self.shapes.get(key)
        if found is not None:
            return found
        plans = self.planner.plans(ids, row)
        if plans is None:
            return None
        if not all(type(i) is int for i in key):
            return None
        ice = self.ice_piece + value_bytes(list(key)) + self.prompt_piece
        if self.kind == "gen":
            shapes = [_shape(plans[0], ice)]
        else:
            try:
                heads = [self.label_piece + value_bytes(label) + ice for label in self.labels]
            except (DataError, TypeError):
                return None  # the generic path names the label
            shapes = [_shape(p, h) for p, h in zip(plans, heads, strict=True)]
        if len(self.shapes) > 1_000:
            self.shapes.clear()
        self.shapes[key] = shapes
        return shapes

    # -- lines ----------------------------------------------------------------------

    def __iter__(self) -> Iterator[bytes]:
        tick = self.tick
        last_ids: Any = None
        shapes: list[_Shape] | None = None
        block: list[bytes] = []
        done = lines = 0
        for index, ids, row in self.planner.rows():
            if shapes is None or ids is not last_ids and ids != last_ids:
                last_ids, shapes = ids, self._shapes(ids, row)
            pieces = None if shapes is None else self._fast(shapes, index, row)
            if pieces is not None and shapes is not None:
                lines += len(shapes)
            else:
                pieces = self._generic(index, ids)  # whole lines
                lines += len(pieces)
            block += pieces
            done += 1
            if done == BLOCK:
                self.count += lines
                yield b"".join(block)
                block = []
                if tick is not None:
                    for _ in range(done):
                        tick()
                done = lines = 0
        self.count += lines
        if block:
            yield b"".join(block)
        if tick is not None:
            for _ in range(done):
                tick()

    def _fast(self, shapes: list[_Shape], index: int, row: Mapping[str, Any]
              ) -> list[bytes] | None:
        """The pieces of one row's lines, or None when the generic path must build them."""
        try:
            first = shapes[0]
            values = first.values(row)  # "%s" formats each value as str() does
            col = self.gold
            tail = self.gold_piece + _gold(None if col is None else row.get(col)) + self.end
            ids = self.ids
            idx = row.get("idx", index)
            head = self.head % (index, idx if type(idx) is int else index)
            decide = self.planner.decide
            out: list[bytes] = []
            for shape in shapes:
                if shape.values is not first.values:
                    values = shape.values(row)
                rest = shape.rest % values
                if len(rest) + len(shape.plan.literals[0]) > self.prompt_chars:
                    return None
                if decide(shape.plan, values, rest) == GENERIC:
                    return None
                digest = shape.digest.copy()
                digest.update(rest.encode())
                out += (head, shape.head, orjson.dumps(rest)[1:-1], self.sha_piece,
                        digest.hexdigest().encode())
                if ids is not None:
                    out += (self.ids_piece, ids(shape.plan.literals[0] + rest))
                out.append(tail)
            return out
        except (UnicodeEncodeError, orjson.JSONEncodeError, ValueError, TypeError, KeyError):
            return None  # text with no UTF-8 form, NaN, no such column: the generic path names it

    def _generic(self, index: int, ids: Sequence[int]) -> list[bytes]:
        """The lines of one row through the generic record path."""
        job = self.job
        out = []
        for rec in self.planner.generic(index, ids):
            rec = job.settle(rec)
            if self.record_ids is not None:
                rec = self.record_ids.add(rec)
            obj = record_json(rec)
            if obj.get("over_limit"):
                self.over_limit += 1
            out.append(record_bytes(obj))
        return out
