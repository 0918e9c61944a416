"""The prompt-building behaviours OpenCompass's own unit tests check, through our public API.

OpenCompass's suite checks its ``PromptList`` (format, replace, ``+``, ``str``), its
``PromptTemplate`` (``generate_item``, ``generate_ice_item``, ``generate_label_prompt_item``
on str, meta and multi-round templates), its ``RawPromptTemplate`` (validation, filling)
and its two template parsers (``LMTemplateParser``, ``APITemplateParser``: meta templates,
``begin``/``end``, reserved roles, fallback roles, generating roles, multi-round). Each
behaviour is checked here on inputs and expected outputs of our own, written by hand, in
compat mode (``policy="opencompass"``) and in the default mode where no documented defect
fix applies (where one does, both sides are checked). The last tests reach the same
renderers from a config file, through the CLI.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from pathlib import Path

import pytest
from _cli import run_cli

import prompt_compiler as pc
from prompt_compiler import (
    APITemplateParser,
    LMTemplateParser,
    Marker,
    PromptList,
    PromptTemplate,
    RawPromptTemplate,
    RoleItem,
)

BOTH = pytest.mark.parametrize("policy", ["opencompass", "default"])
BB, BE = {"section": "begin", "pos": "begin"}, {"section": "begin", "pos": "end"}
RB, RE = {"section": "round", "pos": "begin"}, {"section": "round", "pos": "end"}
IB, IE = {"section": "ice", "pos": "begin"}, {"section": "ice", "pos": "end"}


# -- PromptList -------------------------------------------------------------------------

def test_prompt_list_is_built_from_and_equals_its_list_form() -> None:
    assert PromptList() == []
    assert PromptList([]) == []
    pl = PromptList(["x", {"role": "BOT", "prompt": "y"}, RB])
    assert pl == ["x", {"role": "BOT", "prompt": "y"}, RB]
    assert pl == ["x", {"prompt": "y", "role": "BOT"}, RB]  # dicts: key order does not count
    assert pl != ["x", {"role": "BOT", "prompt": "z"}, RB]
    assert pl != ["x", {"role": "BOT", "prompt": "y"}]
    assert pl[1] == RoleItem.of("BOT", "y") and pl[2] == Marker("round", "begin")
    assert pl == PromptList(pl.to_list())
    assert pl != ("x", {"role": "BOT", "prompt": "y"}, RB)  # a list, as OpenCompass's is
    with pytest.raises(TypeError):
        PromptList(["ok", 7])
    with pytest.raises(TypeError):
        PromptList("text")


@BOTH
def test_format_fills_str_items_and_role_prompts_and_keeps_the_rest(policy: str) -> None:
    pl = PromptList(["{n} + {m} =", {"role": "HUMAN", "prompt": "({n})", "end": "{m}"}, RB, "!"])
    assert pl.format(policy, n=3, m=4, unused=0) == [
        "3 + 4 =", {"role": "HUMAN", "prompt": "(3)", "end": "{m}"}, RB, "!"]
    assert pl.format(policy, m=4) == [
        "{n} + 4 =", {"role": "HUMAN", "prompt": "({n})", "end": "{m}"}, RB, "!"]
    assert pl.format(policy, other=1) == pl
    assert pl.format(policy) is not pl or pl.format(policy) == pl
    assert pl == ["{n} + {m} =", {"role": "HUMAN", "prompt": "({n})", "end": "{m}"}, RB, "!"]


def test_format_refills_values_in_compat_mode_only() -> None:
    pl = PromptList(["<{a}|{b}>"])
    # OpenCompass replaces one key after the other: a value is read again as a template
    # by the keys that come after it (defect D1), not by those before it.
    assert pl.format("opencompass", b="{a}", a="A") == ["<A|A>"]
    assert pl.format("opencompass", a="A", b="{a}") == ["<A|{a}>"]
    assert pl.format(pc.Policy.of("opencompass"), a="{b}", b="B") == ["<B|B>"]
    # the default fills each placeholder once, whatever the order
    assert pl.format(b="{a}", a="A") == ["<A|{a}>"]
    assert pl.format("default", a="{b}", b="B") == ["<{b}|B>"]


def test_replace_with_text_and_with_a_prompt_list() -> None:
    pl = PromptList(["cat dog", {"role": "HUMAN", "prompt": "dog?"}, IB, "xdogy"])
    assert pl.replace("dog", "fox") == [
        "cat fox", {"role": "HUMAN", "prompt": "fox?"}, IB, "xfoxy"]
    assert pl.replace("dog", "") == ["cat ", {"role": "HUMAN", "prompt": "?"}, IB, "xy"]
    pieces = PromptList(["+", {"role": "BOT", "prompt": "b"}])
    # a str item is cut at each match, the PromptList's items put in between, empty cuts
    # left out; a role prompt holding the text cannot take a PromptList
    only_str = PromptList(["cat dog", IB, "dog", "xdogydog"])
    assert only_str.replace("dog", pieces) == [
        "cat ", "+", {"role": "BOT", "prompt": "b"}, IB, "+", {"role": "BOT", "prompt": "b"},
        "x", "+", {"role": "BOT", "prompt": "b"}, "y", "+", {"role": "BOT", "prompt": "b"}]
    with pytest.raises(TypeError):
        pl.replace("dog", pieces)
    assert pl.replace("cow", pieces) == pl  # nothing to replace
    assert pl == ["cat dog", {"role": "HUMAN", "prompt": "dog?"}, IB, "xdogy"]  # unchanged


def test_add_radd_and_iadd() -> None:
    pl = PromptList(["a"])
    assert pl + "b" == ["a", "b"]
    assert pl + PromptList(["b", RB]) == ["a", "b", RB]
    assert pl + ["b"] == ["a", "b"]
    assert pl + "" == ["a"] and pl + [] == ["a"] and pl + None == ["a"]
    assert "z" + pl == ["z", "a"]
    assert "" + pl == ["a"]
    assert ["y", {"role": "BOT"}] + pl == ["y", {"role": "BOT"}, "a"]
    assert isinstance("z" + pl, PromptList) and isinstance(pl + "b", PromptList)
    acc = pl
    acc += "b"
    acc += PromptList([RB])
    acc += ""
    assert acc == ["a", "b", RB]
    assert pl == ["a"]  # a PromptList never changes: += rebinds the name


def test_str_joins_texts_and_prompts() -> None:
    pl = PromptList(["one", " two", {"role": "BOT", "prompt": "!"}, {"role": "BOT"}, RB, "."])
    assert str(pl) == "one two!."
    assert str(PromptList()) == ""


# -- PromptTemplate ---------------------------------------------------------------------

ROW = {"word": "merci", "lang": "fr"}
QA = {"begin": [{"role": "SYSTEM", "fallback_role": "HUMAN", "prompt": "Translate."}, "</E>"],
      "round": [{"role": "HUMAN", "prompt": "{word} ({lang})"},
                {"role": "BOT", "prompt": "= {lang}:{word}"}]}
TURNS = {"round": [{"role": "HUMAN", "prompt": "{word}?"},
                   {"role": "BOT", "prompt": "ok", "end": "/"},
                   {"role": "HUMAN", "prompt": "more", "begin": ">>"},
                   {"role": "BOT", "prompt": "{lang}!"}]}
SHOT = PromptList([IB, {"role": "HUMAN", "prompt": "h"}, {"role": "BOT", "prompt": "k"}, IE])


@BOTH
def test_str_template_items(policy: str) -> None:
    pt = PromptTemplate("Say {word} in {lang}.")
    assert pt.template == "Say {word} in {lang}." and pt.prompt_type == "origin"
    assert pt.generate_ice_item(ROW, None, policy=policy) == "Say merci in fr."
    assert pt.generate_item(ROW, policy=policy) == "Say merci in fr."
    assert pt.generate_item(ROW, "lang", "??", policy=policy) == "Say merci in ??."
    with_ice = PromptTemplate("<E>Say {word}.", ice_token="<E>")
    assert with_ice.generate_label_prompt_item(ROW, "[shots] ", None, policy=policy) == (
        "[shots] Say merci.")
    assert with_ice.generate_item(ROW, ice_field_replace_token="[s]", policy=policy) == (
        "[s]Say merci.")


@BOTH
def test_meta_template_in_context_example_drops_begin_and_marks_ice(policy: str) -> None:
    pt = PromptTemplate(QA, ice_token="</E>")
    assert pt.prompt_type == "meta"
    assert pt.generate_ice_item(ROW, None, policy=policy) == [
        IB, {"role": "HUMAN", "prompt": "merci (fr)"}, {"role": "BOT", "prompt": "= fr:merci"}, IE]
    multi = PromptTemplate(TURNS, ice_token="</E>")
    assert multi.generate_ice_item(ROW, None, policy=policy) == [
        IB, {"role": "HUMAN", "prompt": "merci?"}, {"role": "BOT", "prompt": "ok", "end": "/"},
        {"role": "HUMAN", "prompt": "more", "begin": ">>"}, {"role": "BOT", "prompt": "fr!"}, IE]


@BOTH
def test_meta_template_prompts_splice_the_examples_into_begin(policy: str) -> None:
    pt = PromptTemplate(QA, ice_token="</E>")
    expected = [
        BB, {"role": "SYSTEM", "fallback_role": "HUMAN", "prompt": "Translate."},
        IB, {"role": "HUMAN", "prompt": "h"}, {"role": "BOT", "prompt": "k"}, IE, BE,
        RB, {"role": "HUMAN", "prompt": "merci (fr)"}, {"role": "BOT", "prompt": "= fr:merci"}, RE]
    assert pt.generate_label_prompt_item(ROW, SHOT, None, policy=policy) == expected
    assert pt.generate_item(ROW, ice_field_replace_token=SHOT, policy=policy) == expected
    masked = pt.generate_item(ROW, "lang", "", SHOT, policy=policy)
    assert masked[-3:] == [{"role": "HUMAN", "prompt": "merci ()"},
                           {"role": "BOT", "prompt": "= :merci"}, RE]
    # a template without the ice token in its text keeps its rounds and ignores the examples
    multi = PromptTemplate(TURNS, ice_token="</E>")
    rounds = [RB, {"role": "HUMAN", "prompt": "merci?"},
              {"role": "BOT", "prompt": "ok", "end": "/"},
              {"role": "HUMAN", "prompt": "more", "begin": ">>"},
              {"role": "BOT", "prompt": "fr!"}, RE]
    assert multi.generate_label_prompt_item(ROW, SHOT, None, policy=policy) == rounds
    assert multi.generate_item(ROW, ice_field_replace_token=SHOT, policy=policy) == rounds


def test_template_methods_follow_the_documented_fixes() -> None:
    pt = PromptTemplate("<E>{word}|{lang}", ice_token="<E>")
    shots = "{lang} "
    # OpenCompass fills the inserted examples with the test row (D1); the default does not
    assert pt.generate_item(ROW, ice_field_replace_token=shots, policy="opencompass") == (
        "fr merci|fr")
    assert pt.generate_item(ROW, ice_field_replace_token=shots) == "{lang} merci|fr"
    sep = PromptTemplate("Q {word}<S> A {lang}<S>", sep_token="<S>")
    # OpenCompass leaves the sep_token in an in-context example (D2); the default removes it
    assert sep.generate_ice_item(ROW, None, policy="opencompass") == "Q merci<S> A fr<S>"
    assert sep.generate_ice_item(ROW, None) == "Q merci A fr"
    assert sep.generate_label_prompt_item(ROW, "", None, remain_sep=True) == "Q merci<S> A fr<S>"
    assert sep.generate_label_prompt_item(ROW, "", None) == "Q merci A fr"


# -- RawPromptTemplate ------------------------------------------------------------------

CHAT = [{"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Capital of {country}?"},
        {"role": "assistant", "content": "{capital}"}]
CITY = {"country": "Peru", "capital": "Lima"}
FILLED = [{"role": "system", "content": "Be terse."},
          {"role": "user", "content": "Capital of Peru?"},
          {"role": "assistant", "content": "Lima"}]


def test_raw_prompt_template_attributes_and_repr() -> None:
    rpt = RawPromptTemplate(CHAT)
    assert rpt.messages == CHAT and rpt.messages is not CHAT
    assert rpt.format_variables is True and rpt.prompt_type == "raw_messages"
    assert rpt.ice_token == "</E>" and rpt.sep_token is None
    assert RawPromptTemplate(CHAT, format_variables=False).format_variables is False
    text = repr(rpt)
    assert text.startswith("RawPromptTemplate(") and "messages=" in text


@pytest.mark.parametrize(("messages", "error", "words"), [
    ({"role": "user", "content": "x"}, TypeError, "must be a list"),
    ([{"role": "user", "content": "x"}, 3.5], TypeError, "must be a dict or str"),
    ([{"content": "x"}], ValueError, "missing 'role'"),
    ([{"role": "user"}], ValueError, "missing 'content'"),
    ([{"role": "robot", "content": "x"}], ValueError, "invalid role"),
])
def test_raw_prompt_template_validates_its_messages(messages: object, error: type,
                                                    words: str) -> None:
    with pytest.raises(error) as info:
        RawPromptTemplate(messages)  # type: ignore[arg-type]
    assert words in str(info.value)
    assert isinstance(info.value, pc.TemplateError)


@BOTH
def test_raw_prompt_template_fills_content(policy: str) -> None:
    rpt = RawPromptTemplate(CHAT)
    assert rpt.generate_item(CITY, policy=policy) == FILLED
    assert rpt.generate_ice_item(CITY, policy=policy) == FILLED
    assert rpt.generate_label_prompt_item(CITY, "shots", "a label", policy=policy) == FILLED
    shot = [{"role": "user", "content": "Capital of Chad?"},
            {"role": "assistant", "content": "N'Djamena"}]
    with_token = RawPromptTemplate(["</E>", *CHAT])
    assert with_token.generate_item(CITY, ice_field_replace_token=shot, policy=policy) == [
        *shot, *FILLED]
    # a PPL prompt never holds the examples (OpenCompass's generate_label_prompt_item is
    # generate_item(entry))
    assert with_token.generate_label_prompt_item(CITY, shot, "a label", policy=policy) == FILLED
    assert rpt.messages == CHAT  # the template is never changed
    raw = RawPromptTemplate(CHAT, format_variables=False).generate_item(CITY, policy=policy)
    assert [m["content"] for m in raw] == ["Be terse.", "Capital of {country}?", "{capital}"]


def test_raw_prompt_template_output_column_masked_in_default_mode_only() -> None:
    rpt = RawPromptTemplate(CHAT)
    kept = rpt.generate_item(CITY, "capital", "<hidden>", policy="opencompass")
    assert kept == FILLED  # OpenCompass ignores output_field (defect D15)
    masked = rpt.generate_item(CITY, "capital", "<hidden>")
    assert masked == [*FILLED[:2], {"role": "assistant", "content": "<hidden>"}]


RAW_PPL = """\
datasets:
  - abbr: capitals
    reader_cfg: {input_columns: [country], output_column: capital}
    infer_cfg:
      ice_template:
        type: RawPromptTemplate
        messages:
          - {role: user, content: 'Capital of {country}?'}
          - {role: assistant, content: '{capital}'}
      prompt_template:
        type: RawPromptTemplate
        messages: ['</E>', {role: user, content: 'Capital of {country}?'}]
      retriever: {type: FixKRetriever, fix_id_list: [0]}
      inferencer: {type: PPLInferencer%s}
    splits:
      train: [{country: Chad, capital: "N'Djamena"}]
      test: [{country: Peru, capital: Lima}]
