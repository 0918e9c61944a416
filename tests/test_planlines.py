"""Record lines built from plans (prompt_compiler/plan/lines.py) against the generic path.

The CLI writes :class:`~prompt_compiler.plan.Lines` for planned jobs; its bytes must be
those of ``record_bytes(record_json(record))`` for the generic records, row by row,
including rows it hands back to the generic path (braces in compat mode, prompts over
``max_seq_len``, values with no UTF-8 form) and gold answers of every JSON type.
"""

from __future__ import annotations

import datetime
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prompt_compiler as pc
from prompt_compiler import plan
from prompt_compiler.emit.records import record_bytes, record_json
from prompt_compiler.plan import Lines, plannable

INTERNLM = {"round": [
    {"role": "HUMAN", "begin": "<|User|>:", "end": "\n"},
    {"role": "BOT", "begin": "<|Bot|>:", "end": "<eoa>\n", "generate": True},
]}


def outcome(run: Any) -> Any:
    try:
        return run()
    except pc.PromptCompilerError as err:
        return ("error", type(err).__name__, str(err))


def generic_bytes(compiler: pc.Compiler, ds: Any, model: Any) -> Any:
    return outcome(lambda: b"".join(record_bytes(record_json(r))
                                    for r in compiler.iter_records(ds, model)))


def plan_bytes(compiler: pc.Compiler, ds: Any, model: Any, rows: range | None = None,
               ticks: list[int] | None = None) -> Any:
    def run() -> bytes:
        job, kind, params = compiler.job(ds, model, lean=True)
        assert plannable(job, kind, params)
        retrieved = job.retriever.retrieve(job.rows.train, job.rows.test, job.reader, job.policy)
        lines = Lines(job, kind, params, retrieved, rows=rows,
                      tick=None if ticks is None else lambda: ticks.append(1))
        try:
            out = b"".join(lines)
        except pc.PromptCompilerError as err:
            raise err.located(dataset=job.abbr, model=job.model.abbr, row=job.row) from None
        assert lines.count == out.count(b"\n")
        return out
    return outcome(run)


def dataset(rows: list[dict[str, Any]], *, ppl: bool = False, shots: int = 2) -> dict[str, Any]:
    train = [{"q": f"t{i} {{q}} </E> é", "a": "A" if ppl else f"a{i}"} for i in range(3)]
    if ppl:
        tpl: Any = {lab: {"begin": "</E>", "round": [
            {"role": "HUMAN", "prompt": "Q: {q}\n%s"}, {"role": "BOT", "prompt": f"{lab} {{a}}"}]}
            for lab in ("A", "B", "C")}
        infer: dict[str, Any] = {
            "ice_template": {"type": "PromptTemplate", "template": tpl, "ice_token": "</E>"},
            "inferencer": {"type": "PPLInferencer"}}
    else:
        infer = {
            "ice_template": {"type": "PromptTemplate", "template": "Q: {q} A: {a}\n"},
            "prompt_template": {"type": "PromptTemplate", "template": "</E>Q: {q}\n{b} A:",
                                "ice_token": "</E>"},
            "inferencer": {"type": "GenInferencer"}}
    infer["retriever"] = {"type": "FixKRetriever", "fix_id_list": list(range(shots))}
    return {"abbr": "d\u00e9", "reader_cfg": {"input_columns": ["q", "b"], "output_column": "a"},
            "infer_cfg": infer, "splits": {"train": [dict(r, b="x") for r in train],
                                           "test": rows}}


TEXT = st.lists(st.sampled_from(
    ["{", "}", "{q}", "</E>", "\n", " ", "%", "%s", "x", "é", "\t", "\x00", "\x1f", '"', "\\",
     "\u2028", "\U0001f600", "\ud800", "", "word word"]), max_size=8).map("".join)
GOLD = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), TEXT,
                 st.floats(allow_nan=True), st.lists(st.integers(0, 3), max_size=3),
                 st.dictionaries(st.sampled_from(["k", "é"]), st.integers(0, 3), max_size=2))


@pytest.fixture(autouse=True)
def plan_every_row(monkeypatch):
    """Compile a plan on an id tuple's first use, so that every covered row goes through it."""
    monkeypatch.setattr(plan.PlanCache, "probe_after", 1)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(TEXT, TEXT, GOLD), min_size=1, max_size=5),
       ppl=st.booleans(), meta=st.booleans(), mode=st.sampled_from(["default", "opencompass"]),
       limit=st.sampled_from([None, 8, 40, 1000]))
def test_plan_lines_are_the_generic_record_lines(rows, ppl, meta, mode, limit):
    ds = dataset([{"q": q, "b": b, "a": a} for q, b, a in rows], ppl=ppl)
    model = {"abbr": "m\u00e9", "meta_template": INTERNLM if meta else None,
             "max_seq_len": limit}
    compiler = pc.Compiler(mode=mode)
    assert plan_bytes(compiler, ds, model) == generic_bytes(compiler, ds, model)


def test_ranges_concatenate_to_the_whole_and_tick_once_per_row():
    rows = [{"q": f"question {i}", "b": "{x}" if i % 7 == 0 else "b", "a": i % 3}
            for i in range(700)]
    compiler = pc.Compiler(mode="opencompass")
    for ppl in (False, True):
        ds = dataset(rows, ppl=ppl)
        model = {"abbr": "m", "meta_template": INTERNLM, "max_seq_len": 2048}
        ticks: list[int] = []
        whole = plan_bytes(compiler, ds, model, ticks=ticks)
        assert whole == generic_bytes(compiler, ds, model)
        assert len(ticks) == 700
        parts = [plan_bytes(compiler, ds, model, rows=range(a, b))
                 for a, b in ((0, 123), (123, 600), (600, 700))]
        assert b"".join(parts) == whole
        first = orjson.loads(whole.split(b"\n", 1)[0])
        assert first["index"] == 0 and first["ice_ids"] == [0, 1]


def test_a_lone_surrogate_is_named_as_the_generic_path_names_it():
    ds = dataset([{"q": "fine", "b": "b", "a": "A"}, {"q": "bad \ud800", "b": "b", "a": "A"}])
    compiler = pc.Compiler()
    got = plan_bytes(compiler, ds, {"abbr": "m"})
    assert got == generic_bytes(compiler, ds, {"abbr": "m"})
    assert got[0] == "error" and "lone surrogate" in got[2] and "row 1" in got[2]


@pytest.mark.parametrize("labels", [[1, 2], [True, None], ["é", "x\ud800"],
                                    [datetime.date(2024, 1, 2), "B"], [1.5, float("nan")]])
def test_ppl_labels_of_any_type_are_written_or_refused_as_the_generic_path_does(labels):
    ds = dataset([{"q": "q", "b": "b", "a": "A"}, {"q": "r", "b": "b", "a": "A"}], ppl=True)
    template = ds["infer_cfg"]["ice_template"]["template"]
    ds["infer_cfg"]["ice_template"]["template"] = dict(zip(labels, list(template.values())[:2],
                                                           strict=True))
    ds["splits"]["train"] = [dict(r, a=labels[0]) for r in ds["splits"]["train"]]
    compiler = pc.Compiler()
    assert plan_bytes(compiler, ds, {"abbr": "m"}) == generic_bytes(compiler, ds, {"abbr": "m"})
