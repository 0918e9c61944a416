"""Running ``compile-prompts`` as a user does: a subprocess of this interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# What the example suite (configs/) reads, as its manifest lists it (written by hand).
EXAMPLE_INPUTS = [
    "configs/datasets/arith/arith_gen_3shot.py", "configs/datasets/arith/arith_test.jsonl",
    "configs/datasets/arith/arith_train.jsonl", "configs/datasets/capitals/capitals.jsonl",
    "configs/datasets/capitals/capitals_gen_0shot.py",
    "configs/datasets/dialogue/dialogue.jsonl", "configs/datasets/dialogue/dialogue_chat.yaml",
    "configs/datasets/sentiment/sentiment.jsonl", "configs/datasets/sentiment/sentiment_ppl.py",
    "configs/eval_demo.py", "configs/models/gpt_4o_mini.py",
    "configs/models/hf_qwen2_5_7b_instruct.py", "configs/models/hf_tinychat_1b.py",
    "configs/models/internlm2_chat_7b_turbomind.py",
    "prompt_compiler/meta_templates/internlm2-chat.yaml"]


def run_cli(*args: object, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m prompt_compiler ARGS`` in ``cwd``; output captured as text."""
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=timeout)
