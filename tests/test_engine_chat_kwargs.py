"""An engine line of chat messages carries the model's ``chat_template_kwargs``, so that
``LLM.chat`` or a chat completions server renders the turns as compiled (Qwen3's
``enable_thinking: false`` is not lost). Through the CLI, from YAML and Python configs, with
and without shards; expected lines written by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._cli import run_cli

DATASET = """
datasets:
  - abbr: qa
    rows: [{q: "What is 2+2?", a: "4"}]
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: {round: [{role: HUMAN, prompt: "{q}"}]}}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer, max_out_len: 16}
"""

YAML_MODEL = """
models:
  - abbr: qwen3
    type: VLLMwithChatTemplate
    path: Qwen/Qwen3-8B
    chat_template_kwargs: {enable_thinking: false}
"""

PY_MODEL = """
models = [dict(abbr='qwen3', type='VLLMwithChatTemplate', path='Qwen/Qwen3-8B',
               chat_template_kwargs=dict(enable_thinking=False))]
"""

MESSAGES = [{"role": "user", "content": "What is 2+2?\n"}]
VLLM = {"id": "qwen3/qa/0", "messages": MESSAGES, "add_generation_prompt": True,
        "continue_final_message": False, "chat_template_kwargs": {"enable_thinking": False},
        "sampling_params": {"max_tokens": 16}}
BATCH = {"custom_id": "qwen3/qa/0", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "Qwen/Qwen3-8B", "messages": MESSAGES,
                  "chat_template_kwargs": {"enable_thinking": False},
                  "max_completion_tokens": 16}}


def _suite(tmp_path: Path, kind: str) -> Path:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "qa.yaml").write_text(DATASET, encoding="utf-8")
    if kind == "yaml":
        (cfg / "models.yaml").write_text(YAML_MODEL, encoding="utf-8")
        return cfg / "models.yaml"
    (cfg / "models.py").write_text(PY_MODEL, encoding="utf-8")
    return cfg / "models.py"


def _lines(folder: Path) -> list[dict[str, object]]:
    files = sorted(p for p in folder.rglob("*.jsonl"))
    assert files, list(folder.rglob("*"))
    return [json.loads(line) for f in files for line in f.read_text("utf-8").splitlines()]


@pytest.mark.parametrize("kind", ["yaml", "py"])
@pytest.mark.parametrize("fmt,expected", [("vllm", VLLM), ("openai-batch", BATCH)])
@pytest.mark.parametrize("shards", [False, True])
def test_messages_lines_carry_the_chat_template_kwargs(tmp_path: Path, kind: str, fmt: str,
                                                         expected: dict[str, object],
                                                         shards: bool) -> None:
    models = _suite(tmp_path, kind)
    work = tmp_path / "elsewhere"
    work.mkdir()
    extra = ["--shard-rows", "10"] if shards else []
    done = run_cli(tmp_path / "cfg" / "qa.yaml", models, "-o", "out", "--format", fmt, *extra,
                   cwd=work)
    assert done.returncode == 0, done.stderr
    assert _lines(work / "out" / "qwen3") == [expected]


def test_a_model_without_kwargs_adds_nothing(tmp_path: Path) -> None:
    models = _suite(tmp_path, "yaml")
    models.write_text(YAML_MODEL.replace("    chat_template_kwargs: {enable_thinking: false}\n",
                                         ""), encoding="utf-8")
    done = run_cli(tmp_path / "cfg" / "qa.yaml", models, "-o", "out", "--format", "vllm",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    expected = {k: v for k, v in VLLM.items() if k != "chat_template_kwargs"}
    assert _lines(tmp_path / "out" / "qwen3") == [expected]
