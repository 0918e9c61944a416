"""PromptTemplate / RawPromptTemplate (spec §4, §5; defects D1, D2, D3, D15)."""

from __future__ import annotations

import pytest

from prompt_compiler import (
    Marker,
    MissingTokenError,
    Policy,
    PromptList,
    PromptTemplate,
    RawPromptTemplate,
    RenderError,
    RoleItem,
    TemplateError,
)
from prompt_compiler.errors import LabelError

COMPAT = Policy.of("opencompass")
DEFAULT = Policy.of("default")
BOTH = pytest.mark.parametrize("policy", [COMPAT, DEFAULT], ids=["compat", "default"])

RB, RE = Marker("round", "begin"), Marker("round", "end")
BB, BE = Marker("begin", "begin"), Marker("begin", "end")
IB, IE = Marker("ice", "begin"), Marker("ice", "end")


def H(prompt, **kw):
    return RoleItem.of("HUMAN", prompt, **kw)


def B(prompt, **kw):
    return RoleItem.of("BOT", prompt, **kw)


def PL(*items):
    return PromptList(tuple(items))


# -- 4.1 construction ------------------------------------------------------------------


def test_kinds():
    assert PromptTemplate("Q: {q}").kind == "str"
    assert PromptTemplate({"round": [{"role": "HUMAN", "prompt": "x"}]}).kind == "meta"
    assert PromptTemplate({"begin": "b", "round": [], "end": "e"}).kind == "meta"
    assert PromptTemplate({"A": "x", "B": "y"}).kind == "labels"
    # a dict with round and any other key is a label dict
    assert PromptTemplate({"round": [], "A": "x"}).kind == "labels"


def test_label_keys_keep_their_type():
    tp = PromptTemplate({0: "zero", 1: "one"})
    assert tp.labels == [0, 1]
    assert PromptTemplate("x").labels == []


@pytest.mark.parametrize("bad", [["x"], 3, None])
def test_template_must_be_str_or_dict(bad):
    with pytest.raises(TemplateError) as info:
        PromptTemplate(bad)
    assert info.value.reference[0] == "AssertionError"


@pytest.mark.parametrize("kw", [{"ice_token": 1}, {"sep_token": ["<s>"]}])
def test_tokens_must_be_str_or_none(kw):
    with pytest.raises(TemplateError) as info:
        PromptTemplate("x </E>", **kw)
    assert info.value.reference[0] == "TypeError"


def test_dict_values_must_be_str_list_or_dict():
    with pytest.raises(TemplateError) as info:
        PromptTemplate({"A": "x", "B": 5})
    assert info.value.reference[0] == "TypeError"
    assert info.value.key_path == "template['B']"


def test_missing_ice_token_in_str_template():
    with pytest.raises(MissingTokenError) as info:
        PromptTemplate("Q: {q}", ice_token="</E>")
    err = info.value
    assert isinstance(err, LookupError)
    assert err.reference[0] == "LookupError"


def test_missing_ice_token_in_label_dict_str_value():
    with pytest.raises(MissingTokenError) as info:
        PromptTemplate({"A": "</E>a", "B": "b"}, ice_token="</E>")
    assert info.value.reference[0] == "LookupError"
    assert "'B'" in info.value.key_path


def test_ice_token_not_checked_in_list_or_dict_values():
    # SPEC 4.1: only str values of a dict template are checked
    PromptTemplate({"round": [{"role": "HUMAN", "prompt": "no token"}]}, ice_token="</E>")
    PromptTemplate({"A": {"round": [{"role": "HUMAN", "prompt": "no token"}]}}, ice_token="</E>")


# -- 4.2 encoding --------------------------------------------------------------------------

META_TP = {"begin": [{"role": "SYSTEM", "prompt": "sys"}],
           "round": [{"role": "HUMAN", "prompt": "{q}"}],
           "end": "END"}


def test_encode_prompt_sections_compat_end_marker_is_buggy():
    tp = PromptTemplate(META_TP)
    sys_item = RoleItem.of("SYSTEM", "sys")
    assert tp.encode(ice=False, policy=COMPAT) == PL(
        BB, sys_item, BE, RB, H("{q}"), RE, Marker("end", "end"), "END", Marker("end", "end"))


