"""PromptList: the intermediate representation (spec §3)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prompt_compiler import Marker, PromptList, RoleItem
from prompt_compiler.promptlist import SECTION_NAMES, item_from_obj

SAMPLE = [
    {"section": "round", "pos": "begin"},
    {"role": "HUMAN", "prompt": "Q: 2+2?"},
    {"role": "BOT", "prompt": "4", "begin": "<b>", "generate": True},
    "plain text",
    {"section": "round", "pos": "end"},
]


def test_from_list_builds_typed_items():
    pl = PromptList.from_list(SAMPLE)
    assert pl[0] == Marker("round", "begin")
    assert pl[1] == RoleItem.of("HUMAN", "Q: 2+2?")
    assert isinstance(pl[2], RoleItem)
    assert pl[2].get("generate") is True and pl[2].get("begin") == "<b>"
    assert pl[3] == "plain text"
    assert pl[4] == Marker("round", "end")
    assert len(pl) == 5


def test_to_list_round_trip_keeps_key_order():
    out = PromptList.from_list(SAMPLE).to_list()
    assert out == SAMPLE
    assert list(out[2]) == ["role", "prompt", "begin", "generate"]


def test_repr_reads_like_opencompass():
    pl = PromptList.from_list([
        {"section": "begin", "pos": "begin"},
        {"role": "HUMAN", "prompt": "hi 'x'"},
        "text",
        {"section": "begin", "pos": "end"},
    ])
    assert repr(pl) == (
        "PromptList([dict(section='begin', pos='begin'), dict(role='HUMAN', prompt=\"hi 'x'\"), "
        "'text', dict(section='begin', pos='end')])"
    )
    assert repr(PromptList()) == "PromptList([])"


def test_repr_of_role_item_with_fallback_and_non_identifier_key():
    item = RoleItem.from_mapping({"role": "SYSTEM", "fallback_role": "HUMAN", "api-role": "x"})
    assert repr(item) == "dict(role='SYSTEM', fallback_role='HUMAN', **{'api-role': 'x'})"


def test_str_concatenates_texts_and_prompts_only():
    pl = PromptList.from_list([
        {"section": "round", "pos": "begin"},
        "a",
        {"role": "HUMAN", "prompt": "b"},
        {"role": "BOT"},  # no prompt: contributes nothing
        "",
        {"role": "BOT", "prompt": "c"},
        {"section": "round", "pos": "end"},
    ])
    assert str(pl) == "abc"
    assert str(PromptList()) == ""


def test_add_semantics():
    pl = PromptList.from_list(["a", {"role": "HUMAN", "prompt": "b"}])
    # falsy other: a copy (equal content)
    for falsy in ("", [], None):
        assert pl + falsy == pl
    # a str is appended as one item
    assert (pl + "c").to_list() == ["a", {"role": "HUMAN", "prompt": "b"}, "c"]
    # a list / PromptList is concatenated
    assert (pl + ["c", {"section": "ice", "pos": "begin"}]).to_list() == [
        "a", {"role": "HUMAN", "prompt": "b"}, "c", {"section": "ice", "pos": "begin"}]
    joined = pl + PromptList.from_list(["z"])
    assert joined.to_list() == ["a", {"role": "HUMAN", "prompt": "b"}, "z"]
    # str + PromptList prepends; '' + PromptList is a copy
    assert ("s" + pl).to_list() == ["s", "a", {"role": "HUMAN", "prompt": "b"}]
    assert "" + pl == pl


def test_add_does_not_mutate_operands():
    pl = PromptList.from_list(["a"])
    _ = pl + "b"
    _ = "c" + pl
    assert pl.to_list() == ["a"]


def test_roles_lists_role_items_in_order():
    pl = PromptList.from_list(SAMPLE)
    assert [r.role for r in pl.roles()] == ["HUMAN", "BOT"]


def test_role_item_accessors_and_with_prompt():
    item = RoleItem.of("HUMAN", "x", begin="<h>")
    assert (item.role, item.prompt, item.fallback_role) == ("HUMAN", "x", None)
    assert item.has("begin") and not item.has("end")
    # replaced in place
    assert item.with_prompt("y").to_obj() == {"role": "HUMAN", "prompt": "y", "begin": "<h>"}
    assert list(item.with_prompt("y").to_obj()) == ["role", "prompt", "begin"]
    # added last when absent
    bare = RoleItem.of("BOT", end="</b>")
    assert list(bare.with_prompt("z").to_obj()) == ["role", "end", "prompt"]


def test_item_from_obj_rejects_other_types():
    with pytest.raises(TypeError):
        item_from_obj(3)
    with pytest.raises(TypeError):
        PromptList.from_list(["ok", 1.5])


def test_marker_to_obj():
    assert Marker("end", "begin").to_obj() == {"section": "end", "pos": "begin"}


# -- properties -----------------------------------------------------------------------

text_st = st.text(max_size=10)
json_value = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), text_st)
marker_st = st.builds(lambda s, p: {"section": s, "pos": p},
                      st.sampled_from(SECTION_NAMES), st.sampled_from(["begin", "end"]))


@st.composite
def role_dicts(draw):
    d = {"role": draw(st.sampled_from(["HUMAN", "BOT", "SYSTEM", "user"]))}
    if draw(st.booleans()):
        d["prompt"] = draw(text_st)
    extras = draw(st.dictionaries(st.sampled_from(["begin", "end", "generate", "fallback_role",
                                                   "api_role", "x-y"]), json_value, max_size=3))
    d.update(extras)
    return d


obj_list = st.lists(st.one_of(text_st, role_dicts(), marker_st), max_size=8)
FAST = settings(max_examples=60)  # keeps the whole test set well under its time budget


@FAST
@given(objs=obj_list)
def test_from_list_to_list_round_trip(objs):
    pl = PromptList.from_list(objs)
    assert pl.to_list() == objs
    assert PromptList.from_list(pl.to_list()) == pl


@FAST
@given(objs=obj_list)
def test_str_is_texts_and_prompts_concatenated(objs):
    expected = "".join(o if isinstance(o, str) else str(o.get("prompt", ""))
                       for o in objs if isinstance(o, str) or "role" in o)
    assert str(PromptList.from_list(objs)) == expected


@FAST
@given(a=obj_list, b=obj_list)
def test_add_concatenates(a, b):
    left, right = PromptList.from_list(a), PromptList.from_list(b)
    assert (left + right).to_list() == a + b
    assert (left + b).to_list() == a + b
    assert len(left + right) == len(a) + len(b)
