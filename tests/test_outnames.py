"""Abbr -> file name: safe for any text, stable, at most 255 bytes; clashes are errors."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prompt_compiler.emit.names import check_unique, file_name, output_name
from prompt_compiler.errors import ConfigError


@pytest.mark.parametrize(("abbr", "name"), [
    ("gsm8k", "gsm8k"), ("qwen2.5-7b+chat_v1", "qwen2.5-7b+chat_v1"), ("..", "_."), (".", "_"),
    ("", "_"), ("/", "_"), ("a/../b", "a_.._b"), ("C:\\x", "C__x"), ("a\x00b\nc", "a_b_c"),
    (".env", "_env"), ("数学", "数学"), ("tab\tx", "tab_x"), ("\ud800", "_"),
])
def test_names_by_hand(abbr: str, name: str) -> None:
    assert file_name(abbr) == name


def test_long_names_are_cut_with_a_hash_of_the_abbr() -> None:
    a, b = "x" * 300, "x" * 299 + "y"
    na, nb = file_name(a, ".jsonl"), file_name(b, ".jsonl")
    assert len(na.encode()) == len(nb.encode()) == 255 and na != nb
    assert na == "x" * 232 + "-" + hashlib.sha256(a.encode()).hexdigest()[:16] + ".jsonl"
    # a cut never splits a character
    assert file_name("é" * 200).encode().decode("utf-8").startswith("é" * 100)


@given(st.text(max_size=400))
def test_any_abbr_is_one_safe_component(abbr: str) -> None:
    for suffix in ("", ".jsonl"):
        name = file_name(abbr, suffix)
        assert name == file_name(abbr, suffix)
        assert name not in (".", "..") and not name.startswith(".")
        assert "/" not in name and "\\" not in name and name.isprintable()
        assert 0 < len(name.encode("utf-8")) <= 255 and name.endswith(suffix)


def test_output_name() -> None:
    assert output_name("../m", "d/1") == "_._m/d_1.jsonl"


def test_clashes_name_both_abbrs_and_the_file() -> None:
    with pytest.raises(ConfigError) as err:
        check_unique({"m": "a.py"}, {"x/y": "a.py", "x_y": "b.py"})
    assert str(err.value) == ("b.py: dataset abbrs 'x/y' and 'x_y' map to the same output file "
                              "'x_y.jsonl' (hint: give one of them a different abbr)")
    with pytest.raises(ConfigError, match="'Llama' and 'llama'"):
        check_unique({"Llama": None, "llama": None}, {})
    with pytest.raises(ConfigError, match="the manifest's own name"):
        check_unique({"Manifest.json": "m.py"}, {})
    check_unique({"a": None, "b": None}, {"a": None})  # a model and a dataset may share an abbr
