"""``from opencompass.configs.<x> import y`` in a user's suite, OpenCompass never imported.

The configs folder comes from ``--opencompass-configs DIR`` / ``load(..., opencompass_configs=)``,
then ``$PROMPT_COMPILER_OPENCOMPASS_CONFIGS``, then an installed ``opencompass``'s ``configs/``
found on disk. CI uses the small hand-written folder ``tests/data/oc_configs_folder``
(OpenCompass's layout, our own configs); the last test runs on OpenCompass 0.5.4's real
configs when the wheel is installed into a target folder named by ``$PC_OPENCOMPASS_PACKAGE``
(``.ci/run`` installs it into ``.opencompass-0.5.4/`` of the clone and sets the variable).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import prompt_compiler as pc

REPO = Path(__file__).resolve().parents[1]
FOLDER = Path(__file__).resolve().parent / "data" / "oc_configs_folder"
ENV = "PROMPT_COMPILER_OPENCOMPASS_CONFIGS"

# These tests check what happens without an installed opencompass (docs/configs.md suggests
# `pip install --no-deps opencompass==0.5.4`, which makes one importable): it would be found first.
WITHOUT_OPENCOMPASS = pytest.mark.skipif(
    importlib.util.find_spec("opencompass") is not None,
    reason="needs no installed opencompass package (an installed one is found first)")

EVAL = """\
from mmengine.config import read_base

with read_base():
    from opencompass.configs.datasets.demo_qa.demo_qa_gen import demo_qa_datasets
    from opencompass.configs.datasets.demo_choice.demo_choice_ppl import demo_choice_datasets
    from opencompass.configs.models.hf_demo.hf_demo_base import models as base_models
    from opencompass.configs.models.hf_demo.hf_demo_chat import models as chat_models
    from opencompass.configs.summarizers.demo import summarizer

datasets = [*demo_qa_datasets, *demo_choice_datasets]
models = [*base_models, *chat_models]
"""

# The manifest's inputs, written by hand: the suite's own files relative to it, OpenCompass's
# configs from the stable root, whichever folder they were found in.
INPUTS = [
    "data/demo_choice.jsonl", "data/demo_qa.jsonl", "eval_demo.py",
    "opencompass:configs/datasets/demo_choice/demo_choice_ppl.py",
    "opencompass:configs/datasets/demo_qa/demo_qa_gen.py",
    "opencompass:configs/datasets/demo_qa/demo_qa_gen_5f1c2a.py",
    "opencompass:configs/models/hf_demo/hf_demo_base.py",
    "opencompass:configs/models/hf_demo/hf_demo_chat.py",
    "opencompass:configs/summarizers/demo.py",
]


def _suite(root: Path, eval_text: str = EVAL) -> Path:
    """A user's suite folder (not named configs): the eval config and its rows."""
    (root / "data").mkdir(parents=True)
    (root / "eval_demo.py").write_text(eval_text, encoding="utf-8")
    (root / "data" / "demo_qa.jsonl").write_text('{"question": "2+2?", "answer": "4"}\n',
                                                 encoding="utf-8")
    (root / "data" / "demo_choice.jsonl").write_text(
        '{"question": "Is snow white?", "label": "yes"}\n', encoding="utf-8")
    return root


