"""--shard-rows: each pair as <model>/<dataset>/part-NNNNN files, through the CLI as a user runs it.

The reference for a shard's bytes is the unsharded record file of the same run (its bytes are
checked by hand elsewhere): shard k is that file's lines k*N to k*N+N-1. Names, counts, first
and last records below are written by hand; digests are recomputed here with hashlib from
the definition in the docs (sha256 of the shard digests, one per line).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests._cli import run_cli

ROOT = Path(__file__).resolve().parent.parent
ROWS = 5_000

SUITE = """\
_reader = {{'input_columns': ['q'], 'output_column': 'a'}}
_files = {{'train': 'train.jsonl', 'test': 'test.jsonl'}}
_ice = {{'type': 'PromptTemplate', 'template': 'Q: {{q}}\\nA: {{a}}'}}
datasets = [
    dict(abbr='gen', data_files=_files, reader_cfg=_reader, infer_cfg=dict(
        ice_template=_ice, inferencer=dict(type='GenInferencer'),
        prompt_template={{'type': 'PromptTemplate', 'template': '</E>Q: {{q}}\\nA:',
                         'ice_token': '</E>'}},
        retriever=dict(type='FixKRetriever', fix_id_list=[1, 0]))),
    dict(abbr='ppl', data_files=_files, reader_cfg=_reader, infer_cfg=dict(
        ice_template=_ice, inferencer=dict(type='PPLInferencer'),
        prompt_template=dict(type='PromptTemplate', ice_token='</E>', template={{
            'yes': '</E>Q: {{q}}\\nA: yes', 'no': '</E>Q: {{q}}\\nA: no'}}),
        retriever=dict(type='FixKRetriever', fix_id_list=[2]))),
]
models = [dict(abbr='lm', type='HuggingFaceCausalLM', max_out_len=8)]
"""

YAML_SUITE = """\
datasets:
  - abbr: gen
    data_files: {train: train.jsonl, test: test.jsonl}
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      ice_template: {type: PromptTemplate, template: "Q: {q}\\nA: {a}"}
      prompt_template: {type: PromptTemplate, template: "</E>Q: {q}\\nA:", ice_token: "</E>"}
      retriever: {type: FixKRetriever, fix_id_list: [1, 0]}
      inferencer: {type: GenInferencer}
models:
  - {abbr: lm, type: HuggingFaceCausalLM, max_out_len: 8}
