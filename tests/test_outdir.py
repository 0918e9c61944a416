"""The output folder is one unit: the CLI as a subprocess, in every situation of issue 7.

Each test runs ``python -m prompt_compiler`` and looks at the folder afterwards: exactly the
files its manifest lists (all from one run), nothing beside it (no lock, no staging), the
exit status, and one ``compile-prompts: error:`` line on failure. A run is held "mid-run"
by giving it a dataset file that is a named pipe nobody writes to: it blocks reading
rows after its staging folder exists, for as long as the test wants.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _cli import EXAMPLE_INPUTS

LOCK = ".out.compile-prompts-lock"
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes (POSIX)")
needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


# --- helpers ---------------------------------------------------------------------------------


def suite_yaml(models: list[str], datasets: list[str], *, rows: int = 2, path: str | None = None,
               text: str = "q") -> str:
    """A YAML suite: every dataset (inline rows, or ``path``) x every model (plain text)."""
    lines = ["datasets:"]
    for abbr in datasets:
        lines += [f"  - abbr: {json.dumps(abbr)}",
                  "    reader_cfg: {input_columns: [question], output_column: answer}",
                  "    infer_cfg:",
                  '      prompt_template: {type: PromptTemplate, template: "Q: {question}\\nA:"}',
                  "      retriever: {type: ZeroRetriever}",
                  "      inferencer: {type: GenInferencer}"]
        if path:
            lines.append(f"    path: {path}")
        else:
            data = [{"question": f"{text}{i}", "answer": str(i)} for i in range(rows)]
            lines.append(f"    rows: {json.dumps(data)}")
    lines.append("models:")
    lines += [f"  - {{abbr: {json.dumps(m)}, renderer: lm, meta_template: null}}" for m in models]
    return "\n".join(lines) + "\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PROMPT_COMPILER_TEST")}
    return {**base, **extra}


def cli(*args: str | Path, cwd: Path, timeout: float = 120,
        **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=env(**extra))


def start(*args: str | Path, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "prompt_compiler", *map(str, args)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env(PROMPT_COMPILER_READ_PIPES="1"))  # rows from a FIFO


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() or p.is_symlink()}


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    assert stderr.startswith("compile-prompts: error: ") and stderr.count("\n") == 1, stderr
    return stderr


def assert_one_unit(out: Path) -> dict[str, bytes]:
    """OUT holds exactly manifest.json and the files it lists, with the listed hashes."""
    files = snapshot(out)
    manifest = json.loads(files["manifest.json"])
    assert set(files) == {"manifest.json", *manifest["outputs"]}
    for name, entry in manifest["outputs"].items():
        assert entry["records"] == files[name].count(b"\n")
    return files


def beside(out: Path) -> list[str]:
    """What is in OUT's parent other than OUT (the lock, staging or old folders)."""
    return sorted(n for n in os.listdir(out.parent) if n.startswith(f".{out.name}."))


def wait_for(cond: object, what: str, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Outputs compiled once for the module: ``v1`` (2 x 2 pairs) and ``v2`` (1 x 2 pairs)."""
    root = tmp_path_factory.mktemp("made")
    write(root / "v1.yaml", suite_yaml(["m1", "m2"], ["d1", "d2"], text="old"))
    write(root / "v2.yaml", suite_yaml(["m1"], ["d1", "d3"], text="new"))
    for name in ("v1", "v2"):
        run = cli(f"{name}.yaml", "-o", name, cwd=root)
        assert run.returncode == 0, run.stderr
    return root


def copy_made(made: Path, tmp_path: Path) -> Path:
    """``tmp_path/out`` holding the v1 output, and v1.yaml/v2.yaml beside it."""
    shutil.copytree(made / "v1", tmp_path / "out")
    for name in ("v1.yaml", "v2.yaml"):
        shutil.copy(made / name, tmp_path / name)
    return tmp_path / "out"


@pytest.fixture
def blocked(tmp_path: Path, made: Path) -> Iterator[tuple[Path, Path]]:
    """(config whose rows come from a named pipe, OUT already holding a complete v1 output)."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs named pipes (POSIX)")
    out = copy_made(made, tmp_path)
    os.mkfifo(tmp_path / "rows.jsonl")
    yield write(tmp_path / "slow.yaml", suite_yaml(["m1", "m2"], ["d1"], path="rows.jsonl")), out


