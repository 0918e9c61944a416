"""``--check --no-rows`` and ``lint --no-rows``: a suite checked before its data is there.

Each test runs the CLI as a subprocess in a folder with no data at all; the expected lines
are written by hand. The last test checks a suite of 274 of OpenCompass 0.5.4's real dataset
configs (it needs ``$PC_OPENCOMPASS_PACKAGE``) in seconds.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests._cli import run_cli

SUITE_YAML = """\
datasets:
  - abbr: qa
    type: GSM8KDataset
    path: ./data/gsm8k
    reader_cfg: {input_columns: [question], output_column: answer}
    infer_cfg:
      ice_template:
        type: PromptTemplate
        template: "Q: {question}\\nA: {answer}\\n"
      prompt_template:
        type: PromptTemplate
        template: "</E>Q: {question}\\nA:"
        ice_token: "</E>"
      retriever: {type: FixKRetriever, fix_id_list: [0, 2]}
      inferencer: {type: GenInferencer}
  - abbr: yesno
    type: SomeLongTailDataset
    path: ./data/yesno
    reader_cfg: {input_columns: [passage, question], output_column: label}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template: {0: "{passage}\\nQ: {question}? No", 1: "{passage}\\nQ: {question}? Yes"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: PPLInferencer}
"""

SUITE_PY = """\
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.datasets import GSM8KDataset

datasets = [dict(
    abbr='qa', type=GSM8KDataset, path='./data/gsm8k',
    reader_cfg=dict(input_columns=['question'], output_column='answer'),
    infer_cfg=dict(
        prompt_template=dict(type=PromptTemplate, template='Q: {question}\\nA:'),
        retriever=dict(type=ZeroRetriever), inferencer=dict(type=GenInferencer)))]
