"""The subcommand table of ``compile-prompts``: words win over paths, ``python -m`` works."""

from __future__ import annotations

from pathlib import Path

from _cli import run_cli as cli

MODEL = "models = [dict(abbr='m', meta_template='chatml')]\n"
DATASET = (
    "datasets = [dict(abbr='d', reader_cfg=dict(input_columns=['q'], output_column='a'),\n"
    "    infer_cfg=dict(prompt_template=dict(type='PromptTemplate',\n"
    "            template=dict(round=[dict(role='HUMAN', prompt='Q: {q}')])),\n"
    "        retriever=dict(type='ZeroRetriever'), inferencer=dict(type='GenInferencer')),\n"
    "    rows=[dict(q='x', a='y')])]\n")



def test_models_word_lists_templates_even_beside_a_models_folder(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.py").write_text(MODEL + DATASET, encoding="utf-8")
    listed = cli("models", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert any(line.startswith("chatml ") for line in listed.stdout.splitlines())
    # ./models is the folder: compiled, one dataset x one model.
    compiled = cli("./models", "--check", cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    assert compiled.stdout.startswith("1 dataset x model pair, 1 prompt (")


def test_python_dash_m_is_the_cli(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text(DATASET, encoding="utf-8")
    done = cli("s.py", "--model", "chatml", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = (tmp_path / "out" / "chatml" / "d.jsonl").read_text(encoding="utf-8")
    assert '"prompt": "<|im_start|>user\\nQ: x<|im_end|>\\n<|im_start|>assistant\\n"' in line
