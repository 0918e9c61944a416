"""Files that are not ours beside OUT, inputs inside OUT, nested OUTs (issue 20).

Each case runs ``python -m prompt_compiler`` as a subprocess in a folder holding a
planted object (a symlink at the lock's path, a named pipe, another user's file, a
folder that looks like an old staging folder ...) and a planted target file outside it,
and checks the exit status, the one error line naming the object, and that nothing
outside OUT changed: the whole folder's tree and the target's bytes are compared before
and after.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

LOCK = ".out.compile-prompts-lock"
posix = pytest.mark.skipif(os.name != "posix", reason="POSIX file system objects")
root_only = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                               reason="needs root to make a file of another user")


def suite_yaml(*, path: str | None = None, model: str = "{abbr: m, renderer: lm, "
               "meta_template: null}", extra_dataset: str = "") -> str:
    rows = "" if path else '    rows: [{"question": "q0", "answer": "0"}]\n'
    return ("datasets:\n"
            "  - abbr: d\n"
            "    reader_cfg: {input_columns: [question], output_column: answer}\n"
            "    infer_cfg:\n"
            '      prompt_template: {type: PromptTemplate, template: "Q: {question}\\nA:"}\n'
            "      retriever: {type: ZeroRetriever}\n"
            "      inferencer: {type: GenInferencer}\n"
            + (f"    path: {path}\n" if path else rows) + extra_dataset
            + f"models:\n  - {model}\n")


def cli(*args: str | Path, cwd: Path, timeout: float = 60,
        **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROMPT_COMPILER_TEST")}
    start = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "prompt_compiler", *map(str, args)], cwd=cwd,
                         capture_output=True, text=True, timeout=timeout, env={**env, **extra})
    assert time.monotonic() - start < 30, "one case must stay well under its budget"
    return run


def tree(folder: Path) -> dict[str, object]:
    """Every entry under ``folder`` (links not followed): type, bytes or link target, owner."""
    found: dict[str, object] = {}
    for top, dirs, names in os.walk(folder):
        for name in sorted(dirs + names):
            p = Path(top) / name
            st = p.lstat()
            rel = p.relative_to(folder).as_posix()
            if p.is_symlink():
                found[rel] = ("link", os.readlink(p), st.st_uid)
            elif p.is_file():
                found[rel] = ("file", p.read_bytes(), st.st_uid, st.st_mode)
            else:
                found[rel] = ("other", st.st_mode, st.st_uid)
    return found


def error_line(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 1, (run.returncode, run.stdout, run.stderr)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith("compile-prompts: error: "), run.stderr
    assert run.stderr.count("\n") == 1, run.stderr
    return run.stderr


def wait_for_staging(folder: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 20
    while not (folder.is_dir() and any("staging" in n for n in os.listdir(folder))):
        assert time.monotonic() < deadline and proc.poll() is None, "the run did not start"
        time.sleep(0.002)


def slow_rows(folder: Path) -> None:
    """A data file big enough that a run is still writing when it is stopped (SIGSTOP)."""
    line = '{"question": "q", "answer": "a"}\n'
    (folder / "rows.jsonl").write_text(line * 400_000, encoding="utf-8")


def held_mid_run(folder: Path, proc: subprocess.Popen[str]) -> None:
    """Stop ``proc`` (SIGSTOP) as soon as its staging folder is in ``folder``."""
    wait_for_staging(folder, proc)
    os.kill(proc.pid, signal.SIGSTOP)


@pytest.fixture
def shared(tmp_path: Path) -> tuple[Path, Path]:
    """(the shared folder, a precious file outside it that a planted link points to)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "c.yaml").write_text(suite_yaml(), encoding="utf-8")
    precious = tmp_path / "precious.txt"
    precious.write_bytes(b"root's file\n")
    return folder, precious


# --- objects planted beside OUT ----------------------------------------------------------------


@posix
@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlink_at_the_lock_path_is_refused_and_not_followed(
        shared: tuple[Path, Path], dangling: bool) -> None:
    folder, precious = shared
    target = precious.parent / "created-through-the-link" if dangling else precious
    (folder / LOCK).symlink_to(target)
    before = tree(folder.parent)
    for args in ([], ["--jobs", "2"]):
        line = error_line(cli("c.yaml", "-o", "out", *args, cwd=folder))
        assert f"{folder / LOCK}: refusing to use it, it is a symbolic link" in line
    assert tree(folder.parent) == before
    assert precious.read_bytes() == b"root's file\n" and not (precious.parent /
                                                               "created-through-the-link").exists()


