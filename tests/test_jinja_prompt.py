"""JinjaPrompt (AdalFlow-style Jinja2 prompts), compile_jinja and the adalflow conformance suite."""

from __future__ import annotations

import doctest
import json
import re
import sys
from pathlib import Path

import jinja2
import pytest
from conftest import REPO, run_conformance
from hypothesis import given
from hypothesis import strategies as st

import prompt_compiler.template.jinja_prompt as jp
from prompt_compiler.errors import (
    ConfigError,
    MissingFieldError,
    TemplateError,
    TemplateSyntaxError,
)
from prompt_compiler.template.jinja_prompt import (
    DEFAULT_TEMPLATE,
    JinjaPrompt,
    Prompt,
    compile_jinja,
)

sys.path.insert(0, str(REPO / "tools"))
from conformance_suites import adalflow as suite  # noqa: E402

DEFAULT_VARIABLES = (
    "chat_history_str", "context_str", "examples_str", "input_format_str", "input_str",
    "output_format_str", "steps_str", "task_desc_str", "tools_str",
)
EMPTY_DEFAULT = (
    "<START_OF_SYSTEM_PROMPT>\nYou are a helpful assistant.\n<END_OF_SYSTEM_PROMPT>\n"
    "<START_OF_USER_PROMPT>\n<END_OF_USER_PROMPT>\n"
)
MODES = [None, "adalflow"]

# The seed document's Jinja2 example (AdalFlow's "Prompt" page), verbatim.
SEED_TEMPLATE = r"""<SYS>{{ task_desc_str }}</SYS>
{# tools #}
{% if tools %}
<TOOLS>
{% for tool in tools %}
{{loop.index}}. {{ tool }}
{% endfor %}
</TOOLS>
{% endif %}
User: {{ input_str }}"""
SEED_TASK = "You are a helpful assitant"
SEED_TOOLS = ["google", "wikipedia", "wikidata"]
SEED_INPUT = "What is the capital of France?"


