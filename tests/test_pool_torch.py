"""``--jobs 2`` on a suite with an embedding retriever (TopK: sentence-transformers, torch).

The run loads PyTorch before the pool starts; a worker forked from it waited forever on a lock
of torch's thread pool (the run never ended). Workers now start from a fork server when torch
is loaded, and the output is byte-identical to ``--jobs 1``."""

from __future__ import annotations

import json
from pathlib import Path

from tests._cli import run_cli
from tests.test_embed_retrieve import _packaged_model

SUITE = """\
_reader = {{'input_columns': ['q'], 'output_column': 'a'}}
_files = {{'train': 'train.jsonl', 'test': 'test.jsonl'}}
datasets = [
    dict(abbr='topk', data_files=_files, reader_cfg=dict(_reader, test_range='[0:12]'),
         infer_cfg=dict(
             ice_template={{'type': 'PromptTemplate', 'template': 'Q: {{q}}\\nA: {{a}}'}},
             prompt_template={{'type': 'PromptTemplate', 'template': '</E>Q: {{q}}\\nA:',
                              'ice_token': '</E>'}},
             inferencer={{'type': 'GenInferencer'}},
             retriever=dict(type='TopkRetriever', ice_num=2,
                            sentence_transformers_model_name={model!r}))),
    dict(abbr='zero', data_files=_files, reader_cfg=_reader, infer_cfg=dict(
        prompt_template={{'type': 'PromptTemplate', 'template': 'Q: {{q}}\\nA:'}},
        inferencer={{'type': 'GenInferencer'}}, retriever=dict(type='ZeroRetriever'))),
]
models = [dict(abbr='lm', type='HuggingFaceCausalLM')]
"""

TOPICS = ("cats", "rivers", "stars", "bread")


def test_jobs_2_with_an_embedding_retriever_ends_and_matches_jobs_1(tmp_path: Path) -> None:
    (tmp_path / "suite.py").write_text(SUITE.format(model=_packaged_model()), encoding="utf-8")
    with (tmp_path / "train.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(8):
            row = {"q": f"a question about {TOPICS[i % 4]}, {i}", "a": str(i)}
            fh.write(json.dumps(row) + "\n")
    with (tmp_path / "test.jsonl").open("w", encoding="utf-8") as fh:  # large: split in ranges
        for i in range(6000):
            fh.write(json.dumps({"q": f"test {i} on {TOPICS[i % 4]}", "a": str(i)}) + "\n")
    one = run_cli("suite.py", "-o", "one", "--jobs", "1", cwd=tmp_path, timeout=300)
    assert one.returncode == 0, one.stderr
    two = run_cli("suite.py", "-o", "two", "--jobs", "2", cwd=tmp_path, timeout=300)
    assert two.returncode == 0, two.stderr
    for name in ("lm/topk.jsonl", "lm/zero.jsonl"):
        assert (tmp_path / "two" / name).read_bytes() == (tmp_path / "one" / name).read_bytes()
    first = json.loads((tmp_path / "one" / "lm" / "topk.jsonl").read_text().splitlines()[0])
    assert first["prompt"].count("Q: ") == 3  # two examples and the question
