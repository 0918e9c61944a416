"""Lint against chat-template models (library level: a suite whose model carries a chat
template): special tokens read from the chat template, and a system message it drops."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from prompt_compiler.config import ModelConfig
from prompt_compiler.inspection.lint import Finding, lint_suite
from prompt_compiler.run import suite as S
from tests._cli import run_cli

DATA = Path(__file__).resolve().parent / "data" / "lint"

# A chat template whose turns are "<|turn|>{role}\n{content}<|end|>" and which leaves system
# messages out.
DROPPING = ("{% for m in messages if m.role != 'system' %}<|turn|>{{ m.role }}\n{{ m.content }}"
            "<|end|>{% endfor %}{% if add_generation_prompt %}<|turn|>assistant\n{% endif %}")


def suite_with(model_spec: dict[str, object], only: str) -> list[Finding]:
    suite = S.load([DATA / "findings.yaml"])
    model = ModelConfig(str(model_spec["abbr"]), "inline", "models[0]", dict(model_spec))
    return lint_suite(dataclasses.replace(suite, models=(model,)), only=[only])


def test_special_tokens_come_from_the_chat_template(tmp_path: Path) -> None:
    found = suite_with({"abbr": "c", "parser": "hf_chat", "chat_template": DROPPING,
                        "meta_template": None}, "tokens")
    assert found == []  # '<|im_end|>' is not one of this template's tokens
    suite = S.load([DATA / "findings.yaml"])
    spec = {"abbr": "c", "parser": "hf_chat", "meta_template": None,
            "chat_template": DROPPING.replace("<|end|>", "<|im_end|>")}
    model = ModelConfig("c", "inline", "models[0]", spec)
    found = lint_suite(dataclasses.replace(suite, models=(model,)), only=["tokens"])
    assert [(f.code, f.model, f.row) for f in found] == [("special-token-in-data", "c", 1)]


def test_a_system_message_the_chat_template_drops() -> None:
    meta = {"round": [{"role": "HUMAN", "api_role": "HUMAN"},
                      {"role": "BOT", "api_role": "BOT", "generate": True}],
            "reserved_roles": [{"role": "SYSTEM", "api_role": "SYSTEM"}]}
    found = suite_with({"abbr": "c", "parser": "hf_chat", "chat_template": DROPPING,
                        "meta_template": meta}, "system")
    assert [(f.code, f.model) for f in found] == [("system-dropped", "c")]
    assert "template drops it" in found[0].message


def test_system_dropped_names_the_cause_for_a_chat_template_with_a_system_role(
        tmp_path: Path) -> None:
    """OpenCompass's chat meta template maps SYSTEM to HUMAN: the template has a system role,
    the lint says so (not "it has no system role"); through the CLI."""
    (tmp_path / "suite.yaml").write_text("""\
datasets:
  - abbr: qa
    rows: [{question: "2+2?", answer: "4"}]
    reader_cfg: {input_columns: [question], output_column: answer}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template:
          begin: [{role: SYSTEM, fallback_role: HUMAN, prompt: "Be brief."}]
          round: [{role: HUMAN, prompt: "{question}"}]
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
models:
  - abbr: m
    type: HuggingFacewithChatTemplate
    chat_template: "{% for m in messages %}<|im_start|>{{ m.role }}\\n{{ m.content }}\\
      <|im_end|>\\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\\n\\
      {% endif %}"
""", encoding="utf-8")
    proc = run_cli("lint", "suite.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ("system-dropped: the prompt has a system message and this model's template merges "
            "it into a user turn (OpenCompass's meta template maps SYSTEM to HUMAN, though its "
            "chat template has one: system_role: native sends it as a system message); set the "
            "model's system_role to say what you want") in proc.stdout, proc.stdout
    assert "it has no system role" not in proc.stdout
