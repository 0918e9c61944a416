"""The requests OpenCompass 0.5.4's ClaudeSDK, GeminiSDK and LiteLLMAPI build from a prompt.

Expected values are written by hand from the classes' code (claude_sdk_api.py,
gemini_sdk_api.py, litellm_api.py) and were checked by running those classes with their
network call replaced.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import prompt_compiler as pc
from prompt_compiler.model.api_requests import (
    claude_request,
    gemini_request,
    litellm_messages,
)
from tests._cli import run_cli

TWO_SYSTEMS = [{"role": "SYSTEM", "prompt": "Be brief."}, {"role": "HUMAN", "prompt": "Q1"},
               {"role": "BOT", "prompt": "A1"}, {"role": "SYSTEM", "prompt": "Again."},
               {"role": "HUMAN", "prompt": "Q2"}]


def test_claude_system_items_are_the_top_level_system_text() -> None:
    assert claude_request(TWO_SYSTEMS) == {
        "messages": [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
                     {"role": "user", "content": "Q2"}],
        "system": "Be brief.\nAgain.",
    }
    assert claude_request("plain") == {"messages": [{"role": "user", "content": "plain"}]}
    raw = [{"role": "system", "content": "raw system"}, {"role": "user", "content": "u"},
           {"role": "assistant", "content": "a"}]
    assert claude_request(raw) == {"messages": [{"role": "user", "content": "u"},
                                                {"role": "assistant", "content": "a"}],
                                   "system": "raw system"}


def test_gemini_contents_hold_text_parts_and_the_system_instruction_apart() -> None:
    assert gemini_request(TWO_SYSTEMS) == {
        "contents": [{"role": "user", "parts": [{"text": "Q1"}]},
                     {"role": "model", "parts": [{"text": "A1"}]},
                     {"role": "user", "parts": [{"text": "Q2"}]}],
        "system_instruction": "Be brief.\nAgain.",
    }
    assert gemini_request([{"role": "assistant", "content": "a"}]) == {
        "contents": [{"role": "model", "parts": [{"text": "a"}]}]}


def test_claude_and_gemini_refuse_what_their_classes_refuse() -> None:
    with pytest.raises(pc.RenderError) as info:
        claude_request(["begin text", {"role": "HUMAN", "prompt": "x"}])
    assert info.value.reference == ("TypeError", "Prompt item must be a dict, got <class 'str'>")
    with pytest.raises(pc.UnknownRoleError) as role:
        gemini_request([{"role": "FOO", "prompt": "x"}])
    assert role.value.reference == ("ValueError", "Unsupported role: FOO")


def test_litellm_messages_and_system_prompt() -> None:
    # a system message already there: system_prompt is not added; later systems stay put
    assert litellm_messages(TWO_SYSTEMS, {"system_prompt": "Be concise."}) == [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1"}, {"role": "system", "content": "Again."},
        {"role": "user", "content": "Q2"}]
    # none there: it comes first; a bare string and an unknown role are user messages
    assert litellm_messages([{"role": "HUMAN", "prompt": "Q1"}, "begin",
                             {"role": "X", "prompt": "y"}], {"system_prompt": "Be concise."}) == [
        {"role": "system", "content": "Be concise."}, {"role": "user", "content": "Q1"},
        {"role": "user", "content": "begin"}, {"role": "user", "content": "y"}]
    assert litellm_messages("hi", {}) == [{"role": "user", "content": "hi"}]


CONFIG = """\
from opencompass.models import ClaudeSDK, GeminiSDK, LiteLLMAPI
api_meta = dict(round=[dict(role='HUMAN', api_role='HUMAN'),
                       dict(role='BOT', api_role='BOT', generate=True)],
                reserved_roles=[dict(role='SYSTEM', api_role='SYSTEM')])
