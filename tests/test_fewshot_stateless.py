"""fewshot: inline on PPL prompts, and the stateless sampler's properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import prompt_compiler as pc
from prompt_compiler.retrieve.basic import stateless_sample


def test_inline_examples_in_ppl_prompts() -> None:
    turns = {"round": [{"role": "HUMAN", "prompt": "Q: {q}"}, {"role": "BOT", "prompt": "A: {a}"}]}
    dataset = {
        "abbr": "d", "fewshot": "inline",
        "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
        "infer_cfg": {
            "ice_template": {"type": "PromptTemplate", "template": turns},
            "prompt_template": {"type": "PromptTemplate", "ice_token": "</E>", "template": {
                "yes": {"begin": "</E>", "round": [{"role": "HUMAN", "prompt": "Q: {q}"},
                                                   {"role": "BOT", "prompt": "A: yes"}]},
                "no": {"begin": "</E>", "round": [{"role": "HUMAN", "prompt": "Q: {q}"},
                                                  {"role": "BOT", "prompt": "A: no"}]}}},
            "retriever": {"type": "FixKRetriever", "fix_id_list": [0]},
            "inferencer": {"type": "PPLInferencer"},
        },
        "splits": {"train": [{"q": "sky blue?", "a": "yes"}],
                   "test": [{"q": "grass red?", "a": "no"}]},
    }
    model = {"abbr": "m", "meta_template": {"round": [
        {"role": "HUMAN", "begin": "<u>", "end": "</u>"},
        {"role": "BOT", "begin": "<b>", "end": "</b>", "generate": True}]}}
    records = pc.Compiler().compile(dataset, model).records
    assert [r.prompt for r in records] == [
        "<u>Q: sky blue?\nA: yes\n\nQ: grass red?</u><b>A: yes</b>",
        "<u>Q: sky blue?\nA: yes\n\nQ: grass red?</u><b>A: no</b>",
    ]


@given(st.integers(0, 2**63), st.integers(0, 10**9), st.integers(1, 10**6), st.data())
def test_stateless_sample_is_distinct_in_range_and_repeatable(seed: int, row: int, n: int,
                                                               data: st.DataObject) -> None:
    k = data.draw(st.integers(0, min(n, 20)))
    ids = stateless_sample(seed, row, n, k)
    assert len(ids) == k and len(set(ids)) == k and all(0 <= i < n for i in ids)
    assert stateless_sample(seed, row, n, k) == ids


def test_stateless_sample_full_permutation_and_rows_differ() -> None:
    assert sorted(stateless_sample(1, 2, 7, 7)) == list(range(7))
    assert len({tuple(stateless_sample(43, row, 1000, 3)) for row in range(100)}) == 100
