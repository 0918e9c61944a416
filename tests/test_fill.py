"""Placeholder filling (spec §2 ``safe_format``; defects D1 rule 1).

Expected values are derived by hand from the spec:

* compat (``sequential``): for each key in entry order, ``str.replace('{k}', str(v))``
  on the *current* text, so later keys re-scan inserted values;
* default (single pass): one left-to-right scan, inserted text never re-read.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prompt_compiler import Policy, PromptTemplate
from prompt_compiler.promptlist.fill import Pattern, RowValues, fill_sequential, fill_single_pass

COMPAT = Policy.of("opencompass")
DEFAULT = Policy.of("default")


def both(text: str, row: dict) -> tuple[str, str]:
    """(compat, default) results of filling ``text`` with ``row`` through Pattern."""
    pat = Pattern.parse(text)
    values = RowValues.of(row)
    return pat.fill(values, sequential=True), pat.fill(values)


# -- Pattern parsing -------------------------------------------------------------


def test_parse_splits_literals_and_slots():
    pat = Pattern.parse("Q: {q}\nA: {a}!")
    assert pat.parts == ("Q: ", "q", "\nA: ", "a", "!")
    assert pat.slots == ("q", "a")
    assert pat.source == "Q: {q}\nA: {a}!"


def test_parse_text_without_slots_is_one_literal():
    pat = Pattern.parse("no slots } here {")
    assert pat.parts == ("no slots } here {",)
    assert pat.slots == ()


def test_parse_double_braces_hold_an_inner_slot():
    # '{{a}}' is '{' + slot a + '}' (there is no escape syntax)
    assert Pattern.parse("{{a}}").parts == ("{", "a", "}")


def test_parse_adjacent_and_empty_slots():
    assert Pattern.parse("{a}{b}").parts == ("", "a", "", "b", "")
    assert Pattern.parse("x{}y").slots == ("",)


# -- the spec's examples ----------------------------------------------------------


def test_spec_example_value_refers_to_later_column():
    # SPEC §2 / D1: '{a} {b}' with a='{b}': compat re-scans the inserted '{b}'
    row = {"a": "{b}", "b": "B"}
    compat, default = both("{a} {b}", row)
    assert compat == "B B"
    assert default == "{b} B"
    assert fill_sequential("{a} {b}", RowValues.of(row).values) == "B B"
    assert fill_single_pass("{a} {b}", RowValues.of(row).values) == "{b} B"


def test_value_refers_to_earlier_column_is_kept_in_both_modes():
    # key b comes first, so when a inserts '{b}' nothing re-scans it
    row = {"b": "B", "a": "{b}"}
    assert both("{a} {b}", row) == ("{b} B", "{b} B")


def test_value_refers_to_itself_is_kept():
    assert both("<{a}>", {"a": "{a}"}) == ("<{a}>", "<{a}>")


def test_spec_examples_through_prompt_template_in_both_modes():
    tp = PromptTemplate("{a} {b}")
    row = {"a": "{b}", "b": "B"}
    assert tp.gen_item(row, "", COMPAT) == "B B"
    assert tp.gen_item(row, "", DEFAULT) == "{b} B"


def test_unknown_placeholders_and_lone_braces_are_kept():
    row = {"a": "A"}
    for result in both("{missing} { {a} } {", row):
        assert result == "{missing} { A } {"


def test_double_braces_give_brace_value_brace():
    # SPEC §2: {{a}} -> '{' + value + '}'
    assert both("\\boxed{{a}}", {"a": "42"}) == ("\\boxed{42}", "\\boxed{42}")
    # an unknown name inside double braces stays as written
    assert both("\\boxed{{}}", {"a": "42"}) == ("\\boxed{{}}", "\\boxed{{}}")


def test_every_occurrence_is_replaced():
    assert both("{a}-{a}-{a}", {"a": "x"}) == ("x-x-x", "x-x-x")


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "None"), (True, "True"), (False, "False"), (1.0, "1.0"), (0, "0"),
     ([1, "x"], "[1, 'x']"), ("", ""), ({"k": 1}, "{'k': 1}")],
)
def test_values_are_stringified_with_str(value, text):
    compat, default = both("<{v}>", {"v": value})
    assert compat == default == f"<{text}>"


def test_dict_value_braces_do_not_become_placeholders_in_default():
    # str({'k': 1}) contains braces; a later key 'k' must not re-read it in default
    row = {"v": {"k": 1}, "k": "K"}
    compat, default = both("{v}", row)
    assert default == "{'k': 1}"
    assert compat == "{'k': 1}"  # '{k}' never occurs literally in "{'k': 1}"


def test_sequential_is_order_dependent():
    # the same values in another column order give another compat result
    text = "{a}|{b}|{c}"
    assert both(text, {"a": "{c}", "b": "{a}", "c": "C"}) == ("C|{a}|C", "{c}|{a}|C")
    assert both(text, {"c": "C", "b": "{a}", "a": "{c}"}) == ("{c}|{c}|C", "{c}|{a}|C")


def test_sequential_fast_path_for_plain_text():
    # no '{' in the text: returned unchanged by both
    assert both("plain", {"a": "{b}", "b": "B"}) == ("plain", "plain")


def test_compat_fast_path_nested_template_braces():
    row = {"a": "b", "b": "B"}
    # SPEC §2 by hand: '{{a}}'.replace('{a}', 'b') -> '{b}'; then '{b}'.replace('{b}', 'B') -> 'B'
    assert fill_sequential("{{a}}", RowValues.of(row).values) == "B"
    assert Pattern.parse("{{a}}").fill(RowValues.of(row), sequential=True) == "B"


def test_compat_fast_path_nested_template_braces_through_template():
    tp = PromptTemplate("{{a}}")
    assert tp.gen_item({"a": "b", "b": "B"}, "", COMPAT) == "B"


def test_default_nested_template_braces_single_pass():
    # default: '{' + 'b' + '}' and the inserted 'b' is never re-read
    assert Pattern.parse("{{a}}").fill(RowValues.of({"a": "b", "b": "B"})) == "{b}"


def test_single_pass_first_key_in_entry_order_wins_at_a_position():
    # D1 rule 1: '{a}' and '{a}b}' both start at 0; 'a' comes first in the entry
    assert Pattern.parse("{a}b}").fill(RowValues.of({"a": "A", "a}b": "AB"})) == "Ab}"


@pytest.mark.xfail(strict=True, reason=(
    "BUG (low severity): fill.Pattern.parse only recognises slots without braces "
    "(regex \\{([^{}]*)\\}), so a column whose name contains '{' is never filled in the default "
    "mode; D1 rule 1 replaces '{k}' for every entry key k found at a position"))
def test_single_pass_key_containing_a_brace():
    # D1 by hand: at position 0 '{x{y}' occurs for the key 'x{y' -> 'V', scan resumes after it
    row = RowValues.of({"x{y": "V", "y": "W"})
    assert Pattern.parse("{x{y}").fill(row) == "V"


def test_row_values_brace_free_flag():
    assert RowValues.of({"a": "x", "b": 1}).brace_free is True
    assert RowValues.of({"a": "{x}"}).brace_free is False
    assert RowValues.of({"a}": "x"}).brace_free is False
    assert RowValues.of({"a": {"k": 1}}).brace_free is False  # str() of a dict has braces


def test_row_values_keep_column_order():
    assert list(RowValues.of({"z": 1, "a": 2, "m": 3}).values) == ["z", "a", "m"]


# -- properties ---------------------------------------------------------------------

FAST = settings(max_examples=100)  # keeps the whole test set well under its time budget
KEYS = ["a", "b", "c", "q", "answer"]
key_st = st.sampled_from(KEYS)
plain_text = st.text(
    alphabet=st.characters(blacklist_characters="{}", blacklist_categories=("Cs",)), max_size=8)
# texts rich in braces and key names, so '{k}', '{{k}}' and stray braces all occur
braced_text = st.lists(st.sampled_from(list("ab{}c q") + ["answer", "{a}", "{b}"]),
                       max_size=12).map("".join)


@st.composite
def rows(draw, values=None):
    values = st.one_of(braced_text, plain_text) if values is None else values
    keys = draw(st.lists(key_st, unique=True, max_size=len(KEYS)))
    return {k: draw(values) for k in keys}


@FAST
@given(row=rows(), order=st.lists(key_st, min_size=1, max_size=6), sep=plain_text)
def test_single_pass_never_rereads_inserted_values(row, order, sep):
    # a template of the row's own placeholders: every value appears verbatim, even if it
    # contains '{k}' for another key
    present = [k for k in order if k in row]
    text = sep.join("{" + k + "}" for k in present)
    expected = sep.join(row[k] for k in present)
    assert Pattern.parse(text).fill(RowValues.of(row)) == expected
    assert fill_single_pass(text, RowValues.of(row).values) == expected


@FAST
@given(text=braced_text | plain_text)
def test_empty_row_leaves_text_unchanged(text):
    empty = RowValues.of({})
    assert Pattern.parse(text).fill(empty) == text
    assert Pattern.parse(text).fill(empty, sequential=True) == text
    assert fill_sequential(text, {}) == text


@FAST
@given(text=braced_text | plain_text)
def test_parse_reassembles_to_source(text):
    parts = Pattern.parse(text).parts
    rebuilt = "".join(p if i % 2 == 0 else "{" + p + "}" for i, p in enumerate(parts))
    assert rebuilt == text


# templates without nested braces: literal runs and whole {name} placeholders
template_st = st.lists(
    st.one_of(plain_text, key_st.map(lambda k: "{" + k + "}"), st.just("{unknown}")),
    max_size=8,
).map("".join)


@FAST
@given(text=template_st, row=rows(values=plain_text))
def test_brace_free_rows_compat_equals_default(text, row):
    values = RowValues.of(row)
    assert values.brace_free
    single = Pattern.parse(text).fill(values)
    assert fill_sequential(text, values.values) == single
    assert Pattern.parse(text).fill(values, sequential=True) == single


@FAST
@given(text=braced_text | template_st, row=rows())
def test_sequential_pattern_matches_reference_when_rows_have_braces(text, row):
    # whenever a value or key has a brace, Pattern(sequential) must be safe_format exactly
    values = RowValues.of(row)
    if values.brace_free:
        return
    assert Pattern.parse(text).fill(values, sequential=True) == fill_sequential(text, values.values)


@FAST
@given(text=braced_text | template_st, row=rows())
def test_filling_is_deterministic(text, row):
    a = Pattern.parse(text)
    b = Pattern.parse(text)
    assert a == b
    values = RowValues.of(row)
    assert a.fill(values) == b.fill(RowValues.of(dict(row)))
    assert a.fill(values, sequential=True) == b.fill(values, sequential=True)
