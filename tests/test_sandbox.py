"""Configs are data: no template a config names can run code, read Python internals or crash.

Every user-supplied Jinja2 template (dataset templates with ``engine: jinja2``, AdalFlow-style
prompts, Hugging Face chat templates) renders in
:class:`prompt_compiler.safety.jinja_sandbox.PromptSandbox`.
The escapes below are the well-known ones for Jinja2 (SSTI payloads); each must give one clean
project error (or harmless text), and the file the payload would create must not appear.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from prompt_compiler.cli import main
from prompt_compiler.errors import PromptCompilerError, TemplateError
from prompt_compiler.prompters import ChatPrompter
from prompt_compiler.render.chat_template import ChatTemplate
from prompt_compiler.template.jinja_prompt import JinjaPrompt, compile_jinja

MARK = "PWNED"  # the file every payload tries to create in the working folder


def _escapes(marker: str) -> list[str]:
    """Known Jinja2 sandbox escapes, each trying to run ``touch marker`` or read internals."""
    run = f"popen('touch {marker}').read()"
    return [
        f"{{{{ cycler.__init__.__globals__.os.{run} }}}}",
        f"{{{{ joiner.__init__.__globals__.os.{run} }}}}",
        f"{{{{ namespace.__init__.__globals__.os.{run} }}}}",
        f"{{{{ self.__init__.__globals__.__builtins__.__import__('os').{run} }}}}",
        f"{{{{ lipsum.__globals__['os'].{run} }}}}",
        f"{{{{ lipsum.__globals__.os.{run} }}}}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{% for c in [].__class__.__base__.__subclasses__() %}{{ c }}{% endfor %}",
        "{{ question.__class__ }}",
        "{{ question|attr('__class__') }}",
        "{{ '{0.__class__.__mro__}'.format(question) }}",
        "{{ '{0.__init__.__globals__}'.format(cycler) }}",
        "{{ '{a.__class__}'.format_map({'a': question}) }}",
        "{{ question.format_map }}",
        "{{ [].append(1) }}",
        "{{ {}.update(a=1) }}",
        "{{ 'a' * 10**10 }}",
        "{{ 10 ** 100000000 }}",
        "{{ range(10**9)|list }}",
    ]


def _dataset_yaml(template: str) -> str:
    quoted = template.replace("\\", "\\\\").replace('"', '\\"')
    return (
        "datasets:\n"
        "  - abbr: evil\n"
        "    reader_cfg: {input_columns: [question], output_column: answer}\n"
        "    infer_cfg:\n"
        f'      prompt_template: {{type: PromptTemplate, engine: jinja2, template: "{quoted}"}}\n'
        "      retriever: {type: ZeroRetriever}\n"
        "      inferencer: {type: GenInferencer}\n"
        "    rows: [{question: q1, answer: a1}]\n"
        "models:\n"
        "  - {abbr: base, parser: lm, meta_template: null}\n"
    )


def _chat_model_yaml(template: str) -> str:
    quoted = template.replace("\\", "\\\\").replace('"', '\\"')
    return (
        "datasets:\n"
        "  - abbr: plain\n"
        "    reader_cfg: {input_columns: [question], output_column: answer}\n"
        "    infer_cfg:\n"
        '      prompt_template: {type: PromptTemplate, template: "Q: {question}"}\n'
        "      retriever: {type: ZeroRetriever}\n"
        "      inferencer: {type: GenInferencer}\n"
        "    rows: [{question: q1, answer: a1}]\n"
        "models:\n"
        f'  - {{abbr: chat, parser: hf_chat, chat_template: "{quoted}"}}\n'
    )


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def _assert_one_line_error(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("compile-prompts: error: "), proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


# -- end to end: a YAML config on disk, the CLI as a subprocess --------------------------------


def test_yaml_dataset_template_escape_runs_nothing(tmp_path: Path) -> None:
    cfg = tmp_path / "evil.yaml"
    cfg.write_text(_dataset_yaml(_escapes(MARK)[0]), encoding="utf-8")
    proc = _cli(["evil.yaml", "-o", "out"], tmp_path)
    _assert_one_line_error(proc, "evil.yaml", "dataset 'evil'", "prompt_template",
                           "'__init__'", "blocked by the sandbox")
    assert not (tmp_path / MARK).exists()
    assert not (tmp_path / "out").exists()


def test_yaml_chat_template_escape_runs_nothing(tmp_path: Path) -> None:
    cfg = tmp_path / "evil.yaml"
    cfg.write_text(_chat_model_yaml(_escapes(MARK)[0]), encoding="utf-8")
    proc = _cli(["evil.yaml", "-o", "out"], tmp_path)
    assert not (tmp_path / MARK).exists()
    assert "Traceback" not in proc.stderr
    # The chat template renders when a model config's chat_template reaches the compiler (it
    # is then refused); until then the key has no effect. Either way: no code ran.
    if proc.returncode != 0:
        _assert_one_line_error(proc, "evil.yaml", "chat_template", "SecurityError", "__init__")


def test_a_python_config_is_data_too(tmp_path: Path) -> None:
    """A .py config runs under the rules of config/python/ (check.py, stand_ins.py,
    budget.py): it cannot write a file (tests/test_pyconfig_hostile.py has the other
    escapes)."""
    (tmp_path / "cfg.py").write_text(
        "open('ran', 'w').write('yes')\n"
        "datasets = [dict(abbr='d', reader_cfg=dict(input_columns=['q'], output_column='a'),\n"
        "    infer_cfg=dict(prompt_template=dict(type='PromptTemplate', template='{q}'),\n"
        "    retriever=dict(type='ZeroRetriever'), inferencer=dict(type='GenInferencer')),\n"
        "    rows=[dict(q='x', a='y')])]\n"
        "models = [dict(abbr='m', parser='lm', meta_template=None)]\n",
        encoding="utf-8")
    proc = _cli(["cfg.py", "--check"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ("compile-prompts: error: cfg.py: line 1: open(..., 'w'): a config "
                           "may only read files\n")
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("index", range(len(_escapes(MARK))))
def test_every_escape_in_a_yaml_dataset_template_is_one_clean_error(
    index: int, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evil.yaml").write_text(_dataset_yaml(_escapes(MARK)[index]), encoding="utf-8")
    code = main(["evil.yaml", "-o", "out"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.count("\n") == 1 and err.startswith("compile-prompts: error: evil.yaml: "), err
    assert "row 0" in err and "prompt_template" in err
    assert not (tmp_path / MARK).exists()


@pytest.mark.parametrize("index", range(len(_escapes(MARK))))
def test_every_escape_in_a_chat_template_is_refused_or_harmless(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HF chat templates keep HF's lenient undefined, but a blocked attribute is an error (in
    transformers it would print nothing, as if merely missing)."""
    monkeypatch.chdir(tmp_path)
    tpl = ChatTemplate.from_string(_escapes(MARK)[index])
    with pytest.raises(PromptCompilerError):
        tpl.render([{"role": "user", "content": "hi"}], question="q")
    assert not (tmp_path / MARK).exists()


