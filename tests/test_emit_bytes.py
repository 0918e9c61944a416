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
