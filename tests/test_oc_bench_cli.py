"""BigCodeBench's rows read natively from OpenCompass's data folder, through the CLI.

The config is OpenCompass's own ``bigcodebench_hard_instruct`` set (Python, with
``from opencompass.datasets import BigCodeBenchDataset``) and the same in YAML; ``compile-prompts``
runs as a subprocess from the folder holding ``data/bigcodebench/`` and from another folder with
``COMPASS_DATA_CACHE``. Expected prompts are written by hand.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from test_oc_data_cli import prompts, run, user_layout

BIGCODEBENCH_PY = """\
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.datasets import BigCodeBenchDataset, BigCodeBenchEvaluator

datasets = [
    dict(
        abbr='bigcodebench_hard_instruct',
        type=BigCodeBenchDataset,
        path='opencompass/bigcodebench',
        reader_cfg=dict(input_columns=['instruct_prompt'], output_column='test'),
        infer_cfg=dict(
            prompt_template=dict(
                type=PromptTemplate,
                template=dict(
                    begin=[dict(role='system', fallback_role='HUMAN', prompt='')],
                    round=[dict(role='HUMAN', prompt='{instruct_prompt}')])),
            retriever=dict(type=ZeroRetriever),
            inferencer=dict(type=GenInferencer, max_out_len=8192)),
        eval_cfg=dict(evaluator=dict(type=BigCodeBenchEvaluator, release_version='v0.1.2',
                                     eval_type='instruct', dataset_version='hard'),
                      pred_role='BOT'),
        release_version='v0.1.2',
        dataset_version='hard',
    )
]
"""

BIGCODEBENCH_YAML = """\
datasets:
  - abbr: bigcodebench_full_complete
    type: BigCodeBenchDataset
    path: opencompass/bigcodebench
    release_version: v0.1.2
    reader_cfg: {input_columns: [complete_prompt], output_column: test}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "{complete_prompt}"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
"""

DATA = {
    "data/bigcodebench/BigCodeBench-Hard-v0.1.2.jsonl":
        '{"task_id": "BigCodeBench/13", "instruct_prompt": "Write a function.\\n{x} stays", '
        '"complete_prompt": "def f():\\n", "test": "assert 1", "libs": ["os"]}\n'
        "\n"
        '{"task_id": "BigCodeBench/15", "instruct_prompt": "Second \\u2713", '
        '"complete_prompt": "", "test": "", "libs": []}\n',
    "data/bigcodebench/BigCodeBench-v0.1.2.jsonl":
        '{"task_id": "BigCodeBench/0", "complete_prompt": "import os\\r\\ndef task_func():\\n", '
        '"instruct_prompt": "x", "test": "t", "libs": "[\'os\']"}\n',
}

EXPECTED = {  # dataset -> the prompts, written by hand
    # the echo model's tags; role 'system' is not one of its roles: its fallback HUMAN, empty
    "bigcodebench_hard_instruct": [
        "<BEGIN><HUMAN></HUMAN>\n<HUMAN>Write a function.\n{x} stays</HUMAN>\n<BOT>",
        "<BEGIN><HUMAN></HUMAN>\n<HUMAN>Second \u2713</HUMAN>\n<BOT>"],
    "bigcodebench_full_complete": ["import os\r\ndef task_func():\n"],
}


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    return user_layout(tmp_path, DATA, {"bigcodebench_hard_instruct.py": BIGCODEBENCH_PY,
                                        "bigcodebench.yaml": BIGCODEBENCH_YAML})


@pytest.mark.parametrize(("config", "abbr", "read"), [
    ("bigcodebench_hard_instruct.py", "bigcodebench_hard_instruct",
     "data/bigcodebench/BigCodeBench-Hard-v0.1.2.jsonl"),
    ("bigcodebench.yaml", "bigcodebench_full_complete",
     "data/bigcodebench/BigCodeBench-v0.1.2.jsonl"),
])
@pytest.mark.parametrize("where", ["work", "elsewhere"])
def test_bigcodebench_rows_through_the_cli(layout: Path, config: str, abbr: str, read: str,
                                           where: str) -> None:
    env = {"HOME": str(layout / "home")}
    if where == "elsewhere":
        env["COMPASS_DATA_CACHE"] = str(layout / "work")
    out = layout / "out"
    done = run(layout / "configs" / config, "--model", "echo", "-o", out, cwd=layout / where,
               **env)
    assert done.returncode == 0, done.stderr
    assert prompts(out) == {abbr: EXPECTED[abbr]}
    manifest = json.loads((out / "manifest.json").read_text())
    inputs = {Path(i["path"]).name: i["sha256"] for i in manifest["inputs"]
              if "data" in Path(i["path"]).parts}
    data = (layout / "work" / read).read_bytes()
    assert inputs == {Path(read).name: hashlib.sha256(data).hexdigest()}


def test_bigcodebench_unknown_version_is_one_line(layout: Path) -> None:
    config = layout / "configs" / "bigcodebench.yaml"
    config.write_text(BIGCODEBENCH_YAML.replace("release_version: v0.1.2",
                                                "dataset_version: instruct"))
    done = run(config, "--model", "echo", "-o", layout / "out", cwd=layout / "work",
               HOME=str(layout / "home"))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"compile-prompts: error: {config}: dataset 'bigcodebench_full_complete', model "
        "'echo', at datasets[0]: BigCodeBenchDataset: dataset_version must be 'full' or "
        "'hard', got 'instruct' (OpenCompass's loader asserts it)"]
