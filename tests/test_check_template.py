"""``compile-prompts check-template``: every built-in meta template against a chat template of its
family (written for these tests from the published format, tests/data/chat_templates/), and a
deliberately wrong template that must be caught at the first differing byte.

Where a built-in template follows OpenCompass rather than the model's own chat format, the
differing probes are listed here with the reason (the template file's comment says the same).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from prompt_compiler.cli import main
from prompt_compiler.model.meta_library import list_model_templates

REPO = Path(__file__).resolve().parents[1]
CHAT = REPO / "tests" / "data" / "chat_templates"

ALL = frozenset(f"{p}/{g}" for p in ("user", "system-user", "multi-turn", "few-shot")
                for g in ("gen", "nogen"))
NO_SYSTEM = frozenset({"user/gen", "user/nogen", "multi-turn/gen", "multi-turn/nogen",
                       "few-shot/gen", "few-shot/nogen"})
GEN = frozenset(p for p in ALL if p.endswith("/gen"))
NOGEN = ALL - GEN
ROUNDS = frozenset({"multi-turn/gen", "multi-turn/nogen", "few-shot/gen", "few-shot/nogen"})

# template -> (chat template, probes that differ, why); probes the chat template itself
# rejects (a system message for a model without a system role) are "rejected", not "differ".
PAIRS: dict[str, tuple[str, frozenset[str], str]] = {
    "baichuan2-chat": ("baichuan2.jinja", frozenset(), ""),
    "chatglm2": ("chatglm2.jinja", ROUNDS, "every round says [Round 1] (no counter)"),
    "chatglm3": ("chatglm3.jinja", GEN, "generation prompt '<|assistant|>\\n' (native: no \\n)"),
    "chatml": ("chatml.jinja", frozenset(), ""),
    "deepseek-chat": ("deepseek-v3.jinja", frozenset(), ""),
    "deepseek-llm-chat": ("deepseek-llm.jinja", GEN, "OpenCompass's 'Assistant: ' vs 'Assistant:'"),
    "echo": ("echo.jinja", frozenset(), ""),
    "gemma": ("gemma.jinja", frozenset(), ""),
    "glm-4": ("glm-4.jinja", ALL, "'[gMASK]<sop>' left to the tokenizer; generation prompt \\n"),
    "hf-chat-default": ("chatml.jinja", ALL,
                        "OpenCompass's SYSTEM-as-HUMAN slot appends \\n to user messages"),
    "internlm-chat": ("internlm.jinja", frozenset(), ""),
    "internlm2-chat": ("internlm2.jinja", frozenset(), ""),
    "internlm2-chat-with-system": ("internlm2.jinja", ALL,
                                   "OpenCompass's SYSTEM slot: an empty system turn per round"),
    "llama-2-chat": ("llama-2", ALL,
                     "OpenCompass's ' [INST] ' rounds; <<SYS>> and </s><s> unexpressed"),
    "llama-3-instruct": ("llama-3.jinja", frozenset(), ""),
    "mistral-instruct": ("mistral-v0.1", frozenset(), ""),
    "openai-api": ("chatml.jinja", frozenset(), ""),
    "phi-3": ("phi-3", NOGEN, "the chat template ends a finished conversation with <|endoftext|>"),
    "qwen-chat": ("qwen-v1.jinja", NO_SYSTEM, "make_context's default system turn"),
    "qwen1.5-chat": ("qwen1.5.jinja", NO_SYSTEM, "the chat template's default system turn"),
    # the default system turn gives way to the prompt's own, as in the chat template (D24)
    "qwen2.5-instruct": ("qwen2.5.jinja", frozenset(), ""),
    "qwen3": ("qwen3.jinja", NOGEN, "a final reply carries an empty <think> block"),
    "yi-chat": ("chatml.jinja", frozenset(), ""),
}
REJECTED = {  # the chat template raises: the model has no system role
    "chatglm2": frozenset({"system-user/gen", "system-user/nogen"}),
    "gemma": frozenset({"system-user/gen", "system-user/nogen"}),
    "mistral-instruct": frozenset({"system-user/gen", "system-user/nogen"}),
}


def test_every_builtin_template_has_a_chat_template() -> None:
    assert set(PAIRS) == {t.name for t in list_model_templates()}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_builtin_template_against_its_family(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    chat, expected, _why = PAIRS[name]
    code = main(["check-template", name, "--chat-template", str(CHAT / chat), "--json"])
    results = json.loads(capsys.readouterr().out)
    status = {f"{r['probe']}/{'gen' if r['generation_prompt'] else 'nogen'}": r["status"]
              for r in results}
    assert set(status) == ALL
    assert {p for p, s in status.items() if s == "differ"} == expected
    assert {p for p, s in status.items() if s == "rejected"} == REJECTED.get(name, frozenset())
    assert code == (1 if expected else 0)


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_agreement_exits_0_with_one_line_per_probe(tmp_path: Path) -> None:
    proc = cli("check-template", "chatml", "--chat-template", str(CHAT / "chatml.jinja"),
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "".join(
        f"{p}, {w} generation prompt: identical\n"
        for p in ("user", "system-user", "multi-turn", "few-shot") for w in ("with", "without")
    ) + "8 probes: 8 agree, 0 differ\n"


def test_a_wrong_template_is_caught_at_the_first_differing_byte(tmp_path: Path) -> None:
    # ChatML with one stray newline after each user turn.
    (tmp_path / "wrong.jinja").write_text(
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
        "{% if m.role == 'user' %}{{ '\\n' }}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}", encoding="utf-8")
    proc = cli("check-template", "chatml", "--chat-template", "wrong.jinja", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    # "<|im_start|>user\nHello!<|im_end|>\n" is 34 characters; then "<" vs "\n".
    assert lines[:3] == [
        "user, with generation prompt: differ at character 34 (byte 34)",
        "  meta template: 'er\\nHello!<|im_end|>\\n<|im_start|>assistant\\n'",
        "  chat template: 'er\\nHello!<|im_end|>\\n\\n<|im_start|>assistant\\n'",
    ]
    assert lines[-1] == "8 probes: 0 agree, 8 differ"
    proc = cli("check-template", "chatml", "--chat-template", "wrong.jinja", "--json", cwd=tmp_path)
    first = json.loads(proc.stdout)[0]
    assert (first["position"], first["byte"]) == (34, 34)
    assert first["meta_text"] == "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n"
    assert first["chat_text"] == "<|im_start|>user\nHello!<|im_end|>\n\n<|im_start|>assistant\n"


def test_byte_position_counts_utf8(tmp_path: Path) -> None:
    # chatglm2's second round: "[Round 2]" against the meta template's "[Round 1]".
    proc = cli("check-template", "chatglm2", "--chat-template", str(CHAT / "chatglm2.jinja"),
               "--json", cwd=tmp_path)
    multi = [r for r in json.loads(proc.stdout) if r["probe"] == "multi-turn"][0]
    prefix = "[Round 1]\n\n问：Hi.\n\n答：Hello! How can I help?\n\n[Round "
    assert multi["position"] == len(prefix)
    # 问, 答 and the two full-width colons take 3 bytes each in UTF-8.
    assert multi["byte"] == len(prefix.encode("utf-8")) == multi["position"] + 8


def test_a_model_config_with_its_system_role(tmp_path: Path) -> None:
    # Gemma has no system role; with system_role: merge both sides fold the system text
    # into the user turn, so the system probes are compared (and agree) instead of rejected.
    (tmp_path / "gemma.yaml").write_text(
        "models:\n  - {abbr: gemma-merge, meta_template: gemma, system_role: merge}\n")
    proc = cli("check-template", "gemma.yaml", "--chat-template", str(CHAT / "gemma.jinja"),
               "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    system = [r for r in json.loads(proc.stdout) if r["probe"] == "system-user"]
    assert [r["status"] for r in system] == ["identical", "identical"]
    assert system[0]["meta_text"] == ("<start_of_turn>user\nYou are terse.\n\nHello!<end_of_turn>\n"
                                      "<start_of_turn>model\n")
    (tmp_path / "py_model.py").write_text(
        "models = [dict(abbr='q', type='HuggingFaceBaseModel', meta_template='qwen1.5-chat')]\n")
    proc = cli("check-template", "py_model.py", "--chat-template", str(CHAT / "qwen1.5.jinja"),
               cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout.endswith("8 probes: 2 agree, 6 differ\n")


def test_tokenizer_config_bos_and_errors(tmp_path: Path) -> None:
    # --strip-bos ignores the BOS the chat template prints (llama-3 template with a BOS token).
    folder = tmp_path / "llama3"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<|begin_of_text|>",
         "chat_template": (CHAT / "llama-3.jinja").read_text(encoding="utf-8")}))
    proc = cli("check-template", "llama-3-instruct", "--chat-template", "llama3", cwd=tmp_path)
    assert proc.returncode == 1
    # "<|begin_of_text|>" vs "<|start_header_id|>": the first two characters agree.
    assert proc.stdout.splitlines()[0] == (
        "user, with generation prompt: differ at character 2 (byte 2)")
    proc = cli("check-template", "llama-3-instruct", "--chat-template", "llama3", "--strip-bos",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    proc = cli("check-template", "no-such-model", "--chat-template", "llama3", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr.startswith("compile-prompts: error: ")
    assert "unknown model template 'no-such-model'" in proc.stderr
    proc = cli("check-template", "chatml", "--chat-template", "missing.jinja", cwd=tmp_path)
    assert proc.returncode == 1 and "missing.jinja" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    proc = cli("check-template", "chatml", cwd=tmp_path)
    assert proc.returncode == 2