def test_module_doctests() -> None:
    result = doctest.testmod(jp, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5 and result.failed == 0


# ----------------------------------------------------------------------------- seed examples


@pytest.mark.parametrize("compat", MODES)
def test_seed_example_without_tools(compat: str | None) -> None:
    prompt = JinjaPrompt(SEED_TEMPLATE, compat=compat)
    out = prompt(task_desc_str=SEED_TASK, input_str=SEED_INPUT)
    assert out == "<SYS>You are a helpful assitant</SYS>\nUser: What is the capital of France?"


@pytest.mark.parametrize("compat", MODES)
def test_seed_example_presets_and_call(compat: str | None) -> None:
    prompt = Prompt(
        template=SEED_TEMPLATE,
        prompt_kwargs={"task_desc_str": SEED_TASK, "tools": SEED_TOOLS},
        compat=compat,
    )
    assert prompt(input_str=SEED_INPUT) == (
        "<SYS>You are a helpful assitant</SYS>\n<TOOLS>\n1. google\n2. wikipedia\n"
        "3. wikidata\n</TOOLS>\nUser: What is the capital of France?"
    )
    # The printed form shows the template, the presets and the variables (sorted here).
    text = repr(prompt)
    assert text.startswith(
        "JinjaPrompt(\n  template: <SYS>{{ task_desc_str }}</SYS>\n  {# tools #}\n"
    )
    assert ("User: {{ input_str }}, prompt_kwargs: {'task_desc_str': 'You are a helpful assitant', "
            "'tools': ['google', 'wikipedia', 'wikidata']}, "
            "prompt_variables: ['input_str', 'task_desc_str', 'tools']\n)") in text


def test_seed_default_variables_plus_input_format() -> None:
    # The seed lists eight default variables; the 1.1.3 template also reads input_format_str.
    assert JinjaPrompt().variables == DEFAULT_VARIABLES
    assert Prompt is JinjaPrompt


# ----------------------------------------------------------------------------- default template


@pytest.mark.parametrize("compat", MODES)
def test_default_template_nothing_set(compat: str | None) -> None:
    assert JinjaPrompt(compat=compat)() == EMPTY_DEFAULT
    assert JinjaPrompt("", compat=compat).template == DEFAULT_TEMPLATE


@pytest.mark.parametrize("compat", MODES)
def test_default_template_blocks_and_steps_inside_user_prompt(compat: str | None) -> None:
    out = JinjaPrompt(compat=compat)(
        task_desc_str="T", tools_str="t1", input_str="q", steps_str="s1", context_str=""
    )
    assert out == (
        "<START_OF_SYSTEM_PROMPT>\nT\n<TOOLS>\nt1\n</TOOLS>\n<END_OF_SYSTEM_PROMPT>\n"
        "<START_OF_USER_PROMPT>\nq\n<START_OF_ASSISTANT_STEPS>\ns1\n<END_OF_ASSISTANT_STEPS>\n"
        "<END_OF_USER_PROMPT>\n"
    )


@pytest.mark.parametrize("falsy", ["", None, [], 0])
def test_falsy_values_omit_blocks(falsy: object) -> None:
    assert JinjaPrompt()(examples_str=falsy, task_desc_str=falsy) == EMPTY_DEFAULT


# ----------------------------------------------------------------------------- kwargs


def test_presets_call_override_update_and_no_leak() -> None:
    prompt = JinjaPrompt("{{ a }}-{{ b }}", {"a": "A", "b": "B"})
    assert prompt(b="call", unknown="ignored") == "A-call"
    assert prompt() == "A-B"  # the call did not touch the presets
    prompt.update_prompt_kwargs(a="A2")
    assert prompt() == "A2-B"
    assert prompt.prompt_kwargs == {"a": "A2", "b": "B"}
    prompt.prompt_kwargs["a"] = "not stored"  # a copy
    assert prompt() == "A2-B"
    assert prompt.missing_variables() == ()
    assert JinjaPrompt("{{ a }}{{ b }}", {"a": 1}).missing_variables(c=1) == ("b",)


def test_non_string_values_and_no_autoescape() -> None:
    prompt = JinjaPrompt("{{ a }}|{{ b }}|{{ c }}")
    out = prompt(a={"k": "v"}, b=["x", "y"], c="<b>&amp;</b>")
    assert out == "{'k': 'v'}|['x', 'y']|<b>&amp;</b>"


def test_variables_exclude_set_macro_and_loop_names() -> None:
    prompt = JinjaPrompt("{% set s = 1 %}{% macro m(p) %}{{ p }}{% endmacro %}"
                         "{% for i in items %}{{ m(i) }}{{ s }}{% endfor %}{{ z }}")
    assert prompt.variables == ("items", "z")


# ----------------------------------------------------------------------------- unset variables


def test_strict_unset_printed_names_the_variable() -> None:
    with pytest.raises(MissingFieldError) as info:
        JinjaPrompt("<SYS>\n{{ task }}</SYS>")()
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, KeyError)
    assert err.message.startswith("Jinja2 template variable 'task' is used (line 2) but not set")
    assert err.reference is None  # AdalFlow does not raise here


def test_compat_unset_prints_none() -> None:
    assert JinjaPrompt("<SYS>{{ task }}</SYS>", compat="adalflow")() == "<SYS>None</SYS>"


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{% if x %}[{{ x }}]{% endif %}ok", "ok"),
        ("{{ x | default('d') }}", "d"),
        ("{{ 'none' if x is none else 'set' }}", "none"),
        ("{{ x is defined }}", "False"),
        ("{{ x == None }}|{{ x != 'a' }}", "True|True"),
        ("{% if role == 'teacher' %}T{% elif role %}R{% else %}N{% endif %}", "N"),
    ],
)
def test_strict_unset_in_tests_behaves_like_absent(template: str, expected: str) -> None:
    assert JinjaPrompt(template)() == expected


@pytest.mark.parametrize(
    "template",
    ["{% for i in x %}{{ i }}{% endfor %}", "{{ x.name }}", "{{ x | length }}", "{{ x + 1 }}",
     "{{ x ~ 'a' }}", "{{ x[0] }}", "{{ '%.2f' | format(x) }}"],
)
def test_strict_unset_used_as_value_raises(template: str) -> None:
    with pytest.raises(MissingFieldError, match="variable 'x' is used"):
        JinjaPrompt(template)()


def test_explicit_none_is_a_value() -> None:
    assert JinjaPrompt("<{{ x }}>")(x=None) == "<None>"


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("compat", MODES)
def test_invalid_template(compat: str | None) -> None:
    with pytest.raises(TemplateSyntaxError) as info:
        JinjaPrompt("a\n{% if x %}unclosed", compat=compat)
    assert isinstance(info.value, ValueError)
    reference = (
        "Invalid Jinja2 template: Unexpected end of template. Jinja was looking for the following "
        "tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be closed is 'if'."
    )
    assert info.value.reference == ("ValueError", reference)
    if compat:
        assert str(info.value) == reference
    else:
        assert info.value.message.startswith("Invalid Jinja2 template (line 2): Unexpected end")