def test_encode_prompt_sections_default_end_opens_with_begin():
    tp = PromptTemplate(META_TP)
    assert tp.encode(ice=False, policy=DEFAULT).items[-3:] == (
        Marker("end", "begin"), "END", Marker("end", "end"))


@BOTH
def test_encode_for_ice_drops_begin_and_end(policy):
    tp = PromptTemplate(META_TP)
    assert tp.encode(ice=True, policy=policy) == PL(IB, H("{q}"), IE)


@BOTH
def test_encode_begin_str_is_one_item_round_str_is_one_item(policy):
    tp = PromptTemplate({"begin": "", "round": "text {q}"})
    assert tp.encode(ice=False, policy=policy) == PL(BB, "", BE, RB, "text {q}", RE)


@BOTH
def test_encode_begin_single_dict_appended(policy):
    tp = PromptTemplate({"begin": {"role": "SYSTEM", "prompt": "s"},
                         "round": [{"role": "HUMAN", "prompt": "h"}]})
    assert tp.encode(ice=False, policy=policy).items[:3] == (BB, RoleItem.of("SYSTEM", "s"), BE)


def test_encode_round_required():
    with pytest.raises(TemplateError) as info:
        PromptTemplate({"A": {"begin": "x"}}).label_item({}, "", "A", COMPAT)
    assert info.value.reference == ("KeyError", "'round'")


# -- 4.3 ICE items -----------------------------------------------------------------------------


@BOTH
def test_ice_item_str_shows_answer_and_drops_ice_token(policy):
    tp = PromptTemplate("</E>Q: {q}\nA: {a}", ice_token="</E>")
    assert tp.ice_item({"q": "x", "a": "y"}, None, policy) == "Q: x\nA: y"


@BOTH
def test_ice_item_meta_uses_ice_markers(policy):
    tp = PromptTemplate({"begin": "</E>", "round": [{"role": "HUMAN", "prompt": "{q}"},
                                                   {"role": "BOT", "prompt": "{a}"}]},
                        ice_token="</E>")
    assert tp.ice_item({"q": "x", "a": "y"}, None, policy) == PL(IB, H("x"), B("y"), IE)


@BOTH
def test_ice_item_label_dict_picks_row_label(policy):
    tp = PromptTemplate({"A": "{q} -> first", "B": "{q} -> second"})
    assert tp.ice_item({"q": "x", "label": "B"}, "B", policy) == "x -> second"


def test_ice_item_label_missing_from_dict():
    tp = PromptTemplate({0: "zero", 1: "one"})
    with pytest.raises(LabelError) as info:
        tp.ice_item({}, "0", COMPAT)  # key types matter: '0' is not 0
    assert isinstance(info.value, KeyError)
    assert info.value.reference == ("KeyError", "'0'")


def test_ice_item_sep_token_survives_in_compat_d2():
    tp = PromptTemplate("Q: {q}@A: {a}", sep_token="@")
    assert tp.ice_item({"q": "x", "a": "y"}, None, COMPAT) == "Q: x@A: y"


def test_ice_item_sep_token_removed_in_default_d2_but_data_kept():
    tp = PromptTemplate("Q: {q}@A: {a}", sep_token="@")
    assert tp.ice_item({"q": "x@z", "a": "y"}, None, DEFAULT) == "Q: x@zA: y"


# -- 4.4 gen prompts -------------------------------------------------------------------------------


@BOTH
def test_gen_masks_output_column(policy):
    tp = PromptTemplate("Q: {q}\nA: {a}")
    row = {"q": "x", "a": "gold"}
    assert tp.gen_item(row, "", policy, output_column="a") == "Q: x\nA: "
    masked = tp.gen_item(row, "", policy, output_column="a", replace_token="<ans>")
    assert masked == "Q: x\nA: <ans>"
    # no output column: nothing masked
    assert tp.gen_item(row, "", policy) == "Q: x\nA: gold"


