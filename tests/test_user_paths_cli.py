"""Smaller things a new user meets, each through the CLI as a subprocess (expected output
written by hand): `view` of a folder that is no output, lint row findings naming the data file
and line, `system-dropped` at the template that has the system message, an invalid model left
out by --models, --model given a meta-template file, check-template --special-token, the README
synopsis, the corpus tools never writing into the OpenCompass tree, bench_tokenize without the
tokenizers extra."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests._cli import run_cli

REPO = Path(__file__).resolve().parents[1]

DATASET = """\
datasets:
  - abbr: qa
    PATH
    reader_cfg: {input_columns: [question], output_column: answer}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "Q: {question}"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
"""


def test_view_of_a_folder_that_is_no_output(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    proc = run_cli("view", ".", "-o", "report.html", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == (
        "compile-prompts: error: .: not an output folder of compile-prompts (it has no "
        "manifest.json and no <model>/<dataset>.jsonl record files) (hint: give the folder "
        "compile-prompts -o wrote, or a record file)\n")
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize("how", ["path", "data-dir"])
def test_lint_row_findings_name_the_data_file_and_line(tmp_path: Path, how: str) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "qa.jsonl").write_text(
        '{"question": "a", "answer": "1"}\n\n{"question": "What is {answer}?", "answer": "4"}\n')
    text = DATASET.replace("PATH", "path: data/qa.jsonl" if how == "path" else "")
    text += "models:\n  - {abbr: m, type: HuggingFaceCausalLM}\n"
    (tmp_path / "suite.yaml").write_text(text)
    extra = ["--data-dir", "data"] if how == "data-dir" else []
    proc = run_cli("lint", "suite.yaml", *extra, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "data/qa.jsonl: dataset 'qa', row 1, at line 3, question: template-syntax-in-data: "
        "value contains '{answer}': compat mode fills it with that column's value when the row "
        "is formatted\n1 finding\n")


def test_system_dropped_points_at_the_template_with_the_system_message(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text("""\
datasets:
  - abbr: qa
    rows: [{question: "2+2?", answer: "4"}]
    reader_cfg: {input_columns: [question], output_column: answer}
    infer_cfg:
      ice_template:
        type: PromptTemplate
        template:
          begin: [{role: SYSTEM, fallback_role: HUMAN, prompt: "Be brief."}, "</E>"]
          round: [{role: HUMAN, prompt: "{question}"}, {role: BOT, prompt: "{answer}"}]
        ice_token: "</E>"
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
models:
  - abbr: m
    type: HuggingFaceCausalLM
    meta_template:
      round: [{role: HUMAN, begin: "<u>"}, {role: BOT, begin: "<b>", generate: true}]