def _run(*args: object, cwd: Path, env: dict[str, str] | None = None,
         pythonpath: str = "") -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != ENV}
    full["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), pythonpath) if p)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=full, timeout=120)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _check_output(out: Path) -> dict[str, Any]:
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [i["path"] for i in manifest["inputs"]] == INPUTS
    assert sorted(manifest["outputs"]) == [
        "demo-base-hf/demo_choice.jsonl", "demo-base-hf/demo_qa.jsonl",
        "demo-chat-hf/demo_choice.jsonl", "demo-chat-hf/demo_qa.jsonl"]
    assert [r["prompt"] for r in _records(out / "demo-chat-hf" / "demo_qa.jsonl")] == [
        "<|user|>\nQ: 2+2?\nA:\n<|bot|>\n"]
    assert [r["prompt"] for r in _records(out / "demo-base-hf" / "demo_qa.jsonl")] == [
        "Q: 2+2?\nA:"]
    assert [(r["label"], r["prompt"]) for r in _records(
        out / "demo-base-hf" / "demo_choice.jsonl")] == [
        ("yes", "Is snow white?\nyes"), ("no", "Is snow white?\nno")]
    return dict(manifest)


def test_the_folder_given_by_flag_env_or_library_and_two_machines_agree(tmp_path: Path) -> None:
    one = _suite(tmp_path / "machine1" / "my suite")
    proc = _run("eval_demo.py", "--data-dir", "data", "-o", "out",
                "--opencompass-configs", FOLDER, cwd=one)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "4 dataset x model pairs, 6 prompts (default mode), written to out/\n"
    first = _check_output(one / "out")

    # Another machine: the configs elsewhere, under another name, given by the environment;
    # the suite run from another folder.
    other = tmp_path / "machine2" / "oc" / "any_name"
    shutil.copytree(FOLDER, other)
    two = _suite(tmp_path / "machine2" / "suite")
    proc = _run(two / "eval_demo.py", "--data-dir", two / "data", "-o", two / "out",
                cwd=tmp_path, env={ENV: str(other)})
    assert proc.returncode == 0, proc.stderr
    assert _check_output(two / "out") == first
    assert (two / "out" / "manifest.json").read_bytes() == (one / "out" / "manifest.json"
                                                             ).read_bytes()

    # The library, in this process.
    suite = pc.load(one / "eval_demo.py", opencompass_configs=other)
    assert [d.abbr for d in suite.datasets] == ["demo_qa", "demo_choice"]
    assert [m.abbr for m in suite.models] == ["demo-base-hf", "demo-chat-hf"]


@WITHOUT_OPENCOMPASS
def test_an_installed_opencompass_is_found_on_disk_never_imported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    shutil.copytree(FOLDER, site / "opencompass" / "configs")
    # Importing the package would fail: it is only ever looked at.
    (site / "opencompass" / "__init__.py").write_text("raise RuntimeError('imported')\n")
    one = _suite(tmp_path / "suite")
    proc = _run("eval_demo.py", "--data-dir", "data", "-o", "out", cwd=one,
                pythonpath=str(site))
    assert proc.returncode == 0, proc.stderr
    _check_output(one / "out")
    # the library, in this process, finds it the same way (nothing imported)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv(ENV, raising=False)
    suite = pc.load(one / "eval_demo.py")
    assert [d.abbr for d in suite.datasets] == ["demo_qa", "demo_choice"]
    assert "opencompass" not in sys.modules  # its __init__ would have raised anyway
    # a namespace package (no __init__.py) is fine too
    (site / "opencompass" / "__init__.py").unlink()
    proc = _run("eval_demo.py", "--data-dir", "data", "-o", "out2", cwd=one,
                pythonpath=str(site))
    assert proc.returncode == 0, proc.stderr
    _check_output(one / "out2")


def test_the_mmengine_path_resolves_the_same_folder(tmp_path: Path) -> None:
    # An import inside a function: this project's loader leaves the file to mmengine.
    text = EVAL + "\ndef _unused():\n    import os\n    return os\n"
    one = _suite(tmp_path / "suite", text)
    proc = _run("eval_demo.py", "--data-dir", "data", "-o", "out",
                "--opencompass-configs", FOLDER, cwd=one)
    assert proc.returncode == 0, proc.stderr
    _check_output(one / "out")


@WITHOUT_OPENCOMPASS
def test_without_a_configs_folder_the_error_says_how_to_give_one(tmp_path: Path) -> None:
    one = _suite(tmp_path / "suite")
    proc = _run("eval_demo.py", "--check", cwd=one)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        "compile-prompts: error: eval_demo.py: `from opencompass.configs... import` needs "
        "OpenCompass's configs folder, and none was found (hint: give --opencompass-configs "
        "DIR (load(..., opencompass_configs=DIR)), set PROMPT_COMPILER_OPENCOMPASS_CONFIGS=DIR, "
        "or `pip install --no-deps opencompass`; DIR is the folder holding datasets/ and "
        "models/)\n")