@BOTH
def test_gen_with_label_dict_uses_first_key(policy):
    tp = PromptTemplate({"B": "second {q}", "A": "first {q}"})
    assert tp.gen_item({"q": "x"}, "", policy) == "second x"


@BOTH
def test_gen_meta_masks_role_prompt(policy):
    tp = PromptTemplate({"round": [{"role": "HUMAN", "prompt": "{q}"},
                                   {"role": "BOT", "prompt": "Answer: {a}"}]})
    out = tp.gen_item({"q": "x", "a": "gold"}, "", policy, output_column="a")
    assert out == PL(RB, H("x"), B("Answer: "), RE)


SEP_TP = "</E>Q: {q}@A: {a}"


def test_gen_sep_removed_after_ice_insertion_compat():
    tp = PromptTemplate(SEP_TP, ice_token="</E>", sep_token="@")
    ice = "E1@a1\n"
    # replace </E>, then remove every '@' (also in the ICE), then format
    assert tp.gen_item({"q": "x@y", "a": "g"}, ice, COMPAT, output_column="a") == "E1a1\nQ: x@yA: "


def test_gen_sep_removed_only_from_template_text_default():
    tp = PromptTemplate(SEP_TP, ice_token="</E>", sep_token="@")
    out = tp.gen_item({"q": "x@y", "a": "g"}, "E1@a1\n", DEFAULT, output_column="a")
    assert out == "E1@a1\nQ: x@yA: "


# -- 4.5 PPL prompts -------------------------------------------------------------------------------


@BOTH
def test_label_item_sep_removed_before_ice_insertion(policy):
    tp = PromptTemplate(SEP_TP, ice_token="</E>", sep_token="@")
    row = {"q": "x", "a": "gold"}
    # PPL: never masked; the ICE keeps its sep token in both modes
    assert tp.label_item(row, "E1@a1\n", None, policy) == "E1@a1\nQ: xA: gold"
    assert tp.label_item(row, "E1@a1\n", None, policy, remain_sep=True) == "E1@a1\nQ: x@A: gold"


@BOTH
def test_label_item_label_dict(policy):
    tp = PromptTemplate({"A": "</E>{q} A", "B": "</E>{q} B"}, ice_token="</E>")
    assert tp.label_item({"q": "x"}, "ICE ", "B", policy) == "ICE x B"
    with pytest.raises(LabelError):
        tp.label_item({"q": "x"}, "", "C", policy)


# -- ICE insertion --------------------------------------------------------------------------------


def test_ice_text_is_formatted_again_in_compat_only():
    tp = PromptTemplate("</E>Q: {q}\nA: {a}", ice_token="</E>")
    ice = "Q: refers to {q}\nA: y\n"  # a training text with a leftover placeholder
    row = {"q": "TEST", "a": "gold"}
    compat = tp.gen_item(row, ice, COMPAT, output_column="a")
    assert compat == "Q: refers to TEST\nA: y\nQ: TEST\nA: "
    default = tp.gen_item(row, ice, DEFAULT, output_column="a")
    assert default == "Q: refers to {q}\nA: y\nQ: TEST\nA: "
    # the masked answer leaks into the ICE placeholder as '' in compat, not at all in default
    ice2 = "ans {a}\n"
    assert tp.gen_item(row, ice2, COMPAT, output_column="a") == "ans \nQ: TEST\nA: "
    assert tp.gen_item(row, ice2, DEFAULT, output_column="a") == "ans {a}\nQ: TEST\nA: "


def test_ice_item_then_gen_double_formatting_end_to_end():
    ice_tp = PromptTemplate("Q: {q}\nA: {a}\n")
    prompt_tp = PromptTemplate("</E>Q: {q}\nA: {a}", ice_token="</E>")
    train = {"q": "uses {a}", "a": "T"}
    test = {"q": "X", "a": "gold"}
    # compat ICE: q first -> 'Q: uses {a}\nA: {a}\n', then a -> 'Q: uses T\nA: T\n'
    assert ice_tp.ice_item(train, None, COMPAT) == "Q: uses T\nA: T\n"
    # default ICE: single pass -> the inserted '{a}' stays
    ice_d = ice_tp.ice_item(train, None, DEFAULT)
    assert ice_d == "Q: uses {a}\nA: T\n"
    # default gen: the ICE is opaque
    out = prompt_tp.gen_item(test, ice_d, DEFAULT, output_column="a")
    assert out == "Q: uses {a}\nA: T\nQ: X\nA: "
    # compat gen with the default ICE text: its '{a}' is filled by the masked test answer
    assert prompt_tp.gen_item(test, ice_d, COMPAT, output_column="a") == "Q: uses \nA: T\nQ: X\nA: "