# -- the library engines ------------------------------------------------------------------


@pytest.mark.parametrize("index", range(len(_escapes(MARK))))
def test_every_escape_is_a_template_error_in_adalflow_prompts(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    source = _escapes(MARK)[index]
    with pytest.raises(PromptCompilerError):  # lipsum is no global: an unset variable
        JinjaPrompt(source)(question="q")
    with pytest.raises(TemplateError):  # AdalFlow's compat mode is sandboxed too
        JinjaPrompt(source, compat="adalflow")(question="q")
    assert not (tmp_path / MARK).exists()


def test_sandbox_messages_say_what_was_blocked() -> None:
    with pytest.raises(TemplateError) as info:
        compile_jinja("{{ cycler.__init__ }}").render()
    assert str(info.value) == (
        "Error rendering Jinja2 template at line 1: access to attribute '__init__' of 'type' "
        "object is unsafe. (blocked by the sandbox) (hint: a template reads values; it cannot "
        "reach Python internals or run code)")
    with pytest.raises(TemplateError,
                       match="'\\*' would build 10,000,000,000 characters; the limit is 16,0"):
        compile_jinja("{{ 'a' * 10**10 }}").render()
    with pytest.raises(TemplateError, match="about 332,192,810 bits; a template.s integers may have 14,000 bits"):
        compile_jinja("{{ 10 ** 100000000 }}").render()


def test_output_that_would_differ_between_runs_is_refused() -> None:
    """Function reprs carry memory addresses and lipsum is random: neither is reproducible."""
    with pytest.raises(TemplateError, match="memory address"):
        compile_jinja("{{ q.upper }}").render(q="x")
    with pytest.raises(TemplateError, match="memory address"):
        compile_jinja("{{ cycler(1, 2) }}").render()
    with pytest.raises(PromptCompilerError, match="'lipsum'"):
        compile_jinja("{{ lipsum() }}").render()


def test_legitimate_templates_render_as_before() -> None:
    tpl = compile_jinja(
        "{% set ns = namespace(n=0) %}{% for c in choices %}{% set ns.n = ns.n + 1 %}"
        "{{ loop.index }}. {{ c|upper }}{{ ', ' if not loop.last }}{% endfor %} "
        "[{{ ns.n }}] {{ '=' * 3 }} {{ 2 ** 10 }} {{ '%s/%d'|format(q, 7) }} {{ q.strip() }} "
        "{{ '{0}-{1}'.format(q, 1) }} {{ cycler('a', 'b').next() }} {{ d['k'] }} {{ d.k }}")
    text = tpl.render({"choices": ["x", "y"], "q": " q ", "d": {"k": "v"}})
    assert text == "1. X, 2. Y [2] === 1024  q /7 q  q -1 a v v"


# -- {column} templates and prompter instructions never reach attributes -----------------------


def test_format_engine_leaves_attribute_placeholders_verbatim(tmp_path: Path) -> None:
    cfg = _dataset_yaml("Q: {question.__class__} {0.__globals__} {question!r} {question}")
    (tmp_path / "cfg.yaml").write_text(cfg.replace("engine: jinja2, ", ""), encoding="utf-8")
    proc = _cli(["cfg.yaml", "-o", "out"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = (tmp_path / "out" / "base" / "evil.jsonl").read_text(encoding="utf-8")
    assert '"prompt": "Q: {question.__class__} {0.__globals__} {question!r} q1"' in record


@pytest.mark.parametrize(("instruction", "system"), [
    ("Sys {input} {input.__class__.__mro__}", "Sys x {input.__class__.__mro__}"),
    ("Sys {input} {input[0]}", "Sys x {input[0]}"),
    ("Sys {input} {input:>99999999}", "Sys x {input:>99999999}"),
    ("Sys {input} {input!r} {{", "Sys x 'x' {"),  # plain str.format semantics stay
])
def test_prompter_instructions_fill_bare_slots_only(instruction: str, system: str) -> None:
    messages = ChatPrompter(instruction).generate_prompt("x", return_dict=True)["messages"]
    assert messages[0]["content"].endswith(system + "\n\n"), messages[0]
