"""A built-in template's default system turn and a prompt's own system turn (defect D24), end to
end: config files (YAML and Python) compiled by the CLI in a subprocess. Expected prompts are
written by hand; the two-turn compat prompt is what OpenCompass 0.5.4's LMTemplateParser printed
for this meta template; the default prompt is also checked against transformers' rendering of
the real Qwen2.5 chat template."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent / "data" / "default_system"

QWEN = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
OWN = ("<|im_start|>system\nYou are a calculator.<|im_end|>\n"
       "<|im_start|>user\nWhat is 1+1?<|im_end|>\n<|im_start|>assistant\n")
DEFAULT = ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
           "assistant.<|im_end|>\n<|im_start|>user\nWhat is 1+1?<|im_end|>\n"
           "<|im_start|>assistant\n")
# OpenCompass 0.5.4: LMTemplateParser(qwen2.5-instruct's meta_template).parse_template(..., 'gen')
TWO_TURNS = ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
             "assistant.<|im_end|>\n<|im_start|>system\nYou are a calculator.<|im_end|>\n"
             "<|im_start|>user\nWhat is 1+1?<|im_end|>\n<|im_start|>assistant\n")
MERGED = ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
          "assistant.<|im_end|>\n<|im_start|>user\nYou are a calculator.\n\nWhat is 1+1?"
          "<|im_end|>\n<|im_start|>assistant\n")


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def prompts(out: Path, dataset: str) -> dict[str, Any]:
    """model abbr -> the prompt of its only record."""
    found = {}
    for file in sorted(out.glob(f"*/{dataset}.jsonl")):
        (line,) = file.read_text(encoding="utf-8").splitlines()
        rec = json.loads(line)
        found[rec["model"]] = rec["prompt"]
    return found


@pytest.fixture
def work(tmp_path: Path) -> Path:
    for name in ("suite.yaml", "suite.py"):
        shutil.copy(DATA / name, tmp_path / name)
    return tmp_path


def test_a_prompts_system_turn_replaces_the_default_one(work: Path) -> None:
    proc = cli("suite.yaml", "-o", "out", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert prompts(work / "out", "qa") == {"qwen": OWN, "qwen-native": OWN, "qwen-merged": MERGED}
    # without a system turn of its own the prompt keeps the default
    assert set(prompts(work / "out", "nosys").values()) == {DEFAULT}


def test_compat_mode_keeps_both_system_turns(work: Path) -> None:
    proc = cli("suite.yaml", "-o", "out", "--mode", "compat", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert prompts(work / "out", "qa") == {"qwen": TWO_TURNS, "qwen-native": TWO_TURNS,
                                           "qwen-merged": MERGED}


def test_a_python_config_and_the_model_flag_alike(work: Path) -> None:
    proc = cli("suite.py", "-o", "out", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert prompts(work / "out", "qa") == {"qwen": OWN}
    proc = cli("suite.py", "--model", "qwen2.5", "-o", "out2", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert prompts(work / "out2", "qa") == {"qwen2.5-instruct": OWN}


def test_the_default_prompt_is_the_real_chat_templates(shared_dir: Path) -> None:
    """transformers renders the Qwen2.5-7B-Instruct chat_template (from the peers corpus)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    cases = json.loads((shared_dir / "conformance/peers/cases/hf_chat/templates.json")
                       .read_text(encoding="utf-8"))
    source = next(c["chat_template"] for c in cases if c["id"] == "trl_qwen2_5_system_genprompt")
    assert QWEN in source
    for messages, expected in (
            ([{"role": "system", "content": "You are a calculator."},
              {"role": "user", "content": "What is 1+1?"}], OWN),
            ([{"role": "user", "content": "What is 1+1?"}], DEFAULT)):
        rendered, _ = render_jinja_template([messages], chat_template=source,
                                            add_generation_prompt=True)
        assert rendered == [expected]


def test_lint_says_whether_the_default_was_replaced_or_kept(work: Path) -> None:
    where = ("suite.yaml: dataset 'qa', model '{}', row 0, at datasets[0].infer_cfg"
             ".prompt_template: default-system: the prompt starts with its own system message; "
             "the meta template's default system turn is ")
    replaced = ("replaced by it, as the family's chat template does (default mode; compat mode "
                "keeps both, D24)")
    proc = cli("lint", "suite.yaml", cwd=work)
    assert proc.returncode == 0, proc.stderr
    # qwen-merged: its system_role already says what becomes of the system message
    assert proc.stdout.splitlines() == [where.format("qwen") + replaced,
                                        where.format("qwen-native") + replaced, "2 findings"]
    proc = cli("lint", "suite.yaml", "--mode", "compat", cwd=work)
    assert proc.returncode == 0, proc.stderr
    kept = ("kept in front of it: the model reads two system turns (compat mode, as OpenCompass "
            "writes the meta template's begin; D24)")
    assert proc.stdout.splitlines() == [where.format("qwen") + kept,
                                        where.format("qwen-native") + kept, "2 findings"]
