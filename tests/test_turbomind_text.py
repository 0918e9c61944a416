"""TurboMindModelwithChatTemplate: the record's prompt is the text OpenCompass hands lmdeploy.

OpenCompass 0.5.4 removes one leading ``bos_token`` of the tokenizer from the chat template's
text before calling lmdeploy's pipeline (checked by running the class with the pipeline
replaced). Compat mode records that text; the default mode keeps the template's text (its
ids hold exactly one BOS either way: D21). Expected texts written by hand; the chat models'
default meta template ends a HUMAN turn with ``\\n``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._cli import run_cli

TEMPLATE = ("{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}[/{{ m.role }}]"
            "{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}")

SUITE = """\
models = [
    dict(abbr='tm', type='TurboMindModelwithChatTemplate', path='x', chat_template='tok'),
    dict(abbr='hf', type='HuggingFacewithChatTemplate', path='x', chat_template='tok'),
]
datasets = [dict(abbr='d', reader_cfg=dict(input_columns=['q']), infer_cfg=dict(
    prompt_template=dict(type='PromptTemplate', template=dict(round=[
        dict(role='HUMAN', prompt='{q}'), dict(role='BOT', prompt='')])),
    retriever=dict(type='ZeroRetriever'), inferencer=dict(type='GenInferencer')),
    rows=[dict(q='Hi?'), dict(q='<s>x')])]
"""


def _prompts(tmp_path: Path, mode: str, template: str = TEMPLATE) -> dict[str, list[str]]:
    (tmp_path / "tok").mkdir(exist_ok=True)
    (tmp_path / "tok" / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "chat_template": template}), encoding="utf-8")
    (tmp_path / "suite.py").write_text(SUITE, encoding="utf-8")
    proc = run_cli("suite.py", "--mode", mode, "-o", f"out-{mode}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return {m: [json.loads(line)["prompt"] for line in
                (tmp_path / f"out-{mode}" / m / "d.jsonl").read_text("utf-8").splitlines()]
            for m in ("tm", "hf")}


def test_compat_prompt_is_the_text_lmdeploy_is_handed(tmp_path: Path) -> None:
    got = _prompts(tmp_path, "compat")
    assert got["tm"] == ["[user]Hi?\n[/user][assistant]", "[user]<s>x\n[/user][assistant]"]
    # HuggingFacewithChatTemplate tokenizes the template's text as it is
    assert got["hf"] == ["<s>[user]Hi?\n[/user][assistant]", "<s>[user]<s>x\n[/user][assistant]"]


def test_default_mode_keeps_the_template_text(tmp_path: Path) -> None:
    got = _prompts(tmp_path, "default")
    assert got["tm"] == ["<s>[user]Hi?\n[/user][assistant]", "<s>[user]<s>x\n[/user][assistant]"]


@pytest.mark.parametrize(("template", "expected"), [
    # only one leading bos_token goes (str.removeprefix once)
    ("{{ bos_token }}{{ bos_token }}{{ messages[0].content }}", "<s>Hi?\n"),
    # a template that writes no BOS: nothing to remove
    ("{{ messages[0].content }}{{ bos_token }}", "Hi?\n<s>"),
])
def test_one_leading_bos_token_only(tmp_path: Path, template: str, expected: str) -> None:
    assert _prompts(tmp_path, "compat", template)["tm"][0] == expected
