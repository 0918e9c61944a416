"""The compiled plan (prompt_compiler/plan.py) against the generic path it stands in for.

Every shared conformance case and generated hostile rows are compiled both ways; the lean
records (what the CLI writes) must be identical to the generic ones.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

import prompt_compiler as pc
from prompt_compiler import plan
from prompt_compiler.emit.records import record_json

sys.path.insert(0, str(REPO / "tools"))
from conformance_suites.opencompass import decode  # noqa: E402

INTERNLM = {"round": [
    {"role": "HUMAN", "begin": "<|User|>:", "end": "\n"},
    {"role": "BOT", "begin": "<|Bot|>:", "end": "<eoa>\n", "generate": True},
]}


@pytest.fixture(autouse=True)
def plan_every_row(monkeypatch):
    """Compile a plan on an id tuple's first use, so that every covered row goes through it."""
    monkeypatch.setattr(plan.PlanCache, "probe_after", 1)


def both_ways(compiler: pc.Compiler, dataset: Any, model: Any, options: Any = None
              ) -> tuple[Any, Any, int]:
    """(generic outcome, lean outcome, rows served by a plan); an outcome is the records'
    JSON objects with token counts, or the error's type and text."""
    def run(lean: bool) -> tuple[Any, int]:
        try:
            recs = list(compiler.iter_records(dataset, model, options=options, lean=lean))
        except pc.PromptCompilerError as err:
            return ("error", type(err).__name__, str(err)), 0
        limit = compiler.model(model).max_seq_len
        out = [(record_json(r), (r.token_len, r.token_len_full, r.over_limit)
                if limit is not None else None) for r in recs]
        return out, sum(1 for r in recs if r.intermediate is None)

    generic, _ = run(False)
    lean, planned = run(True)
    return generic, lean, planned


def cases() -> list[Path]:
    folder = REPO.parent / "shared" / "conformance" / "opencompass" / "cases"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


@pytest.mark.skipif(not cases(), reason="../shared/conformance is not beside this clone")
@pytest.mark.parametrize("mode", ["default", "opencompass"])
# API cases whose templates hold bare strings: OpenCompass's UserWarning, not this test's subject
@pytest.mark.filterwarnings("ignore:Non-empty string in prompt template")
def test_every_conformance_case_compiles_the_same_through_the_plan(mode):
    planned_cases = 0
    for path in cases():
        case = decode(json.loads(path.read_text(encoding="utf-8")))
        if not case["dataset"]["infer_cfg"]["inferencer"]["type"].endswith(("GenInferencer",
                                                                              "PPLInferencer")):
            continue
        generic, lean, planned = both_ways(pc.Compiler(mode=mode), case["dataset"], case["model"],
                                           case.get("options"))
        assert lean == generic, path.name
        planned_cases += planned > 0
    # the comparison is not vacuous: most gen/ppl cases are served by plans
    assert planned_cases >= 45


def test_supports_declines_what_a_plan_does_not_cover():
    compiler = pc.Compiler()
    ds = gen_dataset("</E>Q: {q}\nA:", [{"q": "x", "a": "y"}])

    def job(model: Any, options: Any = None) -> Any:
        return compiler.job(ds, model, options)[0]

    assert plan.supports(job({"abbr": "m", "meta_template": INTERNLM}), "gen")
    assert not plan.supports(job({"abbr": "m", "meta_template": INTERNLM}), "chat")
    assert not plan.supports(job({"abbr": "m", "parser": "api"}), "gen")
    assert not plan.supports(job({"abbr": "m"}, {"normalizing_str": "x"}), "ppl")
    assert not plan.supports(job({"abbr": "m"}, {"some_new_option": 1}), "gen")
    assert not plan.supports(job({"abbr": "m"}, {"fewshot": "inline"}), "gen")
    assert not plan.supports(job({"abbr": "m", "system_role": "merge"}), "gen")
    jinja = gen_dataset("</E>Q: {{ q }}", [{"q": "x", "a": "y"}])
    jinja["infer_cfg"]["prompt_template"]["engine"] = "jinja2"
    assert not plan.supports(compiler.job(jinja, {"abbr": "m"})[0], "gen")


