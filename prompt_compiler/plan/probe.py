"""Plans: a dataset x model's prompt compiled once into literal text and row slots.

For one compile job, everything that does not depend on the test row -- the templates, the
in-context block of one tuple of example ids, the meta template and the mode -- becomes a
:class:`Plan`: literal text with a slot per inserted column. A test row then costs one fill
(a ``%`` format of its values) instead of a template fill, a PromptList and a meta-template
walk.

A plan is not a second implementation of the pipeline: the generic path
(:mod:`.assemble.gen`, :mod:`.assemble.ppl`) builds and renders the prompt of a *probe*
row whose every column holds a unique marker, and the markers' positions in the output are
the slots. That is exact only where the generic path treats row values as opaque text;
:func:`supports` (the job) and :func:`compile_plan` (the probe's output) decline everything
else, which then goes through the generic path. Which rows a plan serves is decided row by
row in :mod:`.core`.

To add an option to the generic path, make :func:`supports` decline it until a plan
reproduces it (new :class:`~.model.Model` fields and job options are declined by default).
"""

from __future__ import annotations

import dataclasses
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..assemble.base import Job
from ..assemble.gen import gen_record
from ..assemble.ppl import ppl_row_records
from ..errors import PromptCompilerError
from ..model.spec import Model
from ..promptlist import PromptList, RoleItem
from ..template.prompt_template import PromptTemplate

__all__ = ["Plan", "PlanCache", "compile_plan", "supports"]

# Model fields a plan reproduces; any other field set away from its default declines.
_PLAIN_MODEL_FIELDS = {"abbr", "renderer", "meta", "max_seq_len", "batch_size", "count_tokens",
                       "meta_raw", "model_class",  # model_class: API request shape only
                       "max_out_len", "stop_words",  # generation settings: not the prompt
                       "tokenize"}  # ids are encoded from the prompt the plan fills
# Job options a plan reproduces when set (none yet: normalizing_str, fewshot and anything new
# decline unless they are None).
_PLAIN_OPTIONS: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Plan:
    """One prompt shape: literal text around slots, each slot a row column.

    Attributes:
        literals: The text before, between and after the slots (one more than ``columns``).
        columns: The row column filled into each slot, in order.
    """

    literals: tuple[str, ...]
    columns: tuple[str, ...]
    fmt: str = dataclasses.field(init=False, repr=False, compare=False)
    """``literals`` joined by ``%s``, with ``%`` doubled."""
    words: tuple[tuple[int, bool, bool, bool], ...] = dataclasses.field(
        init=False, repr=False, compare=False)
    """Per literal: whitespace-separated words, starts in a word, ends in a word, empty."""

    def __post_init__(self) -> None:
        lits = self.literals
        fmt = "%s".join(s.replace("%", "%%") for s in lits) if self.columns else lits[0]
        object.__setattr__(self, "fmt", fmt)
        object.__setattr__(self, "words", tuple(
            (len(s.split()), s[:1] != "" and not s[0].isspace(),
             s[-1:] != "" and not s[-1].isspace(), not s) for s in lits))

    def values(self, row: Mapping[str, Any]) -> list[str]:
        """``str(value)`` of each slot's column (what the generic fill inserts)."""
        return [str(row[c]) for c in self.columns]

    def fill(self, values: Sequence[str]) -> str:
        """The prompt for one row's slot values."""
        return self.fmt % tuple(values) if values else self.fmt

    def count_words(self, values: Sequence[str]) -> int:
        """``len(self.fill(values).split())`` without splitting the literal text again."""
        words = self.words
        n, in_word = 0, False  # in_word: the text so far ends inside a word
        for j, value in enumerate(values):
            count, first, last, empty = words[j]
            if not empty:
                n += count - (in_word and first)
                in_word = last
            if value:
                n += len(value.split()) - (in_word and not value[0].isspace())
                in_word = not value[-1].isspace()
        count, first, _, empty = words[-1]
        if not empty:
            n += count - (in_word and first)
        return n


def supports(job: Job, kind: str) -> bool:
    """True when :func:`compile_plan` may serve ``job`` (a static check of its configuration).

    Covered: gen and ppl prompts for ``lm`` models (no chat template, API format or prompter),
    ``PromptTemplate`` templates filled with ``{column}`` placeholders, no job option set
    (``fewshot``, ``normalizing_str``, ...) and no model option beyond the meta template and
    ``max_seq_len`` (``system_role``, ...).
    """
    if kind not in ("gen", "ppl"):
        return False
    if any(v is not None for k, v in job.options.items() if k not in _PLAIN_OPTIONS):
        return False  # e.g. normalizing_str, fewshot: inline
    if not _plain_model(job.model):
        return False
    for tp in (job.ice_template, job.prompt_template):
        # exactly PromptTemplate: subclasses (OlympiadBench) build their text per row
        if tp is not None and (type(tp) is not PromptTemplate or tp.engine != "format"):
            return False
    return True


