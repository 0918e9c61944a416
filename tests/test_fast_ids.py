"""Reused ids of a shared beginning equal whole-text encoding (prompt_compiler.model.fast_ids),
on generated texts, with the Llama 3, Qwen 2.5 and DeepSeek vocabularies of PyPI packages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prompt_compiler.model.fast_ids import PrefixIds, reusable
from tests import token_ids_cases as cases

pytestmark = pytest.mark.skipif(bool(cases.missing_packages()),
                                reason="needs the vocabulary packages .ci/run installs")


def _file(vocab: str, work: Path) -> str:
    folder = Path(cases.vocab_folders(work)[vocab])
    return str(folder / "tokenizer.json")


@pytest.fixture(scope="module")
def tokenizers_by_vocab(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import tokenizers

    work = tmp_path_factory.mktemp("vocab")
    out = {}
    for vocab in ("llama3-chat", "qwen", "deepseek"):
        file = _file(vocab, work)
        out[vocab] = (tokenizers.Tokenizer.from_file(file),
                      json.loads(Path(file).read_text(encoding="utf-8")))
    return out


PIECES = ["\n", "\n\n", " ", "  ", "\t", "\r\n", "\r", " \n", "The", " cat", "sat", "'s", "'t",
          "123", "4567", "8", ".", "?!", ":", "A", " A", "é", "e\u0301", "\u0301", "北京",
          "カタカナ", "🙂", "<|eot_id|>", "<|im_end|>", "<|begin_of_text|>",
          "<｜end▁of▁sentence｜>", "\u00a0", "\u3000", "\x1c", "\u2028", "-x", "_y"]
FIXTURE = HealthCheck.function_scoped_fixture
TEXT = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)
ASCII = st.lists(st.sampled_from(
    ["\n", "\n\n", " ", "   ", "\t", "\r\n", "\r", " \n ", "The", " cat", "'s", "'S", "'ll",
     "'x", "1", "12", "1234567", " 42", ".", "?!", "...\n", ":", "A", " A", "<", "|", "<|eot_id|>",
     "-", "_", "~", "(x)", "don't", "\x0b", "\x7f", "\x1c", "Q: ", "é"]),
    max_size=40).map("".join)


def test_the_three_families_are_proven_reusable(tokenizers_by_vocab: dict[str, Any]) -> None:
    assert all(reusable(spec) for _, spec in tokenizers_by_vocab.values())
    assert not reusable({"normalizer": {"type": "Lowercase"}, "model": {"type": "BPE"}})
    assert not reusable({"normalizer": None, "model": {"type": "BPE"},
                         "pre_tokenizer": {"type": "ByteLevel", "use_regex": True}})


@settings(max_examples=60, deadline=None, suppress_health_check=[FIXTURE])
@given(vocab=st.sampled_from(["llama3-chat", "qwen", "deepseek"]), shared=TEXT,
       heads=st.lists(TEXT, min_size=1, max_size=4), tails=st.lists(TEXT, min_size=1,
                                                                      max_size=4))
def test_reused_ids_are_whole_text_ids(tokenizers_by_vocab: dict[str, Any], vocab: str,
                                       shared: str, heads: list[str], tails: list[str]) -> None:
    backend, spec = tokenizers_by_vocab[vocab]
    fast = PrefixIds(backend, spec)
    block = "Q: " + shared + " x" * 40 + "\n"  # a long shared beginning
    for head in heads:
        for tail in tails:
            text = head + block + tail
            assert fast.encode(text) == backend.encode(text, add_special_tokens=False).ids


@settings(max_examples=80, deadline=None, suppress_health_check=[FIXTURE])
@given(vocab=st.sampled_from(["llama3-chat", "qwen"]), texts=st.lists(ASCII, min_size=1,
                                                                      max_size=6))
def test_pieces_are_whole_text_ids(tokenizers_by_vocab: dict[str, Any], vocab: str,
                                   texts: list[str]) -> None:
    backend, spec = tokenizers_by_vocab[vocab]
    fast = PrefixIds(backend, spec)
    assert fast.pattern is not None
    for text in texts:  # the piece cache fills across texts
        assert fast.encode(text) == backend.encode(text, add_special_tokens=False).ids


def test_a_fixed_block_is_encoded_once(tokenizers_by_vocab: dict[str, Any]) -> None:
    backend, spec = tokenizers_by_vocab["llama3-chat"]
    fast = PrefixIds(backend, spec)
    block = "".join(f"Q: question {i}?\nA: answer {i}\n\n" for i in range(5))
    texts = [block + f"Q: test {i}?\nA:" for i in range(20)]
    assert [fast.encode(t) for t in texts] == [
        backend.encode(t, add_special_tokens=False).ids for t in texts]
    assert list(fast.prefixes) == [block]  # cut at the last newline before the rows differ