def test_unknown_filter_is_invalid_at_construction() -> None:
    with pytest.raises(TemplateSyntaxError, match="No filter named 'nope'"):
        JinjaPrompt("{{ x | nope }}")


def test_render_errors() -> None:
    with pytest.raises(TemplateError) as info:
        JinjaPrompt("{{ user.name }}", compat="adalflow")(user={})
    assert str(info.value) == (
        "Error rendering Jinja2 template: 'dict object' has no attribute 'name'"
    )
    with pytest.raises(TemplateError) as info:
        JinjaPrompt("x\n{{ user.name }}")(user={})
    assert str(info.value) == (
        "Error rendering Jinja2 template at line 2: 'dict object' has no attribute 'name'"
    )
    assert info.value.reference == (
        "ValueError", "Error rendering Jinja2 template: 'dict object' has no attribute 'name'"
    )
    with pytest.raises(TemplateError, match="'NoneType' object is not iterable"):
        JinjaPrompt("{% for i in x %}{% endfor %}", compat="adalflow")()


def test_unknown_compat_mode() -> None:
    with pytest.raises(ConfigError, match="unknown compat mode 'lazyllm'"):
        JinjaPrompt(compat="lazyllm")


# ----------------------------------------------------------------------------- nested prompts


@pytest.mark.parametrize("compat", MODES)
def test_nested_prompt_gets_outer_kwargs(compat: str | None) -> None:
    inner = JinjaPrompt(
        "{% for e in examples %}{{ loop.index }}. {{ e }}\n{% endfor %}", compat=compat
    )
    outer = JinjaPrompt("<S>{{ task }}</S>\n{{ block }}<U>{{ q }}</U>", compat=compat)
    out = outer(task="T", block=inner, examples=["a", "b"], q="?")
    assert out == "<S>T</S>\n1. a\n2. b\n<U>?</U>"
    raw = jinja2.Template("{{ task }}/{{ examples | length }}")
    assert outer(task="T", block=raw, examples=["a"], q="?") == "<S>T</S>\nT/1<U>?</U>"


def test_nested_prompt_preset_overridden_by_outer_none_in_compat_only() -> None:
    template = "{{ inner }}{% if x %}!{% endif %}"
    compat_inner = JinjaPrompt("{{ x }}", {"x": "inner"}, compat="adalflow")
    assert JinjaPrompt(template, compat="adalflow")(inner=compat_inner) == "None"
    assert JinjaPrompt(template)(inner=JinjaPrompt("{{ x }}", {"x": "inner"})) == "inner"


def test_nested_errors() -> None:
    inner = JinjaPrompt("{% for e in examples %}{% endfor %}", compat="adalflow")
    with pytest.raises(TemplateError) as info:
        JinjaPrompt("{{ block }}", compat="adalflow")(block=inner)
    assert str(info.value) == (
        "Error rendering Jinja2 template: Error rendering Jinja2 template: "
        "'NoneType' object is not iterable"
    )
    with pytest.raises(MissingFieldError) as missing:
        JinjaPrompt("{{ block }}")(block=JinjaPrompt("{% for e in examples %}{% endfor %}"))
    assert missing.value.key_path == "block"
    assert "'examples'" in missing.value.message


# ----------------------------------------------------------------------------- to_dict / from_dict


def test_to_dict_shape_and_round_trip() -> None:
    prompt = JinjaPrompt("{{ b }}{{ a }}", {"a": [1, {"k": "v"}]})
    assert prompt.to_dict() == {
        "type": "Prompt",
        "data": {
            "_components": {"_ordered_dict": True, "data": []},
            "_parameters": {"_ordered_dict": True, "data": []},
            "training": False,
            "teacher_mode": False,
            "tracing": False,
            "name": "Prompt",
            "_init_args": {"template": None, "prompt_kwargs": {}},
            "template": "{{ b }}{{ a }}",
            "prompt_variables": ["a", "b"],
            "prompt_kwargs": {"a": [1, {"k": "v"}]},
        },
    }
    data = json.loads(json.dumps(prompt.to_dict()))
    rebuilt = JinjaPrompt.from_dict(data)
    assert rebuilt.variables == prompt.variables
    assert rebuilt(b="x") == prompt(b="x") == "x[1, {'k': 'v'}]"