models:
  - {abbr: gpt, type: OpenAISDK, path: gpt-4o}
"""


@pytest.mark.parametrize("mode", ["compat", "default"])
def test_raw_prompt_template_ppl_through_the_cli(tmp_path: Path, mode: str) -> None:
    (tmp_path / "raw.yaml").write_text(RAW_PPL % ", labels: [Lima, Quito]", encoding="utf-8")
    proc = run_cli("raw.yaml", "-o", "out", "--mode", mode, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "out" / "gpt" / "capitals.jsonl").read_text(encoding="utf-8")
    records = [json.loads(line) for line in lines.splitlines()]
    assert [r["label"] for r in records] == ["Lima", "Quito"]
    for record in records:  # the example is not in a PPL prompt
        assert record["prompt"] == [{"role": "user", "content": "Capital of Peru?"}]
    # without labels OpenCompass looks for the template's label dict (AttributeError)
    (tmp_path / "raw.yaml").write_text(RAW_PPL % "", encoding="utf-8")
    proc = run_cli("raw.yaml", "-o", "out2", "--mode", mode, cwd=tmp_path)
    assert proc.returncode == 1
    assert "infer_cfg.prompt_template" in proc.stderr and "labels" in proc.stderr


# -- LMTemplateParser / APITemplateParser -----------------------------------------------

SCRIPT = PromptList([
    BB, "head|", {"role": "SYSTEM", "fallback_role": "HUMAN", "prompt": "rules"},
    IB, {"role": "HUMAN", "prompt": "q0"}, {"role": "BOT", "prompt": "a0"}, IE, BE,
    RB, {"role": "HUMAN", "prompt": "q1", "end": "|"}, {"role": "BOT", "prompt": "a1"},
    {"role": "HUMAN", "prompt": "q2"}, {"role": "BOT", "prompt": "a2"}, RE,
    {"section": "end", "pos": "begin"}, "|tail", {"section": "end", "pos": "end"},
])
JOINED = "head|\nrules\nq0\na0\nq1\na1\nq2\na2\n|tail"
PLAN_GENERATES = {
    "begin": "<<sys-start>>",
    "round": [{"role": "HUMAN", "begin": "[U]", "end": "[/U]"},
              {"role": "PLAN", "begin": "[P]", "end": "[/P]", "prompt": "-", "generate": True},
              {"role": "BOT", "begin": "[A]", "end": "[/A]"}],
    "end": "<<done>>",
}
BOT_GENERATES = {
    "begin": "<<sys-start>>",
    "round": [{"role": "HUMAN", "begin": "[U]", "end": "[/U]"},
              {"role": "PLAN", "begin": "[P]", "end": "[/P]", "prompt": "-"},
              {"role": "BOT", "begin": "[A]", "end": "[/A]", "generate": True}],
    "end": "<<done>>",
    "reserved_roles": [{"role": "SYSTEM", "begin": "[S]", "end": "[/S]"}],
}


@BOTH
def test_lm_parser_strings_batches_and_no_meta_template(policy: str) -> None:
    parser = LMTemplateParser(policy=policy)
    for mode in ("gen", "ppl"):
        assert parser.parse_template("as is {x}", mode) == "as is {x}"
        assert parser.parse_template(["one", "two"], mode) == ["one", "two"]
        assert parser.parse_template(("one", SCRIPT), mode) == ["one", JOINED]
        # without a meta template the last BOT's text is kept in gen mode too
        assert parser.parse_template(SCRIPT, mode) == JOINED
    with pytest.raises(ValueError):
        parser.parse_template(SCRIPT, "chat")


@BOTH
def test_lm_parser_with_a_meta_template(policy: str) -> None:
    # A role absent from a round is still rendered, with the meta role's own prompt ('-');
    # an item's 'end' overrides the role's for that turn; SYSTEM without its own role takes
    # HUMAN's (fallback_role); gen mode stops at the last round's generating role and leaves
    # out the end section and the meta end.
    early = LMTemplateParser(PLAN_GENERATES, policy=policy)
    assert early.parse_template(SCRIPT, "gen") == (
        "<<sys-start>>head|[U]rules[/U][U]q0[/U][P]-[/P][A]a0[/A]"
        "[U]q1|[P]-[/P][A]a1[/A][U]q2[/U][P]")
    assert early.parse_template(SCRIPT, "ppl") == (
        "<<sys-start>>head|[U]rules[/U][U]q0[/U][P]-[/P][A]a0[/A]"
        "[U]q1|[P]-[/P][A]a1[/A][U]q2[/U][P]-[/P][A]a2[/A]|tail<<done>>")
    late = LMTemplateParser(BOT_GENERATES, policy=policy)  # SYSTEM is a reserved role here
    assert late.parse_template(SCRIPT, "gen") == (
        "<<sys-start>>head|[S]rules[/S][U]q0[/U][P]-[/P][A]a0[/A]"
        "[U]q1|[P]-[/P][A]a1[/A][U]q2[/U][P]-[/P][A]")
    assert late.parse_template(SCRIPT, "ppl") == (
        "<<sys-start>>head|[S]rules[/S][U]q0[/U][P]-[/P][A]a0[/A]"
        "[U]q1|[P]-[/P][A]a1[/A][U]q2[/U][P]-[/P][A]a2[/A]|tail<<done>>")
    assert late.parse_template([SCRIPT, "plain"], "gen")[1] == "plain"


def test_lm_parser_round_role_outside_the_meta_round() -> None:
    # A round item whose role the meta template does not have, with a fallback_role in the
    # round: OpenCompass's LM parser raises KeyError (defect D12); the default renders it
    # as the fallback role.
    prompt = PromptList([RB, {"role": "NOTE", "fallback_role": "HUMAN", "prompt": "s"},
                         {"role": "BOT", "prompt": "b"}, RE])
    with pytest.raises(KeyError):
        LMTemplateParser(BOT_GENERATES, policy="opencompass").parse_template(prompt, "ppl")
    assert LMTemplateParser(BOT_GENERATES).parse_template(prompt, "ppl") == (
        "<<sys-start>>[U]s[/U][P]-[/P][A]b[/A]<<done>>")


API_META = {"round": [{"role": "HUMAN", "api_role": "HUMAN"},
                      {"role": "BOT", "api_role": "BOT", "generate": True}]}
API_META_SYSTEM = {**API_META, "reserved_roles": [{"role": "SYSTEM", "api_role": "SYSTEM"}]}


@BOTH
def test_api_parser_without_a_meta_template_joins_like_the_lm_parser(policy: str) -> None:
    parser = APITemplateParser(policy=policy)
    for mode in ("gen", "ppl"):
        assert parser.parse_template("as is", mode) == "as is"
        assert parser.parse_template(["one", "two"], mode) == ["one", "two"]
        assert parser.parse_template(SCRIPT, mode) == JOINED


@BOTH
def test_api_parser_with_a_meta_template(policy: str) -> None:
    # Bare strings are dropped with a warning, the fallback HUMAN message merges with the
    # next HUMAN one, gen mode leaves out the last round's BOT message.
    parser = APITemplateParser(API_META, policy=policy)
    with pytest.warns(UserWarning):
        gen = parser.parse_template(SCRIPT, "gen")
    turns = [{"role": "HUMAN", "prompt": "rules\nq0"}, {"role": "BOT", "prompt": "a0"},
             {"role": "HUMAN", "prompt": "q1|"}, {"role": "BOT", "prompt": "a1"},
             {"role": "HUMAN", "prompt": "q2"}]
    assert gen == turns
    assert gen == PromptList(turns)
    with pytest.warns(UserWarning):
        assert parser.parse_template(SCRIPT, "ppl") == [*turns, {"role": "BOT", "prompt": "a2"}]
    with_system = APITemplateParser(API_META_SYSTEM, policy=policy)
    system_turns = [{"role": "SYSTEM", "prompt": "rules"}, {"role": "HUMAN", "prompt": "q0"},
                    *turns[1:]]
    with pytest.warns(UserWarning):
        assert with_system.parse_template(SCRIPT, "gen") == system_turns
    with pytest.warns(UserWarning):
        assert with_system.parse_template(SCRIPT, "ppl") == [
            *system_turns, {"role": "BOT", "prompt": "a2"}]
    openai = [{"role": "user", "content": "hi"}]
    assert parser.parse_template(openai, "gen") == openai  # OpenAI messages pass through


def test_api_parser_quiet_without_text_to_drop() -> None:
    prompt = PromptList([RB, {"role": "HUMAN", "prompt": "x"}, RE])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert APITemplateParser(API_META).parse_template(prompt, "gen") == [
            {"role": "HUMAN", "prompt": "x"}]


# -- the same renderers from a config file, through the CLI -----------------------------

CONFIG = """\
datasets:
  - abbr: plan
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      ice_template:
        type: PromptTemplate
        template:
          round:
            - {role: HUMAN, prompt: '{q}'}
            - {role: BOT, prompt: '{a}'}
      prompt_template:
        type: PromptTemplate
        ice_token: </E>
        template:
          begin: ['head|', {role: SYSTEM, fallback_role: HUMAN, prompt: rules}, </E>]
          round:
            - {role: HUMAN, prompt: q1, end: '|'}
            - {role: BOT, prompt: a1}
            - {role: HUMAN, prompt: '{q}'}
            - {role: BOT, prompt: '{a}'}
      retriever: {type: FixKRetriever, fix_id_list: [0]}
      inferencer: {type: GenInferencer}
    splits:
      train: [{q: q0, a: a0}]
      test: [{q: q2, a: a2}]
