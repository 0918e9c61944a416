"""``compile-prompts --tokenize`` against the ids OpenCompass 0.5.4's model classes feed,
recorded with real vocabularies by ``tools/oc_token_ids_reference.py``
(``tests/data/oc_token_ids/expected.json``; cases in ``tests/token_ids_cases.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import token_ids_cases as cases
from tests._cli import run_cli

pytestmark = pytest.mark.skipif(bool(cases.missing_packages()),
                                reason="needs the vocabulary packages .ci/run installs")

EXPECTED = json.loads(cases.EXPECTED.read_text(encoding="utf-8"))["cases"]
BOS = {"llama3-bos": 128000, "llama3-chat": 128000, "deepseek": 0, "qwen": None, "mistral": 1,
       "mistral-first": 1, "mistral-chat": 1, "mistral-chat-unnamed": 1}

DATA = {"datasets": [
    {"abbr": "gen", "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
     "infer_cfg": {"prompt_template": {"type": "PromptTemplate",
                                       "template": {"round": [{"role": "HUMAN",
                                                               "prompt": "{q}"}]}},
                   "retriever": {"type": "ZeroRetriever"},
                   "inferencer": {"type": "GenInferencer"}}},
    {"abbr": "ppl", "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
     "infer_cfg": {"prompt_template": {"type": "PromptTemplate", "template": {"x": "{q}"}},
                   "retriever": {"type": "ZeroRetriever"},
                   "inferencer": {"type": "PPLInferencer"}}},
    {"abbr": "multi", "reader_cfg": {"input_columns": ["q", "b", "q2"], "output_column": "a"},
     "infer_cfg": {"prompt_template": {"type": "PromptTemplate", "template": {"round": [
         {"role": "HUMAN", "prompt": "{q}"}, {"role": "BOT", "prompt": "{b}"},
         {"role": "HUMAN", "prompt": "{q2}"}]}},
         "retriever": {"type": "ZeroRetriever"}, "inferencer": {"type": "GenInferencer"}}},
    {"abbr": "clp", "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
     "infer_cfg": {"prompt_template": {"type": "PromptTemplate",
                                       "template": {"round": [{"role": "HUMAN",
                                                               "prompt": "{q}"}]}},
                   "retriever": {"type": "ZeroRetriever"},
                   "inferencer": {"type": "CLPInferencer"}}},
    {"abbr": "ll", "reader_cfg": {"input_columns": ["q", "cont"], "output_column": "a"},
     "infer_cfg": {"prompt_template": {"type": "PromptTemplate", "template": {"x": "{q}"}},
                   "retriever": {"type": "ZeroRetriever"},
                   "inferencer": {"type": "LLInferencer"}}},
]}
ROW = {"q": cases.TEXT, "cont": cases.CONT, "b": "Yes.", "q2": "And the dog?", "a": "x",
       "choices": ["A", "B"]}


def model_abbr(case: cases.TokenCase) -> str:
    return f"{case.vocab}-{case.cls}"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """mode -> case name -> the record's ids and mask_length."""
    tmp = tmp_path_factory.mktemp("ids")
    folders = cases.vocab_folders(tmp / "vocab")
    present = [c for c in cases.CASES if c.vocab in folders]
    data = json.loads(json.dumps(DATA))
    for ds in data["datasets"]:
        ds["splits"] = {"train": [ROW], "test": [ROW]}
    (tmp / "data.yaml").write_text(json.dumps(data), encoding="utf-8")
    models = {model_abbr(c): {"abbr": model_abbr(c), "type": c.cls, "tokenizer": folders[c.vocab],
                              "meta_template": c.meta_template} for c in present}
    (tmp / "models.py").write_text(f"models = {list(models.values())!r}\n", encoding="utf-8")
    out: dict[str, dict[str, Any]] = {}
    # kinds compiled together (each dataset x each model of its group): one run per group
    groups = [("gen", "multi"), ("ppl", "ll"), ("clp",)]
    for mode in ("compat", "default"):
        out[mode] = {}
        for group in groups:
            names = sorted({model_abbr(c) for c in present if c.kind in group})
            where = f"out-{mode}-{group[0]}"
            args = ["data.yaml", "models.py", "--tokenize", "--mode", mode, "-o", where]
            for kind in group:
                args += ["--only", kind]
            for name in names:
                args += ["--models", name]
            proc = run_cli(*args, cwd=tmp)
            assert proc.returncode == 0, proc.stderr
            for c in present:
                if c.kind in group:
                    file = tmp / where / model_abbr(c) / f"{c.kind}.jsonl"
                    (rec,) = [json.loads(x) for x in file.read_text("utf-8").splitlines()]
                    out[mode][c.name] = rec
    return out


@pytest.mark.parametrize("case", cases.CASES, ids=lambda c: c.name)
def test_compat_ids_are_opencompass_ids(compiled: dict[str, Any], case: cases.TokenCase
                                        ) -> None:
    if case.name not in compiled["compat"]:
        pytest.skip(f"vocabulary {case.vocab!r} not present (see tests/token_ids_cases.py)")
    rec, expected = compiled["compat"][case.name], EXPECTED[case.name]
    assert rec["input_ids"] == expected["input_ids"]
    if "transformers_ids" in expected and case.cls != "TurboMindModelwithChatTemplate":
        assert rec["input_ids"] == expected["transformers_ids"]
    if case.kind == "ll":
        assert rec["mask_length"] == expected["mask_length"]  # D22: the continuation's count
    elif case.kind == "clp":
        assert rec["mask_length"] == len(expected["input_ids"])  # the next token is scored
    elif case.kind == "ppl":
        assert rec["mask_length"] == 0 and expected["mask_length"] is None  # nothing masked


@pytest.mark.parametrize("case", cases.CASES, ids=lambda c: c.name)
def test_default_ids_hold_exactly_one_bos(compiled: dict[str, Any], case: cases.TokenCase
                                          ) -> None:
    if case.name not in compiled["default"]:
        pytest.skip(f"vocabulary {case.vocab!r} not present (see tests/token_ids_cases.py)")
    ids = compiled["default"][case.name]["input_ids"]
    bos = BOS[case.vocab]
    if bos is None:  # Qwen names no BOS: the text's ids as they are
        assert ids == EXPECTED[case.name]["input_ids"]
    else:
        assert ids[0] == bos and bos not in ids[1:]
        without = [i for i in EXPECTED[case.name]["input_ids"] if i != bos]
        assert ids[1:] == without if case.kind != "ll" else ids[1:4] == without[:3]
        assert ids == [bos, *without] or case.kind == "ll"
    if "transformers_ids" in EXPECTED[case.name]:
        # transformers' apply_chat_template(tokenize=True) on the same messages agrees (the
        # Llama 3 template writes the BOS itself; Qwen's has none)
        assert ids == EXPECTED[case.name]["transformers_ids"]