@posix
def test_a_named_pipe_at_the_lock_path_is_refused_without_waiting(
        shared: tuple[Path, Path]) -> None:
    folder, _ = shared
    os.mkfifo(folder / LOCK)
    before = tree(folder.parent)
    line = error_line(cli("c.yaml", "-o", "out", cwd=folder, timeout=20))
    assert f"{folder / LOCK}: refusing to use it, it is a named pipe, not a regular file" in line
    assert tree(folder.parent) == before


@posix
def test_a_hard_link_or_a_folder_at_the_lock_path_is_refused(shared: tuple[Path, Path]) -> None:
    folder, precious = shared
    os.link(precious, folder / LOCK)
    before = tree(folder.parent)
    line = error_line(cli("c.yaml", "-o", "out", cwd=folder))
    assert f"{folder / LOCK}: refusing to use it, it has other hard links" in line
    assert tree(folder.parent) == before and precious.read_bytes() == b"root's file\n"
    (folder / LOCK).unlink()
    (folder / LOCK).mkdir()
    line = error_line(cli("c.yaml", "-o", "out", cwd=folder))
    assert f"{folder / LOCK}: refusing to use it, it is a folder, not a regular file" in line


@root_only
def test_a_lock_file_of_another_user_is_refused(shared: tuple[Path, Path]) -> None:
    folder, _ = shared
    (folder / LOCK).write_bytes(b"")
    os.chown(folder / LOCK, 65534, 65534)
    before = tree(folder.parent)
    line = error_line(cli("c.yaml", "-o", "out", cwd=folder))
    assert f"{folder / LOCK}: refusing to use it, it belongs to another user (uid 65534)" in line
    assert tree(folder.parent) == before


@root_only
def test_a_symlink_out_of_another_user_is_not_followed(shared: tuple[Path, Path]) -> None:
    folder, precious = shared
    victim = precious.parent / "roots-folder"
    victim.mkdir()
    (folder / "out").symlink_to(victim)
    os.lchown(folder / "out", 65534, 65534)
    before = tree(folder.parent)
    line = error_line(cli("c.yaml", "-o", "out", cwd=folder))
    assert "out: refusing to use it, it is a symbolic link of another user (uid 65534)" in line
    assert tree(folder.parent) == before


@root_only
def test_a_symlinked_folder_of_another_user_on_the_way_to_out_is_not_followed(
        shared: tuple[Path, Path]) -> None:
    folder, precious = shared
    victim = precious.parent / "roots-folder"
    victim.mkdir()
    (folder / "link").symlink_to(victim)
    os.lchown(folder / "link", 65534, 65534)
    before = tree(folder.parent)
    for target in ("link/out", "link/deeper/out"):
        line = error_line(cli("c.yaml", "-o", target, cwd=folder))
        assert (f"{folder / 'link'}: refusing to use it, it is a symbolic link of another user "
                "(uid 65534)") in line
    assert tree(folder.parent) == before


@posix
def test_folders_that_look_like_staging_folders_are_left_alone(shared: tuple[Path, Path]) -> None:
    folder, _ = shared
    look_alikes = [".out.snapshot.tmp", ".out.backup_1.tmp", ".out.k3j_x9ab.tmp",
                   ".out.compile-prompts-staging-deadbeef"]
    for name in look_alikes:
        (folder / name).mkdir()
        (folder / name / "keep.txt").write_text(name, encoding="utf-8")
    (folder / ".out.compile-prompts-staging-0badcafe").symlink_to(shared[1])
    before = tree(folder)
    for _ in range(2):  # the second run replaces the first one's output
        run = cli("c.yaml", "-o", "out", cwd=folder)
        assert run.returncode == 0, run.stderr
    after = tree(folder)
    assert {k: v for k, v in after.items() if not k.startswith("out")} == \
        {k: v for k, v in before.items() if not k.startswith("out")}
    assert sorted(n for n in os.listdir(folder) if n.startswith(".out.")) == sorted(
        [*look_alikes, ".out.compile-prompts-staging-0badcafe"])


@posix
def test_a_folder_in_the_way_of_the_fallback_swap_is_an_error_naming_it(
        shared: tuple[Path, Path]) -> None:
    folder, _ = shared
    assert cli("c.yaml", "-o", "out", cwd=folder).returncode == 0
    (folder / ".out.compile-prompts-old").mkdir()
    (folder / ".out.compile-prompts-old" / "keep.txt").write_text("x", encoding="utf-8")
    before = tree(folder.parent)
    line = error_line(cli("c.yaml", "-o", "out", cwd=folder,
                          PROMPT_COMPILER_TEST_NO_EXCHANGE="1"))
    assert f"{folder / '.out.compile-prompts-old'}: refusing to use it, it is in the way" in line
    assert tree(folder.parent) == before
    run = cli("c.yaml", "-o", "out", cwd=folder)  # renameat2 needs no such folder: left alone
    assert run.returncode == 0, run.stderr
    assert (folder / ".out.compile-prompts-old" / "keep.txt").read_text() == "x"


