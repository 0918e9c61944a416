"""Compat mode raises where OpenCompass 0.5.4 cannot score with the model's class (PPL, LL,
CLP, ... on a class without get_ppl / get_loglikelihood / get_logits), with OpenCompass's own
exception attached; the default mode compiles the prompts. CLI runs from YAML and Python."""

from __future__ import annotations

from pathlib import Path

import pytest

import prompt_compiler as pc
from prompt_compiler.errors import ScoringMethodMissingError, ScoringNotImplementedError
from tests._cli import run_cli

YAML = """\
datasets:
  - abbr: yn
    rows: [{question: "Snow white?", label: "yes", cont: " yes"}]
    reader_cfg: {input_columns: [question], output_column: label}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template:
          "yes": {round: [{role: HUMAN, prompt: "{question}"}, {role: BOT, prompt: "yes"}]}
          "no": {round: [{role: HUMAN, prompt: "{question}"}, {role: BOT, prompt: "no"}]}
      retriever: {type: ZeroRetriever}
      inferencer: {type: INFERENCER}
models:
  - abbr: chat
    type: HuggingFacewithChatTemplate
    chat_template: "{% for m in messages %}<{{ m.role }}>{{ m.content }}\\n{% endfor %}"
"""

PY = """\
from opencompass.models import HuggingFacewithChatTemplate
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from opencompass.openicl.icl_inferencer import INFERENCER

_rounds = {label: dict(round=[dict(role='HUMAN', prompt='{question}'),
                              dict(role='BOT', prompt=label)]) for label in ('yes', 'no')}
datasets = [dict(abbr='yn', rows=[dict(question='Snow white?', label='yes', cont=' yes')],
                 reader_cfg=dict(input_columns=['question'], output_column='label'),
                 infer_cfg=dict(prompt_template=dict(type=PromptTemplate, template=_rounds),
                                retriever=dict(type=ZeroRetriever),
                                inferencer=dict(type=INFERENCER)))]
models = [dict(abbr='chat', type=HuggingFacewithChatTemplate,
               chat_template="{% for m in messages %}<{{ m.role }}>{{ m.content }}\\n"
                             "{% endfor %}")]
"""

REFERENCE = {
    "PPLInferencer": ("NotImplementedError", "HuggingFacewithChatTemplate does not support "
                      "ppl-based evaluation yet, try gen-based instead."),
    "LLInferencer": ("AttributeError", "'HuggingFacewithChatTemplate' object has no attribute "
                     "'get_loglikelihood'"),
}


def _write(tmp_path: Path, kind: str, inferencer: str) -> str:
    name = f"suite.{kind}"
    text = (YAML if kind == "yaml" else PY).replace("INFERENCER", inferencer)
    (tmp_path / name).write_text(text, encoding="utf-8")
    return name


@pytest.mark.parametrize("kind", ["yaml", "py"])
@pytest.mark.parametrize("inferencer", ["PPLInferencer", "LLInferencer"])
def test_compat_raises_where_opencompass_cannot_score(tmp_path: Path, kind: str,
                                                     inferencer: str) -> None:
    name = _write(tmp_path, kind, inferencer)
    proc = run_cli(name, "--mode", "compat", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 1
    exc, message = REFERENCE[inferencer]
    assert proc.stderr == (
        f"compile-prompts: error: {name}: dataset 'yn', model 'chat', at "
        f"datasets[0].infer_cfg.inferencer.type: OpenCompass 0.5.4 cannot run {inferencer} with "
        f"a HuggingFacewithChatTemplate model: {exc}: {message} (hint: the default mode compiles "
        "these prompts; OpenCompass scores them only with a class that has the method (e.g. "
        "HuggingFaceCausalLM))\n")
    assert not (tmp_path / "out").exists()
    # the default mode compiles the two label prompts, as documented
    proc = run_cli(name, "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1 dataset x model pair, 2 prompts (default mode), written to out/\n"


def test_the_errors_derive_from_what_opencompass_raises(tmp_path: Path) -> None:
    for inferencer, cls, builtin in (("PPLInferencer", ScoringNotImplementedError,
                                      NotImplementedError),
                                     ("LLInferencer", ScoringMethodMissingError, AttributeError)):
        suite = pc.load(tmp_path / _write(tmp_path, "yaml", inferencer))
        with pytest.raises(cls) as info:
            list(pc.compile(suite, mode="opencompass"))
        assert isinstance(info.value, builtin)
        assert info.value.reference == REFERENCE[inferencer]
    # a class that scores (HuggingFaceCausalLM has get_ppl) compiles in compat mode
    (tmp_path / "suite.yaml").write_text(
        YAML.replace("INFERENCER", "PPLInferencer").replace(
            "HuggingFacewithChatTemplate", "HuggingFaceCausalLM").replace(
            '    chat_template: "{% for m in messages %}<{{ m.role }}>{{ m.content }}\\n'
            '{% endfor %}"\n', ""), encoding="utf-8")
    records = list(pc.compile(pc.load(tmp_path / "suite.yaml"), mode="opencompass"))
    assert [(r.label, r.prompt) for r in records] == [
        ("yes", "Snow white?\nyes"), ("no", "Snow white?\nno")]
