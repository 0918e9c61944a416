"""Generation settings and row ids on every record (issue 16 part 2), through the CLI from
YAML and Python configs. Expected values are written by hand from the configs below."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import prompt_compiler as pc
from tests._cli import run_cli

ROWS = [{"q": f"q{i}", "a": f"a{i}"} for i in range(6)]

DATASETS_YAML = """\
datasets:
  - abbr: short
    reader_cfg: {input_columns: [q], output_column: a, test_range: "[2:5]"}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "{q}"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer, max_out_len: 16, stopping_criteria: ["Q:"]}
    splits: {train: ROWS, test: ROWS}
  - abbr: inherits
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "{q}"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
    splits: {train: ROWS, test: ROWS}
  - abbr: scored
    reader_cfg: {input_columns: [q], output_column: a, test_range: "[4:]"}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: {"A": "{q} A", "B": "{q} B"}}
      retriever: {type: ZeroRetriever}
      inferencer: {type: PPLInferencer}
    splits: {train: ROWS, test: ROWS}
""".replace("ROWS", json.dumps(ROWS))

MODEL_YAML = """\
models:
  - abbr: chatty
    type: HuggingFaceCausalLM
    max_out_len: 64
    stop_words: ["###", "<eoa>"]
    meta_template:
      round:
        - {role: HUMAN, begin: "<|User|>:", end: "\\n"}
        - {role: BOT, begin: "<|Bot|>:", end: "<eoa>\\n", generate: true}
      eos_token_id: 103028
"""

MODEL_PY = """\
models = [dict(abbr="chatty", type="HuggingFaceCausalLM", max_out_len=64,
               stop_words=["###", "<eoa>"],
               meta_template=dict(round=[
                   dict(role="HUMAN", begin="<|User|>:", end="\\n"),
                   dict(role="BOT", begin="<|Bot|>:", end="<eoa>\\n", generate=True)],
                   eos_token_id=103028))]
"""


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def settings(rec: dict[str, Any]) -> tuple[Any, ...]:
    return rec["row"], rec["max_out_len"], rec["stop"], rec["stop_token_ids"]


@pytest.mark.parametrize("model_file", ["model.yaml", "model.py"])
@pytest.mark.parametrize("extra", [[], ["--jobs", "2"]])
def test_settings_and_rows_from_config_files(tmp_path: Path, model_file: str,
                                             extra: list[str]) -> None:
    (tmp_path / "data.yaml").write_text(DATASETS_YAML, encoding="utf-8")
    (tmp_path / model_file).write_text(MODEL_YAML if model_file.endswith("yaml") else MODEL_PY,
                                       encoding="utf-8")
    proc = run_cli("data.yaml", model_file, "-o", "out", *extra, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out" / "chatty"
    short = records(out / "short.jsonl")
    # the inferencer's max_out_len wins over the model's; its stopping_criteria come first;
    # then the model's stop_words, the BOT end without its newline (already listed: once)
    assert [settings(r) for r in short] == [
        (row, 16, ["Q:", "###", "<eoa>"], [103028]) for row in (2, 3, 4)]
    assert [r["index"] for r in short] == [0, 1, 2]
    assert [r["prompt"] for r in short] == ["q2", "q3", "q4"]  # a str template: no rounds
    inherits = records(out / "inherits.jsonl")
    assert [settings(r) for r in inherits] == [
        (row, 64, ["###", "<eoa>"], [103028]) for row in range(6)]
    scored = records(out / "scored.jsonl")  # scoring generates nothing: no max_out_len
    assert [(r["label"], *settings(r)) for r in scored] == [
        (label, row, None, ["###", "<eoa>"], [103028])
        for row in (4, 5) for label in ("A", "B")]


def test_rows_stay_under_limit_and_only(tmp_path: Path) -> None:
    (tmp_path / "data.yaml").write_text(DATASETS_YAML, encoding="utf-8")
    (tmp_path / "model.yaml").write_text(MODEL_YAML, encoding="utf-8")
    proc = run_cli("data.yaml", "model.yaml", "-o", "out", "--limit", "2", "--only", "short",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    short = records(tmp_path / "out" / "chatty" / "short.jsonl")
    assert [(r["index"], r["row"], r["prompt"]) for r in short] == [
        (0, 2, "q2"), (1, 3, "q3")]


def test_library_records_carry_the_settings() -> None:
    dataset = {"abbr": "d", "reader_cfg": {"input_columns": ["q"], "output_column": "a",
                                           "test_range": "[1:3]"},
               "infer_cfg": {"prompt_template": {"type": "PromptTemplate", "template": "{q}"},
                             "retriever": {"type": "ZeroRetriever"},
                             "inferencer": {"type": "GenInferencer"}},
               "splits": {"train": ROWS, "test": ROWS}}
    model = {"abbr": "m", "max_out_len": 8, "stop_words": ["\n\n"]}
    recs = pc.Compiler().compile(dataset, model).records
    assert [(r.index, r.row, r.max_out_len, r.stop, r.stop_token_ids, r.input_ids)
            for r in recs] == [(0, 1, 8, ("\n\n",), (), None), (1, 2, 8, ("\n\n",), (), None)]


def test_bad_stop_words_name_the_key(tmp_path: Path) -> None:
    (tmp_path / "data.yaml").write_text(DATASETS_YAML, encoding="utf-8")
    (tmp_path / "model.yaml").write_text(
        "models:\n  - {abbr: m, type: HuggingFaceCausalLM, stop_words: '###'}\n", encoding="utf-8")
    proc = run_cli("data.yaml", "model.yaml", "--check", cwd=tmp_path)
    assert proc.returncode == 1
    assert "stop_words" in proc.stderr and "list of strings" in proc.stderr
    assert "Traceback" not in proc.stderr