@pytest.mark.parametrize("given", ["missing", "empty"])
def test_a_wrong_configs_folder_is_an_error(tmp_path: Path, given: str) -> None:
    one = _suite(tmp_path / "suite")
    (tmp_path / "empty").mkdir()
    proc = _run("eval_demo.py", "--check", "--opencompass-configs", tmp_path / given, cwd=one)
    assert proc.returncode == 1
    folder = tmp_path / given
    why = "does not exist" if given == "missing" else \
        "holds none of datasets/, models/, summarizers/"
    assert proc.stderr.startswith(
        f"compile-prompts: error: the OpenCompass configs folder {folder} (from "
        f"--opencompass-configs / opencompass_configs=) {why} (hint: give the folder that "
        "holds datasets/ and models/"), proc.stderr


def _real_package() -> Path:
    given = os.environ.get("PC_OPENCOMPASS_PACKAGE")
    if not given:
        pytest.skip("set PC_OPENCOMPASS_PACKAGE to a folder holding OpenCompass 0.5.4 (.ci/run: "
                    "pip install --no-deps --target DIR opencompass==0.5.4)")
    target = Path(given)
    if not (target / "opencompass" / "configs" / "datasets").is_dir():
        pytest.skip(f"PC_OPENCOMPASS_PACKAGE={target} holds no opencompass/configs/datasets")
    return target


def test_opencompass_054_real_configs(tmp_path: Path) -> None:
    target = _real_package()
    text = """\
from mmengine.config import read_base

with read_base():
    from opencompass.configs.datasets.gsm8k.gsm8k_gen import gsm8k_datasets
    from opencompass.configs.datasets.ARC_c.ARC_c_ppl import ARC_c_datasets
    from opencompass.configs.models.hf_internlm.hf_internlm2_5_7b import models as m_base
    from opencompass.configs.summarizers.example import summarizer

datasets = [*gsm8k_datasets, *ARC_c_datasets]
models = [*m_base]
"""
    manifests = []
    for n, how in enumerate(("installed", "folder")):
        one = tmp_path / how
        (one / "data").mkdir(parents=True)
        (one / "eval_x.py").write_text(text, encoding="utf-8")
        (one / "data" / "gsm8k.jsonl").write_text('{"question": "1+1?", "answer": "2"}\n')
        (one / "data" / "ARC-c.jsonl").write_text(
            '{"question": "Sky?", "textA": "blue", "textB": "red", "textC": "green", '
            '"textD": "black", "answerKey": "A"}\n')
        args: list[object] = ["eval_x.py", "--data-dir", "data", "-o", "out"]
        if how == "folder":
            copy = tmp_path / "elsewhere" / "oc"
            shutil.copytree(target / "opencompass" / "configs", copy,
                            ignore=shutil.ignore_patterns("__pycache__"))
            args += ["--opencompass-configs", copy]
        proc = _run(*args, cwd=one, pythonpath=str(target) if how == "installed" else "")
        assert proc.returncode == 0, proc.stderr
        arc = _records(one / "out" / "internlm2_5-7b-hf" / "ARC-c.jsonl")
        assert [(r["label"], r["prompt"]) for r in arc] == [
            ("A", "Question: Sky?\nAnswer: \nblue"), ("B", "Question: Sky?\nAnswer: \nred"),
            ("C", "Question: Sky?\nAnswer: \ngreen"), ("D", "Question: Sky?\nAnswer: \nblack")]
        manifests.append((one / "out" / "manifest.json").read_bytes())
        names = [i["path"] for i in json.loads(manifests[-1])["inputs"]]
        assert "opencompass:configs/datasets/gsm8k/gsm8k_gen.py" in names, (n, names)
        assert "opencompass:configs/summarizers/example.py" in names
    assert manifests[0] == manifests[1]
