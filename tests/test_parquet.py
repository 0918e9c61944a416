"""Parquet rows through the CLI: ``path:`` a file, a folder (splits, hub shards) or a glob,
and ``--data-dir``; the same rows as JSON Lines give the same record bytes. Expected
prompts are written by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests._cli import run_cli

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from prompt_compiler.data.parquet import ParquetRows  # noqa: E402
from prompt_compiler.errors import DataError  # noqa: E402

ROWS = [
    {"q": "one", "n": 1, "x": 1.5, "tags": ["a", "b"], "extra": None, "a": "yes"},
    {"q": "two", "n": -20000000000, "x": 0.1, "tags": [], "extra": {"k": 1, "v": [1.0, None]},
     "a": None},
    {"q": None, "n": None, "x": 1e300, "tags": None, "extra": {"k": None, "v": None}, "a": "no"},
]

CONFIG = """\
datasets:
  - abbr: nums
    path: {path}
    reader_cfg:
      input_columns: [q, n, x, tags, extra]
      output_column: a
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template: "Q: {{q}} n={{n}} x={{x}} tags={{tags}} extra={{extra}}\\nA:"
      retriever: {{type: ZeroRetriever}}
      inferencer: {{type: GenInferencer}}
models:
  - abbr: plain
    type: HuggingFaceCausalLM
"""


def _write(path: Path, rows: list[dict], row_group_size: int = 2) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group_size)
    return path


def _records(out: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (out / name).read_text().splitlines()]


def test_a_parquet_file_gives_the_records_of_the_same_rows_in_json_lines(tmp_path: Path) -> None:
    _write(tmp_path / "rows.parquet", ROWS)
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "pq.yaml").write_text(CONFIG.format(path="rows.parquet"))
    (tmp_path / "js.yaml").write_text(CONFIG.format(path="rows.jsonl"))
    for name in ("pq", "js"):
        done = run_cli(f"{name}.yaml", "-o", f"out_{name}", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    got = _records(tmp_path / "out_pq", "plain/nums.jsonl")
    assert [r["prompt"] for r in got] == [
        "Q: one n=1 x=1.5 tags=['a', 'b'] extra=None\nA:",
        "Q: two n=-20000000000 x=0.1 tags=[] extra={'k': 1, 'v': [1.0, None]}\nA:",
        "Q: None n=None x=1e+300 tags=None extra={'k': None, 'v': None}\nA:",
    ]
    assert [r["gold"] for r in got] == ["yes", None, "no"]
    assert ((tmp_path / "out_pq/plain/nums.jsonl").read_bytes()
            == (tmp_path / "out_js/plain/nums.jsonl").read_bytes())
    manifest = json.loads((tmp_path / "out_pq/manifest.json").read_text())
    assert [i["path"] for i in manifest["inputs"]] == ["pq.yaml", "rows.parquet"]


MMLU = """\
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import FixKRetriever
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.datasets import MMLUDataset

