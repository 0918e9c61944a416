"""With ``tokenize``, the plan's JSON-lines writer (the CLI's fast path) writes the same bytes
as the generic record path (``record_json`` of records with ``input_ids``), for gen and ppl
jobs, both modes, tokenizers that add a BOS, name one or have none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import prompt_compiler as pc
from prompt_compiler.emit.records import record_bytes, record_json
from prompt_compiler.plan.probe import PlanCache
from prompt_compiler.plan.lines import Lines, plannable
from tests import token_ids_cases as cases

pytestmark = pytest.mark.skipif(bool(cases.missing_packages()),
                                reason="needs the vocabulary packages .ci/run installs")


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return cases.vocab_folders(tmp_path_factory.mktemp("vocab"))


def dataset(rows: list[dict[str, str]], ppl: bool) -> dict[str, Any]:
    shots = [{"q": f"Shot {i}: what is {i} + {i}? " + "word " * 20, "a": "A"} for i in range(3)]
    if ppl:
        infer: dict[str, Any] = {
            "ice_template": {"type": "PromptTemplate", "template": "{q}\nAnswer: {a}\n\n"},
            "prompt_template": {"type": "PromptTemplate", "ice_token": "</E>", "template": {
                "A": "</E>{q}\nAnswer: A", "B": "</E>{q}\nAnswer: B"}},
            "inferencer": {"type": "PPLInferencer"}}
    else:
        infer = {
            "ice_template": {"type": "PromptTemplate", "template": "{q}\nAnswer: {a}\n\n"},
            "prompt_template": {"type": "PromptTemplate", "template": "</E>{q}\nAnswer:",
                                "ice_token": "</E>"},
            "inferencer": {"type": "GenInferencer"}}
    infer["retriever"] = {"type": "FixKRetriever", "fix_id_list": [0, 1, 2]}
    return {"abbr": "d", "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
            "infer_cfg": infer, "splits": {"train": shots, "test": rows}}


def generic_bytes(compiler: pc.Compiler, ds: Any, model: Any) -> bytes:
    return b"".join(record_bytes(record_json(r)) for r in compiler.iter_records(ds, model))


def lines_bytes(compiler: pc.Compiler, ds: Any, model: Any) -> bytes:
    job, kind, params = compiler.job(ds, model, lean=True)
    assert plannable(job, kind, params)
    retrieved = job.retriever.retrieve(job.rows.train, job.rows.test, job.reader, job.policy)
    return b"".join(Lines(job, kind, params, retrieved))


TEXT = st.lists(st.sampled_from(["The", " cat", "\n", " ", "<|begin_of_text|>", "<|eot_id|>",
                                 "é", "12345", "?", "{q}", "%s", "北京", "  \n"]),
                max_size=12).map("".join)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(questions=st.lists(TEXT, min_size=1, max_size=4), ppl=st.booleans(),
       vocab=st.sampled_from(["llama3-bos", "llama3-chat", "qwen", "deepseek"]),
       mode=st.sampled_from(["default", "opencompass"]))
def test_lines_with_ids_are_the_generic_lines(folders: dict[str, str], questions: list[str],
                                              ppl: bool, vocab: str, mode: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PlanCache, "probe_after", 1)
    ds = dataset([{"q": q, "a": "A"} for q in questions], ppl)
    model = {"abbr": "m", "parser": "lm", "meta_template": None, "tokenizer": folders[vocab],
             "tokenize": True}
    compiler = pc.Compiler(mode=mode)
    assert lines_bytes(compiler, ds, model) == generic_bytes(compiler, ds, model)


def test_the_fast_path_serves_the_rows(folders: dict[str, str], tmp_path: Path) -> None:
    rows = [{"q": f"Question {i}: why is the sky blue?", "a": "A"} for i in range(20)]
    ds = dataset(rows, False)
    model = {"abbr": "m", "parser": "lm", "meta_template": None,
             "tokenizer": folders["llama3-bos"], "tokenize": True}
    compiler = pc.Compiler()
    got = lines_bytes(compiler, ds, model)
    assert got == generic_bytes(compiler, ds, model)
    assert got.count(b'"input_ids": [128000, ') == 20  # one BOS each