models:
  - abbr: early
    renderer: lm
    meta_template:
      begin: <<sys-start>>
      round:
        - {role: HUMAN, begin: '[U]', end: '[/U]'}
        - {role: PLAN, begin: '[P]', end: '[/P]', prompt: '-', generate: true}
        - {role: BOT, begin: '[A]', end: '[/A]'}
      end: <<done>>
  - abbr: chat
    renderer: api
    meta_template:
      round:
        - {role: HUMAN, api_role: HUMAN}
        - {role: BOT, api_role: BOT, generate: true}
      reserved_roles:
        - {role: SYSTEM, api_role: SYSTEM}
"""


@pytest.mark.parametrize("mode", ["compat", "default"])
def test_meta_templates_from_a_config_through_the_cli(tmp_path: Path, mode: str) -> None:
    (tmp_path / "plan.yaml").write_text(CONFIG, encoding="utf-8")
    proc = run_cli("plan.yaml", "-o", "out", "--mode", mode, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "out" / "early" / "plan.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    assert record["prompt"] == ("<<sys-start>>head|[U]rules[/U][U]q0[/U][P]-[/P][A]a0[/A]"
                                "[U]q1|[P]-[/P][A]a1[/A][U]q2[/U][P]")
    assert record["ice_ids"] == [0] and record["gold"] == "a2"
    lines = (tmp_path / "out" / "chat" / "plan.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["prompt"] == [
        {"role": "system", "content": "rules"}, {"role": "user", "content": "q0"},
        {"role": "assistant", "content": "a0"}, {"role": "user", "content": "q1|"},
        {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"}]


# -- DatasetReader ranges ---------------------------------------------------------------

def _test_ids(n: int, test_range: object) -> list[int]:
    from prompt_compiler.data.reader import prepare_rows

    reader = pc.ReaderConfig(("i",), None, test_range=test_range)
    return [r["i"] for r in prepare_rows("d", reader, rows=[{"i": i} for i in range(n)]).test]


@pytest.mark.parametrize(("n", "test_range", "ids"), [
    (10, None, list(range(10))), (10, 0, list(range(10))), (10, -2, list(range(10))),
    (10, 10, list(range(10))), (10, 12, list(range(10))), (10, 1.0e9, list(range(10))),
    (10, 3, [1, 5, 6]), (10, 0.3, [1, 5, 6]),  # 0.3 of 10 rows is 3: the same draw
    (10, 0.5, [2, 3, 1, 0, 8]), (10, "[1:9:3]", [1, 4, 7]), (10, "[-3:]", [7, 8, 9]),
    (10, "[::-1]", list(range(9, -1, -1))), (10, "[:0]", []),
    (1, 0.5, []), (3, 0.2, []),  # a fraction of under one row keeps no row
    (1, 2.5, [0]),  # at least the number of rows: all of them
])
def test_reader_ranges(n: int, test_range: object, ids: list[int]) -> None:
    assert _test_ids(n, test_range) == ids


def test_a_float_range_of_one_row_or_more_is_an_error(tmp_path: Path) -> None:
    # OpenCompass slices its row list with the float (TypeError); both modes refuse it.
    with pytest.raises(pc.ConfigError, match="fraction") as info:
        _test_ids(10, 2.0)
    assert info.value.reference is not None and info.value.reference[0] == "TypeError"
    (tmp_path / "r.yaml").write_text(
        "datasets:\n  - abbr: r\n    reader_cfg: {input_columns: [q], test_range: 2.5}\n"
        "    infer_cfg:\n      prompt_template: {type: PromptTemplate, template: '{q}'}\n"
        "      retriever: {type: ZeroRetriever}\n      inferencer: {type: GenInferencer}\n"
        "    rows: [{q: a}, {q: b}, {q: c}]\n", encoding="utf-8")
    proc = run_cli("r.yaml", "--model", "echo", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 1
    assert "test_range" in proc.stderr and "fraction" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# -- OpenCompass 0.5.4's API model classes ----------------------------------------------

@pytest.mark.parametrize(("model_class", "prompt"), [
    ("GeminiSDK", {"contents": [{"role": "user", "parts": [{"text": "Hi?"}]}]}),
    ("LiteLLMAPI", [{"role": "user", "content": "Hi?"}]),
    ("ClaudeSDK", {"messages": [{"role": "user", "content": "Hi?"}]}),
    ("TeleChat", [{"role": "HUMAN", "prompt": "Hi?"}]),
    ("TeleChatStream", [{"role": "HUMAN", "prompt": "Hi?"}]),
    ("OpenAISDKResponse", [{"role": "user", "content": "Hi?"}]),  # OpenAI messages
    ("OpenAISDKRollout", [{"role": "user", "content": "Hi?"}]),
])
def test_every_api_model_class_of_opencompass_is_known(tmp_path: Path, model_class: str,
                                                       prompt: object) -> None:
    (tmp_path / "m.py").write_text(
        "from opencompass.models import " + model_class + "\n"
        "api_meta = dict(round=[dict(role='HUMAN', api_role='HUMAN'),\n"
        "                       dict(role='BOT', api_role='BOT', generate=True)])\n"
        "models = [dict(abbr='m', type=" + model_class + ", path='x', key='k', max_seq_len=99,"
        " meta_template=api_meta)]\n"
        "datasets = [dict(abbr='d', reader_cfg=dict(input_columns=['q']), infer_cfg=dict(\n"
        "    prompt_template=dict(type='PromptTemplate', template=dict(round=[\n"
        "        dict(role='HUMAN', prompt='{q}'), dict(role='BOT', prompt='')])),\n"
        "    retriever=dict(type='ZeroRetriever'), inferencer=dict(type='GenInferencer')),\n"
        "    rows=[dict(q='Hi?')])]\n", encoding="utf-8")
    proc = run_cli("m.py", "-o", "out", "--strict", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "out" / "m" / "d.jsonl").read_text(encoding="utf-8"))
    assert record["prompt"] == prompt


# -- an API meta template given as messages ---------------------------------------------

LIST_META = """\
datasets:
  - abbr: capitals
    reader_cfg: {input_columns: [country], output_column: capital}
    infer_cfg:
      ice_template:
        type: RawPromptTemplate
        messages:
          - {role: user, content: 'Capital of {country}?'}
          - {role: assistant, content: '{capital}'}
      prompt_template:
        type: RawPromptTemplate
        messages: ['</E>', {role: user, content: 'Capital of {country}?'}]
      retriever: {type: FixKRetriever, fix_id_list: [0]}
      inferencer: {type: GenInferencer}
    splits:
      train: [{country: Chad, capital: "N'Djamena"}]
      test: [{country: Peru, capital: Lima}]