mmlu_datasets = [dict(
    abbr='mmlu-tiny', type=MMLUDataset, path='opencompass/mmlu',
    reader_cfg=dict(input_columns=['input'], output_column='target', train_split='dev'),
    infer_cfg=dict(
        ice_template=dict(type=PromptTemplate, template='{input} {target}'),
        prompt_template=dict(type=PromptTemplate, ice_token='</E>', template='</E>{input}'),
        retriever=dict(type=FixKRetriever, fix_id_list=[2, 0]),
        inferencer=dict(type=GenInferencer)),
)]
models = [dict(abbr='plain', type='HuggingFaceCausalLM')]
"""


def test_data_dir_splits_and_hub_shards_in_parquet(tmp_path: Path) -> None:
    (tmp_path / "mmlu.py").write_text(MMLU)
    dev = [{"input": f"d{i}?", "target": f"D{i}"} for i in range(3)]
    test = [{"input": f"t{i}?", "target": f"T{i}"} for i in range(5)]
    # the test split in two hub shards of 3 and 2 rows, row groups of 2
    _write(tmp_path / "data/mmlu-tiny/dev.parquet", dev)
    _write(tmp_path / "data/mmlu-tiny/test-00000-of-00002.parquet", test[:3])
    _write(tmp_path / "data/mmlu-tiny/test-00001-of-00002.parquet", test[3:])
    done = run_cli("mmlu.py", "-o", "out", "--data-dir", "data", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = _records(tmp_path / "out", "plain/mmlu-tiny.jsonl")
    assert [r["prompt"] for r in got] == [
        f"d2? D2\nd0? D0\nt{i}?" for i in range(5)]
    assert [r["gold"] for r in got] == ["T0", "T1", "T2", "T3", "T4"]
    manifest = json.loads((tmp_path / "out/manifest.json").read_text())
    assert [i["path"] for i in manifest["inputs"]] == [
        "data/mmlu-tiny/dev.parquet", "data/mmlu-tiny/test-00000-of-00002.parquet",
        "data/mmlu-tiny/test-00001-of-00002.parquet", "mmlu.py"]
    # DIR/<abbr>.parquet: one split used as both train and test
    _write(tmp_path / "flat/mmlu-tiny.parquet", dev)
    done = run_cli("mmlu.py", "-o", "out2", "--data-dir", "flat", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [r["prompt"] for r in _records(tmp_path / "out2", "plain/mmlu-tiny.jsonl")] == [
        f"d2? D2\nd0? D0\nd{i}?" for i in range(3)]


def test_a_glob_of_parquet_files_is_one_split_in_name_order(tmp_path: Path) -> None:
    _write(tmp_path / "parts/b.parquet", ROWS[1:])
    _write(tmp_path / "parts/a.parquet", ROWS[:1])
    (tmp_path / "pq.yaml").write_text(CONFIG.format(path="'parts/*.parquet'"))
    done = run_cli("pq.yaml", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = _records(tmp_path / "out", "plain/nums.jsonl")
    assert [r["gold"] for r in got] == ["yes", None, "no"]
    manifest = json.loads((tmp_path / "out/manifest.json").read_text())
    assert [i["path"] for i in manifest["inputs"]] == [
        "parts/a.parquet", "parts/b.parquet", "pq.yaml"]


def test_parquet_errors_name_the_file_and_the_column_or_row(tmp_path: Path) -> None:
    import datetime

    table = pa.table({"q": ["a"], "when": [datetime.datetime(2024, 1, 1)]})
    pq.write_table(table, tmp_path / "rows.parquet")
    (tmp_path / "pq.yaml").write_text(CONFIG.format(path="rows.parquet"))
    done = run_cli("pq.yaml", "-o", "out", cwd=tmp_path)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "rows.parquet: column 'when' has the Parquet type timestamp[us]" in lines[0]
    assert not (tmp_path / "out").exists()
    (tmp_path / "rows.parquet").write_text('{"q": "not parquet"}\n')
    done = run_cli("pq.yaml", "-o", "out", cwd=tmp_path)
    assert "rows.parquet: not a Parquet file" in done.stderr, done.stderr
    # a damaged row group, found when the compile reaches it: file and row named
    _write(tmp_path / "rows.parquet", [dict(ROWS[0], q="x" * 1000 + str(i)) for i in range(6)])
    meta = pq.ParquetFile(tmp_path / "rows.parquet").metadata
    where = meta.row_group(2).column(0).data_page_offset
    data = bytearray((tmp_path / "rows.parquet").read_bytes())
    data[where:where + 64] = b"\xff" * 64
    (tmp_path / "rows.parquet").write_bytes(bytes(data))
    done = run_cli("pq.yaml", "-o", "out", cwd=tmp_path)
    assert done.returncode != 0
    assert "rows.parquet: row 4 (row group 2): cannot read this row group" in done.stderr, \
        done.stderr
    assert not (tmp_path / "out").exists()


def test_rows_stream_by_row_groups_and_read_by_id(tmp_path: Path) -> None:
    rows = [{"i": i, "s": str(i) * (i % 3)} for i in range(23)]
    _write(tmp_path / "a.parquet", rows[:10], row_group_size=4)
    _write(tmp_path / "b.parquet", rows[10:], row_group_size=5)
    seq = ParquetRows([tmp_path / "a.parquet", tmp_path / "b.parquet"])
    assert len(seq) == 23
    assert list(seq) == rows
    for start in range(0, 24, 3):
        for stop in range(start, 25, 4):
            assert list(seq.iter_range(start, stop)) == rows[start:stop]
    assert [seq[i] for i in (22, 0, 9, 10, -1)] == [rows[22], rows[0], rows[9], rows[10],
                                                     rows[22]]
    assert len(seq._cache) <= 4  # only a few row groups are kept
    with pytest.raises(IndexError):
        seq[23]
    import pickle

    again = pickle.loads(pickle.dumps(seq))
    assert list(again.iter_range(8, 12)) == rows[8:12]


def test_without_pyarrow_the_error_names_the_extra(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(DataError) as err:
        ParquetRows([tmp_path / "x.parquet"])
    assert "reading Parquet needs the 'pyarrow' package" in str(err.value)
    assert "pip install 'compile-prompts[parquet]'" in str(err.value)