def staging_of(out: Path) -> list[str]:
    return [n for n in beside(out) if "staging" in n]


# --- one unit --------------------------------------------------------------------------------


def test_a_smaller_rerun_leaves_no_stale_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    big = write(tmp_path / "big.yaml", suite_yaml(["m1", "m2"], ["d1", "d2", "d3"]))
    small = write(tmp_path / "small.yaml", suite_yaml(["m1"], ["d2"], rows=1))
    assert cli(big, "-o", out, cwd=tmp_path).returncode == 0
    assert len(assert_one_unit(out)) == 7
    run = cli(small, "-o", out, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    files = assert_one_unit(out)
    assert set(files) == {"manifest.json", "m1/d2.jsonl"}
    assert json.loads(files["m1/d2.jsonl"])["prompt"] == "Q: q0\nA:"
    assert beside(out) == []  # no lock, staging or old folder left


def test_a_foreign_folder_is_refused_and_kept(tmp_path: Path) -> None:
    out = tmp_path / "results"
    write(out / "notes.txt", "mine\n")
    cfg = write(tmp_path / "c.yaml", suite_yaml(["m"], ["d"]))
    run = cli(cfg, "-o", out, cwd=tmp_path)
    assert run.returncode == 1 and run.stdout == ""
    line = one_error_line(run.stderr)
    assert "results is not empty and not an output of compile-prompts" in line
    assert "--overwrite-foreign" in line
    assert snapshot(out) == {"notes.txt": b"mine\n"} and beside(out) == []
    # the flag says so: replaced as a whole
    run = cli(cfg, "-o", out, "--overwrite-foreign", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert set(assert_one_unit(out)) == {"manifest.json", "m/d.jsonl"}


def test_a_file_added_to_an_output_makes_it_foreign(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cfg = write(tmp_path / "c.yaml", suite_yaml(["m"], ["d"]))
    assert cli(cfg, "-o", out, cwd=tmp_path).returncode == 0
    write(out / "m" / "analysis.csv", "a,b\n")
    run = cli(cfg, "-o", out, cwd=tmp_path)
    assert run.returncode == 1
    assert "m/analysis.csv is not listed in its manifest.json" in one_error_line(run.stderr)
    assert (out / "m" / "analysis.csv").exists()


def test_a_foreign_manifest_is_not_ownership(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write(out / "manifest.json", '{"name": "some other tool"}\n')
    run = cli(write(tmp_path / "c.yaml", suite_yaml(["m"], ["d"])), "-o", out, cwd=tmp_path)
    assert run.returncode == 1
    assert "its manifest.json was not written by compile-prompts" in one_error_line(run.stderr)


def test_an_empty_folder_is_filled_and_keeps_its_permissions(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o750)
    run = cli(write(tmp_path / "c.yaml", suite_yaml(["m"], ["d"])), "-o", out, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert set(assert_one_unit(out)) == {"manifest.json", "m/d.jsonl"}
    assert out.stat().st_mode & 0o777 == 0o750


def test_the_output_may_not_hold_the_inputs(tmp_path: Path) -> None:
    cfg = write(tmp_path / "cfgs" / "c.yaml", suite_yaml(["m"], ["d"]))
    run = cli("cfgs", "-o", ".", "--overwrite-foreign", cwd=tmp_path)
    assert run.returncode == 1
    assert "holds the input cfgs" in one_error_line(run.stderr)
    assert cfg.is_file()


# --- signals and dead runs ---------------------------------------------------------------------


@needs_fifo
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143),
                                           (signal.SIGHUP, 129)])
def test_a_signal_stops_the_run_and_removes_its_staging(
        blocked: tuple[Path, Path], tmp_path: Path, sig: signal.Signals, code: int) -> None:
    cfg, out = blocked
    before = snapshot(out)
    proc = start(cfg, "-o", out, cwd=tmp_path)
    wait_for(lambda: staging_of(out), "the run to start")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code
    assert err == f"compile-prompts: stopped by {sig.name}\n"
    assert snapshot(out) == before and beside(out) == []


@needs_fifo
def test_a_second_run_fails_at_once_naming_the_lock(blocked: tuple[Path, Path],
                                                    tmp_path: Path) -> None:
    cfg, out = blocked
    before = snapshot(out)
    proc = start(cfg, "-o", out, cwd=tmp_path)
    try:
        wait_for(lambda: staging_of(out), "the first run to start")
        second = cli(tmp_path / "v1.yaml", "-o", out, cwd=tmp_path, timeout=60)
        assert second.returncode == 1
        line = one_error_line(second.stderr)
        assert f"another compile-prompts run (pid {proc.pid}) is writing this output folder" in line
        assert str(out.parent / LOCK) in line
        assert len(staging_of(out)) == 1  # the second run touched nothing of the first
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    assert proc.returncode == 143
    assert snapshot(out) == before and beside(out) == []


@needs_fifo
def test_the_next_run_removes_what_a_killed_run_left(blocked: tuple[Path, Path],
                                                     tmp_path: Path) -> None:
    cfg, out = blocked
    proc = start(cfg, "-o", out, cwd=tmp_path)
    wait_for(lambda: staging_of(out), "the run to start")
    proc.kill()
    proc.communicate(timeout=60)
    left = beside(out)
    assert LOCK in left and len(staging_of(out)) == 1  # a dead run's lock file and staging
    (out.parent / ".out.k3j_x9ab.tmp").mkdir()  # looks like an old staging name: not ours
    run = cli(tmp_path / "v1.yaml", "-o", out, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert beside(out) == [".out.k3j_x9ab.tmp"]  # only what the dead run recorded is removed
    assert_one_unit(out)


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@needs_fifo
@needs_proc
def test_jobs_workers_die_with_a_killed_parent(blocked: tuple[Path, Path], tmp_path: Path) -> None:
    cfg, out = blocked
    proc = start(cfg, "-o", out, "--jobs", "2", cwd=tmp_path)
    wait_for(lambda: len(_descendants(proc.pid)) >= 2, "two workers")
    workers = _descendants(proc.pid)
    time.sleep(0.5)  # let them reach the pipe
    proc.kill()
    proc.communicate(timeout=60)
    wait_for(lambda: not any(_running(w) for w in workers), "the workers to exit", timeout=5)


@needs_fifo
@needs_proc
def test_sigterm_stops_jobs_workers_and_the_run(blocked: tuple[Path, Path], tmp_path: Path) -> None:
    cfg, out = blocked
    before = snapshot(out)
    proc = start(cfg, "-o", out, "--jobs", "2", cwd=tmp_path)
    wait_for(lambda: len(_descendants(proc.pid)) >= 2, "two workers")
    workers = _descendants(proc.pid)
    time.sleep(0.5)
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert not any(_running(w) for w in workers)
    assert snapshot(out) == before and beside(out) == []


# --- a kill during the swap --------------------------------------------------------------------


@pytest.mark.parametrize(("point", "exchange", "result"), [
    ("before-swap", True, "old"), ("after-swap", True, "new"),
    ("before-swap", False, "old"), ("after-move-old", False, "old"), ("after-swap", False, "new"),
])
def test_a_kill_during_the_commit_leaves_old_or_new_never_a_mix(
        tmp_path: Path, made: Path, point: str, exchange: bool, result: str) -> None:
    out = copy_made(made, tmp_path)
    old, new = snapshot(made / "v1"), snapshot(made / "v2")
    v2 = tmp_path / "v2.yaml"
    bad = write(tmp_path / "bad.yaml", "datasets: [\n")
    hooks = {"PROMPT_COMPILER_TEST_KILL_AT": point,
             **({} if exchange else {"PROMPT_COMPILER_TEST_NO_EXCHANGE": "1"})}
    killed = cli(v2, "-o", out, cwd=tmp_path, **hooks)
    assert killed.returncode == -signal.SIGKILL
    if out.exists():  # right after the kill: complete old or complete new
        assert snapshot(out) in (old, new)
    else:  # only between the fallback's two renames; the old one waits whole beside OUT
        assert point == "after-move-old"
        assert snapshot(out.parent / ".out.compile-prompts-old") == old
    # the next run recovers first, whatever it then does (this one fails: its config is bad)
    after = cli(bad, "-o", out, cwd=tmp_path)
    assert after.returncode == 1
    assert snapshot(out) == (old if result == "old" else new)
    assert beside(out) == []


# --- OS errors: one line, naming the path ----------------------------------------------------


def test_out_is_a_file(tmp_path: Path) -> None:
    write(tmp_path / "taken", "x\n")
    cfg = write(tmp_path / "c.yaml", suite_yaml(["m"], ["d"]))
    run = cli(cfg, "-o", "taken", cwd=tmp_path)
    assert run.returncode == 1
    assert one_error_line(run.stderr) == (
        "compile-prompts: error: taken is a file, not a folder "
        "(hint: give a folder to create or replace with -o)\n")
    run = cli(cfg, "-o", "taken/sub", cwd=tmp_path)
    assert run.returncode == 1
    assert f"cannot create taken/sub: {tmp_path / 'taken'} is a file" in one_error_line(run.stderr)


@needs_proc
def test_out_where_nothing_can_be_created(tmp_path: Path) -> None:
    cfg = write(tmp_path / "c.yaml", suite_yaml(["m"], ["d"]))
    run = cli(cfg, "-o", "/proc/self/out", cwd=tmp_path)
    assert run.returncode == 1
    line = one_error_line(run.stderr)
    assert "cannot create the lock file /proc/" in line and ".out.compile-prompts-lock" in line


def _mount_tmpfs(where: Path, options: str) -> None:
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root on Linux")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[list[Path]]:
    mounted: list[Path] = []
    yield mounted
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_disk_full_is_one_line_and_keeps_the_old_output(tmp_path: Path,
                                                         mounts: list[Path]) -> None:
    small = tmp_path / "small"
    _mount_tmpfs(small, "size=64k")
    mounts.append(small)
    out = small / "out"
    assert cli(write(tmp_path / "v1.yaml", suite_yaml(["m"], ["d"])), "-o", out,
               cwd=tmp_path).returncode == 0
    before = snapshot(out)
    big = write(tmp_path / "big.yaml", suite_yaml(["m"], ["d"], rows=400, text="x" * 400))
    run = cli(big, "-o", out, cwd=tmp_path)
    assert run.returncode == 1
    line = one_error_line(run.stderr)
    assert f"cannot write {out}/m/d.jsonl: No space left on device" in line
    assert snapshot(out) == before and beside(out) == []
    big2 = write(tmp_path / "big2.yaml", suite_yaml(["m1", "m2"], ["d"], rows=400, text="x" * 400))
    run = cli(big2, "-o", out, "--jobs", "2", cwd=tmp_path)  # a worker hits it
    assert run.returncode == 1
    assert "/d.jsonl: No space left on device" in one_error_line(run.stderr)
    assert snapshot(out) == before and beside(out) == []


def test_a_read_only_file_system_is_one_line(tmp_path: Path, mounts: list[Path]) -> None:
    ro = tmp_path / "ro"
    _mount_tmpfs(ro, "ro,size=64k")
    mounts.append(ro)
    run = cli(write(tmp_path / "c.yaml", suite_yaml(["m"], ["d"])), "-o", ro / "out",
              cwd=tmp_path)
    assert run.returncode == 1
    assert one_error_line(run.stderr) == (
        f"compile-prompts: error: cannot create the lock file {ro}/{LOCK}: "
        "Read-only file system\n")


def test_a_mount_point_is_refused_with_a_hint(tmp_path: Path, mounts: list[Path]) -> None:
    mnt = tmp_path / "mnt"
    _mount_tmpfs(mnt, "size=64k")
    mounts.append(mnt)
    run = cli(write(tmp_path / "c.yaml", suite_yaml(["m"], ["d"])), "-o", "mnt", cwd=tmp_path)
    assert run.returncode == 1
    assert one_error_line(run.stderr) == (
        "compile-prompts: error: mnt is a mount point and cannot be replaced as a whole "
        "(hint: give a folder inside it, e.g. -o mnt/prompts)\n")


def test_a_symlink_to_another_file_system_is_followed(tmp_path: Path,
                                                      mounts: list[Path]) -> None:
    other = tmp_path / "other"
    _mount_tmpfs(other, "size=1m")
    mounts.append(other)
    (other / "real").mkdir()
    (tmp_path / "out").symlink_to(other / "real")
    cfg = write(tmp_path / "c.yaml", suite_yaml(["m1", "m2"], ["d"]))
    for _ in range(2):  # create, then replace
        run = cli(cfg, "-o", "out", cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        assert (tmp_path / "out").is_symlink()
        assert set(assert_one_unit(other / "real")) == {"manifest.json", "m1/d.jsonl",
                                                         "m2/d.jsonl"}
        assert beside(other / "real") == []


@pytest.fixture
def frozen(tmp_path: Path) -> Iterator[list[Path]]:
    """Paths made unchangeable (``chattr +i`` as root, read-only mode otherwise); undone after."""
    done: list[Path] = []
    yield done
    for path in done:
        if path.exists():
            subprocess.run(["chattr", "-i", str(path)], capture_output=True)
            path.chmod(0o755)


def freeze(path: Path, frozen: list[Path]) -> None:
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("root ignores permissions and chattr +i is not available here")
    else:
        path.chmod(0o555 if path.is_dir() else 0o444)
    frozen.append(path)


def test_an_unwritable_parent_is_one_line(tmp_path: Path, frozen: list[Path]) -> None:
    parent = tmp_path / "locked"
    parent.mkdir()
    freeze(parent, frozen)
    run = cli(write(tmp_path / "c.yaml", suite_yaml(["m"], ["d"])), "-o", "locked/out",
              cwd=tmp_path)
    assert run.returncode == 1
    line = one_error_line(run.stderr)
    assert f"cannot create the lock file {parent}/{LOCK}: " in line
    assert line.endswith(("Operation not permitted\n", "Permission denied\n"))
    assert os.listdir(parent) == []


def test_an_undeletable_old_output_is_a_warning_then_cleaned(
        tmp_path: Path, made: Path, frozen: list[Path]) -> None:
    out = copy_made(made, tmp_path)
    if os.geteuid() != 0:
        pytest.skip("needs chattr +i (root) to make one old file undeletable")
    freeze(out / "m2" / "d2.jsonl", frozen)
    run = cli("v2.yaml", "-o", "out", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stderr.startswith("compile-prompts: warning: cannot remove the previous output ")
    assert run.stderr.endswith("; the next run into this folder removes it\n")
    assert snapshot(out) == snapshot(made / "v2")
    leftover = [n for n in beside(out) if n != LOCK]
    assert len(leftover) == 1 and LOCK in beside(out)  # the old copy, recorded in the lock
    frozen[0] = out.parent / leftover[0] / "m2" / "d2.jsonl"
    subprocess.run(["chattr", "-i", str(frozen[0])], check=True)
    assert cli("v2.yaml", "-o", "out", cwd=tmp_path).returncode == 0
    assert beside(out) == [] and snapshot(out) == snapshot(made / "v2")


def test_a_yaml_error_is_folded_into_one_line(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", "datasets:\n  - abbr: x\n   reader_cfg: [\n")
    run = cli(bad, "-o", "out", cwd=tmp_path)
    assert run.returncode == 1
    line = one_error_line(run.stderr)
    assert "bad.yaml" in line and "line 3" in line
    assert not (tmp_path / "out").exists()


# --- names -----------------------------------------------------------------------------------


DATASETS = ["..", ".", "../../escape", "/etc/passwd", "a\\b", "..\\..\\x", "tab\there",
            "nul\x00x", "new\nline", "x" * 300, "é" * 200, ".hidden"]
MODELS = [".", "..", "../../escape", "/etc/passwd", "a\\b", "nul\x00x", "y" * 300]


def test_no_abbr_makes_a_path_outside_out(tmp_path: Path) -> None:
    work = tmp_path / "work"
    cfg = write(work / "c.yaml", suite_yaml(MODELS, DATASETS))
    run = cli(cfg, "-o", work / "a" / "out", cwd=work)
    assert run.returncode == 0, run.stderr
    out = work / "a" / "out"
    files = assert_one_unit(out)
    assert len(files) == 1 + len(MODELS) * len(DATASETS)
    assert sorted(os.listdir(tmp_path)) == ["work"]
    assert sorted(os.listdir(work)) == ["a", "c.yaml"] and os.listdir(work / "a") == ["out"]
    for name in files:
        parts = name.split("/")
        assert all(p not in ("", ".", "..") and not p.startswith(".") for p in parts), name
        assert all(len(p.encode()) <= 255 and p.isprintable() for p in parts), name
    outputs = json.loads(files["manifest.json"])["outputs"]
    assert {e["model"] for e in outputs.values()} == set(MODELS)
    # by hand: the documented mapping of a few abbrs
    assert (outputs["_/_.jsonl"]["model"], outputs["_/_.jsonl"]["dataset"]) == (".", ".")
    assert (outputs["_./_..jsonl"]["model"], outputs["_./_..jsonl"]["dataset"]) == ("..", "..")
    assert outputs["_._.._escape/_etc_passwd.jsonl"]["dataset"] == "/etc/passwd"
    assert outputs["a_b/new_line.jsonl"]["dataset"] == "new\nline"
    assert outputs["nul_x/_hidden.jsonl"]["dataset"] == ".hidden"
    long = [n for n in outputs if n.startswith("yyy")]
    assert len(long) == len(DATASETS) and all(len(n.split("/")[0]) == 255 for n in long)


def test_two_abbrs_on_one_file_name_are_an_error_naming_both(tmp_path: Path) -> None:
    cfg = write(tmp_path / "c.yaml", suite_yaml(["a/b", "a_b"], ["d"]))
    run = cli(cfg, "-o", "out", cwd=tmp_path)
    assert run.returncode == 1
    assert one_error_line(run.stderr) == (
        f"compile-prompts: error: {cfg}: model abbrs 'a/b' and 'a_b' map to the same output "
        "folder 'a_b' (hint: give one of them a different abbr)\n")
    cfg = write(tmp_path / "d.yaml", suite_yaml(["m"], ["GSM8K", "gsm8k"]))
    run = cli(cfg, "-o", "out", cwd=tmp_path)
    assert run.returncode == 1  # one file on case-insensitive file systems (macOS, Windows)
    assert "dataset abbrs 'GSM8K' and 'gsm8k' map to the same output file" in run.stderr
    assert not (tmp_path / "out").exists()


# --- determinism -----------------------------------------------------------------------------


def test_same_bytes_across_hash_seeds_jobs_and_working_directories(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[1]
    first = cli("configs/", "-o", tmp_path / "a", cwd=repo, PYTHONHASHSEED="1")
    (tmp_path / "elsewhere").mkdir()
    second = cli(repo / "configs", "-o", "../b", "--jobs", "2", cwd=tmp_path / "elsewhere",
                 PYTHONHASHSEED="2")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    a, b = snapshot(tmp_path / "a"), snapshot(tmp_path / "b")
    assert a == b
    manifest = json.loads(a["manifest.json"])
    assert set(manifest) == {"tool", "version", "mode", "inputs", "outputs"}
    assert [i["path"] for i in manifest["inputs"]] == EXAMPLE_INPUTS
    assert str(repo) not in a["manifest.json"].decode()
