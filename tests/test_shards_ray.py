"""--shard-rows on Ray: the workers write the shards; the shard set is the local engine's.

The local engine's sharded output is the reference (tests/test_shards.py checks it against
the unsharded files); one Ray instance (2 CPUs) serves the module.
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
from tests.test_ray import SUITE, TRAIN, _ray_task_pids, _test_row

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.filterwarnings("ignore")

N = 20_000


@pytest.fixture(scope="module")
def cluster() -> str:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shards_ray")
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TRAIN))
    (root / "test.jsonl").write_text("".join(json.dumps(_test_row(i)) + "\n"
                                             for i in range(N)))
    (root / "suite.py").write_text(SUITE.format(ext="jsonl"))
    return root


def _tree(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file()}


def _ok(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr


ONLY = ("--only", "gen-fixk", "--only", "ppl-fixk", "--only", "gen-bm25")


@pytest.mark.parametrize(("mode", "fmt"), [("default", "records"), ("compat", "parquet")])
def test_ray_workers_write_the_local_shard_set(big: Path, cluster: str, mode: str,
                                               fmt: str) -> None:
    args = ("suite.py", *ONLY, "--shard-rows", "2999", "--mode", mode, "--format", fmt)
    _ok(run_cli(*args, "-o", f"local-{mode}", "--jobs", "2", cwd=big, timeout=300))
    _ok(run_cli(*args, "-o", f"ray-{mode}", "--engine", "ray", "--ray-address", cluster,
                cwd=big, timeout=300))
    local, on_ray = _tree(big / f"local-{mode}"), _tree(big / f"ray-{mode}")
    assert on_ray == local
    ext = ".jsonl" if fmt == "records" else ".parquet"
    # gen-fixk: 20,000 records in 7 shards; ppl-fixk: 40,000 (two labels) in 14;
    # gen-bm25 (test_range [190000:200000] of 20,000 rows: none) in none
    assert sorted(local) == [f"lm/gen-fixk/part-{k:05d}{ext}" for k in range(7)] + [
        f"lm/ppl-fixk/part-{k:05d}{ext}" for k in range(14)] + ["manifest.json"]
    outputs = json.loads(local["manifest.json"])["outputs"]
    assert outputs["lm/gen-bm25"]["shards"] == []
    assert outputs["lm/ppl-fixk"]["shards"][7]["first"] == 7 * 2999


def test_a_worker_killed_mid_run_leaves_the_shard_set_unchanged(big: Path, cluster: str
                                                                ) -> None:
    _ok(run_cli("suite.py", "--only", "ppl-fixk", "--shard-rows", "2999", "-o", "ref",
                cwd=big, timeout=300))
    proc = subprocess.Popen(
        [sys.executable, "-m", "prompt_compiler", "suite.py", "-o", "killed", "--only",
         "ppl-fixk", "--shard-rows", "2999", "--engine", "ray", "--ray-address", cluster],
        cwd=big, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and proc.poll() is None and time.monotonic() < deadline:
        busy = _ray_task_pids("MapBatches(_shard_batches)")
        if busy:
            killed = busy[0]
            os.kill(killed, signal.SIGKILL)
        else:
            time.sleep(0.005)
    out, err = proc.communicate(timeout=300)
    assert killed is not None, "no shard task was seen running"
    assert proc.returncode == 0, err
    assert _tree(big / "killed") == _tree(big / "ref")


def test_workers_find_their_own_rows_in_a_large_file(tmp_path: Path, cluster: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # 200,000 rows (over 8 MB) after a BOM, with blank lines: the pair is planned with only
    # row 0 read, its byte ranges counted by tasks, each shard task indexing its own rows
    import prompt_compiler.run.suite as S
    from prompt_compiler.emit.shards import plan_for
    from prompt_compiler.run.engines.ray import _remote_plan

    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TRAIN))
    with (tmp_path / "test.jsonl").open("w", encoding="utf-8") as fh:
        fh.write("\ufeff")
        for i in range(200_000):
            fh.write(json.dumps(_test_row(i)) + ("\n\n \n" if i % 9_999 == 0 else "\n"))
    assert (tmp_path / "test.jsonl").stat().st_size > 8 << 20
    (tmp_path / "suite.py").write_text(SUITE.format(ext="jsonl"))
    pair = S.load([tmp_path / "suite.py"]).pairs("ppl-fixk")[0]
    monkeypatch.chdir(tmp_path)
    found, digests = ray.get(ray.remote(_remote_plan).remote(
        str(tmp_path), pair, S.CompileSettings(), 2, plan_for(pair, 49_999), 1_000_003))
    tasks, _, _, lines, offset = found
    assert (lines.total, offset, len(tasks)) == (200_000, 0, 9)  # 400,000 records
    assert len(lines.starts) == 11  # byte ranges of about 1 MB, lines cut at each boundary
    assert sorted(digests) == [str((tmp_path / "test.jsonl").resolve()),
                               str((tmp_path / "train.jsonl").resolve())]
    args = ("suite.py", "--only", "gen-fixk", "--only", "ppl-fixk", "--shard-rows", "49999")
    _ok(run_cli(*args, "-o", "local", cwd=tmp_path, timeout=300))
    monkeypatch.setenv("PROMPT_COMPILER_TEST_RANGE_BYTES", "1000003")
    _ok(run_cli(*args, "-o", "ray", "--engine", "ray", "--ray-address", cluster, cwd=tmp_path,
                timeout=600))
    assert _tree(tmp_path / "ray") == _tree(tmp_path / "local")


_WORKER = """\
import json, pickle, sys
from prompt_compiler.emit.shards import LocalSink
from prompt_compiler.run.engines.ray import _whole_pair_shards
pair, settings, plan = pickle.load(open(sys.argv[1], "rb"))
# a worker on another node: the driver's folder does not exist here
entries, _ = _whole_pair_shards("/nonexistent/driver-folder", pair, settings, plan,
                             LocalSink(sys.argv[2], "out"))
