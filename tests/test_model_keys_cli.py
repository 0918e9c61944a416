"""Every model key of the README's table, written in a config file (Python and YAML), run
through the CLI in a subprocess from another working directory. Expected prompts are
written by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

DATASET_YAML = """\
datasets:
  - abbr: qa
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      ice_template:
        type: PromptTemplate
        template:
          round:
            - {role: HUMAN, prompt: "Q: {q}"}
            - {role: BOT, prompt: "{a}"}
      prompt_template:
        type: PromptTemplate
        ice_token: "</E>"
        template:
          begin: "</E>"
          round:
            - {role: HUMAN, prompt: "Q: {q}"}
            - {role: BOT, prompt: "{a}"}
      retriever: {type: FixKRetriever, fix_id_list: [0]}
      inferencer: {type: GenInferencer}
    splits:
      train: [{q: "1+1?", a: "2"}]
      test: [{q: "2+2?", a: "4"}]
"""

CHATML_SHOT = ("<|im_start|>user\nQ: 1+1?<|im_end|>\n<|im_start|>assistant\n2<|im_end|>\n"
               "<|im_start|>user\nQ: 2+2?<|im_end|>\n<|im_start|>assistant\n")
CHATML_ZERO = "<|im_start|>user\nQ: 2+2?<|im_end|>\n<|im_start|>assistant\n"
OPENAI_SHOT = [{"role": "user", "content": "Q: 1+1?"}, {"role": "assistant", "content": "2"},
               {"role": "user", "content": "Q: 2+2?"}]


def cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env, "NO_COLOR": "1"})


def compile_models(tmp_path: Path, name: str, text: str, dataset: str = DATASET_YAML
                   ) -> dict[str, Any]:
    """Compile qa x the models of ``text`` (file ``name``) from another cwd: model -> record."""
    cfg = tmp_path / "cfg"
    cfg.mkdir(exist_ok=True)
    (cfg / "qa.yaml").write_text(dataset, encoding="utf-8")
    (cfg / name).write_text(text, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    proc = cli([str(cfg / "qa.yaml"), str(cfg / name), "-o", "out"], elsewhere)
    assert proc.returncode == 0, proc.stderr
    out = {}
    for file in sorted((elsewhere / "out").glob("*/qa.jsonl")):
        (line,) = file.read_text(encoding="utf-8").splitlines()
        out[file.parent.name] = json.loads(line)
    return out


def error_of(tmp_path: Path, name: str, text: str) -> str:
    cfg = tmp_path / "cfg"
    cfg.mkdir(exist_ok=True)
    (cfg / "qa.yaml").write_text(DATASET_YAML, encoding="utf-8")
    (cfg / name).write_text(text, encoding="utf-8")
    proc = cli([str(cfg / "qa.yaml"), str(cfg / name), "--check"], tmp_path)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("compile-prompts: error: "), proc.stderr
    return lines[0]


PY_MODELS = """\
from opencompass.models import HuggingFaceCausalLM, OpenAISDK, HuggingFacewithChatTemplate

models = [
    dict(abbr='by-name', meta_template='chatml'),
    dict(abbr='inline', renderer='lm', meta_template=dict(round=[
        dict(role='HUMAN', begin='[U]', end='\\n'),
        dict(role='BOT', begin='[A]', end='\\n', generate=True)])),
    dict(abbr='plain-lm', type=HuggingFaceCausalLM, meta_template=None),
    dict(abbr='sdk', type=OpenAISDK, meta_template=dict(round=[
        dict(role='HUMAN', api_role='HUMAN'), dict(role='BOT', api_role='BOT', generate=True)])),
    dict(abbr='hfchat', type=HuggingFacewithChatTemplate),
    dict(abbr='short', meta_template='chatml', max_seq_len=6, tokenizer='whitespace'),
]
"""

YAML_MODELS = """\
models:
  - {abbr: by-name, meta_template: chatml}
  - abbr: inline
    parser: lm
    meta_template:
      round:
        - {role: HUMAN, begin: "[U]", end: "\\n"}
        - {role: BOT, begin: "[A]", end: "\\n", generate: true}
  - {abbr: plain-lm, type: HuggingFaceCausalLM, meta_template: null}
  - abbr: sdk
    type: opencompass.models.OpenAISDK
    meta_template:
      round: [{role: HUMAN, api_role: HUMAN}, {role: BOT, api_role: BOT, generate: true}]
  - {abbr: hfchat, type: HuggingFacewithChatTemplate}
  - {abbr: short, meta_template: chatml, max_seq_len: 6, tokenizer: whitespace}
