"""A Python config that reads the environment gets the real value, read only, as OpenCompass's
configs do (issue 24, point 4); the manifest records the names read and a sha256 of each value,
never the value. Through the CLI as a subprocess; expected output written by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# sha256 of the values set below, computed once by hand (`printf hello | sha256sum`)
SHA_HELLO = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
SHA_WORLD = "486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7"

BASE = """\
import os
suffix = os.getenv('PC_T_SUFFIX', '?')
"""
CONFIG = """\
import os
from mmengine.config import read_base
with read_base():
    from .base_env import suffix
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from opencompass.openicl.icl_inferencer import GenInferencer
prefix = os.environ.get('PC_T_PREFIX', 'none')
label = os.environ['PC_T_LABEL'] if 'PC_T_LABEL' in os.environ else 'unset'
datasets = [dict(abbr='d', path='rows.jsonl',
    reader_cfg=dict(input_columns=['q'], output_column='a'),
    infer_cfg=dict(prompt_template=dict(type=PromptTemplate,
                                        template=prefix + ' ' + label + ' {q} ' + suffix),
                   retriever=dict(type=ZeroRetriever), inferencer=dict(type=GenInferencer)))]
models = [dict(abbr='m', renderer='lm')]
"""


def _write(tmp_path: Path, config: str = CONFIG) -> Path:
    (tmp_path / "rows.jsonl").write_text('{"q": "Q", "a": "A"}\n', encoding="utf-8")
    (tmp_path / "base_env.py").write_text(BASE, encoding="utf-8")
    path = tmp_path / "eval_env.py"
    path.write_text(config, encoding="utf-8")
    return path


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("PC_T_")}
    full["PYTHONPATH"] = os.pathsep.join([str(REPO), full.get("PYTHONPATH", "")])
    full.update(env)
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *args], cwd=tmp_path,
                          env=full, capture_output=True, text=True, timeout=300)


def test_config_reads_the_real_environment(tmp_path: Path) -> None:
    config = _write(tmp_path)
    proc = _run(tmp_path, str(config), "-o", "out", PC_T_PREFIX="hello", PC_T_SUFFIX="world")
    assert proc.returncode == 0, proc.stderr
    (line,) = (tmp_path / "out" / "m" / "d.jsonl").read_text().splitlines()
    assert json.loads(line)["prompt"] == "hello unset Q world"
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["environment"] == {"PC_T_LABEL": None, "PC_T_PREFIX": SHA_HELLO,
                                       "PC_T_SUFFIX": SHA_WORLD}
    text = (tmp_path / "out" / "manifest.json").read_text()
    assert "hello" not in text and "world" not in text  # values are never written


def test_unset_variables_take_the_defaults_and_are_recorded(tmp_path: Path) -> None:
    config = _write(tmp_path)
    proc = _run(tmp_path, str(config), "-o", "out", PC_T_LABEL="hello")
    assert proc.returncode == 0, proc.stderr
    (line,) = (tmp_path / "out" / "m" / "d.jsonl").read_text().splitlines()
    assert json.loads(line)["prompt"] == "none hello Q ?"
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["environment"] == {"PC_T_LABEL": SHA_HELLO, "PC_T_PREFIX": None,
                                       "PC_T_SUFFIX": None}


def test_config_without_environment_has_no_manifest_entry(tmp_path: Path) -> None:
    config = _write(tmp_path, CONFIG.replace("import os\n", "", 1)
                    .replace("os.environ.get('PC_T_PREFIX', 'none')", "'none'")
                    .replace("os.environ['PC_T_LABEL'] if 'PC_T_LABEL' in os.environ else ", ""))
    (tmp_path / "base_env.py").write_text("suffix = '?'\n", encoding="utf-8")
    proc = _run(tmp_path, str(config), "-o", "out")
    assert proc.returncode == 0, proc.stderr
    assert "environment" not in json.loads((tmp_path / "out" / "manifest.json").read_text())


def test_missing_variable_by_subscript_is_one_error_line(tmp_path: Path) -> None:
    config = _write(tmp_path, CONFIG.replace(
        "os.environ['PC_T_LABEL'] if 'PC_T_LABEL' in os.environ else 'unset'",
        "os.environ['PC_T_LABEL']"))
    proc = _run(tmp_path, str(config), "-o", "out")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == ("compile-prompts: error: " + str(config) +
                           ": KeyError while loading the config (line 9): 'PC_T_LABEL'\n")


def test_environment_is_read_only(tmp_path: Path) -> None:
    config = _write(tmp_path, CONFIG.replace("prefix = ", "os.environ['PC_T_X'] = 'v'\nprefix = "))
    proc = _run(tmp_path, str(config), "-o", "out")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        "compile-prompts: error: " + str(config) + ": TypeError while loading the config "
        "(line 8): os.environ is read-only in a config (set the variable before running "
        "compile-prompts)\n")
