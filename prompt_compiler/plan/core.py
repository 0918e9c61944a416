"""The decision core of the plan stage: which rows a plan serves, decided once for both writers.

A planned job's rows go through one :class:`RowPlanner`. It walks the test rows in order
(:meth:`RowPlanner.rows`), finds each row's plans by its example ids (:meth:`RowPlanner.plans`,
compiled on a tuple's second use) and decides each planned prompt (:meth:`RowPlanner.decide`):

* served by the plan, with its token count where one is needed; or
* :data:`GENERIC`: the generic path builds the row (:meth:`RowPlanner.generic`) -- in compat
  mode a prompt whose slot values hold braces (OpenCompass re-fills them, defect D1), and a
  prompt over ``max_seq_len`` (it drops in-context examples).

The two writers ask the same questions and only build different things from the answers:
records (:mod:`.records`, the library's ``lean`` records) and JSON lines
(:mod:`.lines`, what the CLI writes). Which jobs are planned at all is :func:`plannable`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..assemble.base import Job, Record
from ..assemble.gen import gen_record
from ..assemble.ppl import ppl_row_records
from ..data.reader import iter_rows
from ..model.data_tokens import for_model, unsplit
from ..model.spec import whitespace_tokens
from ..retrieve.basic import Repeated
from .probe import Plan, PlanCache, supports

__all__ = ["GENERIC", "UNCOUNTED", "RowPlanner", "job_labels", "plannable"]

GENERIC = -2
""":meth:`RowPlanner.decide`: the generic path builds this row."""
UNCOUNTED = -1
""":meth:`RowPlanner.decide`: the plan serves the prompt; its tokens were not counted."""


def plannable(job: Job, kind: str, params: Mapping[str, Any]) -> bool:
    """True when plans may serve the job's rows: gen and ppl jobs that :func:`.supports`,
    without multiround or ``normalizing_str``."""
    if kind == "gen":
        return not params.get("multiround") and _data_ok(job) and supports(job, kind)
    if kind == "ppl":
        return (job.options.get("normalizing_str") is None and _data_ok(job)
                and supports(job, kind))
    return False


def _data_ok(job: Job) -> bool:
    """False when training rows hold special-token text that must stay ordinary text (D23):
    a plan's literals would mix it with the templates' own."""
    tokens = for_model(job.model, job.policy)
    return tokens is None or not any(tokens.row_holds(row) for row in job.rows.train)


def job_labels(job: Job, params: Mapping[str, Any]) -> list[Any]:
    """A ppl (or ll) job's labels: the inferencer's ``labels``, else the template's."""
    return list(params["labels"]) if params.get("labels") is not None else job.labels()


class RowPlanner:
    """The rows of one planned job (:func:`plannable`) and, per row, plan or generic path.

    Args:
        kind: ``gen`` or ``ppl``.
        extra: The gen ``gen_field_replace_token``, or the ppl labels.
        retrieved: Every test row's example ids.
        rows: Only those test rows (default: all).
        counts: The writer needs every served prompt's token count (records carry it), not
            only the ``max_seq_len`` decision.
    """

    def __init__(self, job: Job, kind: str, extra: Any, retrieved: Sequence[Sequence[int]],
                 *, rows: range | None = None, counts: bool = False) -> None:
        self.job, self.kind, self.extra, self.retrieved = job, kind, extra, retrieved
        self.span = range(len(retrieved)) if rows is None else rows
        self.cache = PlanCache(job, kind, extra)
        self.compat = job.policy.compat
        self.counting = job.counts_tokens
        self.limit = job.model.max_seq_len if self.counting else None
        self.count = job.model.count_tokens
        self.words = self.count is whitespace_tokens
        # without a limit, a writer that needs no count never counts
        self.counts = counts and self.counting
        self.data_tokens = for_model(job.model, job.policy)
        self.unsplit = unsplit(job.model, job.policy)

    def retarget(self, retrieved: Sequence[Sequence[int]], rows: range | None) -> None:
        """Serve other rows of the same job next (``retrieved`` indexed by row, as for the
        whole job); the compiled plans are kept."""
        self.retrieved = retrieved
        self.span = range(len(retrieved)) if rows is None else rows

    def rows(self) -> Iterator[tuple[int, Sequence[int], Mapping[str, Any]]]:
        """(index, example ids, test row) of each row in order; rows of a streamed file are
        read one by one, and ``job.row`` names the row an error comes from. Rows sharing
        their ids (FixK, Zero) share one ids object."""
        job, retrieved, span = self.job, self.retrieved, self.span
        same = retrieved.ids if isinstance(retrieved, Repeated) else None  # FixK, Zero: one
        check = None if self.unsplit is None else self.unsplit.check
        if span.step != 1:
            for index in span:
                job.row = index
                row = job.rows.test[index]
                if check is not None:
                    check(row, index)
                yield index, retrieved[index] if same is None else same, row
            return
        stream = iter_rows(job.rows.test, span.start, span.stop)
        for index in span:
            job.row = index  # an error reading the row names it
            row = next(stream)
            if check is not None:
                check(row, index)
            yield index, retrieved[index] if same is None else same, row

    def plans(self, ids: Sequence[int], row: Mapping[str, Any]) -> list[Plan] | None:
        """The plans (one, or one per ppl label) for rows with example ids ``ids``, or None
        (not compiled yet, or the probe showed a plan cannot reproduce them)."""
        return self.cache.get(ids, row)

    def decide(self, plan: Plan, values: Sequence[Any], rest: str) -> int:
        """The decision for one planned prompt: :data:`GENERIC`, :data:`UNCOUNTED`, or its
        token count.

        ``values`` are the row's slot values (as the row holds them) and ``rest`` the filled
        prompt after the plan's first literal (:func:`.compile_plan` refused literals
        holding braces in compat mode, so braces can only come from the values).
        """
        if self.compat and ("{" in rest or "}" in rest):
            return GENERIC  # OpenCompass re-fills values holding braces (D1)
        if self.data_tokens is not None and self.data_tokens.holds(values):
            return GENERIC  # special-token text from data: ids from its spans (D23)
        limit = self.limit
        if not self.counts:
            if limit is None:
                return UNCOUNTED
            # a whitespace word takes a character and a space at least: surely within
            if self.words and len(rest) <= 2 * limit - len(plan.literals[0]):
                return UNCOUNTED
        if self.words:
            n = plan.count_words([v if type(v) is str else str(v) for v in values])
        else:
            n = self.count(plan.literals[0] + rest)
        if limit is not None and n > limit:
            return GENERIC  # may drop examples: the generic path decides
        return n

    def generic(self, index: int, ids: Sequence[int]) -> list[Record]:
        """The records of one row through the generic path."""
        if self.kind == "gen":
            return [gen_record(self.job, index, ids, self.extra)]
        return ppl_row_records(self.job, index, ids, self.extra)