"""

ERROR = "compile-prompts: error: "
WARNING = "compile-prompts: warning: "


def _write(folder: Path, name: str, text: str) -> str:
    (folder / name).write_text(text, encoding="utf-8")
    return name


def test_valid_suite_passes_without_data(tmp_path: Path) -> None:
    _write(tmp_path, "suite.yaml", SUITE_YAML)
    done = run_cli("suite.yaml", "--model", "chatml", "--check", "--no-rows", "--strict",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout == ("2 dataset x model pairs, 3 prompts (default mode), checked, "
                           "nothing written\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["suite.yaml"]
    # without --no-rows the same check stops at the missing data
    done = run_cli("suite.yaml", "--model", "chatml", "--check", cwd=tmp_path)
    assert done.returncode == 1
    assert "no data at" in done.stderr


def test_show_prints_the_prompt_shape(tmp_path: Path) -> None:
    _write(tmp_path, "suite.yaml", SUITE_YAML)
    done = run_cli("suite.yaml", "--model", "chatml", "--check", "--no-rows", "--show", "1",
                   "--only", "qa", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:9] == [
        "=== qa x chatml (suite.yaml)", "--- [gen] row 0 ice_ids=[0, 2]",
        "Q: <question #0>↵", "A: <answer #0>↵", "↵", "Q: <question #2>↵", "A: <answer #2>↵",
        "↵", "Q: ⟦<question>⟧↵"]


@pytest.mark.parametrize("fmt", ["yaml", "py"])
def test_placeholder_not_in_reader_cfg(tmp_path: Path, fmt: str) -> None:
    if fmt == "yaml":
        name = _write(tmp_path, "suite.yaml", SUITE_YAML.replace(
            '"</E>Q: {question}\\nA:"', '"</E>Q: {questoin}\\nA:"'))
        key = "datasets[0].infer_cfg.prompt_template.template"
    else:
        name = _write(tmp_path, "suite.py", SUITE_PY.replace("Q: {question}", "Q: {questoin}"))
        key = "datasets[0].infer_cfg.prompt_template.template"
    done = run_cli(name, "--model", "chatml", "--check", "--no-rows", "--strict", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        f"{ERROR}{name}: dataset 'qa', model 'chatml', at {key}: placeholder {{questoin}} "
        "names no column, so it stays in the prompt verbatim; did you mean {question}?\n")
    done = run_cli(name, "--model", "chatml", "--check", "--no-rows", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stderr.splitlines()[0] == (
        f"{WARNING}{name}: dataset 'qa', at {key}: placeholder {{questoin}} names no column, "
        "so it stays in the prompt verbatim; did you mean {question}?")


def test_unknown_retriever_with_did_you_mean(tmp_path: Path) -> None:
    _write(tmp_path, "suite.yaml", SUITE_YAML.replace("{type: ZeroRetriever}",
                                                        "{type: ZeroRetrever}"))
    done = run_cli("suite.yaml", "--model", "chatml", "--check", "--no-rows", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith(
        f"{ERROR}suite.yaml: dataset 'yesno', model 'chatml', at datasets[1].infer_cfg."
        "retriever.type: unknown retriever 'ZeroRetrever'; available: ZeroRetriever,")
    assert "did you mean 'ZeroRetriever'" in done.stderr


def test_retriever_ids_checked_against_enough_rows(tmp_path: Path) -> None:
    # FixK without an ice_template: found without data, as with it
    _write(tmp_path, "suite.yaml", SUITE_YAML.replace(
        '      ice_template:\n        type: PromptTemplate\n        template: "Q: {question}'
        '\\nA: {answer}\\n"\n', ""))
    done = run_cli("suite.yaml", "--model", "chatml", "--check", "--no-rows", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"{ERROR}suite.yaml: dataset 'qa', model 'chatml', row 0, at datasets[0].infer_cfg: "
        "the retriever chose in-context examples but infer_cfg has no ice_template (hint: add "
        "an ice_template or use ZeroRetriever)")


def test_inline_rows_are_kept(tmp_path: Path) -> None:
    text = SUITE_YAML.split("  - abbr: yesno")[0].replace(
        "    path: ./data/gsm8k\n", "    rows: [{question: 'What is 1+1?', answr: '2'}]\n"
    ).replace("    type: GSM8KDataset\n", "")
    _write(tmp_path, "suite.yaml", text)
    done = run_cli("suite.yaml", "--model", "chatml", "--check", "--no-rows", "--strict",
                   cwd=tmp_path)
    assert done.returncode == 1
    # the columns are the inline rows' (answr), not reader_cfg's (answer)
    assert done.stderr.splitlines()[-1] == (
        f"{ERROR}suite.yaml: dataset 'qa', model 'chatml', at datasets[0].infer_cfg."
        "ice_template.template: placeholder {answer} names no column, so it stays in the "
        "prompt verbatim; did you mean {answr}?")


def test_no_rows_needs_check(tmp_path: Path) -> None:
    _write(tmp_path, "suite.yaml", SUITE_YAML)
    done = run_cli("suite.yaml", "--model", "chatml", "--no-rows", "-o", "out", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "compile-prompts: error: --no-rows checks without data: give --check too (nothing is "
        "written)")
    assert not (tmp_path / "out").exists()


def test_lint_no_rows(tmp_path: Path) -> None:
    _write(tmp_path, "suite.yaml", SUITE_YAML.replace(
        '"</E>Q: {question}\\nA:"', '"</E>Q: {question} {hint}\\nA:"'))
    done = run_cli("lint", "suite.yaml", "--model", "chatml", "--no-rows", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "suite.yaml: dataset 'qa', at datasets[0].infer_cfg.prompt_template.template: "
        "unknown-placeholder: placeholder {hint} names no column, so it stays in the prompt "
        "verbatim\n1 finding\n")


def test_274_real_opencompass_datasets_in_seconds(tmp_path: Path) -> None:
    given = os.environ.get("PC_OPENCOMPASS_PACKAGE")
    if not given:
        pytest.skip("set PC_OPENCOMPASS_PACKAGE to a folder holding OpenCompass 0.5.4")
    configs = Path(given) / "opencompass" / "configs"
    names = ["mmlu.mmlu_gen import mmlu", "cmmlu.cmmlu_gen import cmmlu",
             "ceval.ceval_gen import ceval", "bbh.bbh_gen import bbh",
             "agieval.agieval_gen import agieval", "mmlu_pro.mmlu_pro_gen import mmlu_pro",
             "gsm8k.gsm8k_gen import gsm8k", "math.math_gen import math",
             "humaneval.humaneval_gen import humaneval", "ARC_c.ARC_c_gen import ARC_c",
             "GaokaoBench.GaokaoBench_gen import GaokaoBench"]
    lines = [f"    from opencompass.configs.datasets.{n}_datasets" for n in names]
    _write(tmp_path, "eval_big.py", "from mmengine.config import read_base\n\n"
           "with read_base():\n" + "\n".join(lines) + "\n\ndatasets = sum((v for k, v in "
           "locals().items() if k.endswith('_datasets')), [])\n")
    start = time.monotonic()
    done = run_cli("eval_big.py", "--model", "chatml", "--opencompass-configs", configs,
                   "--check", "--no-rows", cwd=tmp_path)
    seconds = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("274 dataset x model pairs, 274 prompts (default mode), checked, "
                           "nothing written\n")
    assert seconds < 60  # about 4 s on a loaded 2-core machine