models = [
    dict(abbr='claude', type=ClaudeSDK, path='claude-x', key='k', meta_template=api_meta),
    dict(abbr='gemini', type=GeminiSDK, path='gemini-x', key='k', meta_template=api_meta),
    dict(abbr='lite', type=LiteLLMAPI, path='openai/gpt-4o', system_prompt='Be concise.',
         meta_template=api_meta),
    dict(abbr='lite-nometa', type=LiteLLMAPI, path='openai/gpt-4o', system_prompt='Be concise.'),
]
datasets = [dict(abbr='d', reader_cfg=dict(input_columns=['q']), infer_cfg=dict(
    prompt_template=dict(type='PromptTemplate', template=dict(
        begin=[dict(role='SYSTEM', fallback_role='HUMAN', prompt='Be brief.')],
        round=[dict(role='HUMAN', prompt='{q}'), dict(role='BOT', prompt='')])),
    retriever=dict(type='ZeroRetriever'), inferencer=dict(type='GenInferencer')),
    rows=[dict(q='Hi?')])]
"""


@pytest.mark.parametrize("mode", ["compat", "default"])
def test_cli_records_hold_each_class_request(tmp_path: Path, mode: str) -> None:
    (tmp_path / "m.py").write_text(CONFIG, encoding="utf-8")
    proc = run_cli("m.py", "-o", "out", "--strict", "--mode", mode, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr

    def prompt(abbr: str) -> object:
        line = (tmp_path / "out" / abbr / "d.jsonl").read_text(encoding="utf-8")
        return json.loads(line)["prompt"]

    assert prompt("claude") == {"messages": [{"role": "user", "content": "Hi?"}],
                                "system": "Be brief."}
    assert prompt("gemini") == {"contents": [{"role": "user", "parts": [{"text": "Hi?"}]}],
                                "system_instruction": "Be brief."}
    assert prompt("lite") == [{"role": "system", "content": "Be brief."},
                              {"role": "user", "content": "Hi?"}]
    # no meta template: the items joined into one string, one user message after system_prompt
    assert prompt("lite-nometa") == [{"role": "system", "content": "Be concise."},
                                     {"role": "user", "content": "Be brief.\nHi?"}]
    # the keys in the order OpenCompass's request holds them
    line = (tmp_path / "out" / "claude" / "d.jsonl").read_text(encoding="utf-8")
    assert '"prompt": {"messages": [{"role": "user", "content": "Hi?"}], "system": "Be brief."}' \
        in line


def test_yaml_config_and_a_begin_string_claude_cannot_send(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("""\
models:
  - abbr: claude
    type: ClaudeSDK
    path: claude-x
    meta_template:
      begin: 'Intro '
      round:
        - {role: HUMAN, api_role: HUMAN}
        - {role: BOT, api_role: BOT, generate: true}
datasets:
  - abbr: d
    reader_cfg: {input_columns: [q]}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: {round: [{role: HUMAN, prompt: '{q}'}]}}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
    rows: [{q: 'Hi?'}]
""", encoding="utf-8")
    proc = run_cli("c.yaml", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "ClaudeSDK takes messages only" in proc.stderr and "'claude'" in proc.stderr


def test_litellm_system_prompt_must_be_text(tmp_path: Path) -> None:
    with pytest.raises(pc.ConfigError, match="system_prompt must be a string"):
        pc.Model.from_dict({"abbr": "l", "renderer": "api", "type": "LiteLLMAPI",
                            "system_prompt": 3})


def test_show_prints_a_request_field_by_field(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(CONFIG, encoding="utf-8")
    proc = run_cli("m.py", "--show", "1", "--models", "claude", "--models", "gemini",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "[user] Hi?␃\n[system] Be brief.␃\n" in proc.stdout
    assert "[user] Hi?␃\n[system_instruction] Be brief.␃\n" in proc.stdout


def test_yaml_litellm_system_prompt(tmp_path: Path) -> None:
    (tmp_path / "l.yaml").write_text("""\
models:
  - {abbr: lite, type: LiteLLMAPI, path: openai/gpt-4o, system_prompt: 'Be concise.'}
datasets:
  - abbr: d
    reader_cfg: {input_columns: [q]}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: 'Q: {q}'}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
    rows: [{q: 'Hi?'}]
""", encoding="utf-8")
    proc = run_cli("l.yaml", "-o", "out", "--mode", "compat", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "out" / "lite" / "d.jsonl").read_text(encoding="utf-8"))
    assert record["prompt"] == [{"role": "system", "content": "Be concise."},
                                {"role": "user", "content": "Q: Hi?"}]
