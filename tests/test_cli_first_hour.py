"""The first hour of a new user, through the CLI as a subprocess (issue 28): did-you-mean for a
misspelt required key, and the other CLI items of that issue."""

from __future__ import annotations

from pathlib import Path

from tests._cli import run_cli

DATASET = """datasets:
  - abbr: qa
    reader_cfg: {input_columns: [question], output_column: answer}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "Q: {question}"}
      retriever: {type: ZeroRetriever}
      %s: {type: GenInferencer}
    splits:
      train: []
      test: [{question: "1+1?", answer: "2"}]
models: [{abbr: chatml, meta_template: chatml}]
"""


def test_a_misspelt_inferencer_is_named_with_the_key_it_resembles(tmp_path: Path) -> None:
    (tmp_path / "qa.yaml").write_text(DATASET % "inferencre")
    proc = run_cli("qa.yaml", "--check", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == (
        "compile-prompts: error: qa.yaml: dataset 'qa', at datasets[0].infer_cfg.inferencre: "
        "infer_cfg has no 'inferencer' but has 'inferencre': a misspelling of 'inferencer'? "
        "(hint: rename 'inferencre' to 'inferencer')\n")
    (tmp_path / "qa.yaml").write_text(DATASET % "generator")
    proc = run_cli("qa.yaml", "--check", cwd=tmp_path)
    assert proc.stderr == ("compile-prompts: error: qa.yaml: dataset 'qa', at "
                           "datasets[0].infer_cfg.inferencer: infer_cfg has no 'inferencer'\n")