# --- inputs inside OUT ---------------------------------------------------------------------------


def _tokenizer_folder(folder: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tok = tokenizers.Tokenizer(WordLevel({"[UNK]": 0, "Q": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    folder.mkdir(parents=True)
    tok.save(str(folder / "tokenizer.json"))


def _plant_input(case: str, folder: Path) -> list[str]:
    """Make ``folder/out`` an earlier output holding an input of ``case``; the CLI args."""
    out = folder / "out"
    assert cli("c.yaml", "-o", "out", cwd=folder).returncode == 0
    if case == "data-path":
        (out / "rows.jsonl").write_text('{"question": "q", "answer": "a"}\n', encoding="utf-8")
        (folder / "c2.yaml").write_text(suite_yaml(path="out/rows.jsonl"), encoding="utf-8")
        return ["c2.yaml", "-o", "out"]
    if case == "data-path-of-a-dataset-left-out":
        (out / "rows.jsonl").write_text('{"question": "q", "answer": "a"}\n', encoding="utf-8")
        other = suite_yaml(path="out/rows.jsonl").split("models:")[0].replace("abbr: d", "abbr: e")
        text = suite_yaml().replace("models:", other.split("datasets:\n")[1] + "models:")
        (folder / "c2.yaml").write_text(text, encoding="utf-8")
        return ["c2.yaml", "-o", "out", "--only", "d"]
    if case == "data-dir":
        (out / "data").mkdir()
        (out / "data" / "d.jsonl").write_text('{"question": "q"}\n', encoding="utf-8")
        (folder / "c2.yaml").write_text(suite_yaml(path=None).replace(
            '    rows: [{"question": "q0", "answer": "0"}]\n', ""), encoding="utf-8")
        return ["c2.yaml", "-o", "out", "--data-dir", "out/data"]
    if case == "model-file":
        (out / "m.yaml").write_text("models:\n  - {abbr: m2, renderer: lm, meta_template: null}\n",
                                    encoding="utf-8")
        return ["c.yaml", "--model", "out/m.yaml", "-o", "out"]
    if case == "config":
        shutil.copy(folder / "c.yaml", out / "c.yaml")
        return ["out/c.yaml", "-o", "out"]
    if case == "chat-template":
        (out / "t.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}",
                                     encoding="utf-8")
        model = "{abbr: m, renderer: hf_chat, chat_template: out/t.jinja}"
        (folder / "c2.yaml").write_text(suite_yaml(model=model), encoding="utf-8")
        return ["c2.yaml", "-o", "out"]
    if case == "meta-template-file":
        repo = Path(__file__).resolve().parents[1]
        shutil.copy(repo / "prompt_compiler" / "meta_templates" / "chatml.yaml", out / "mt.yaml")
        model = "{abbr: m, renderer: lm, meta_template: out/mt.yaml}"
        (folder / "c2.yaml").write_text(suite_yaml(model=model), encoding="utf-8")
        return ["c2.yaml", "-o", "out"]
    assert case == "tokenizer-folder"
    _tokenizer_folder(out / "tok")
    model = "{abbr: m, renderer: lm, meta_template: null, max_seq_len: 100, tokenizer: out/tok}"
    (folder / "c2.yaml").write_text(suite_yaml(model=model), encoding="utf-8")
    return ["c2.yaml", "-o", "out"]


@pytest.mark.parametrize("case", ["data-path", "data-path-of-a-dataset-left-out", "data-dir",
                                  "config", "model-file", "chat-template", "meta-template-file",
                                  "tokenizer-folder"])
def test_an_input_inside_out_is_refused_before_anything_is_written(
        shared: tuple[Path, Path], case: str) -> None:
    folder, _ = shared
    args = _plant_input(case, folder)
    before = tree(folder.parent)
    for extra in ([], ["--overwrite-foreign"], ["--jobs", "2", "--overwrite-foreign"]):
        line = error_line(cli(*args, *extra, cwd=folder))
        assert re.match(r"compile-prompts: error: the output folder out holds the input "
                        r"(\S*/)?out/\S+, and would be replaced as a whole", line), line
    assert tree(folder.parent) == before


# --- nested output folders -----------------------------------------------------------------------


def test_a_run_into_a_folder_inside_an_output_is_refused(shared: tuple[Path, Path]) -> None:
    folder, _ = shared
    assert cli("c.yaml", "-o", "out", cwd=folder).returncode == 0
    before = tree(folder.parent)
    for target in ("out/child", "out/m", "out/m/deeper"):
        line = error_line(cli("c.yaml", "-o", target, cwd=folder))
        assert (f"compile-prompts: error: {target} is inside {folder / 'out'}, an output folder "
                "of compile-prompts") in line
    assert tree(folder.parent) == before


def test_a_run_into_a_folder_holding_an_output_is_refused(shared: tuple[Path, Path]) -> None:
    folder, _ = shared
    assert cli("c.yaml", "-o", "p/child", cwd=folder).returncode == 0
    before = tree(folder.parent)
    line = error_line(cli("c.yaml", "-o", "p", cwd=folder))
    assert "p is not empty and not an output of compile-prompts (it has no manifest.json)" in line
    line = error_line(cli("c.yaml", "-o", "p", "--overwrite-foreign", cwd=folder))
    assert "p holds p/child, another output folder of compile-prompts; refusing" in line
    assert tree(folder.parent) == before
    shutil.rmtree(folder / "p" / "child")
    (folder / "p" / "x.txt").write_text("x\n", encoding="utf-8")
    (folder / "p" / ".x.compile-prompts-lock").write_text("1\n", encoding="utf-8")
    before = tree(folder.parent)
    line = error_line(cli("c.yaml", "-o", "p", "--overwrite-foreign", cwd=folder))
    assert "p holds p/.x.compile-prompts-lock, the lock of another compile-prompts output" in line
    assert tree(folder.parent) == before


@posix
def test_a_run_into_p_while_a_run_into_p_child_is_writing_fails(
        shared: tuple[Path, Path]) -> None:
    """B writes P/child (stopped mid-run with SIGSTOP); A into P, even replacing foreign
    folders, is refused: P holds B's lock. B then finishes and P/child is there."""
    folder, _ = shared
    slow_rows(folder)
    (folder / "slow.yaml").write_text(suite_yaml(path="rows.jsonl"), encoding="utf-8")
    b = subprocess.Popen([sys.executable, "-m", "prompt_compiler", "slow.yaml", "-o", "p/child"],
                         cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PROMPT_COMPILER_READ_PIPES": "1"})
    try:
        held_mid_run(folder / "p", b)
        line = error_line(cli("c.yaml", "-o", "p", "--overwrite-foreign", cwd=folder))
        assert "p holds p/.child.compile-prompts-lock, the lock of another" in line
        os.kill(b.pid, signal.SIGCONT)
        _, err = b.communicate(timeout=60)
    finally:
        if b.poll() is None:
            b.kill()
            b.communicate()
    assert b.returncode == 0, err
    assert json.loads((folder / "p" / "child" / "manifest.json").read_text())["outputs"]


@posix
def test_a_run_into_p_started_before_p_child_fails_at_its_commit(
        shared: tuple[Path, Path]) -> None:
    """A into P (held mid-run) started first; B into P/child completes meanwhile; A's
    commit sees P changed and fails with one line, and P/child is kept."""
    folder, _ = shared
    slow_rows(folder)
    (folder / "slow.yaml").write_text(suite_yaml(path="rows.jsonl"), encoding="utf-8")
    a = subprocess.Popen([sys.executable, "-m", "prompt_compiler", "slow.yaml", "-o", "p"],
                         cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PROMPT_COMPILER_READ_PIPES": "1"})
    try:
        held_mid_run(folder, a)
        b = cli("c.yaml", "-o", "p/child", cwd=folder)
        assert b.returncode == 0, b.stderr
        os.kill(a.pid, signal.SIGCONT)
        _, err = a.communicate(timeout=60)
    finally:
        if a.poll() is None:
            a.kill()
            a.communicate()
    assert a.returncode == 1 and "Traceback" not in err and err.count("\n") == 1, err
    assert "p is not empty and not an output of compile-prompts" in err
    assert "(it changed during this run)" in err
    assert (folder / "p" / "child" / "manifest.json").is_file()
    assert not [n for n in os.listdir(folder) if n.startswith(".p.")]


def test_a_parent_replaced_during_the_run_is_an_error(tmp_path: Path) -> None:
    """The other order, at library level: P is replaced (renamed away, made again) while a
    run into P/child holds its staging folder; the run does not report success."""
    from prompt_compiler.emit.outdir import OutputDir
    from prompt_compiler.errors import OutputError

    writer = OutputDir(tmp_path / "p" / "child").open()
    writer.write_json("manifest.json", {"tool": "prompt_compiler", "outputs": {}})
    (tmp_path / "p").rename(tmp_path / "gone")
    (tmp_path / "p").mkdir()
    with pytest.raises(OutputError, match=r"child is not in place after the run: its parent "
                                          r"folder .* was replaced or moved"):
        writer.commit()
    assert os.listdir(tmp_path / "p") == []
