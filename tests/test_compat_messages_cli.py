"""Errors and warnings as OpenCompass 0.5.4 gives them, from config files through the CLI:
the UserWarning for a bare string an API template drops, TypeError-derived errors for
RawPromptTemplate validation and for PromptTemplate(prompt=...), with OpenCompass's own
exception (0.5.4 wording) attached as ``reference``."""

from __future__ import annotations

from pathlib import Path

import pytest

import prompt_compiler as pc
from prompt_compiler.errors import TemplateError, TemplateTypeError
from tests._cli import run_cli

HEAD = """\
datasets:
  - abbr: qa
    rows: [{question: "2+2?", answer: "4"}]
    reader_cfg: {input_columns: [question], output_column: answer}
    infer_cfg:
      prompt_template: TEMPLATE
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
models:
  - abbr: api
    type: OpenAISDK
    meta_template:
      round: [{role: HUMAN, api_role: HUMAN}, {role: BOT, api_role: BOT, generate: true}]
"""

PY_HEAD = """\
from opencompass.models import OpenAISDK
from opencompass.openicl.icl_prompt_template import PromptTemplate, RawPromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from opencompass.openicl.icl_inferencer import GenInferencer

datasets = [dict(abbr='qa', rows=[dict(question='2+2?', answer='4')],
                 reader_cfg=dict(input_columns=['question'], output_column='answer'),
                 infer_cfg=dict(prompt_template=TEMPLATE,
                                retriever=dict(type=ZeroRetriever),
                                inferencer=dict(type=GenInferencer)))]
models = [dict(abbr='api', type=OpenAISDK,
               meta_template=dict(round=[dict(role='HUMAN', api_role='HUMAN'),
                                         dict(role='BOT', api_role='BOT', generate=True)]))]
"""

TEMPLATES = {
    "dropped": ('{type: PromptTemplate, template: {begin: ["Answer briefly."], round: [{role: '
                'HUMAN, prompt: "{question}"}, {role: BOT, prompt: "{answer}"}]}}',
                "dict(type=PromptTemplate, template=dict(begin=['Answer briefly.'], round=["
                "dict(role='HUMAN', prompt='{question}'), dict(role='BOT', prompt='{answer}')]))"),
    "raw": ('{type: RawPromptTemplate, messages: [{role: user, content: "{question}"}, 3]}',
            "dict(type=RawPromptTemplate, messages=[dict(role='user', content='{question}'), 3])"),
    "raw_role": ('{type: RawPromptTemplate, messages: [{role: human, content: "{question}"}]}',
                 "dict(type=RawPromptTemplate, messages=[dict(role='human', "
                 "content='{question}')])"),
    "prompt": ('{type: PromptTemplate, prompt: "{question}"}',
               "dict(type=PromptTemplate, prompt='{question}')"),
}


def _write(tmp_path: Path, kind: str, template: str) -> str:
    yaml_text, py_text = TEMPLATES[template]
    name = f"suite.{kind}"
    text = (HEAD.replace("TEMPLATE", yaml_text) if kind == "yaml"
            else PY_HEAD.replace("TEMPLATE", py_text))
    (tmp_path / name).write_text(text, encoding="utf-8")
    return name


@pytest.mark.parametrize("kind", ["yaml", "py"])
def test_a_dropped_string_warns_as_opencompass_does(tmp_path: Path, kind: str) -> None:
    name = _write(tmp_path, kind, "dropped")
    warning = ("compile-prompts: warning: Non-empty string in prompt template will be ignored "
               "in API models.\n")
    for mode in ("compat", "default"):
        proc = run_cli(name, "--mode", mode, "-o", f"out_{mode}", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == warning
        assert (tmp_path / f"out_{mode}" / "api" / "qa.jsonl").read_text().startswith(
            '{"dataset": "qa", "model": "api", "mode": "gen", "index": 0, "row": 0, '
            '"ice_ids": [], "prompt": [{"role": "user", "content": "2+2?"}]')
    proc = run_cli(name, "--strict", "--check", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == ("compile-prompts: error: Non-empty string in prompt template will be "
                           "ignored in API models.\n")


@pytest.mark.parametrize("kind", ["yaml", "py"])
@pytest.mark.parametrize(("template", "where", "message"), [
    ("raw", "prompt_template.messages[1]", "messages[1] must be a dict or str, got <class 'int'>"),
    ("raw_role", "prompt_template.messages[0]",
     "messages[0] has invalid role: human (expected one of system, user, assistant)"),
    ("prompt", "prompt_template",
     "PromptTemplate takes template, ice_token, sep_token, engine; unexpected: prompt"),
])
def test_template_errors_in_opencompass_s_words(tmp_path: Path, kind: str, template: str,
                                                where: str, message: str) -> None:
    name = _write(tmp_path, kind, template)
    for mode in ("compat", "default"):
        proc = run_cli(name, "--mode", mode, "--check", cwd=tmp_path)
        assert proc.returncode == 1
        assert proc.stderr == (f"compile-prompts: error: {name}: dataset 'qa', model 'api', at "
                               f"datasets[0].infer_cfg.{where}: {message}\n")


def test_the_exceptions_derive_from_opencompass_s(tmp_path: Path) -> None:
    expected = {
        "raw": (TemplateTypeError, TypeError,
                ("TypeError", "messages[1] must be a dict or str, got <class 'int'>")),
        "raw_role": (TemplateError, ValueError,
                     ("ValueError", "messages[0] has invalid role: human")),
        "prompt": (TemplateTypeError, TypeError,
                   ("TypeError", "PromptTemplate.__init__() got an unexpected keyword argument "
                    "'prompt'")),
    }
    for template, (cls, builtin, reference) in expected.items():
        suite = pc.load(tmp_path / _write(tmp_path, "yaml", template))
        with pytest.raises(cls) as info:
            list(pc.compile(suite, mode="opencompass"))
        assert isinstance(info.value, builtin)
        assert info.value.reference == reference