""")
    proc = run_cli("lint", "suite.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "suite.yaml: dataset 'qa', model 'm', row 0, at datasets[0].infer_cfg.ice_template: "
        "system-dropped: the prompt has a system message and this model's template merges it "
        "into a user turn (it has no system role); set the model's system_role to say what you "
        "want\n1 finding\n")


@pytest.mark.parametrize("kind", ["yaml", "py"])
def test_an_invalid_model_left_out_by_models_does_not_stop_the_run(tmp_path: Path,
                                                                    kind: str) -> None:
    if kind == "yaml":
        text = (DATASET.replace("PATH", 'rows: [{question: "2+2?", answer: "4"}]')
                + "models:\n  - {abbr: good, type: HuggingFaceCausalLM}\n"
                "  - {abbr: broken, type: NoSuchModelClass}\n")
    else:
        text = ("datasets = [dict(abbr='qa', rows=[dict(question='2+2?', answer='4')],\n"
                "  reader_cfg=dict(input_columns=['question'], output_column='answer'),\n"
                "  infer_cfg=dict(prompt_template=dict(type='PromptTemplate', "
                "template='Q: {question}'),\n"
                "                 retriever=dict(type='ZeroRetriever'),\n"
                "                 inferencer=dict(type='GenInferencer')))]\n"
                "models = [dict(abbr='good', type='HuggingFaceCausalLM'),\n"
                "          dict(abbr='broken', type='NoSuchModelClass')]\n")
    name = f"suite.{kind}"
    (tmp_path / name).write_text(text)
    for args in (["-o", "out"], ["--check"]):
        proc = run_cli(name, "--models", "good", *args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
    proc = run_cli(name, "-o", "out2", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == (
        f"compile-prompts: error: {name}: model 'broken', at models[1].type: unknown model class "
        "'NoSuchModelClass': cannot tell which renderer consumes its prompts (hint: add "
        "renderer='lm' | 'api' | 'hf_chat' to the model config (OpenCompass hands every model "
        "key to the class, and a class without **kwargs rejects 'renderer': keep that key in a "
        "copy for this tool), or give the model with --model (a template by name, see "
        "'compile-prompts models'))\n")


def test_model_given_a_meta_template_file(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text(
        DATASET.replace("PATH", 'rows: [{question: "2+2?", answer: "4"}]').replace(
            'template: "Q: {question}"', 'template: {round: [{role: HUMAN, prompt: "Q: {question}"}'
            ', {role: BOT, prompt: "{answer}"}]}'))
    (tmp_path / "bare.yaml").write_text(
        'round:\n  - {role: HUMAN, begin: "<u>"}\n  - {role: BOT, begin: "<b>", generate: true}\n')
    proc = run_cli("suite.yaml", "--model", "bare.yaml", "--check", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == (
        "compile-prompts: error: bare.yaml: --model: this is a bare meta template "
        "(round/begin/end), not a model (hint: wrap it in a model template file: name: NAME, "
        "renderer: lm | api, meta_template: {round: [...]}; --model takes a template name (see "
        "'compile-prompts models'), a model template file (name, renderer, meta_template) or a "
        "config file with a models list)\n")
    # wrapped as the built-in templates are, the same file is a model
    (tmp_path / "mine.yaml").write_text(
        'name: mine\nrenderer: lm\nmeta_template:\n  round:\n    - {role: HUMAN, begin: "<u>"}\n'
        '    - {role: BOT, begin: "<b>", generate: true}\n')
    proc = run_cli("suite.yaml", "--model", "mine.yaml", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "out" / "mine" / "qa.jsonl").read_text())
    assert record["prompt"] == "<u>Q: 2+2?<b>"


def test_check_template_takes_special_tokens(tmp_path: Path) -> None:
    (tmp_path / "t.jinja").write_text(
        '{{ bos_token + "" }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}'
        '<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}')
    proc = run_cli("check-template", "chatml", "--chat-template", "t.jinja", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == (
        "compile-prompts: error: t.jinja: at chat_template: the chat template failed on this "
        "conversation: UndefinedError: 'bos_token' is undefined (hint: give a special token's "
        "value with --special-token NAME=VALUE)\n")
    proc = run_cli("check-template", "chatml", "--chat-template", "t.jinja", "--strip-bos",
                   "--special-token", "bos_token=<s>", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.endswith("8 probes: 8 agree, 0 differ\n")
    proc = run_cli("check-template", "chatml", "--chat-template", "t.jinja",
                   "--special-token", "bos_token", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == ("compile-prompts: error: at --special-token: expected NAME=VALUE "
                           "(e.g. bos_token=<s>), got 'bos_token'\n")


def test_the_cli_page_synopsis_lists_the_options() -> None:
    from prompt_compiler.cli.compile import _parser

    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    synopsis = page.split("```text\n", 1)[1].split("```", 1)[0]
    options = {o for a in _parser()._actions for o in a.option_strings}
    for option in ("--fewshot", "--opencompass-configs", "--strict", "--models"):
        assert option in options
        assert re.search(re.escape(option) + r"\b", synopsis), option
    assert "[--special-token NAME=VALUE]..." in synopsis


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else b""
            for p in sorted(root.rglob("*"))}


def test_the_corpus_tool_never_writes_into_the_opencompass_tree(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import oc_corpus
    finally:
        sys.path.remove(str(REPO / "tools"))
    package = tmp_path / "site" / "opencompass"
    shutil.copytree(Path(__file__).parent / "data" / "oc_configs_folder", package / "configs")
    before = _tree(package)
    modes = {p: p.stat().st_mode for p in [package, *package.rglob("*")]}
    for p in modes:  # read-only, as an installation may be
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        file = package / "configs" / "datasets" / "demo_qa" / "demo_qa_gen.py"
        suite = oc_corpus._load(package, file, 7, None)
        assert [d.abbr for d in suite.datasets] == ["demo_qa"]
        wrapper = oc_corpus.write_wrapper(package, file, 8, chat=False)
        assert not wrapper.is_relative_to(package)
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert _tree(package) == before


def test_bench_tokenize_without_the_tokenizers_extra(tmp_path: Path) -> None:
    blocker = tmp_path / "sitecustomize.py"  # the tokenizers package made unimportable
    blocker.write_text(
        "import sys\n"
        "class _NoTokenizers:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'tokenizers' or name.startswith('tokenizers.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, _NoTokenizers())\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "bench_tokenize.py"), "--rows",
                           "10"], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        "bench_tokenize: needs the tokenizers package: pip install 'compile-prompts[tokenizers]' "
        "(or give --tokenizer tiktoken:NAME with the tiktoken extra)\n")


def test_check_strict_fails_on_lint_findings(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "qa.jsonl").write_text(
        '{"question": "What is {answer}?", "answer": "4"}\n')
    (tmp_path / "suite.yaml").write_text(
        DATASET.replace("PATH", "path: data/qa.jsonl")
        + "models:\n  - {abbr: m, type: HuggingFaceCausalLM}\n")
    finding = ("data/qa.jsonl: dataset 'qa', row 0, at line 1, question: template-syntax-in-data: "
               "value contains '{answer}': compat mode fills it with that column's value when "
               "the row is formatted\n")
    proc = run_cli("suite.yaml", "--check", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr == f"compile-prompts: warning: {finding}"
    proc = run_cli("suite.yaml", "--check", "--strict", cwd=tmp_path)
    assert proc.returncode == 1
    assert (proc.stdout, proc.stderr) == ("", f"compile-prompts: error: {finding}")
