"""A chat-template model folder used from config files through the CLI, as users run it.

The folder's tokenizer_config.json and special_tokens_map.json give the template exactly the
special tokens transformers 5 gives it (checked by hand with transformers 5.23 on the same
files); expected prompts are written by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATASET = """\
datasets:
  - abbr: qa
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template:
          round:
            - {role: HUMAN, prompt: "Q: {q}"}
            - {role: BOT, prompt: "{a}"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
    splits:
      train: [{q: "1+1?", a: "2"}]
      test: [{q: "2+2?", a: "4"}]
"""

TEMPLATE = ("{{ bos_token }}{% for m in messages %}[{{ m.role }}|{{ image_token }}]{{ m.content }}"
            "{{ eos_token }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"
            "{{ additional_special_tokens }}{{ pad_token }}")

MODELS = {
    "models.yaml": "models:\n  - {abbr: folder, parser: hf_chat, chat_template: tok}\n",
    "models.py": "models = [dict(abbr='folder', parser='hf_chat', chat_template='tok')]\n",
}


def _model_folder(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "chat_template": TEMPLATE, "bos_token": "<s>", "eos_token": "</s>",
        "image_token": "<img>", "additional_special_tokens": ["<extra>"]}), encoding="utf-8")
    (folder / "special_tokens_map.json").write_text(json.dumps({
        "eos_token": {"content": "<|end|>", "lstrip": False}, "image_token": "<ignored>",
        "additional_special_tokens": ["<extra>"]}), encoding="utf-8")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_folder_special_tokens_through_the_cli(tmp_path: Path, name: str) -> None:
    cfg = tmp_path / "cfg"
    _model_folder(cfg / "tok")
    (cfg / "qa.yaml").write_text(DATASET, encoding="utf-8")
    (cfg / name).write_text(MODELS[name], encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run([sys.executable, "-m", "prompt_compiler", str(cfg / "qa.yaml"),
                           str(cfg / name), "-o", "out"], cwd=elsewhere, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (line,) = (elsewhere / "out" / "folder" / "qa.jsonl").read_text(encoding="utf-8").splitlines()
    # eos from the map (its named tokens win), image_token from the config (the map's other
    # *_token keys only fill gaps), no additional_special_tokens and no pad_token variable.
    # (The HUMAN turn ends in a newline, as OpenCompass's chat conversion leaves it.)
    assert json.loads(line)["prompt"] == "<s>[user|<img>]Q: 2+2?\n<|end|>[assistant]"
