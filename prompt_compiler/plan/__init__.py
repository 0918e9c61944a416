"""The plan stage: a gen or ppl job's prompt compiled once into literal text and row slots.

* :mod:`.probe`: :class:`Plan` and :func:`compile_plan` (a probe row through the generic
  path) and :func:`supports` (which jobs a plan may serve);
* :mod:`.core`: the decisions, each made once: :func:`plannable`, and per row
  :class:`RowPlanner` (row iteration, the compat-mode brace check, the ``max_seq_len``
  check, the fall back to the generic path);
* two writers of what the core decided: :mod:`.records` (records, the library's ``lean``
  path) and :mod:`.lines` (JSON lines, what the CLI writes).
"""

from .core import GENERIC, UNCOUNTED, RowPlanner, job_labels, plannable
from .lines import Lines
from .probe import Plan, PlanCache, compile_plan, supports
from .records import plan_records

__all__ = ["GENERIC", "UNCOUNTED", "Lines", "Plan", "PlanCache", "RowPlanner", "compile_plan",
           "job_labels", "plan_records", "plannable", "supports"]
