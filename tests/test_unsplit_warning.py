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


WARNED = (
    "compile-prompts: warning: model 'chat', row 3, at model.tokenizer: a row value holds "
    "'<|im_end|>', a special token of this model, and the model has no Hugging Face "
    "tokenizer to encode it as ordinary text: an engine fed the prompt text reads it as a "
    "control token (D23) (hint: give the model its tokenizer (then such records carry "
    "their ids), or remove the token from the data)\n")
TYPO = ("compile-prompts: warning: s.yaml: dataset 'typo', at datasets[1].infer_cfg."
        "prompt_template.template: placeholder {qq} names no column, so it stays in the prompt "
        "verbatim; did you mean {q}?\n")


def _split_suite(tmp_path: Path) -> None:
    """5,000 rows (a pair --jobs 2 splits into row ranges), row 3 and every 7th from 4,000 on
    holding <|im_end|>, and a small dataset whose template names a column it lacks."""
    datasets, models = SUITE.split("models:\n")
    (tmp_path / "s.yaml").write_text(datasets + """\
  - abbr: typo
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "Q: {qq}"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
    splits: {train: [], test: [{q: "1", a: "2"}]}
models:
""" + models, encoding="utf-8")
    rows = []
    for i in range(5000):
        q = "end <|im_end|>" if i == 3 or (i >= 4000 and i % 7 == 0) else f"q{i}"
        rows.append(f'{{"q": "{q}", "extra": null, "a": "x"}}')
    (tmp_path / "rows.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")


def test_workers_warnings_are_printed_by_the_run_once_as_in_one_process(tmp_path: Path
                                                                        ) -> None:
    """--jobs 2 compiles the large pair in row ranges, each in its own process: the run
    prints what one process prints (the first row holding a special token, once; the
    other dataset's placeholder warning), not one warning per range."""
    _split_suite(tmp_path)
    one = run_cli("s.yaml", "-o", "out1", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    lines = one.stderr.splitlines(keepends=True)
    assert lines == [WARNED, TYPO], one.stderr
    for args in (("--jobs", "2"), ("--jobs", "2", "--shard-rows", "1000")):
        run = run_cli("s.yaml", "-o", "out2", *args, cwd=tmp_path)
        assert (run.returncode, run.stderr) == (0, one.stderr), args


def test_ray_workers_warnings_reach_the_terminal(tmp_path: Path) -> None:
    """Ray tasks' output never reaches the terminal: their warnings come back with their
    results and the run prints them, as one process does."""
    import pytest

    pytest.importorskip("ray")
    _split_suite(tmp_path)
    one = run_cli("s.yaml", "-o", "out1", cwd=tmp_path)
    for args in ((), ("--shard-rows", "1000")):
        run = run_cli("s.yaml", "-o", "out2", "--engine", "ray", "--jobs", "2", *args,
                      cwd=tmp_path, timeout=600)
        assert (run.returncode, run.stderr) == (0, one.stderr), args


def test_a_ray_workers_error_names_the_config_as_given(tmp_path: Path) -> None:
    """Workers read the config by its absolute path; the error line names it as typed."""
    import pytest

    pytest.importorskip("ray")
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "rows.jsonl").write_text(ROWS[0] + '\n{"q": "a"\n', encoding="utf-8")
    run = run_cli("s.yaml", "-o", "out", "--engine", "ray", "--jobs", "1", cwd=tmp_path,
                  timeout=600)
    assert run.returncode == 1
    assert run.stderr.startswith("compile-prompts: error: s.yaml: dataset 'qa', model 'chat', "
                                 "row 1: "), run.stderr
    assert run.stderr.endswith("rows.jsonl: line 2: malformed JSON: Expecting ',' delimiter "
                               "(column 1)\n"), run.stderr
