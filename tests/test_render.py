"""Renderers: LM (spec §8), API (§9.1-9.2), HF chat (§9.3); defects D3, D12, D14."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prompt_compiler import (
    Marker,
    MetaTemplate,
    Model,
    Policy,
    PromptList,
    RenderError,
    RoleItem,
    SectionError,
    UnknownRoleError,
)
from prompt_compiler.render import DEFAULT_CHAT_META, render_api, render_lm, to_chat_messages
from prompt_compiler.render.api import ApiPrompt

COMPAT = Policy.of("opencompass")
DEFAULT = Policy.of("default")
BOTH = pytest.mark.parametrize("policy", [COMPAT, DEFAULT], ids=["compat", "default"])

RB, RE = Marker("round", "begin"), Marker("round", "end")
BB, BE = Marker("begin", "begin"), Marker("begin", "end")
IB, IE = Marker("ice", "begin"), Marker("ice", "end")
EB_COMPAT, EB_DEFAULT, EE = Marker("end", "end"), Marker("end", "begin"), Marker("end", "end")

LM_META = MetaTemplate.parse({
    "begin": "<s>",
    "round": [
        {"role": "HUMAN", "begin": "<H>", "end": "</H>\n"},
        {"role": "BOT", "begin": "<B>", "end": "</B>\n", "generate": True},
    ],
    "reserved_roles": [{"role": "SYSTEM", "begin": "<S>", "end": "</S>\n"}],
    "end": "</s>",
})


def H(p, **kw):
    return RoleItem.of("HUMAN", p, **kw)


def B(p, **kw):
    return RoleItem.of("BOT", p, **kw)


def S(p, **kw):
    return RoleItem.of("SYSTEM", p, **kw)


def PL(*items):
    return PromptList(tuple(items))


# -- LM with a meta template (§8.3) -------------------------------------------------------------

DIALOGUE = PL(RB, H("q1"), B("a1"), H("q2"), B("a2"), RE)


@BOTH
def test_lm_ppl_renders_everything_and_meta_end(policy):
    assert render_lm(DIALOGUE, LM_META, "ppl", policy) == (
        "<s><H>q1</H>\n<B>a1</B>\n<H>q2</H>\n<B>a2</B>\n</s>")


@BOTH
def test_lm_gen_stops_at_last_bot_begin(policy):
    # the last BOT's text and the meta end are not emitted
    assert render_lm(DIALOGUE, LM_META, "gen", policy) == "<s><H>q1</H>\n<B>a1</B>\n<H>q2</H>\n<B>"


@BOTH
def test_lm_absent_roles_still_rendered(policy):
    pl = PL(RB, H("q"), RE)
    assert render_lm(pl, LM_META, "ppl", policy) == "<s><H>q</H>\n<B></B>\n</s>"
    assert render_lm(pl, LM_META, "gen", policy) == "<s><H>q</H>\n<B>"


@BOTH
def test_lm_round_item_overrides_meta_role_keys(policy):
    pl = PL(RB, H("q", begin="[["), B("a", end="]]"), RE, RB, H("q2"), B("a2"), RE)
    # the overrides hold for their round only
    assert render_lm(pl, LM_META, "ppl", policy) == "<s>[[q</H>\n<B>a]]<H>q2</H>\n<B>a2</B>\n</s>"


@BOTH
def test_lm_round_item_generate_false_does_not_stop(policy):
    pl = PL(RB, H("q"), B("a", generate=False), RE)
    assert render_lm(pl, LM_META, "gen", policy) == "<s><H>q</H>\n<B>a</B>\n</s>"


@BOTH
def test_lm_strings_in_round_come_before_its_roles(policy):
    pl = PL(RB, H("q"), "TXT", B("a"), RE)
    assert render_lm(pl, LM_META, "ppl", policy) == "<s>TXT<H>q</H>\n<B>a</B>\n</s>"


@BOTH
def test_lm_begin_section_role_rendered_alone_even_generating(policy):
    # begin items are rendered with for_gen=False, so a BOT there never stops generation
    pl = PL(BB, "intro ", S("sys"), B("ex"), BE, RB, H("q"), B(""), RE)
    assert render_lm(pl, LM_META, "gen", policy) == "<s>intro <S>sys</S>\n<B>ex</B>\n<H>q</H>\n<B>"


@BOTH
def test_lm_ice_section_never_generates(policy):
    pl = PL(IB, H("e"), B("ea"), IE, "", RB, H("q"), B(""), RE)
    assert render_lm(pl, LM_META, "gen", policy) == "<s><H>e</H>\n<B>ea</B>\n<H>q</H>\n<B>"


def test_lm_end_section_compat_fails_in_ppl():
    pl = PL(RB, H("q"), B("a"), RE, EB_COMPAT, "tail", EE)
    with pytest.raises(SectionError) as info:
        render_lm(pl, LM_META, "ppl", COMPAT)
    assert info.value.reference == ("IndexError", "pop from empty list")
    # gen stops at the generating role, before the broken end section
    assert render_lm(pl, LM_META, "gen", COMPAT) == "<s><H>q</H>\n<B>"


def test_lm_end_section_default_renders_like_begin():
    pl = PL(RB, H("q"), B("a"), RE, EB_DEFAULT, "tail", S("bye"), EE)
    assert render_lm(pl, LM_META, "ppl", DEFAULT) == "<s><H>q</H>\n<B>a</B>\ntail<S>bye</S>\n</s>"


def test_lm_round_role_not_in_meta_round_compat():
    # SYSTEM is a reserved role, not in the round: KeyError even with a fallback_role
    pl = PL(RB, S("sys", fallback_role="HUMAN"), H("q"), B("a"), RE)
    with pytest.raises(UnknownRoleError) as info:
        render_lm(pl, LM_META, "ppl", COMPAT)
    assert isinstance(info.value, KeyError)
    assert info.value.reference == ("KeyError", "'SYSTEM'")


def test_lm_round_role_fallback_default_d12():
    meta = MetaTemplate.parse({"round": [{"role": "HUMAN", "begin": "<H>", "end": "</H>\n"},
                                         {"role": "BOT", "begin": "<B>", "end": "</B>\n",
                                          "generate": True}]})
    pl = PL(RB, S("sys", fallback_role="HUMAN"), H("q"), B("a"), RE)
    # SYSTEM takes HUMAN's position: round 1 = [SYSTEM] rendered in HUMAN's slot,
    # round 2 = [HUMAN q, BOT a] (HUMAN's position does not follow SYSTEM's)
    assert render_lm(pl, meta, "ppl", DEFAULT) == "<H>sys</H>\n<B></B>\n<H>q</H>\n<B>a</B>\n"
    assert render_lm(pl, meta, "gen", DEFAULT) == "<H>sys</H>\n<B></B>\n<H>q</H>\n<B>"


def test_lm_round_role_without_fallback_default_message():
    pl = PL(RB, RoleItem.of("USER", "x"), RE)
    with pytest.raises(UnknownRoleError) as info:
        render_lm(pl, LM_META, "ppl", DEFAULT)
    assert info.value.reference[0] == "KeyError"
    assert "neither has an appropriate role nor a fallback role." in info.value.reference[1]


@BOTH
def test_lm_role_item_outside_sections(policy):
    with pytest.raises(SectionError) as info:
        render_lm(PL(H("q")), LM_META, "ppl", policy)
    assert info.value.reference[0] == "IndexError"


@BOTH
def test_lm_string_prompts_are_never_wrapped(policy):
    assert render_lm("raw {text}\n", LM_META, "gen", policy) == "raw {text}\n"
    assert render_lm("raw", None, "ppl", policy) == "raw"


@BOTH
def test_lm_message_list_is_rejected(policy):
    with pytest.raises(RenderError) as info:
        render_lm([{"role": "user", "content": "x"}], LM_META, "gen", policy)
    assert info.value.reference[0] == "AssertionError"


# -- LM without a meta template (§8.2) -----------------------------------------------------------


@BOTH
def test_no_meta_join_with_newlines(policy):
    pl = PL(BB, "", BE, RB, H("q"), "", B("a"), RE)
    # empty first item -> leading '\n'; empty middle items vanish; BOT text kept in gen
    assert render_lm(pl, None, "gen", policy) == "\nq\na"
    assert render_lm(pl, None, "ppl", policy) == "\nq\na"


@BOTH
def test_no_meta_role_without_prompt_sets_separator(policy):
    pl = PL(RoleItem.of("SYSTEM"), "x", "y")
    assert render_lm(pl, None, "ppl", policy) == "\nx\ny"


@BOTH
def test_no_meta_markers_do_not_set_separator(policy):
    pl = PL(RB, "x", RE)
    assert render_lm(pl, None, "ppl", policy) == "x"


# -- API (§9.2) -----------------------------------------------------------------------------------

API_META = MetaTemplate.parse({
    "round": [{"role": "HUMAN", "api_role": "HUMAN"},
              {"role": "BOT", "api_role": "BOT", "generate": True}],
    "reserved_roles": [{"role": "SYSTEM", "api_role": "SYSTEM"}],
}, lm=False)


@BOTH
def test_api_drops_strings_and_merges_same_roles(policy):
    pl = PL(BB, "dropped", H("sys"), BE, "also dropped", RB, H("q"), B(""), RE)
    # OpenCompass's APITemplateParser warns, with these words, as it drops them
    with pytest.warns(UserWarning, match=r"^Non-empty string in prompt template will be ignored "
                      r"in API models\.$"):
        assert render_api(pl, API_META, "gen", policy) == [{"role": "HUMAN", "prompt": "sys\nq"}]
    with warnings.catch_warnings():  # blank strings are dropped silently
        warnings.simplefilter("error")
        render_api(PL(RB, " \n", H("q"), RE), API_META, "gen", policy)


@BOTH
def test_api_ppl_keeps_bot_and_absent_roles(policy):
    pl = PL(RB, H("q1"), B("a1"), H("q2"), RE)
    assert render_api(pl, API_META, "ppl", policy) == [
        {"role": "HUMAN", "prompt": "q1"}, {"role": "BOT", "prompt": "a1"},
        {"role": "HUMAN", "prompt": "q2"}, {"role": "BOT", "prompt": ""}]
    assert render_api(pl, API_META, "gen", policy) == [
        {"role": "HUMAN", "prompt": "q1"}, {"role": "BOT", "prompt": "a1"},
        {"role": "HUMAN", "prompt": "q2"}]


@BOTH
def test_api_meta_begin_inserted_first(policy):
    meta = MetaTemplate.parse({"begin": "RAW BEGIN", "end": "never used",
                               "round": [{"role": "HUMAN", "api_role": "HUMAN"},
                                         {"role": "BOT", "api_role": "BOT", "generate": True}]},
                              lm=False)
    out = render_api(PL(RB, H("q"), RE), meta, "ppl", policy)
    assert out == ["RAW BEGIN", {"role": "HUMAN", "prompt": "q"}, {"role": "BOT", "prompt": ""}]


@BOTH
def test_api_round_accepts_fallback_role(policy):
    pl = PL(RB, RoleItem.of("NARRATOR", "n", fallback_role="HUMAN"), H("q"), RE)
    # NARRATOR takes HUMAN's position (and slot), so HUMAN starts a new round; each round
    # also renders its absent BOT as an empty message, which keeps the HUMANs apart
    assert render_api(pl, API_META, "ppl", policy) == [
        {"role": "HUMAN", "prompt": "n"}, {"role": "BOT", "prompt": ""},
        {"role": "HUMAN", "prompt": "q"}, {"role": "BOT", "prompt": ""}]


def test_api_generating_role_in_begin_compat_fails():
    pl = PL(BB, B("example"), BE, RB, H("q"), B(""), RE)
    with pytest.raises(RenderError) as info:
        render_api(pl, API_META, "gen", COMPAT)
    assert info.value.reference == ("TypeError", "'NoneType' object is not subscriptable")
    # ppl mode is fine in compat
    assert render_api(pl, API_META, "ppl", COMPAT)[0] == {"role": "BOT", "prompt": "example"}


def test_api_generating_role_in_begin_default_d14():
    pl = PL(BB, B("example"), BE, RB, H("q"), B(""), RE)
    assert render_api(pl, API_META, "gen", DEFAULT) == [
        {"role": "BOT", "prompt": "example"}, {"role": "HUMAN", "prompt": "q"}]


@BOTH
def test_api_without_meta_is_the_plain_join(policy):
    pl = PL(BB, "", BE, RB, H("q"), B("a"), RE)
    assert render_api(pl, None, "gen", policy) == "\nq\na"


@BOTH
def test_api_message_list_passes_through_as_copy(policy):
    msgs = [{"role": "user", "content": "x"}]
    out = render_api(msgs, API_META, "gen", policy)
    assert out == msgs and out is not msgs
    assert render_api("plain", API_META, "gen", policy) == "plain"


@BOTH
def test_api_meta_round_string_rejected(policy):
    meta = MetaTemplate.parse({"round": ["sep", {"role": "HUMAN", "api_role": "HUMAN"}]}, lm=False)
    with pytest.raises(RenderError) as info:
        render_api(PL(RB, H("q"), RE), meta, "ppl", policy)
    assert info.value.reference[0] == "TypeError"


# -- HF chat (§9.3) --------------------------------------------------------------------------------


@BOTH
def test_hf_chat_default_meta_adds_trailing_newline_to_user(policy):
    model = Model.from_dict({"abbr": "m", "parser": "hf_chat", "meta_template": None})
    assert model.meta.raw == DEFAULT_CHAT_META
    pl = PL(RB, H("q1"), B("a1"), H("q2"), B(""), RE)
    rendered = model.render(pl, "gen", policy)
    # every round renders HUMAN, then an empty SYSTEM (api_role HUMAN) slot: merged with '\n'
    assert rendered == [{"role": "HUMAN", "prompt": "q1\n"}, {"role": "BOT", "prompt": "a1"},
                        {"role": "HUMAN", "prompt": "q2\n"}]
    assert model.chat_messages(rendered, policy) == [
        {"role": "user", "content": "q1\n"}, {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2\n"}]


def test_to_chat_messages_merges_and_drops_empties():
    api = ApiPrompt([{"role": "HUMAN", "prompt": ""}, {"role": "SYSTEM", "prompt": "s"},
                     {"role": "HUMAN", "prompt": "a"}, {"role": "BOT", "prompt": ""},
                     {"role": "HUMAN", "prompt": "b"}, {"role": "BOT", "prompt": "r"}])
    assert to_chat_messages(api) == [
        {"role": "system", "content": "s"}, {"role": "user", "content": "a\nb"},
        {"role": "assistant", "content": "r"}]
    assert to_chat_messages("text") == [{"role": "user", "content": "text"}]


def test_to_chat_messages_errors():
    with pytest.raises(UnknownRoleError) as info:
        to_chat_messages([{"role": "TOOL", "prompt": "x"}])
    assert info.value.reference == ("KeyError", "'TOOL'")
    with pytest.raises(RenderError):
        to_chat_messages(["raw begin", {"role": "HUMAN", "prompt": "x"}])
    with pytest.raises(RenderError) as info2:
        to_chat_messages([{"role": "user", "content": "x"}])
    assert info2.value.reference == ("KeyError", "'prompt'")


def test_to_chat_messages_passes_openai_messages_when_d18_is_fixed():
    raw = [{"role": "system", "content": "s"}, {"role": "user", "content": "x"},
           {"role": "user", "content": ""}]
    assert to_chat_messages(raw, pass_openai=True) == raw
    model = Model.from_dict({"abbr": "m", "parser": "hf_chat"})
    assert model.chat_messages(raw, Policy.of("default")) == raw
    with pytest.raises(RenderError):
        model.chat_messages(raw, Policy.of("compat"))
    # HUMAN/BOT prompts keep the conversion even with the fix.
    assert to_chat_messages([{"role": "HUMAN", "prompt": "q"}], pass_openai=True) == [
        {"role": "user", "content": "q"}]


def test_model_only_hf_chat_has_chat_messages():
    lm = Model.from_dict({"abbr": "m", "parser": "lm"})
    assert lm.meta is None
    assert lm.chat_messages("x", Policy.of("default")) is None


# -- properties -----------------------------------------------------------------------------------

safe_text = st.text(alphabet="abcdefg xyz", max_size=6)
turns = st.lists(st.tuples(st.sampled_from(["HUMAN", "BOT"]), safe_text), max_size=8)


def _dialogue(items):
    return PL(RB, *(RoleItem.of(r, p) for r, p in items), RE)


@settings(max_examples=100)
@given(items=turns)
def test_every_role_prompt_appears_in_order_in_ppl(items):
    out = render_lm(_dialogue(items), LM_META, "ppl", DEFAULT)
    assert out.startswith("<s>") and out.endswith("</s>")
    cursor = 0
    for _, prompt in items:
        found = out.find(prompt, cursor)
        assert found >= 0
        cursor = found + len(prompt)
    assert render_lm(_dialogue(items), LM_META, "ppl", COMPAT) == out


@settings(max_examples=100)
@given(items=turns)
def test_gen_is_prefix_of_ppl_when_last_bot_empty(items):
    pl = _dialogue([*items, ("BOT", "")])
    for policy in (COMPAT, DEFAULT):
        gen = render_lm(pl, LM_META, "gen", policy)
        ppl = render_lm(pl, LM_META, "ppl", policy)
        assert ppl.startswith(gen)
        assert gen.endswith("<B>")
        assert ppl[len(gen):] == "</B>\n</s>"