"""


@pytest.mark.parametrize(("name", "text"), [("models.py", PY_MODELS), ("models.yaml", YAML_MODELS)])
def test_core_model_keys_from_files(tmp_path: Path, name: str, text: str) -> None:
    got = {abbr: rec["prompt"] for abbr, rec in compile_models(tmp_path, name, text).items()}
    assert got == {
        "by-name": CHATML_SHOT,
        "inline": "[U]Q: 1+1?\n[A]2\n[U]Q: 2+2?\n[A]",
        # no meta template: OpenCompass joins the prompts with '\n' (empty ones skipped)
        "plain-lm": "Q: 1+1?\n2\nQ: 2+2?",
        "sdk": OPENAI_SHOT,
        "hfchat": [{"role": "user", "content": "Q: 1+1?\n"}, {"role": "assistant", "content": "2"},
                   {"role": "user", "content": "Q: 2+2?\n"}],
        # 'Q: 2+2?' plus chatml tokens is 5 words with the shot dropped, 9 with it
        "short": CHATML_ZERO,
    }


def test_chat_template_file_and_template_kwargs(tmp_path: Path) -> None:
    tpl = tmp_path / "cfg" / "templates" / "tiny.jinja"
    tpl.parent.mkdir(parents=True)
    tpl.write_text(
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
        "{% if enable_thinking is defined and not enable_thinking %}<no-think>{% endif %}",
        encoding="utf-8")
    got = compile_models(tmp_path, "m.yaml", """\
models:
  - abbr: tiny
    type: HuggingFacewithChatTemplate
    chat_template: templates/tiny.jinja
    template_kwargs: {enable_thinking: false}
""")
    assert got["tiny"]["prompt"] == ("<user>Q: 1+1?\n</user><assistant>2</assistant>"
                                     "<user>Q: 2+2?\n</user><assistant><no-think>")


def test_chat_template_text_in_a_python_config(tmp_path: Path) -> None:
    got = compile_models(tmp_path, "m.py", """\
models = [dict(abbr='t', parser='hf_chat',
               chat_template="{% for m in messages %}{{ m.role }}: {{ m.content }}|{% endfor %}")]
""")
    assert got["t"]["prompt"] == "user: Q: 1+1?\n|assistant: 2|user: Q: 2+2?\n|"


def test_api_format_from_a_file(tmp_path: Path) -> None:
    got = compile_models(tmp_path, "m.py", """\
models = [dict(abbr='oa', parser='api', api_format='openai', meta_template='openai-api')]
""")
    # AgentScope's OpenAI formatter names each message after its speaker
    assert got["oa"]["prompt"] == [{"role": "user", "name": "user", "content": "Q: 1+1?"},
                                   {"role": "assistant", "name": "assistant", "content": "2"},
                                   {"role": "user", "name": "user", "content": "Q: 2+2?"}]


def test_prompter_from_a_file(tmp_path: Path) -> None:
    got = compile_models(tmp_path, "m.yaml", """\
models:
  - abbr: alpaca
    parser: hf_chat
    prompter: {type: AlpacaPrompter, instruction: "Solve: {input}"}