def test_default_template_round_trip_and_nested_preset() -> None:
    prompt = JinjaPrompt(prompt_kwargs={"examples_str": JinjaPrompt("E:{{ n }}")})
    data = prompt.to_dict()
    assert data["data"]["template"] == DEFAULT_TEMPLATE
    assert data["data"]["prompt_kwargs"]["examples_str"]["data"]["template"] == "E:{{ n }}"
    rebuilt = JinjaPrompt.from_dict(json.loads(json.dumps(data)), compat="adalflow")
    assert rebuilt.compat == "adalflow"
    assert rebuilt(n=3) == prompt(n=3)
    assert "<EXAMPLES>\nE:3\n</EXAMPLES>" in rebuilt(n=3)


@pytest.mark.parametrize("bad", [{}, {"data": {}}, {"data": {"template": "x", "prompt_kwargs": 3}}])
def test_from_dict_rejects_malformed(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="data"):
        JinjaPrompt.from_dict(bad)


# ----------------------------------------------------------------------------- compile_jinja


def test_compile_jinja() -> None:
    compiled = compile_jinja("Q: {{ q }}\n{% if ctx %}C: {{ ctx }}\n{% endif %}A:")
    assert compiled.variables == ("ctx", "q")
    assert compiled.render({"q": "x"}) == "Q: x\nA:"
    assert compiled.render({"q": "x"}, ctx="c") == "Q: x\nC: c\nA:"
    assert compiled.missing({"q": 1}) == ("ctx",)
    with pytest.raises(MissingFieldError, match="'q'"):
        compiled.render({})
    assert compile_jinja("[{{ q }}]", strict=False).render({}) == "[None]"
    with pytest.raises(TemplateSyntaxError, match=r"line 1"):
        compile_jinja("{{ q ")
    # Same environment as prompts: blocks trimmed, trailing newline kept.
    assert compile_jinja("{% if 1 %}\n  x\n{% endif %}\n").render() == "  x\n"


# ----------------------------------------------------------------------------- properties

_any_text = st.text(alphabet=st.sampled_from(list("{}%#ab \n\t<>/é汉😀")), max_size=30)
_markers = st.sampled_from(["{{ x }}", "{% if y %}", "{# c #}", "{{", "%}"])
_marked_text = st.builds(lambda a, m, b: a + m + b, _any_text, _markers, _any_text)


@given(value=st.one_of(_any_text, _marked_text))
def test_values_inserted_verbatim(value: str) -> None:
    assert JinjaPrompt("A{{ v }}B")(v=value) == f"A{value}B"
    assert compile_jinja("{{ v }}").render({"v": value}) == value


@given(value=_marked_text)
def test_default_template_input_verbatim(value: str) -> None:
    out = JinjaPrompt()(input_str=value)
    assert out == EMPTY_DEFAULT.replace("<END_OF_USER_PROMPT>", f"{value}\n<END_OF_USER_PROMPT>")


@given(
    values=st.dictionaries(st.sampled_from(DEFAULT_VARIABLES),
                           st.one_of(st.none(), st.just(""), _any_text), max_size=9),
)
def test_default_template_any_subset_same_in_both_modes(values: dict[str, str | None]) -> None:
    strict = JinjaPrompt(prompt_kwargs=values)
    first = strict()
    assert first == strict() == JinjaPrompt(prompt_kwargs=values, compat="adalflow")()
    for value in values.values():
        if value:
            assert f"\n{value}\n" in first


# ----------------------------------------------------------------------------- conformance runner


def _corpus(shared_dir: Path) -> tuple[Path, Path, int]:
    cases = shared_dir / "conformance" / "peers" / "cases" / "adalflow"
    golden = shared_dir / "conformance" / "peers" / "golden" / "adalflow"
    count = sum(len(json.loads(p.read_text(encoding="utf-8"))) for p in cases.glob("*.json"))
    return cases, golden, count


def test_conformance_compat(shared_dir: Path) -> None:
    cases, golden, count = _corpus(shared_dir)
    code, output = run_conformance("adalflow", cases, golden, "compat")
    assert code == 0, output
    assert output.strip().splitlines()[-1] == f"{count} passed, 0 failed"