"""


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shards")
    train = [{"q": f"train {w}", "a": w} for w in ("apple", "pear", "plum")]
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train))
    (root / "test.jsonl").write_text("".join(
        json.dumps({"q": f"{i} + {i % 7}", "a": "yes" if i % 2 else "no"}) + "\n"
        for i in range(ROWS)))
    (root / "suite.py").write_text(SUITE.format())
    (root / "suite.yaml").write_text(YAML_SUITE)
    return root


def _ok(done: object) -> None:
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]


def _tree(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file()}


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


@pytest.fixture(scope="module")
def whole(suite: Path) -> Path:
    _ok(run_cli("suite.py", "-o", "whole", cwd=suite))
    return suite / "whole"


def test_shards_hold_the_records_of_the_unsharded_file_in_order(suite: Path, whole: Path
                                                                ) -> None:
    _ok(run_cli("suite.py", "-o", "s1", "--shard-rows", "1999", cwd=suite))
    tree = _tree(suite / "s1")
    # gen: 5,000 records -> 1999 + 1999 + 1002; ppl: 10,000 records (a row per label) -> 6
    assert sorted(tree) == ["lm/gen/part-00000.jsonl", "lm/gen/part-00001.jsonl",
                            "lm/gen/part-00002.jsonl"] + [
        f"lm/ppl/part-0000{k}.jsonl" for k in range(6)] + ["manifest.json"]
    manifest = json.loads(tree["manifest.json"])
    assert manifest["arguments"] == {"shard_rows": 1999}
    assert sorted(manifest["outputs"]) == ["lm/gen", "lm/ppl"]
    for pair, total in (("gen", 5000), ("ppl", 10000)):
        ref = _lines((whole / f"lm/{pair}.jsonl").read_bytes())
        entry = manifest["outputs"][f"lm/{pair}"]
        assert (entry["dataset"], entry["model"], entry["records"]) == (pair, "lm", total)
        assert entry["shard_rows"] == 1999
        shards = entry["shards"]
        assert [(s["first"], s["last"], s["records"]) for s in shards] == [
            (k * 1999, min(k * 1999 + 1998, total - 1), min(1999, total - k * 1999))
            for k in range(len(shards))]
        for k, s in enumerate(shards):
            data = tree[s["name"]]
            assert s["name"] == f"lm/{pair}/part-{k:05d}.jsonl"
            assert data == b"".join(ref[s["first"]:s["last"] + 1])
            assert s["sha256"] == hashlib.sha256(data).hexdigest()
        digests = "".join(s["sha256"] + "\n" for s in shards).encode()
        assert entry["sha256"] == hashlib.sha256(digests).hexdigest()
    # ppl shard 1 starts in the middle of row 999 (records 1998 "no"... 1999 is its "no")
    first = json.loads(_lines(tree["lm/ppl/part-00001.jsonl"])[0])
    assert (first["index"], first["label"]) == (999, "no")


@pytest.mark.parametrize("fmt", ["records", "vllm", "openai-batch", "parquet"])
def test_jobs_1_and_2_write_the_same_shard_set(suite: Path, fmt: str) -> None:
    # 5,000 rows >= 2 * SPLIT_ROWS: with --jobs 2 each process writes its own run of shards;
    # 999 records a shard cuts ppl rows (two records each) between shards
    outs = []
    for jobs in ("1", "2"):
        out = f"j{jobs}-{fmt}"
        _ok(run_cli("suite.py", "-o", out, "--shard-rows", "999", "--jobs", jobs,
                    "--format", fmt, cwd=suite, timeout=300))
        outs.append(_tree(suite / out))
    assert outs[0] == outs[1]
    ext = {"records": ".jsonl", "vllm": ".vllm.jsonl", "openai-batch": ".batch.jsonl",
           "parquet": ".parquet"}[fmt]
    assert sorted(outs[0]) == [f"lm/gen/part-{k:05d}{ext}" for k in range(6)] + [
        f"lm/ppl/part-{k:05d}{ext}" for k in range(11)] + ["manifest.json"]
    manifest = json.loads(outs[0]["manifest.json"])
    assert manifest["outputs"]["lm/ppl"]["records"] == 10_000
    if fmt != "records":
        assert manifest["outputs"]["lm/ppl"]["format"] == fmt


def test_converted_shards_keep_the_ids_of_rows_cut_by_a_boundary(suite: Path) -> None:
    _ok(run_cli("suite.py", "-o", "v", "--shard-rows", "999", "--format", "vllm", "--only",
                "ppl", cwd=suite))
    tail = json.loads(_lines((suite / "v/lm/ppl/part-00000.vllm.jsonl").read_bytes())[-1])
    head = json.loads(_lines((suite / "v/lm/ppl/part-00001.vllm.jsonl").read_bytes())[0])
    # record 998 is row 499's "yes" (its first label), record 999 its "no"
    assert (tail["id"], head["id"]) == ("lm/ppl/499/0", "lm/ppl/499/1")
    assert head["sampling_params"] == {"max_tokens": 1, "prompt_logprobs": 0}


def test_batch_shards_stay_within_the_api_line_limit(suite: Path) -> None:
    import prompt_compiler as pc

    manifest = pc.compile_to_dir(pc.load(suite / "suite.py"), suite / "b", only="gen",
                                 format="openai-batch", shard_rows=2000, batch_lines=1500)
    entry = manifest["outputs"]["lm/gen"]
    assert entry["shard_rows"] == 1500
    assert [s["records"] for s in entry["shards"]] == [1500, 1500, 1500, 500]
    line = json.loads(_lines((suite / "b/lm/gen/part-00003.batch.jsonl").read_bytes())[0])
    assert line["custom_id"] == "lm/gen/4500"
    assert line["body"]["max_tokens"] == 8
    with pytest.raises(pc.DataError, match="over the 1000-byte limit of the Batch API"):
        pc.compile_to_dir(pc.load(suite / "suite.py"), suite / "b", only="gen",
                          format="openai-batch", shard_rows=2000, batch_bytes=1000)
    assert (suite / "b/lm/gen/part-00003.batch.jsonl").is_file()  # OUT kept whole


def test_parquet_shards_are_read_by_pyarrow(suite: Path, whole: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    _ok(run_cli("suite.py", "-o", "pq", "--shard-rows", "2000", "--format", "parquet",
                "--only", "gen", cwd=suite))
    ref = [json.loads(x) for x in _lines((whole / "lm/gen.jsonl").read_bytes())]
    got = []
    for k in range(3):
        got += pq.read_table(suite / f"pq/lm/gen/part-{k:05d}.parquet").to_pylist()
    assert [r["prompt"] for r in got] == [r["prompt"] for r in ref]
    assert got[4321]["prompt"] == (
        "Q: train pear\nA: pear\nQ: train apple\nA: apple\nQ: 4321 + 2\nA:")


def test_yaml_config_from_another_folder_and_the_library_read_back(suite: Path, whole: Path,
                                                                   tmp_path: Path) -> None:
    import prompt_compiler as pc

    _ok(run_cli(suite / "suite.yaml", "-o", tmp_path / "y", "--shard-rows", "4096",
                cwd=tmp_path))
    assert sorted(_tree(tmp_path / "y")) == ["lm/gen/part-00000.jsonl",
                                             "lm/gen/part-00001.jsonl", "manifest.json"]
    records = list(pc.read_output(tmp_path / "y"))
    assert [json.dumps(r, ensure_ascii=False) + "\n" for r in records] == [
        x.decode() for x in _lines((whole / "lm/gen.jsonl").read_bytes())]
    assert records[4096]["index"] == 4096


def test_view_and_diff_read_shards(suite: Path, whole: Path) -> None:
    _ok(run_cli("suite.py", "-o", "d", "--shard-rows", "3000", cwd=suite))
    done = run_cli("diff", "whole", "d", cwd=suite)
    _ok(done)
    assert done.stdout.strip().splitlines()[-1] == (
        "identical: 15000 prompts in 2 dataset x model pairs")
    shard = suite / "d/lm/gen/part-00001.jsonl"
    lines = _lines(shard.read_bytes())
    rec = json.loads(lines[0])
    rec["prompt"] += " changed"
    shard.write_bytes(json.dumps(rec, ensure_ascii=False).encode() + b"\n" + b"".join(lines[1:]))
    done = run_cli("diff", "whole", "d", cwd=suite)
    assert "gen x lm: 4999 same, 1 changed, 0 only in A, 0 only in B" in done.stdout
    assert "row 3000" in done.stdout
    _ok(run_cli("view", "d", "-o", "report.html", "--max-items", "0", cwd=suite))
    html = (suite / "report.html").read_text()
    assert "3000 + 4" in html and "4999 + 1" in html and "changed" in html


def test_only_listed_shards_are_read_and_a_stray_file_makes_out_foreign(suite: Path) -> None:
    import prompt_compiler as pc

    _ok(run_cli("suite.py", "-o", "st", "--shard-rows", "3000", "--only", "gen", cwd=suite))
    stray = suite / "st/lm/gen/part-00002.jsonl"  # not the manifest's: never read
    stray.write_text('{"index": 0, "prompt": "stray"}\n')
    assert sum(1 for _ in pc.read_output(suite / "st")) == 5000
    done = run_cli("suite.py", "-o", "st", "--shard-rows", "3000", cwd=suite)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "compile-prompts: error: st is not empty and not an output of compile-prompts "
        "(lm/gen/part-00002.jsonl is not listed in its manifest.json); refusing to replace it "
        "(hint: give a new or empty folder, or pass --overwrite-foreign to replace it)")
    stray.unlink()
    # a sharded output is replaced by an unsharded one, and back
    _ok(run_cli("suite.py", "-o", "st", "--only", "gen", cwd=suite))
    assert sorted(_tree(suite / "st")) == ["lm/gen.jsonl", "manifest.json"]
    _ok(run_cli("suite.py", "-o", "st", "--only", "gen", "--shard-rows", "5000", cwd=suite))
    assert sorted(_tree(suite / "st")) == ["lm/gen/part-00000.jsonl", "manifest.json"]


def test_a_bad_shard_size_is_a_usage_error(suite: Path) -> None:
    done = run_cli("suite.py", "-o", "x", "--shard-rows", "0", cwd=suite)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "compile-prompts: error: --shard-rows must be >= 1")
    import prompt_compiler as pc

    with pytest.raises(pc.ConfigError, match="--shard-rows must be a positive number of "
                                             "records, got 'many'"):
        pc.compile_to_dir(pc.load(suite / "suite.py"), suite / "x", shard_rows="many")


def test_shard_tasks_cover_every_shard_once() -> None:
    from prompt_compiler.emit.shards import shard_tasks

    # 10 rows of 3 records, shards of 4 records: 8 shards (the last of 2) in 3 tasks
    assert shard_tasks(10, 3, 4, 3) == [
        (range(0, 3), range(0, 2), 0),    # records 0-7: rows 0-2
        (range(2, 7), range(2, 5), 6),    # records 8-19: rows 2-6 (rows 2 and 6 are cut)
        (range(6, 10), range(5, 8), 18)]  # records 20-29: rows 6-9


def test_a_run_killed_before_the_swap_leaves_the_previous_shards_whole(suite: Path) -> None:
    import os
    import subprocess
    import sys

    _ok(run_cli("suite.py", "-o", "k", "--shard-rows", "3000", "--only", "gen", cwd=suite))
    before = _tree(suite / "k")
    done = subprocess.run([sys.executable, "-m", "prompt_compiler", "suite.py", "-o", "k",
                           "--shard-rows", "1000"], capture_output=True, text=True,
                          cwd=suite, env={**os.environ,
                                          "PROMPT_COMPILER_TEST_KILL_AT": "before-swap"})
    assert done.returncode == -9
    assert _tree(suite / "k") == before  # the staging folder beside it holds the new shards
    _ok(run_cli("suite.py", "-o", "k", "--shard-rows", "1000", cwd=suite))
    assert len(_tree(suite / "k")) == 5 + 10 + 1
    assert not [p for p in suite.iterdir() if p.name.startswith(".k.")]


def test_the_parquet_shards_of_a_pair_share_one_schema(tmp_path: Path) -> None:
    """Rows whose gold is a number in one shard, text in the next and null in the last: one
    schema (every field a record may have), read as one table."""
    pa_ds = pytest.importorskip("pyarrow.dataset")
    pq = pytest.importorskip("pyarrow.parquet")
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.jsonl").write_text('{"q": "t0", "a": "A0"}\n{"q": "t1", "a": "A1"}\n')
    golds = [1, 2, 3, 4, "x", "y", "z", "w", None, None]
    (data / "test.jsonl").write_text("".join(
        json.dumps({"q": f"q{i}", "a": g}) + "\n"
        for i, g in enumerate(golds)))
    (data / "suite.yaml").write_text(
        "datasets:\n  - abbr: mixed\n    data_files: {train: train.jsonl, test: test.jsonl}\n"
        "    reader_cfg: {input_columns: [q], output_column: a}\n"
        "    infer_cfg:\n"
        "      ice_template: {type: PromptTemplate, template: \"Q: {q}\\nA: {a}\\n\"}\n"
        "      prompt_template: {type: PromptTemplate, template: \"</E>Q: {q}\\nA:\", "
        "ice_token: \"</E>\"}\n"
        "      retriever: {type: FixKRetriever, fix_id_list: [0, 1]}\n"
        "      inferencer: {type: GenInferencer}\n"
        "models:\n  - {abbr: lm, type: HuggingFaceCausalLM}\n")
    _ok(run_cli(data / "suite.yaml", "-o", tmp_path / "out", "--shard-rows", "4",
                "--format", "parquet", cwd=tmp_path))
    folder = tmp_path / "out/lm/mixed"
    shards = sorted(folder.glob("*.parquet"))
    assert [p.name for p in shards] == ["part-00000.parquet", "part-00001.parquet",
                                        "part-00002.parquet"]
    schemas = [pq.read_schema(p) for p in shards]
    assert all(s.equals(schemas[0], check_metadata=True) for s in schemas)
    assert json.loads(schemas[0].metadata[b"prompt_compiler.json_columns"]) == [
        "label", "continuation", "gold", "spans"]
    table = pa_ds.dataset(folder, format="parquet").to_table()
    assert table.num_rows == 10
    rows = table.to_pylist()
    assert [r["gold"] for r in rows] == ["1", "2", "3", "4", '"x"', '"y"', '"z"', '"w"',
                                         None, None]
    assert [r["index"] for r in rows] == list(range(10))
    assert rows[0]["prompt"] == "Q: t0\nA: A0\n\nQ: t1\nA: A1\n\nQ: q0\nA:"
    assert rows[9]["ice_ids"] == [0, 1] and rows[9]["dropped_ice_ids"] is None
    assert {r["over_limit"] for r in rows} == {None} and {r["input_ids"] for r in rows} == {None}
    assert str(table.schema.field("dropped_ice_ids").type.value_type) == "int64"
