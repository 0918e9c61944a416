"""An engine line of chat messages carries the model's ``chat_template_kwargs``, so that
``LLM.chat`` or a chat completions server renders the turns as compiled (Qwen3's
``enable_thinking: false`` is not lost), and its pinned ``date`` as ``date_string`` (Llama
3.x templates print it instead of the engine's clock). Through the CLI, from YAML and Python
configs, with and without shards; expected lines written by hand, and a line's rendering by
transformers compared with the record the same model compiles from a local template."""

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
        "continue_final_message": False,
        "chat_template_kwargs": {"date_string": "26 Jul 2024", "enable_thinking": False},
        "sampling_params": {"max_tokens": 16}}
BATCH = {"custom_id": "qwen3/qa/0", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "Qwen/Qwen3-8B", "messages": MESSAGES,
                  "chat_template_kwargs": {"date_string": "26 Jul 2024",
                                           "enable_thinking": False},
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


def test_a_model_without_kwargs_carries_the_default_date(tmp_path: Path) -> None:
    models = _suite(tmp_path, "yaml")
    models.write_text(YAML_MODEL.replace("    chat_template_kwargs: {enable_thinking: false}\n",
                                         ""), encoding="utf-8")
    done = run_cli(tmp_path / "cfg" / "qa.yaml", models, "-o", "out", "--format", "vllm",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    expected = {**VLLM, "chat_template_kwargs": {"date_string": "26 Jul 2024"}}
    assert _lines(tmp_path / "out" / "qwen3") == [expected]


DATED = Path(__file__).resolve().parent / "data" / "chat_templates" / "dated.jinja"


@pytest.mark.parametrize(("date", "kwargs"), [
    ("2025-01-05", {"date_string": "05 Jan 2025"}),
    ("2025-01-05T09:30", {"date_string": "05 Jan 2025"}),
    ("today", None),  # the engine's clock, as the compiled records' template
])
@pytest.mark.parametrize("fmt", ["vllm", "openai-batch"])
def test_a_pinned_date_is_carried_as_date_string(tmp_path: Path, date: str,
                                                 kwargs: dict[str, str] | None,
                                                 fmt: str) -> None:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "qa.yaml").write_text(DATASET, encoding="utf-8")
    (cfg / "models.py").write_text(
        f"models = [dict(abbr='llama', type='VLLMwithChatTemplate', "
        f"path='meta-llama/Llama-3.2-1B-Instruct', date={date!r})]\n", encoding="utf-8")
    done = run_cli(cfg / "qa.yaml", cfg / "models.py", "-o", "out", "--format", fmt,
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (line,) = _lines(tmp_path / "out" / "llama")
    body = line["body"] if fmt == "openai-batch" else line
    assert body.get("chat_template_kwargs") == kwargs


def test_a_dated_messages_line_renders_as_the_compiled_record(tmp_path: Path) -> None:
    """The line of a model whose template is not at hand, rendered by transformers with that
    template and the line's keywords, is the text the same model compiles from the template."""
    from transformers.utils.chat_template_utils import render_jinja_template

    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "qa.yaml").write_text(DATASET, encoding="utf-8")
    (cfg / "models.yaml").write_text(f"""
models:
  - {{abbr: remote, type: VLLMwithChatTemplate, path: meta-llama/Llama-3.2-1B-Instruct,
     date: 2025-01-05}}
  - {{abbr: local, type: VLLMwithChatTemplate, path: meta-llama/Llama-3.2-1B-Instruct,
     date: 2025-01-05, chat_template: {DATED}}}
""", encoding="utf-8")
    done = run_cli(cfg / "qa.yaml", cfg / "models.yaml", "-o", "out", "--format", "vllm",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (line,) = _lines(tmp_path / "out" / "remote")
    (compiled,) = _lines(tmp_path / "out" / "local")
    rendered, _ = render_jinja_template(
        [line["messages"]], chat_template=DATED.read_text(encoding="utf-8"),
        add_generation_prompt=line["add_generation_prompt"], bos_token="",
        **line["chat_template_kwargs"])
    assert rendered == [compiled["prompt"]]
    assert "Today Date: 05 Jan 2025" in compiled["prompt"]
