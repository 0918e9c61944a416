"""tools/oc_compare.py: prompt-by-prompt comparison with OpenCompass over the wheel's configs.

The comparison logic is tested with hand-written cases and references (the recorded-calls
format of tools/oc_reference.py). The real run -- OpenCompass itself over a few of the wheel's
configs -- needs a Python with opencompass 0.5.4 (``$PC_OPENCOMPASS_PYTHON``) and skips
without one; the full sample is a tool run (docs/opencompass-corpus.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"
sys.path.insert(0, str(TOOLS))
import oc_compare  # noqa: E402

ROWS = [{"q": "one #te0", "a": "A"}, {"q": "two {a} #te1", "a": "B"}]


def gen_case(parser: str = "lm") -> dict[str, Any]:
    return {"id": "c", "dataset": {
        "abbr": "d", "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
        "infer_cfg": {"prompt_template": {"type": "PromptTemplate", "template": "Q: {q}\nA:"},
                      "retriever": {"type": "ZeroRetriever"},
                      "inferencer": {"type": "GenInferencer"}},
        "rows": ROWS}, "model": oc_compare.MODELS[parser], "options": {}}


def golden(*inputs: Any, status: str = "ok", error: Any = None) -> dict[str, Any]:
    return {"id": "c", "inferencer": "GenInferencer", "parser": "lm", "status": status,
            "error": error, "calls": [{"call": "generate", "inputs": list(inputs)}]}


def test_same_when_the_model_inputs_match() -> None:
    # OpenCompass fills placeholders one key at a time: row 1's "{a}" becomes its masked
    # answer (empty) in compat mode, and stays in default mode (D1).
    compat = golden("Q: one #te0\nA:", "Q: two  #te1\nA:")
    assert oc_compare.compare(gen_case(), compat, "compat").status == "same"
    default = oc_compare.compare(gen_case(), compat, "default")
    assert default.status == "differs"
    assert "Q: two {a} #te1" in default.detail and "Q: two  #te1" in default.detail


def test_order_of_calls_does_not_matter_but_content_does() -> None:
    ref = golden("Q: two  #te1\nA:", "Q: one #te0\nA:")
    assert oc_compare.compare(gen_case(), ref, "compat").status == "same"
    ref = golden("Q: one #te0\nA:", "Q: two  #te1\nA: ")
    res = oc_compare.compare(gen_case(), ref, "compat")
    assert res.status == "differs" and res.detail.startswith("2 expected, 2 compiled")


def test_errors_compare_type_and_message() -> None:
    case = gen_case()
    case["dataset"]["infer_cfg"]["prompt_template"] = {
        "type": "RawPromptTemplate", "messages": [{"role": "user", "content": "{q}"}]}
    # a raw template on an LM parser fails in OpenCompass; the message must be OpenCompass's
    res = oc_compare.compare(case, golden(status="error", error={
        "type": "AssertionError", "message": "not this message"}), "compat")
    assert res.status == "error-differs" and "message: OpenCompass 'not this message'" in res.detail
    res = oc_compare.compare(gen_case(), golden(status="error", error={
        "type": "KeyError", "message": "'x'"}), "compat")
    assert res.status == "error-differs" and res.detail.endswith("we compiled")


def test_hf_chat_messages_are_compared() -> None:
    prompts = ["Q: one #te0\nA:", "Q: two  #te1\nA:"]  # a str template stays a str
    msgs = [[{"role": "user", "content": "Q: one #te0\nA:"}],
            [{"role": "user", "content": "Q: two  #te1\nA:"}]]
    ref = golden(*prompts)
    ref["parser"] = "hf_chat"
    ref["calls"][0]["chat_messages"] = msgs
    assert oc_compare.compare(gen_case("hf_chat"), ref, "compat").status == "same"
    ref["calls"][0]["chat_messages"] = [msgs[0], [{"role": "user", "content": "other"}]]
    res = oc_compare.compare(gen_case("hf_chat"), ref, "compat")
    assert res.status == "differs" and res.detail.startswith("chat messages")


def test_cases_carry_hostile_values_and_int_label_keys() -> None:
    spec = {"abbr": "x", "reader_cfg": {"input_columns": ["q", "ctx"], "output_column": "a"},
            "infer_cfg": {"prompt_template": {"type": "PromptTemplate",
                                              "template": {0: "no {q}", 1: "yes {q}"}},
                          "retriever": {"type": "ZeroRetriever"},
                          "inferencer": {"type": "PPLInferencer"}}}
    case = oc_compare.case_for(spec, "api", "x_api")
    assert case["dataset"]["infer_cfg"]["prompt_template"]["template"] == {
        "__items__": [[0, "no {q}"], [1, "yes {q}"]]}
    test = case["dataset"]["splits"]["test"]
    assert test[1]["q"] == "q value #te1 {x} {ctx}\nline2"
    assert test[0]["q"] == "q value #te0" and test[1]["a"] == 1  # label keys as answers
    plain = oc_compare.case_for(spec, "api", "x_api_plain", braces=False)
    assert plain["dataset"]["splits"]["test"][1]["q"] == "q value #te1"


def test_against_opencompass_itself(tmp_path: Path) -> None:
    python = os.environ.get("PC_OPENCOMPASS_PYTHON")
    if not python:
        pytest.skip("set PC_OPENCOMPASS_PYTHON to a Python with opencompass 0.5.4 installed "
                    "to compare with OpenCompass itself")
    site = subprocess.run([python, "-c", "import opencompass, os; print(os.path.dirname("
                           "os.path.dirname(opencompass.__file__)))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # a gen config with few-shot examples, a PPL label template, and a raw-message config
    status = oc_compare.main([
        "--extracted", site, "--reference-python", python, "--work", str(tmp_path),
        "--only", "gsm8k/gsm8k_gen_1d7fe4.py", "--only", "ARC_c/ARC_c_ppl_a450bd.py",
        "--only", "IFEval/IFEval_gen_353ae7.py"])
    assert status == 0
