"""A default-mode model with no Hugging Face tokenizer warns once when a row value holds one
of its special tokens (D23): the text cannot be encoded split, so an engine fed it reads a
control token. Strings are found in lists and mappings too; a token cut across two list
items is no token."""

from __future__ import annotations

from pathlib import Path

from tests._cli import run_cli

SUITE = """\
datasets:
  - abbr: qa
    path: rows.jsonl
    reader_cfg: {input_columns: [q, extra], output_column: a}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: {round: [{role: HUMAN, prompt: "Q: {q}"}]}}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
models:
  - abbr: chat
    renderer: lm
    meta_template:
      round:
        - {role: HUMAN, begin: "<|im_start|>user\\n", end: "<|im_end|>\\n"}
        - {role: BOT, begin: "<|im_start|>assistant\\n", end: "<|im_end|>\\n", generate: true}
"""

ROWS = [
    '{"q": "plain", "extra": 3, "a": "x"}',
    '{"q": "cut", "extra": ["ok", "a <|im_e", "nd|> b"], "a": "y"}',
    '{"q": "x", "extra": ["deep", {"k": "hi <|im_start|> there"}], "a": "z"}',
    '{"q": "again <|im_end|>", "extra": null, "a": "w"}',
]


def test_the_first_row_holding_a_special_token_is_named_once(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "rows.jsonl").write_text("\n".join(ROWS) + "\n", encoding="utf-8")
    run = run_cli("s.yaml", "-o", "out", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stderr == (
        "compile-prompts: warning: model 'chat', row 2, at model.tokenizer: a row value holds "
        "'<|im_start|>', a special token of this model, and the model has no Hugging Face "
        "tokenizer to encode it as ordinary text: an engine fed the prompt text reads it as a "
        "control token (D23) (hint: give the model its tokenizer (then such records carry "
        "their ids), or remove the token from the data)\n")


def test_no_warning_without_special_text_or_in_compat_mode(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "rows.jsonl").write_text("\n".join(ROWS[:2]) + "\n", encoding="utf-8")
    run = run_cli("s.yaml", "-o", "out", cwd=tmp_path)
    assert (run.returncode, run.stderr) == (0, "")
    (tmp_path / "rows.jsonl").write_text("\n".join(ROWS) + "\n", encoding="utf-8")
    run = run_cli("s.yaml", "-o", "out", "--mode", "compat", cwd=tmp_path)
    assert (run.returncode, run.stderr) == (0, "")
