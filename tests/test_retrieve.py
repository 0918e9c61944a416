"""Retrievers (spec §6.1) and their builders."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prompt_compiler import ConfigError, Policy, ReaderConfig, RetrievalError, UnsupportedError
from prompt_compiler.retrieve.basic import (
    RandomRetriever,
    SlidingWindowRetriever,
    default_retrievers,
)

READER = ReaderConfig(("q",), "a")
COMPAT = Policy.of("opencompass")
DEFAULT = Policy.of("default")


def rows(n: int) -> list[dict]:
    return [{"q": f"q{i}", "a": f"a{i}"} for i in range(n)]


def build(name: str, **params):
    return default_retrievers()[name](params, "infer_cfg.retriever")


# -- Zero ---------------------------------------------------------------------------------


def test_zero_gives_no_examples_and_empty_separators():
    r = build("ZeroRetriever")
    assert r.retrieve(rows(3), rows(4), READER, COMPAT) == [[], [], [], []]
    assert (r.ice_separator, r.ice_eos_token) == ("", "")


def test_zero_accepts_ice_eos_token():
    assert build("ZeroRetriever", ice_eos_token="X").ice_eos_token == "X"


# -- FixK -----------------------------------------------------------------------------------


def test_fixk_same_ids_for_every_row_order_and_duplicates_kept():
    r = build("FixKRetriever", fix_id_list=[2, 0, 2])
    assert r.retrieve(rows(3), rows(2), READER, COMPAT) == [[2, 0, 2], [2, 0, 2]]
    assert (r.ice_separator, r.ice_eos_token) == ("\n", "\n")


def test_fixk_ignores_ice_num():
    r = build("FixKRetriever", fix_id_list=[0, 1], ice_num=5)
    assert r.retrieve(rows(2), rows(1), READER, DEFAULT) == [[0, 1]]


def test_fixk_rows_are_independent_lists():
    out = build("FixKRetriever", fix_id_list=[0]).retrieve(rows(1), rows(2), READER, COMPAT)
    out[0].append(9)
    assert out[1] == [0]


@pytest.mark.parametrize("bad", [3, -1])
def test_fixk_out_of_range(bad):
    r = build("FixKRetriever", fix_id_list=[0, bad])
    with pytest.raises(RetrievalError) as info:
        r.retrieve(rows(3), rows(1), READER, COMPAT)
    err = info.value
    assert isinstance(err, IndexError)
    assert err.key_path == "infer_cfg.retriever.fix_id_list[1]"
    assert str(bad) in err.message and "3 rows" in err.message
    assert err.reference[0] == "AssertionError"


# -- Random ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("n_train", "n_test", "ice_num", "seed"),
                         [(10, 6, 3, 43), (5, 4, 5, 0), (7, 3, 1, 1234)])
def test_random_matches_numpy_legacy_draws_in_row_order(n_train, n_test, ice_num, seed):
    r = build("RandomRetriever", ice_num=ice_num, seed=seed)
    got = r.retrieve(rows(n_train), rows(n_test), READER, COMPAT)
    rng = np.random.RandomState(seed)
    expected = [list(rng.choice(n_train, ice_num, replace=False)) for _ in range(n_test)]
    assert got == expected
    assert all(len(set(ids)) == ice_num for ids in got)
    assert all(type(i) is int for ids in got for i in ids)


def test_random_default_seed_is_43():
    got = build("RandomRetriever", ice_num=2).retrieve(rows(8), rows(2), READER, COMPAT)
    rng = np.random.RandomState(43)
    assert got == [list(rng.choice(8, 2, replace=False)) for _ in range(2)]


def test_random_is_deterministic_and_mode_independent():
    r = build("RandomRetriever", ice_num=2, seed=7)
    a = r.retrieve(rows(9), rows(5), READER, COMPAT)
    assert a == r.retrieve(rows(9), rows(5), READER, COMPAT)
    assert a == r.retrieve(rows(9), rows(5), READER, DEFAULT)


def test_random_more_examples_than_rows():
    r = build("RandomRetriever", ice_num=4)
    with pytest.raises(RetrievalError) as info:
        r.retrieve(rows(3), rows(1), READER, COMPAT)
    assert info.value.reference[0] == "ValueError"


@settings(max_examples=40)
@given(n_train=st.integers(1, 12), n_test=st.integers(0, 6), data=st.data())
def test_random_property_prefix_stable(n_train, n_test, data):
    # the ids of a row depend only on its position: compiling more rows keeps earlier draws
    ice_num = data.draw(st.integers(1, n_train))
    r = RandomRetriever(ice_num=ice_num, seed=data.draw(st.integers(0, 2**31 - 1)))
    full = r.retrieve(rows(n_train), rows(n_test + 2), READER, COMPAT)
    assert r.retrieve(rows(n_train), rows(n_test), READER, COMPAT) == full[:n_test]
    assert all(0 <= i < n_train for ids in full for i in ids)


# -- SlidingWindow ---------------------------------------------------------------------------------


def test_sliding_window_wraps_around():
    r = build("SlidingWindowRetriever", k=2)
    # n=5, k=2: i<k -> [n-(k-i) .. n-1] + [0 .. i-1]; else [i-k .. i-1]
    assert r.retrieve(rows(5), rows(4), READER, COMPAT) == [[3, 4], [4, 0], [0, 1], [1, 2]]


def test_sliding_window_k1():
    r = build("SlidingWindowRetriever", k=1)
    assert r.retrieve(rows(3), rows(3), READER, COMPAT) == [[2], [0], [1]]


@settings(max_examples=60)
@given(n=st.integers(1, 10), k=st.integers(1, 10), n_test=st.integers(0, 12))
def test_sliding_window_formula(n, k, n_test):
    # ids outside the pool are refused when the example is built (see the next test)
    got = SlidingWindowRetriever(k=k).retrieve(rows(n), rows(n_test), READER, COMPAT)
    assert len(got) == n_test
    for i, ids in enumerate(got):
        if i < k and n - (k - i) < -n:  # its first id is out of any wrap: it alone
            assert ids == [n - (k - i)]
            continue
        if i < k:
            assert ids == list(range(n - (k - i), n)) + list(range(i))
        else:
            assert ids == list(range(i - k, i))
        assert len(ids) == k


def _sliding_compile(k: int, n_train: int, n_test: int, inferencer: object,
                     mode: str = "opencompass") -> Any:
    """A dataset of ``n_train`` / ``n_test`` rows with SlidingWindowRetriever(k), compiled."""
    import prompt_compiler as pc

    dataset = {"abbr": "sw", "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
               "infer_cfg": {
                   "ice_template": {"type": "PromptTemplate", "template": "{q}={a}\n"},
                   "prompt_template": {"type": "PromptTemplate", "template": "</E>{q}=",
                                       "ice_token": "</E>"},
                   "retriever": {"type": "SlidingWindowRetriever", "k": k},
                   "inferencer": inferencer},
               "splits": {"train": [{"q": f"t{i}", "a": "A"} for i in range(n_train)],
                          "test": [{"q": f"s{i}", "a": "B"} for i in range(n_test)]}}
    return pc.Compiler(mode=mode).compile(dataset, {"abbr": "m"})


def test_sliding_window_of_a_huge_k_fails_on_its_first_id_without_making_them_all() -> None:
    """k = 2**31 - 1 over 3 training rows: OpenCompass's list of k ids per row fails on its
    first id when the example is built; the retriever gives that id alone (it made every id
    of every row, and ran out of memory)."""
    k = 2**31 - 1
    got = SlidingWindowRetriever(k=k).retrieve(rows(3), rows(2), READER, COMPAT)
    assert [got[0], got[1], got[-1]] == [[3 - k], [4 - k], [4 - k]]
    for mode in ("opencompass", "default"):
        with pytest.raises(RetrievalError) as info:
            _sliding_compile(k, 3, 1, {"type": "GenInferencer"}, mode)
        assert info.value.reference == (
            "IndexError", "Invalid key: -2147483644 is out of bounds for size 3")


def test_sliding_window_ids_outside_the_pool_are_a_retrieval_error() -> None:
    """OpenCompass's dataset refuses an example id outside the pool when the example is
    built (IndexError: 'Invalid key: -3 is out of bounds for size 2'), in row order."""
    compile_ = _sliding_compile
    gen = {"type": "GenInferencer"}
    ppl = {"type": "PPLInferencer", "labels": ["A", "B"]}
    for k, n, n_test, inferencer, bad in ((5, 2, 1, gen, -3), (3, 1, 1, ppl, -2),
                                          (2, 1, 3, gen, 1), (1, 2, 4, ppl, 2)):
        with pytest.raises(RetrievalError) as info:
            compile_(k, n, n_test, inferencer)
        assert info.value.reference == (
            "IndexError", f"Invalid key: {bad} is out of bounds for size {n}")
    # up to twice the pool the first rows wrap to its end (ids -n .. -1 are rows too)
    result = compile_(3, 2, 2, gen)
    assert [r.prompt for r in result.records] == ["t1=A\n\nt0=A\n\nt1=A\n\ns0=",
                                                  "t0=A\n\nt1=A\n\nt0=A\n\ns1="]


# -- builders ------------------------------------------------------------------------------------


def test_builder_rejects_unknown_params():
    with pytest.raises(ConfigError) as info:
        build("FixKRetriever", fix_id_list=[0], bogus=1)
    assert "'bogus'" in info.value.message
    assert "fix_id_list" in info.value.message  # lists what it accepts
    assert info.value.key_path == "infer_cfg.retriever"


def test_builder_requires_params():
    with pytest.raises(ConfigError) as info:
        build("FixKRetriever")
    assert "'fix_id_list'" in info.value.message
    with pytest.raises(ConfigError):
        build("SlidingWindowRetriever")


@pytest.mark.parametrize("ids", [[0, "1"], [True], "0 1", [0.0]])
def test_builder_fix_id_list_must_be_ints(ids):
    with pytest.raises(ConfigError) as info:
        build("FixKRetriever", fix_id_list=ids)
    assert info.value.key_path == "infer_cfg.retriever.fix_id_list"


@pytest.mark.parametrize(("name", "params", "key"), [
    ("RandomRetriever", {"ice_num": "2"}, "ice_num"),
    ("RandomRetriever", {"seed": 1.5}, "seed"),
    ("RandomRetriever", {"ice_num": True}, "ice_num"),
    ("SlidingWindowRetriever", {"k": "3"}, "k"),
    ("FixKRetriever", {"fix_id_list": [0], "ice_separator": 1}, "ice_separator"),
    ("ZeroRetriever", {"ice_eos_token": None}, "ice_eos_token"),
])
def test_builder_type_checks(name, params, key):
    with pytest.raises(ConfigError) as info:
        build(name, **params)
    assert info.value.key_path == f"infer_cfg.retriever.{key}"


def test_builder_accepts_common_split_params():
    r = build("FixKRetriever", fix_id_list=[0], index_split="train", test_split="test",
              ice_separator="|", ice_eos_token="#")
    assert (r.ice_separator, r.ice_eos_token, r.fix_id_list) == ("|", "#", (0,))


def test_mdl_retriever_is_unsupported():
    with pytest.raises(UnsupportedError, match="evaluated model"):
        build("MDLRetriever", ice_num=1)


@pytest.mark.parametrize("name", ["TopkRetriever", "DPPRetriever", "VotekRetriever"])
def test_embedding_retrievers_build_without_loading_a_model(name):
    # the model is loaded when rows are retrieved (tests/test_embed_retrieve.py)
    assert build(name, ice_num=1, sentence_transformers_model_name="m").ice_num == 1