def _plain_model(model: Model) -> bool:
    if model.renderer != "lm":
        return False
    for f in dataclasses.fields(model):
        if f.name in _PLAIN_MODEL_FIELDS:
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if getattr(model, f.name) != default:
            return False
    return True


# -- compiling a plan from probe rows -----------------------------------------------------


def _probe_row(columns: Sequence[str], nonce: str) -> dict[str, str]:
    return {c: f"\ue000{nonce}.{i}\ue001" for i, c in enumerate(columns)}


def _split(text: str, nonce: str, columns: Sequence[str]
           ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    parts = re.split(f"\ue000{nonce}\\.(\\d+)\ue001", text)
    return tuple(parts[0::2]), tuple(columns[int(i)] for i in parts[1::2])


def _probe(job: Job, kind: str, ids: Sequence[int], columns: Sequence[str], extra: Any
           ) -> tuple[str, list[str], list[Any]] | None:
    """(marker nonce, rendered prompts (one per ppl label), intermediates) of a probe row."""
    nonce = secrets.token_hex(8)
    row = _probe_row(columns, nonce)
    probe = dataclasses.replace(
        job, rows=dataclasses.replace(job.rows, test=(row,)),
        model=dataclasses.replace(job.model, max_seq_len=None), token_lens=False,
        _ice_cache=job._ice_cache, _token_cache={})
    if kind == "gen":
        recs = [gen_record(probe, 0, ids, extra)]
    else:
        recs = ppl_row_records(probe, 0, ids, extra)
    if any(not isinstance(r.prompt, str) or r.ice_ids != tuple(ids) for r in recs):
        return None
    return nonce, [r.prompt for r in recs], [r.intermediate for r in recs]


def compile_plan(job: Job, kind: str, ids: Sequence[int], columns: Sequence[str],
                 extra: Any = "") -> list[Plan] | None:
    """The plans (one, or one per label in ppl) for rows given example ids ``ids``.

    ``extra`` is the gen ``gen_field_replace_token`` or the ppl label list. Returns None
    (use the generic path) when the probe shows anything a plan cannot reproduce exactly.
    """
    try:
        first = _probe(job, kind, ids, columns, extra)
        second = _probe(job, kind, ids, columns, extra)
    except PromptCompilerError:
        return None  # the generic path raises it again, located at the real row
    if first is None or second is None:
        return None
    shape = [_split(t, first[0], columns) for t in first[1]]
    if shape != [_split(t, second[0], columns) for t in second[1]]:
        return None  # a template holds the marker text itself
    plans = []
    for (literals, cols), intermediate in zip(shape, first[2], strict=True):
        if job.policy.compat and any("{" in s or "}" in s for s in literals):
            return None  # OpenCompass re-scans filled text: braces may form new placeholders
        if (job.model.meta is None and isinstance(intermediate, PromptList)
                and not _fixed_emptiness(intermediate, first[0])):
            return None
        plans.append(Plan(literals, cols))
    return plans


def _fixed_emptiness(prompt: PromptList, nonce: str) -> bool:
    """Without a meta template, empty items are skipped: each item holding a slot must
    also hold literal text, so that its emptiness never depends on the row."""
    marker = re.compile(f"\ue000{nonce}\\.\\d+\ue001")
    for item in prompt:
        text = item.prompt if isinstance(item, RoleItem) else item
        if isinstance(text, str) and marker.search(text) and not marker.sub("", text):
            return False
    return True


# -- running plans over rows --------------------------------------------------------------


class PlanCache:
    """Plans per tuple of example ids, compiled on a tuple's second use (a FixK or Zero
    job compiles one; a retriever giving every row its own ids never pays for probes)."""

    probe_after = 2
    """Uses of an id tuple before its plan is compiled."""

    def __init__(self, job: Job, kind: str, extra: Any) -> None:
        self.job, self.kind, self.extra = job, kind, extra
        self.plans: dict[tuple[int, ...], list[Plan] | None] = {}
        self.seen: dict[tuple[int, ...], int] = {}
        self.columns: tuple[str, ...] | None = None

    def get(self, ids: Sequence[int], row: Mapping[str, Any]) -> list[Plan] | None:
        key = tuple(ids)
        try:
            return self.plans[key]
        except KeyError:
            pass
        if self.columns is None:
            self.columns = tuple(row)  # normalised rows all have the first row's columns
        n = self.seen.get(key, 0) + 1
        if n < self.probe_after:
            if len(self.seen) > 10_000:
                self.seen.clear()
            self.seen[key] = n
            return None
        plans = compile_plan(self.job, self.kind, key, self.columns, self.extra)
        if len(self.plans) > 1_000:
            self.plans.clear()
        self.plans[key] = plans
        return plans
