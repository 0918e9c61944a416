"""Record lines: the bytes written for a record object (emit.record_bytes)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prompt_compiler.emit.records import record_bytes
from prompt_compiler.errors import DataError

TEXT = st.text(st.characters(blacklist_categories=("Cs",)))  # any text but lone surrogates
VALUES = st.one_of(TEXT, st.integers(), st.none(), st.booleans(), st.lists(st.integers()),
                   st.floats(allow_nan=False, allow_infinity=False), st.lists(st.dictionaries(TEXT, TEXT), max_size=3))


@given(st.dictionaries(TEXT, VALUES, max_size=6))
def test_record_lines_are_what_json_dumps_writes(obj):
    assert record_bytes(obj) == (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")


def test_a_record_line_written_by_hand():
    obj = {"dataset": "d", "model": "m", "mode": "ppl", "index": 3, "label": "A",
           "ice_ids": [0, 1], "prompt": 'é "q"\n\t\x1f\u2028', "prompt_sha256": "ab"}
    assert record_bytes(obj) == (
        '{"dataset": "d", "model": "m", "mode": "ppl", "index": 3, "label": "A", '
        '"ice_ids": [0, 1], "prompt": "é \\"q\\"\\n\\t\\u001f\u2028", "prompt_sha256": "ab"}\n'
    ).encode("utf-8")


def test_a_lone_surrogate_is_a_data_error():
    with pytest.raises(DataError, match="lone surrogate"):
        record_bytes({"prompt": "a\ud800b"})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), [1.0, float("inf")]])
def test_nan_and_infinity_are_a_data_error_never_a_bare_token(value):
    with pytest.raises(DataError, match="NaN or Infinity"):
        record_bytes({"label": value})


@given(TEXT, TEXT, st.lists(TEXT, max_size=3), TEXT, st.integers(0, 10**9), VALUES)
def test_a_line_from_record_pieces_is_the_line_of_the_whole_object(abbr, prompt, stop, label,
                                                                   index, gold):
    # the fast path's pieces (plan/lines.py) filled with a row's values give the bytes of
    # json.dumps on the whole record, whatever text the constant fields hold (a NUL included)
    from prompt_compiler.emit.records import (
        SLOT,
        TEXT_SLOT,
        record_object,
        record_pieces,
        value_bytes,
    )

    def record(**row):
        return record_object(abbr + "\x00", "m", "ppl", label=label, ice_ids=[2, 0],
                             max_out_len=None, stop=stop, stop_token_ids=[7], mask_length=0,
                             **row)

    before, end = record_pieces(record(index=SLOT, row=SLOT, prompt=TEXT_SLOT,
                                       prompt_sha256=TEXT_SLOT, input_ids=SLOT, gold=SLOT))
    assert list(before) == ["index", "row", "prompt", "prompt_sha256", "input_ids", "gold"]
    line = (before["index"] + b"%d" % index + before["row"] + b"%d" % (index + 1)
            + before["prompt"] + json.dumps(prompt, ensure_ascii=False).encode()[1:-1]
            + before["prompt_sha256"] + b"ab" + before["input_ids"] + b"[1, 5]"
            + before["gold"] + value_bytes(gold) + end)
    whole = record(index=index, row=index + 1, prompt=prompt, prompt_sha256="ab",
                   input_ids=[1, 5], gold=gold)
    assert list(whole) == ["dataset", "model", "mode", "index", "row", "label", "ice_ids",
                           "prompt", "prompt_sha256", "input_ids", "mask_length",
                           "max_out_len", "stop", "stop_token_ids", "gold"]
    assert line == (json.dumps(whole, ensure_ascii=False) + "\n").encode("utf-8")