""", DATASET_YAML.replace("FixKRetriever, fix_id_list: [0]", "ZeroRetriever"))
    prompt = got["alpaca"]["prompt"]
    assert prompt.startswith("You are an AI-Agent developed by LazyLLM.\nBelow is an instruction")
    assert "### Instruction:\nSolve: Q: 2+2?\n" in prompt and prompt.endswith("### Response:\n")


def test_gold_is_in_every_record(tmp_path: Path) -> None:
    got = compile_models(tmp_path, "m.yaml", "models: [{abbr: m, meta_template: chatml}]\n")
    assert got["m"]["gold"] == "4"


@pytest.mark.parametrize(("text", "expected"), [
    ("models: [{abbr: m, parser: api, api_format: no-such-format}]\n",
     "m.yaml: model 'm', at models[0].api_format: unknown message format 'no-such-format'"),
    ("models: [{abbr: m, parser: hf_chat, prompter: {type: NoPrompter}}]\n",
     "m.yaml: model 'm', at models[0].prompter.type: unknown prompter 'NoPrompter'"),
    ("models: [{abbr: m, meta_template: chatml, tokenizer: no-such-tokenizer}]\n",
     "m.yaml: model 'm', at models[0].tokenizer: tokenizer 'no-such-tokenizer'"),
    ("models: [{abbr: m, parser: hf_chat, chat_template: missing.jinja}]\n",
     "m.yaml: model 'm', at models[0].chat_template: chat template file 'missing.jinja' does "
     "not exist"),
    ("models: [{abbr: m, meta_template: no-such-template}]\n",
     "m.yaml: model 'm', at models[0].meta_template: unknown"),
    ("models: [{abbr: m, meta_template: chatml, max_seq_len: many}]\n",
     "m.yaml: model 'm', at models[0].max_seq_len: 'max_seq_len' must be an integer"),
    ("models: [{abbr: m, type: NoSuchModelClass}]\n",
     "m.yaml: model 'm', at models[0].type: unknown model class 'NoSuchModelClass'"),
    ("models: [{abbr: m, parser: hf_chat, template_kwargs: [1]}]\n",
     "m.yaml: model 'm', at models[0].template_kwargs: template_kwargs must be a dict"),
])
def test_bad_model_keys_name_the_file_and_key_path(tmp_path: Path, text: str,
                                                   expected: str) -> None:
    line = error_of(tmp_path, "m.yaml", text)
    assert str(tmp_path / "cfg" / "m.yaml") + ": " + expected.split(": ", 1)[1] in line \
        or expected in line, line


# `renderer` is the package's name for a model's rendering path; `parser` (OpenCompass's
# word, and the conformance cases') is read as the same key (issue 19).
API_INLINE = "[{role: HUMAN, api_role: HUMAN}, {role: BOT, api_role: BOT, generate: true}]"


@pytest.mark.parametrize("name", ["models.yaml", "models.py"])
def test_renderer_and_parser_are_one_key(tmp_path: Path, name: str) -> None:
    if name == "models.yaml":
        text = (f"models:\n  - {{abbr: by-renderer, renderer: api, meta_template: {{round: "
                f"{API_INLINE}}}}}\n  - {{abbr: by-parser, parser: api, meta_template: "
                f"{{round: {API_INLINE}}}}}\n")
    else:
        meta = ("dict(round=[dict(role='HUMAN', api_role='HUMAN'), "
                "dict(role='BOT', api_role='BOT', generate=True)])")
        text = (f"models = [dict(abbr='by-renderer', renderer='api', meta_template={meta}),\n"
                f"          dict(abbr='by-parser', parser='api', meta_template={meta})]\n")
    got = compile_models(tmp_path, name, text)
    assert got["by-renderer"]["prompt"] == OPENAI_SHOT
    assert got["by-parser"]["prompt"] == OPENAI_SHOT
    assert {k: v for k, v in got["by-renderer"].items() if k != "model"} == \
        {k: v for k, v in got["by-parser"].items() if k != "model"}


@pytest.mark.parametrize(("text", "expected"), [
    ("models: [{abbr: m, renderer: vllm}]\n", "at models[0].renderer: "),
    ("models: [{abbr: m, parser: vllm}]\n", "at models[0].parser: "),
    ("models: [{abbr: m, renderer: lm, parser: api}]\n",
     "at models[0].parser: renderer 'lm' and parser 'api' differ"),
])
def test_a_bad_renderer_names_the_key_written(tmp_path: Path, text: str, expected: str) -> None:
    line = error_of(tmp_path, "m.yaml", text)
    assert expected in line, line