print(json.dumps([e["records"] for e in entries]))
"""


@pytest.mark.parametrize("handed", ["portable", "as-given"])
def test_a_worker_in_another_folder_reads_the_driver_s_relative_paths(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handed: str) -> None:
    """``--data-dir ./data`` and a relative config path, as the driver hands them to a worker
    whose working folder is elsewhere (another node): made absolute, the worker writes the
    shards the CLI writes; as given, it would look in its own folder."""
    import pickle

    from prompt_compiler.emit.shards import plan_for
    from prompt_compiler.run.engines.ray import portable
    from prompt_compiler.run.settings import CompileSettings
    from prompt_compiler.run.suite import load

    proj, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    (proj / "data/gen").mkdir(parents=True)
    (proj / "configs").mkdir()
    elsewhere.mkdir()
    (proj / "data/gen/train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TRAIN))
    (proj / "data/gen/test.jsonl").write_text("".join(json.dumps(_test_row(i)) + "\n"
                                                      for i in range(250)))
    (proj / "configs/gen.yaml").write_text(
        "datasets:\n  - abbr: gen\n    reader_cfg: {input_columns: [q], output_column: a}\n"
        "    infer_cfg:\n"
        "      ice_template: {type: PromptTemplate, template: \"Q: {q}\\nA: {a}\"}\n"
        "      prompt_template: {type: PromptTemplate, template: \"</E>Q: {q}\\nA:\", "
        "ice_token: \"</E>\"}\n"
        "      retriever: {type: FixKRetriever, fix_id_list: [1, 0]}\n"
        "      inferencer: {type: GenInferencer}\n"
        "models:\n  - {abbr: lm, type: HuggingFaceCausalLM}\n")
    _ok(run_cli("configs/gen.yaml", "--data-dir", "./data", "-o", "ref", "--shard-rows", "100",
                cwd=proj))
    monkeypatch.chdir(proj)
    settings = CompileSettings(data_dir=Path("./data"), shard_rows=100)
    pairs = load(["configs/gen.yaml"]).pairs()
    plan = plan_for(pairs[0], 100)
    if handed == "portable":
        pairs, settings = portable(pairs, settings)
        assert settings.data_dir == proj / "data"
        assert pairs[0].dataset.config_path == str(proj / "configs/gen.yaml")
    (tmp_path / "task.pkl").write_bytes(pickle.dumps((pairs[0], settings, plan)))
    (elsewhere / "out/lm/gen").mkdir(parents=True)
    done = subprocess.run([sys.executable, "-c", _WORKER, str(tmp_path / "task.pkl"), "out"],
                          cwd=elsewhere, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    if handed == "as-given":
        assert done.returncode == 1 and "no rows found" in done.stderr, done.stderr
        return
    _ok(done)
    assert json.loads(done.stdout) == [100, 100, 50]
    assert _tree(elsewhere / "out") == {k: v for k, v in _tree(proj / "ref").items()
                                        if k != "manifest.json"}