def gen_dataset(template: Any, test: list[dict[str, Any]], *, shots: int = 2,
                ice: Any = None) -> dict[str, Any]:
    train = [{"q": f"t{i} {{q}} </E>", "a": f"a{i}"} for i in range(3)]
    infer: dict[str, Any] = {
        "prompt_template": {"type": "PromptTemplate", "template": template, "ice_token": "</E>"},
        "retriever": {"type": "FixKRetriever", "fix_id_list": list(range(shots))},
        "inferencer": {"type": "GenInferencer"},
    }
    infer["ice_template"] = {"type": "PromptTemplate", "template": ice or "Q: {q} A: {a}"}
    return {"abbr": "d", "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
            "infer_cfg": infer, "splits": {"train": train, "test": test}}


HOSTILE = st.lists(st.sampled_from(
    ["{", "}", "{q}", "{a}", "</E>", "\n", " ", "%", "%s", "x", "é", "\t", "\ue000", "\ue001", ""]),
    max_size=8).map("".join)
META_ICE = {"round": [{"role": "HUMAN", "prompt": "Q: {q}"}, {"role": "BOT", "prompt": "{a}%"}]}
TEMPLATES = [  # (prompt template, ice template)
    ("</E>Q: {q}\nA: {a}", None),
    ({"begin": "</E>", "round": [{"role": "HUMAN", "prompt": "Q: {q}"},
                                 {"role": "BOT", "prompt": "{a}"}]}, META_ICE),
    ({"round": [{"role": "HUMAN", "prompt": "</E>{q}"}, {"role": "BOT", "prompt": "{a}"}]}, None),
    ({"round": [{"role": "HUMAN", "prompt": "{q}"}, "</E>", {"role": "BOT", "prompt": "{a}"}]},
     META_ICE),
]


@settings(max_examples=100)
@given(values=st.lists(st.tuples(HOSTILE, HOSTILE), min_size=1, max_size=4),
       template=st.sampled_from(range(len(TEMPLATES))), meta=st.booleans(),
       mode=st.sampled_from(["default", "opencompass"]),
       limit=st.sampled_from([None, 6, 1000]))
def test_hostile_values_compile_the_same_through_the_plan(values, template, meta, mode, limit):
    rows = [{"q": q, "a": a} for q, a in values]
    tpl, ice = TEMPLATES[template]
    ds = gen_dataset(tpl, rows, ice=ice)
    model = {"abbr": "m", "meta_template": INTERNLM if meta else None, "max_seq_len": limit}
    generic, lean, _ = both_ways(pc.Compiler(mode=mode), ds, model)
    assert lean == generic


@settings(max_examples=60)
@given(values=st.lists(st.tuples(HOSTILE, HOSTILE), min_size=1, max_size=4),
       mode=st.sampled_from(["default", "opencompass"]), limit=st.sampled_from([None, 9, 1000]))
def test_hostile_values_in_ppl_compile_the_same_through_the_plan(values, mode, limit):
    rows = [{"q": q, "a": a} for q, a in values]
    labels = {lab: {"begin": "</E>", "round": [{"role": "HUMAN", "prompt": "Q: {q}"},
                                               {"role": "BOT", "prompt": f"{lab} {{a}}"}]}
              for lab in ("A", "B")}
    ds = gen_dataset(labels, rows, ice=labels)
    ds["infer_cfg"]["inferencer"] = {"type": "PPLInferencer"}
    del ds["infer_cfg"]["prompt_template"]
    ds["infer_cfg"]["ice_template"]["ice_token"] = "</E>"
    ds["splits"]["train"] = [dict(r, a="A") for r in ds["splits"]["train"]]
    model = {"abbr": "m", "meta_template": INTERNLM, "max_seq_len": limit}
    generic, lean, _ = both_ways(pc.Compiler(mode=mode), ds, model)
    assert lean == generic


@given(st.lists(st.text(alphabet=st.sampled_from(["a", "b", " ", "\n", "\u2003", "\x1c"]),
                        max_size=6), min_size=2, max_size=8))
def test_word_counts_of_a_plan_equal_splitting_the_prompt(parts):
    literals, values = parts[0::2], parts[1::2]
    if len(literals) == len(values):
        literals.append("")
    p = plan.Plan(tuple(literals), tuple(f"c{i}" for i in range(len(values))))
    assert p.count_words(values) == len(p.fill(values).split())
