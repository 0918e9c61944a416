"""BM25 in-context example ranking (prompt_compiler.retrieve.bm25) and its NLTK-compatible tokenizer."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from prompt_compiler.errors import ConfigError, DataError, MissingFieldError
from prompt_compiler.retrieve.bm25 import (
    BM25Index,
    input_field_text,
    split_sentences,
    treebank_tokenize,
    word_tokenize,
)

# -- tokenizer ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        # contractions and fused words
        (
            "I can't believe they're here.",
            ["I", "ca", "n't", "believe", "they", "'re", "here", "."],
        ),
        (
            "We'll see; she's sure I'd go",
            ["We", "'ll", "see", ";", "she", "'s", "sure", "I", "'d", "go"],
        ),
        ("You gonna? I cannot", ["You", "gon", "na", "?", "I", "can", "not"]),
        ("WON'T stop", ["WO", "N'T", "stop"]),
        # quotes
        ('She said "hello" to me', ["She", "said", "``", "hello", "''", "to", "me"]),
        ('"Go," he said.', ["``", "Go", ",", "''", "he", "said", "."]),
        ("the 'cat' sat", ["the", "'", "cat", "'", "sat"]),
        ("“Curly” quotes", ["“", "Curly", "”", "quotes"]),
        # the final period, abbreviations, numbers
        ("It costs $3.88 today.", ["It", "costs", "$", "3.88", "today", "."]),
        ("Mr. Smith left.", ["Mr.", "Smith", "left", "."]),
        ("Sent (really.)", ["Sent", "(", "really", ".", ")"]),
        ("Wait... what", ["Wait", "...", "what"]),
        ("3,000 at 12:30, ok: fine", ["3,000", "at", "12:30", ",", "ok", ":", "fine"]),
        # brackets, code, symbols
        (
            "refers to {de} and {en} #tr2",
            ["refers", "to", "{", "de", "}", "and", "{", "en", "}", "#", "tr2"],
        ),
        (
            "def f(x):\n    return {'k': x}",
            ["def", "f", "(", "x", ")", ":", "return", "{", "'", "k", "'", ":", "x", "}"],
        ),
        ("a--b c*d e@f", ["a", "--", "b", "c", "*", "d", "e", "@", "f"]),
        ("ice token </E> inside", ["ice", "token", "<", "/E", ">", "inside"]),
        # whitespace of every kind separates words
        ("Line one\nLine two\n\nLine four", ["Line", "one", "Line", "two", "Line", "four"]),
        ("Tab\tseparated\tvalues", ["Tab", "separated", "values"]),
        ("", []),
        ("   ", []),
        # non-Latin text is not split inside
        ("这是中文。日本語です", ["这是中文。日本語です"]),
        ("Emoji 🙂 and math ∑x² ≤ π", ["Emoji", "🙂", "and", "math", "∑x²", "≤", "π"]),
        ("Café déjà vu — naïve", ["Café", "déjà", "vu", "—", "naïve"]),
    ],
)
def test_word_tokenize(text: str, tokens: list[str]) -> None:
    assert word_tokenize(text) == tokens


def test_every_sentence_loses_its_final_period() -> None:
    text = "First one. Second one? Third one! Fourth one."
    assert split_sentences(text) == ["First one.", "Second one?", "Third one!", "Fourth one."]
    assert word_tokenize(text) == [
        "First",
        "one",
        ".",
        "Second",
        "one",
        "?",
        "Third",
        "one",
        "!",
        "Fourth",
        "one",
        ".",
    ]
    # without sentence splitting the inner periods stay on their words
    assert treebank_tokenize(text)[:3] == ["First", "one.", "Second"]


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        # a plain word with a period ends a sentence, whatever follows
        ("It was late. then we left", ["It was late.", "then we left"]),
        ("in May. #te0", ["in May.", "#te0"]),
        # known abbreviations do not, unless a common sentence starter follows
        ("Dr. Smith came. Mr. Jones too", ["Dr. Smith came.", "Mr. Jones too"]),
        ("We met Dr. Watson, etc. The end", ["We met Dr. Watson, etc.", "The end"]),
        # initials before names, numbers before lower-case words
        ("J. Bach wrote it", ["J. Bach wrote it"]),
        ("Item 5. is next", ["Item 5. is next"]),
        ("Count to 5. Then stop", ["Count to 5.", "Then stop"]),
        # closing punctuation stays with its sentence
        ('(One.) Two. "Three." Four', ["(One.)", "Two.", '"Three."', "Four"]),
        ("Wow?! Really", ["Wow?!", "Really"]),
        # no whitespace after the period: no break
        ("a.b.c and 3.14", ["a.b.c and 3.14"]),
        # leading whitespace is kept, trailing whitespace dropped (as Punkt does)
        ("  padded  text.  ", ["  padded  text."]),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


# -- ranking -----------------------------------------------------------------------------------


def test_scores_are_rank_bm25_okapi_over_word_tokenize() -> None:
    corpus = ["What is 2 + 3?", "Line one\nLine two", "refers to {de} and {en}", "What is 4?"]
    query = "What is 2 + 2? Line"
    expected = BM25Okapi([word_tokenize(t) for t in corpus]).get_scores(word_tokenize(query))
    assert BM25Index(corpus).scores(query) == [float(s) for s in expected]


def test_scores_equal_rank_bm25_bit_for_bit() -> None:
    rng = random.Random(17)
    vocabulary = "a b c d e f the cat sat. Dr. Smith left! 3.5 x? zz".split()
    for size in (1, 2, 3, 10, 60):
        corpus = [
            " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 30))) for _ in range(size)
        ]
        index = BM25Index(corpus)
        reference = BM25Okapi([word_tokenize(t) for t in corpus])
        for _ in range(20):
            query = " ".join(rng.choice([*vocabulary, "qq"]) for _ in range(rng.randint(0, 30)))
            expected = reference.get_scores(word_tokenize(query))
            assert index.scores(query) == [float(x) for x in expected]


def test_default_mode_breaks_ties_by_descending_row_id() -> None:
    index = BM25Index(["a b", "c d", "a b", "x y", "a b"])
    assert index.rank("a b", 3, stable_ties=True) == [4, 2, 0]
    # nothing in common: every score is 0 and the order is simply reversed
    assert index.rank("zzz", 5, stable_ties=True) == [4, 3, 2, 1, 0]


def test_compat_mode_is_numpy_default_argsort() -> None:
    corpus = ["a b", "c d", "a b", "x y", "a b", "c"]
    index = BM25Index(corpus)
    for query in ("a b", "c", "zzz", "d y"):
        scores = BM25Okapi([word_tokenize(t) for t in corpus]).get_scores(word_tokenize(query))
        assert index.rank(query, 4, stable_ties=False) == [
            int(i) for i in np.argsort(scores)[::-1][:4]
        ]


def test_rank_returns_python_ints_and_slices_like_a_list() -> None:
    index = BM25Index(["a", "b", "c"])
    ids = index.rank("b", 10, stable_ties=True)
    assert ids[0] == 1 and sorted(ids) == [0, 1, 2]
    assert all(type(i) is int for i in ids)
    assert index.rank("b", 0, stable_ties=True) == []
    with pytest.raises(ConfigError):
        index.rank("b", -1, stable_ties=True)


@pytest.mark.parametrize("corpus", [[], ["", "  ", "\n"]])
def test_corpus_without_words_is_a_data_error(corpus: list[str]) -> None:
    with pytest.raises(DataError) as info:
        BM25Index(corpus)
    assert info.value.reference == ("ZeroDivisionError", "division by zero")


def test_input_field_text() -> None:
    row = {"q": "Hi", "n": 3, "none": None, "l": [1, "a"]}
    assert input_field_text(row, ["q", "n", "none", "l"]) == "Hi 3 None [1, 'a']"
    assert input_field_text(row, "q  n") == "Hi 3"  # a string is split like OpenCompass's reader
    with pytest.raises(MissingFieldError) as info:
        input_field_text(row, ["q", "absent"])
    assert info.value.reference == ("KeyError", "'absent'")


# -- conformance: every BM25 case of the shared corpus ------------------------------------------


def _bm25_cases(shared: Path) -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for path in sorted((shared / "conformance/opencompass/cases").glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        if case["dataset"]["infer_cfg"].get("retriever", {}).get("type") == "BM25Retriever":
            cases.append((path.name, case))
    return cases


def _with_extra_columns(rows: list[dict[str, Any]], subdivision: str) -> list[dict[str, Any]]:
    return [{**row, "subdivision": subdivision, "idx": i} for i, row in enumerate(rows)]


def _recompute(case: dict[str, Any], stable_ties: bool) -> list[list[int]]:
    dataset = case["dataset"]
    reader = dataset["reader_cfg"]
    abbr = dataset.get("abbr", "")
    if "rows" in dataset:
        train = test = _with_extra_columns(dataset["rows"], abbr)
    else:
        train_name = reader.get("train_split") or "train"
        test_name = reader.get("test_split") or "test"
        train = _with_extra_columns(dataset["splits"][train_name], f"{abbr}_{train_name}")
        test = _with_extra_columns(dataset["splits"][test_name], f"{abbr}_{test_name}")
    columns = reader["input_columns"]
    ice_num = dataset["infer_cfg"]["retriever"].get("ice_num", 1)
    index = BM25Index([input_field_text(row, columns) for row in train])
    return [
        index.rank(input_field_text(row, columns), ice_num, stable_ties=stable_ties) for row in test
    ]


@pytest.mark.parametrize(("golden", "stable_ties"), [("golden", False), ("golden_default", True)])
def test_shared_bm25_cases(shared_dir: Path, golden: str, stable_ties: bool) -> None:
    cases = _bm25_cases(shared_dir)
    assert cases, "no BM25Retriever case in the shared corpus"
    checked = 0
    for name, case in cases:
        expected = json.loads((shared_dir / "conformance/opencompass" / golden / name).read_text())
        if expected["status"] != "ok":
            continue
        assert _recompute(case, stable_ties) == [row["ice_idx"] for row in expected["rows"]], name
        checked += 1
    assert checked == len(cases)
