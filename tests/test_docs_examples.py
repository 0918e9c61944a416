"""Every example of README.md and docs/*.md runs exactly as written.

The convention (CONTRIBUTING.md says the same, for authors):

* Every fenced block names its language. ``bash`` blocks are shell commands and run as one
  ``bash -e -o pipefail`` script; ``console`` blocks are transcripts (``$ command`` lines, each
  followed by the output it must print, stdout and stderr together; a line ``...`` stands for
  any number of lines; the exit status is not checked); ``python`` blocks run, the blocks of
  one page in one namespace, in order; ``yaml`` and ``json`` blocks must parse; ``text``
  blocks (synopses, diagrams, sample output) are not run.
* The blocks of one page run in order in one fresh folder that holds a copy of the checkout's
  ``configs/`` and ``examples/`` (files an example needs ship under ``examples/``), so a later
  block may use what an earlier one wrote, and nothing lands in the checkout. ``compile-prompts``
  and ``python`` on PATH are this interpreter running this checkout's code.
* A mark is an HTML comment on the line just above the fence, ``<!-- docs-test: MARK -->``
  (several marks separated by ``;``):

  - ``skip REASON``: never run here (a cluster, a GPU, object storage, a download, the set-up
    itself); the reason says why.
  - ``needs MODULE[,MODULE...]``: run only where these modules import (an optional extra; CI
    installs them all), else skipped naming them.
  - ``exit N``: the block must end with exit status N (``diff`` exits 1 when outputs differ).
  - ``file PATH``: the block is the text of the checkout's file PATH (under ``examples/``),
    byte for byte; it is not run itself (a later block uses the file), a config is loaded.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LANGUAGES = {"bash", "console", "python", "yaml", "json", "text"}
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)
MARK = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->\s*\n$")
TIMEOUT = 300


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: where it is, its language, its text and its marks."""

    doc: Path
    line: int
    lang: str
    code: str
    marks: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO).as_posix()}:{self.line}"


def parse_marks(text: str) -> dict[str, str]:
    marks = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, _, value = part.partition(" ")
        marks[name] = value.strip()
    return marks


def page_blocks(doc: Path) -> list[Block]:
    text = doc.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        before = text[:m.start()]
        mark = MARK.search(before)
        out.append(Block(doc, before.count("\n") + 1, m.group(1).strip(), m.group(2),
                         parse_marks(mark.group(1)) if mark else {}))
    return out


ALL = [b for d in DOCS for b in page_blocks(d)]


def test_every_block_names_a_known_language_and_valid_marks() -> None:
    assert len(ALL) > 40
    bad = [f"{b.where}: language {b.lang!r}" for b in ALL if b.lang not in LANGUAGES]
    bad += [f"{b.where}: mark {k!r}" for b in ALL for k in b.marks
            if k not in {"skip", "needs", "exit", "file"}]
    bad += [f"{b.where}: 'skip' needs a reason" for b in ALL
            if "skip" in b.marks and not b.marks["skip"]]
    assert not bad, "\n".join(bad)


@pytest.fixture()
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh folder like a checkout's root (configs/, examples/), with our commands on PATH."""
    work = tmp_path / "work"
    work.mkdir()
    for name in ("configs", "examples"):
        shutil.copytree(REPO / name, work / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "compile-prompts"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m prompt_compiler "$@"\n')
    script.chmod(0o755)
    for name in ("python", "python3"):
        (bin_dir / name).symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    monkeypatch.chdir(work)
    yield work


def _missing(modules: str) -> list[str]:
    import importlib.util

    return [m for m in modules.split(",") if importlib.util.find_spec(m.strip()) is None]


def _shell(command: str, work: Path, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command], cwd=work,
                          text=True, timeout=TIMEOUT, **kw)  # type: ignore[call-overload]


def _matches(expected: list[str], got: list[str]) -> bool:
    """``expected`` lines against ``got``; a ``...`` line stands for any number of lines."""
    if not expected:
        return not got
    if expected[0] == "...":
        return any(_matches(expected[1:], got[i:]) for i in range(len(got) + 1))
    return bool(got) and got[0] == expected[0] and _matches(expected[1:], got[1:])


def _transcript(code: str) -> Iterator[tuple[str, list[str]]]:
    command: str | None = None
    output: list[str] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            if command is not None:
                yield command, output
            command, output = line[2:], []
        else:
            output.append(line)
    if command is not None:
        yield command, output


def _check_file(block: Block) -> None:
    from prompt_compiler.config import load_config

    path = REPO / block.marks["file"]
    assert path.is_file(), f"{block.where}: {block.marks['file']} does not exist"
    assert path.read_text(encoding="utf-8") == block.code, (
        f"{block.where}: the block differs from {block.marks['file']}")
    if path.suffix in (".py", ".yaml", ".yml") and path.parts[-2] != "models":
        load_config(path)


def run_block(block: Block, work: Path, namespace: dict[str, object]) -> None:
    expected_exit = int(block.marks.get("exit", "0"))
    if block.lang == "bash":
        proc = _shell(block.code, work, capture_output=True)
        assert proc.returncode == expected_exit, (
            f"{block.where}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")
    elif block.lang == "console":
        for command, output in _transcript(block.code):
            proc = _shell(command, work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            got = proc.stdout.splitlines()
            assert _matches(output, got), (
                f"{block.where}: $ {command}\nexpected:\n" + "\n".join(output)
                + "\ngot:\n" + proc.stdout)
    elif block.lang == "python":
        try:
            exec(compile(block.code, block.where, "exec"), namespace)
        except ModuleNotFoundError as exc:
            raise AssertionError(f"{block.where}: needs {exc.name}: mark it "
                                 f"<!-- docs-test: needs {exc.name} -->") from exc
    elif block.lang == "yaml":
        assert isinstance(yaml.safe_load(block.code), (dict, list)), block.where
    elif block.lang == "json":
        for line in block.code.splitlines():
            json.loads(line)


@pytest.mark.parametrize("doc", DOCS, ids=[d.relative_to(REPO).as_posix() for d in DOCS])
def test_page_examples_run_as_written(doc: Path, workdir: Path) -> None:
    namespace: dict[str, object] = {"__name__": "__docs_example__"}
    not_run = []
    for block in page_blocks(doc):
        if "skip" in block.marks or block.lang == "text":
            continue
        if "file" in block.marks:
            _check_file(block)
            continue
        missing = _missing(block.marks["needs"]) if "needs" in block.marks else []
        if missing:
            not_run.append(f"{block.where} needs {', '.join(missing)}")
            continue
        run_block(block, workdir, namespace)
    if not_run:
        pytest.skip("the other blocks ran; not run: " + "; ".join(not_run)
                    + " (optional extras; CI installs them)")