models:
  - abbr: gpt
    type: OpenAISDK
    path: gpt-4o
    meta_template: [{role: system, content: 'Be brief. '}, {role: user, content: 'Q: '}]
"""


def test_api_meta_template_of_messages_merges_into_message_prompts() -> None:
    # A meta message whose role is the next prompt message's is prefixed to it; one whose
    # role does not come later is inserted; the rest follow.
    parser = APITemplateParser([{"role": "system", "content": "Be brief. "},
                                {"role": "user", "content": "Q: "}])
    prompt = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
              {"role": "user", "content": "c"}]
    assert parser.parse_template(prompt, "gen") == [
        {"role": "system", "content": "Be brief. "}, {"role": "user", "content": "Q: a"},
        {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    assert parser.parse_template("as is", "gen") == "as is"
    with pytest.raises(pc.RenderError):  # role items need a meta template dict
        parser.parse_template(PromptList([RB, {"role": "HUMAN", "prompt": "x"}, RE]), "gen")
    with pytest.raises(pc.MetaTemplateError):
        LMTemplateParser([{"role": "system", "content": "x"}])  # type: ignore[arg-type]
    with pytest.raises(pc.MetaTemplateError):
        APITemplateParser([{"role": "HUMAN", "content": "x"}])


@pytest.mark.parametrize("mode", ["compat", "default"])
def test_api_meta_template_of_messages_through_the_cli(tmp_path: Path, mode: str) -> None:
    (tmp_path / "list.yaml").write_text(LIST_META, encoding="utf-8")
    proc = run_cli("list.yaml", "-o", "out", "--mode", mode, "--spans", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "out" / "gpt" / "capitals.jsonl").read_text(encoding="utf-8"))
    assert record["prompt"] == [
        {"role": "system", "content": "Be brief. "},
        {"role": "user", "content": "Q: Capital of Chad?"},
        {"role": "assistant", "content": "N'Djamena"},
        {"role": "user", "content": "Capital of Peru?"}]
    proc = run_cli("lint", "list.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "lm.yaml").write_text(LIST_META.replace("type: OpenAISDK", "type: VLLM"),
                                      encoding="utf-8")
    proc = run_cli("lm.yaml", "-o", "out2", "--mode", mode, cwd=tmp_path)
    assert proc.returncode == 1
    assert "models[0].meta_template" in proc.stderr and "of an lm model" in proc.stderr


def test_prompt_template_construction_errors_are_opencompass_exception_types() -> None:
    with pytest.raises(TypeError):
        PromptTemplate("{q}", ice_token=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        PromptTemplate({"A": 3})
    with pytest.raises(LookupError):
        PromptTemplate("no token here", ice_token="</E>")
    with pytest.raises(pc.TemplateError):
        PromptTemplate("{q}", sep_token=1.5)  # type: ignore[arg-type]


def _raw_ppl_dataset(retriever: Mapping[str, object]) -> dict[str, object]:
    return {
        "abbr": "capitals", "reader_cfg": {"input_columns": ["country"],
                                           "output_column": "capital"},
        "infer_cfg": {
            "ice_template": {"type": "RawPromptTemplate", "messages": [
                {"role": "user", "content": "Capital of {country}?"},
                {"role": "assistant", "content": "{capital}"}]},
            "prompt_template": {"type": "RawPromptTemplate", "messages": [
                "</E>", {"role": "user", "content": "Capital of {country}?"}]},
            "retriever": retriever,
            "inferencer": {"type": "PPLInferencer", "labels": ["Lima", "Quito"]}},
        "splits": {"train": [{"country": "Chad", "capital": "N'Djamena"}],
                   "test": [{"country": "Peru", "capital": "Lima"}]}}


@pytest.mark.parametrize("mode", ["opencompass", "default"])
def test_raw_prompt_template_ppl_as_opencompass_runs_it(mode: str) -> None:
    fixk = {"type": "FixKRetriever", "fix_id_list": [0]}
    asked = [{"role": "user", "content": "Capital of Peru?"}]
    for renderer in ("api", "hf_chat"):
        result = pc.Compiler(mode=mode).compile(_raw_ppl_dataset(fixk),
                                                {"abbr": "m", "renderer": renderer})
        assert [r.prompt for r in result.records] == [asked, asked]
        # OpenCompass scores these prompts, then fails in its bookkeeping (they are lists)
        assert result.reference_failure == (
            "AttributeError", "'list' object has no attribute 'replace'")
    # with a max_seq_len and examples to drop, it fails comparing a list of counts with it
    with pytest.raises(pc.RenderError) as info:
        pc.Compiler(mode=mode).compile(_raw_ppl_dataset(fixk),
                                       {"abbr": "m", "renderer": "api", "max_seq_len": 50})
    assert info.value.reference == (
        "TypeError", "'>' not supported between instances of 'list' and 'int'")
    zero = pc.Compiler(mode=mode).compile(_raw_ppl_dataset({"type": "ZeroRetriever"}),
                                          {"abbr": "m", "renderer": "api", "max_seq_len": 50})
    assert [r.prompt for r in zero.records] == [asked, asked]


# -- what OpenCompass's scoring inferencers fail on after (or before) scoring ------------

def _scoring_dataset(inferencer: Mapping[str, object], output_column: str | None = "a"
                     ) -> dict[str, object]:
    return {
        "abbr": "s", "reader_cfg": {"input_columns": ["q", "cont", "choices"],
                                    "output_column": output_column},
        "infer_cfg": {
            "ice_template": {"type": "PromptTemplate", "template": {"round": [
                {"role": "HUMAN", "prompt": "Q: {q}"}, {"role": "BOT", "prompt": "A: {a}"}]}},
            "prompt_template": {"type": "PromptTemplate", "ice_token": "</E>", "template": {
                "begin": "</E>", "round": [{"role": "HUMAN", "prompt": "Q: {q}"},
                                           {"role": "BOT", "prompt": "A:"}]}},
            "retriever": {"type": "FixKRetriever", "fix_id_list": [0]},
            "inferencer": inferencer},
        "splits": {"train": [{"q": "1+1", "a": "2", "cont": " 2", "choices": ["2", "3"],
                              "label": 0}],
                   "test": [{"q": "2+2", "a": "4", "cont": " 4", "choices": ["4", "5"],
                             "label": 1}]}}


@pytest.mark.parametrize("mode", ["opencompass", "default"])
def test_clp_and_ll_bookkeeping_failures_are_reported(mode: str) -> None:
    # CLP removes the (PromptList) examples from the scored str with str.replace
    clp = pc.Compiler(mode=mode).compile(_scoring_dataset({"type": "CLPInferencer"}),
                                         {"abbr": "m", "renderer": "lm"})
    assert clp.records[0].prompt == "Q: 1+1\nA: 2\nQ: 2+2\nA:"
    assert clp.reference_failure == ("TypeError", "replace() argument 1 must be str, not "
                                                  "PromptList")
    # LL parses the examples first: a str for an LM model (no failure), messages for a
    # chat-template model, removed from the message list item by item
    ll = {"type": "LLInferencer", "labels": ["4"]}
    lm = pc.Compiler(mode=mode).compile(_scoring_dataset(ll), {"abbr": "m", "renderer": "lm"})
    assert lm.reference_failure is None
    chat = pc.Compiler(mode=mode).compile(_scoring_dataset(ll),
                                          {"abbr": "m", "renderer": "hf_chat"})
    assert chat.reference_failure == (
        "TypeError", "'in <string>' requires string as left operand, not PromptList")


def test_ppl_only_checks_the_output_column_after_building_every_prompt() -> None:
    # InferencePPLOnlyInferencer with an output column and examples to drop: OpenCompass
    # fails rebuilding the prompt (D19) before it asserts output_column is None.
    dataset = _scoring_dataset({"type": "InferencePPLOnlyInferencer"}, output_column="label")
    model = {"abbr": "m", "renderer": "lm", "max_seq_len": 3}
    with pytest.raises(pc.UnsupportedError) as info:
        pc.Compiler(mode="opencompass").compile(dataset, model)
    assert info.value.reference == ("ValueError", "too many values to unpack (expected 2)")
    with pytest.raises(pc.UnsupportedError) as info:
        pc.Compiler().compile(dataset, model)
    assert info.value.reference == (
        "AssertionError", "InferencePPLOnlyInferencer supports `output_column=None` only.")


def test_ppl_bookkeeping_failure_follows_the_first_rows_truncated_examples() -> None:
    api = {"abbr": "m", "renderer": "api", "meta_template": {"round": [
        {"role": "HUMAN", "api_role": "HUMAN"},
        {"role": "BOT", "api_role": "BOT", "generate": True}]}}
    dataset = _scoring_dataset({"type": "PPLInferencer", "labels": ["4", "5"]})
    kept = pc.Compiler(mode="opencompass").compile(dataset, api)
    assert kept.records[0].ice_ids == (0,)
    assert kept.reference_failure == (
        "TypeError", "'in <string>' requires string as left operand, not PromptList")
    # every example dropped for max_seq_len: the examples are '' and the failure comes later
    dropped = pc.Compiler(mode="opencompass").compile(dataset, {**api, "max_seq_len": 3})
    assert dropped.records[0].ice_ids == ()
    assert dropped.reference_failure == (
        "AttributeError", "'PromptList' object has no attribute 'encode'")