def test_ice_token_in_data_is_never_expanded():
    tp = PromptTemplate("</E>{q}", ice_token="</E>")
    for policy in (COMPAT, DEFAULT):
        assert tp.gen_item({"q": "has </E> inside"}, "ICE|", policy) == "ICE|has </E> inside"


PROMPT_META = {"begin": "</E>",
               "round": [{"role": "HUMAN", "prompt": "{q}"}, {"role": "BOT", "prompt": "{a}"}]}
LIST_ICE = PL(IB, H("e1"), B("a1"), IE, "")


@BOTH
def test_promptlist_ice_is_spliced_and_empty_pieces_vanish(policy):
    tp = PromptTemplate(PROMPT_META, ice_token="</E>")
    out = tp.gen_item({"q": "x", "a": "gold"}, LIST_ICE, policy, output_column="a")
    # '</E>' splits into ['', '']: both empty pieces vanish, the ICE items (with their
    # trailing '' eos item) are spliced in
    assert out == PL(BB, IB, H("e1"), B("a1"), IE, "", BE, RB, H("x"), B(""), RE)


@BOTH
def test_promptlist_ice_keeps_nonempty_pieces(policy):
    tp = PromptTemplate({"begin": "pre {q}</E>post", "round": [{"role": "HUMAN", "prompt": "{q}"}]},
                        ice_token="</E>")
    out = tp.gen_item({"q": "x"}, LIST_ICE, policy)
    assert out == PL(BB, "pre x", IB, H("e1"), B("a1"), IE, "", "post", BE, RB, H("x"), RE)


@BOTH
def test_piece_empty_after_filling_is_kept(policy):
    # a piece that was non-empty before filling stays, even if it fills to ''
    tp = PromptTemplate({"begin": "{pre}</E>", "round": [{"role": "HUMAN", "prompt": "{q}"}]},
                        ice_token="</E>")
    out = tp.gen_item({"pre": "", "q": "x"}, PL(IB, H("e"), IE, ""), policy)
    assert out == PL(BB, "", IB, H("e"), IE, "", BE, RB, H("x"), RE)


@BOTH
def test_str_ice_goes_into_role_prompt(policy):
    tp = PromptTemplate({"round": [{"role": "HUMAN", "prompt": "</E>Q: {q}"}]}, ice_token="</E>")
    assert tp.gen_item({"q": "x"}, "E\n", policy) == PL(RB, H("E\nQ: x"), RE)


@BOTH
def test_role_prompt_with_ice_token_and_promptlist_ice_fails(policy):
    tp = PromptTemplate({"round": [{"role": "HUMAN", "prompt": "</E>{q}"}]}, ice_token="</E>")
    with pytest.raises(RenderError) as info:
        tp.gen_item({"q": "x"}, LIST_ICE, policy)
    assert isinstance(info.value, TypeError)
    assert info.value.reference[0] == "TypeError"
    assert "Cannot replace with a PromptList" in info.value.reference[1]


@BOTH
def test_str_template_with_promptlist_ice_fails(policy):
    tp = PromptTemplate("</E>{q}", ice_token="</E>")
    with pytest.raises(RenderError) as info:
        tp.gen_item({"q": "x"}, LIST_ICE, policy)
    assert info.value.reference[0] == "TypeError"


# -- 5. RawPromptTemplate -------------------------------------------------------------------------