def test_conformance_default(shared_dir: Path) -> None:
    cases, golden, count = _corpus(shared_dir)
    code, output = run_conformance("adalflow", cases, golden, "default")
    assert code == 0, output
    last = output.strip().splitlines()[-1]
    match = re.fullmatch(r"(\d+) passed, 0 failed(?:, (\d+) diverged)?", last)
    assert match, output
    assert int(match[1]) + int(match[2] or 0) == count
    for block in output.split("DIVERGED ")[1:]:
        assert "unset template variable(s)" in block


def _write(folder: Path, name: str, data: object) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(data), encoding="utf-8")


def test_runner_fields_on_hand_written_cases(tmp_path: Path) -> None:
    cases = [
        {"id": "nested_update_calls", "template": "<{{ head }}>{{ body }}",
         "prompt_kwargs": {"head": "h0"}, "update_prompt_kwargs": {"head": "h1"},
         "nested": {"body": {"template": "{{ head }}+{{ extra }}", "prompt_kwargs": {}}},
         "calls": [{"extra": "e1"}, {"extra": "e2", "head": "h2"}]},
        {"id": "to_dict_round_trip", "template": "{{ a }}", "prompt_kwargs": {"a": "x"},
         "call_kwargs": {}, "to_dict": True},
        {"id": "unset_printed", "template": "[{{ a }}]", "call_kwargs": {}},
    ]
    to_dict = JinjaPrompt("{{ a }}", {"a": "x"}).to_dict()
    golden = {"peer": "adalflow", "version": "hand", "cases_file": "c.json", "results": [
        {"id": "nested_update_calls", "variables": ["body", "head"],
         "outputs": ["<h1>h1+e1", "<h2>h2+e2"]},
        {"id": "to_dict_round_trip", "variables": ["a"], "output": "x", "to_dict": to_dict,
         "from_dict_variables": ["a"], "from_dict_output": "x"},
        {"id": "unset_printed", "variables": ["a"], "output": "[None]"},
    ]}
    _write(tmp_path / "cases", "c.json", cases)
    _write(tmp_path / "golden", "c.json", golden)
    code, output = run_conformance("adalflow", tmp_path / "cases", tmp_path / "golden", "compat")
    assert (code, output.strip()) == (0, "3 passed, 0 failed")
    code, output = run_conformance("adalflow", tmp_path / "cases", tmp_path / "golden", "default")
    assert code == 0 and output.strip().endswith("2 passed, 0 failed, 1 diverged"), output
    assert "DIVERGED unset_printed" in output and "MissingFieldError" in output


def test_runner_reports_failures(tmp_path: Path) -> None:
    case = {"id": "wrong", "template": "{{ a }}", "call_kwargs": {"a": 1}}
    outcome = suite.check(case, {"id": "wrong", "variables": ["a"], "output": "2"}, "default")
    assert outcome.status == "failed" and "output" in outcome.details[0]
    # A difference that is not about unset variables is never excused as a divergence.
    outcome = suite.check(case, {"id": "wrong", "variables": ["a"], "output": "2"}, "compat")
    assert outcome.status == "failed"
    error = suite.replay({"id": "bad", "template": "{% if %}"}, None).result
    message = "Invalid Jinja2 template: Expected an expression, got 'end of statement block'"
    assert error == {"id": "bad", "error": {"type": "ValueError", "message": message}}


def test_user_doc_example_prints_what_it_shows(capsys: pytest.CaptureFixture[str]) -> None:
    doc = (REPO / "docs" / "jinja_prompts.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", doc, re.S)
    shown = re.search(r"prints\n\n```text\n(.*?)```", doc, re.S)
    assert code and shown
    exec(compile(code[1], "docs/jinja_prompts.md", "exec"), {})
    assert capsys.readouterr().out == shown[1]


def test_pickle_round_trip() -> None:
    import pickle

    prompt = JinjaPrompt("{{ a }}{{ b }}", {"a": "A"}, compat="adalflow")
    again = pickle.loads(pickle.dumps(prompt))
    assert (again.compat, again(), again.variables) == ("adalflow", "ANone", ("a", "b"))
    compiled = pickle.loads(pickle.dumps(compile_jinja("{{ a }}", strict=False)))
    assert compiled == compile_jinja("{{ a }}", strict=False) and compiled.render() == "None"