RAW = [
    {"role": "system", "content": "S {q}"},
    "</E>",
    "ignored string",
    {"expand_column": "history"},
    {"role": "user", "content": "{q}"},
    {"role": "assistant", "content": "{answer}"},
]
RAW_ROW = {"q": "x", "answer": "GOLD",
           "history": [{"role": "user", "content": "h {q}"},
                       {"role": "assistant", "content": "hb"}]}
RAW_ICE = [{"role": "user", "content": "e"}, {"role": "assistant", "content": "ea"}]


def test_raw_gen_compat_leaks_output_column():
    tp = RawPromptTemplate.build(RAW)
    out = tp.gen_item(RAW_ROW, RAW_ICE, COMPAT, output_column="answer")
    assert out == [
        {"role": "system", "content": "S x"},
        *RAW_ICE,
        # expand_column splices the row's list as is (not formatted)
        {"role": "user", "content": "h {q}"}, {"role": "assistant", "content": "hb"},
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": "GOLD"},
    ]


def test_raw_gen_default_masks_output_column_d15():
    tp = RawPromptTemplate.build(RAW)
    out = tp.gen_item(RAW_ROW, RAW_ICE, DEFAULT, output_column="answer", replace_token="?")
    assert out[-1] == {"role": "assistant", "content": "?"}
    assert out[0] == {"role": "system", "content": "S x"}


@BOTH
def test_raw_empty_ice_and_ice_item(policy):
    tp = RawPromptTemplate.build(RAW)
    out = tp.gen_item(RAW_ROW, [], policy)
    assert [m["content"] for m in out] == ["S x", "h {q}", "hb", "x", "GOLD"]
    # ICE items: strings dropped, answer shown
    ice = tp.ice_item(RAW_ROW, None, policy)
    assert [m["content"] for m in ice] == ["S x", "h {q}", "hb", "x", "GOLD"]


def test_raw_custom_ice_token_and_no_formatting():
    user = {"role": "user", "content": "{q}"}
    tp = RawPromptTemplate.build(["<ICE>", user], format_variables=False, ice_token="<ICE>")
    assert tp.gen_item({"q": "x"}, RAW_ICE, COMPAT) == [*RAW_ICE, user]


def test_raw_does_not_mutate_its_messages_or_the_row():
    tp = RawPromptTemplate.build(RAW)
    out = tp.gen_item(RAW_ROW, RAW_ICE, COMPAT)
    out[3]["content"] = "changed"
    out[0]["content"] = "changed"
    assert RAW_ROW["history"][0]["content"] == "h {q}"
    assert tp.gen_item(RAW_ROW, RAW_ICE, COMPAT)[0]["content"] == "S x"


@pytest.mark.parametrize(("messages", "ref_type"), [
    ("not a list", "TypeError"),
    ([3], "TypeError"),
    ([{"role": "user"}], "ValueError"),
    ([{"role": "robot", "content": "x"}], "ValueError"),
])
def test_raw_validation(messages, ref_type):
    with pytest.raises(TemplateError) as info:
        RawPromptTemplate.build(messages)
    assert info.value.reference[0] == ref_type


def test_encoding_cache_is_per_policy():
    tp = PromptTemplate({"round": [{"role": "HUMAN", "prompt": "{q}"}], "end": "END"})
    compat = tp.gen_item({"q": "x"}, "", COMPAT)
    assert compat.items[3] == Marker("end", "end")
    default = tp.gen_item({"q": "x"}, "", DEFAULT)
    # D3: the default mode opens the end section with pos='begin'
    assert default.items[3] == Marker("end", "begin")


def test_non_str_role_prompt_compat():
    tp = PromptTemplate({"round": [{"role": "HUMAN", "prompt": 5}]})
    with pytest.raises(RenderError) as info:
        tp.gen_item({"q": "x"}, "", COMPAT)
    assert info.value.reference == ("AttributeError", "'int' object has no attribute 'replace'")


def test_non_str_role_prompt_default():
    tp = PromptTemplate({"round": [{"role": "HUMAN", "prompt": 5}]})
    with pytest.raises(RenderError) as info:
        tp.gen_item({"q": "x"}, "", DEFAULT)
    assert info.value.reference[0] == "AttributeError"
