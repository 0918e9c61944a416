"""``compile-prompts lint``: each finding kind on a fixture built to hold it, through the CLI.

The expected findings are written out by hand from the fixtures (tests/data/lint/).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from prompt_compiler.inspection.lint import CODES

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "lint"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def fixtures(tmp_path: Path) -> Path:
    """The lint fixtures copied to a folder outside the repository (run from there)."""
    for name in ("findings.yaml", "typo_config.py"):
        shutil.copy(DATA / name, tmp_path / name)
    return tmp_path


def finding(code: str, message: str, dataset: str, key_path: str, *, model: str | None = None,
            row: int | None = None, config: str = "findings.yaml") -> dict[str, Any]:
    return {"code": code, "message": message, "config_path": config, "dataset": dataset,
            "model": model, "key_path": key_path, "row": row}


EMPTY = "the compiled prompt has no text"
EXPECTED = [
    finding("unknown-placeholder", "placeholder {questoin} names no column, so it stays in the "
            "prompt verbatim; did you mean {question}?", "typo",
            "datasets[0].infer_cfg.prompt_template.template"),
    finding("special-token-in-data", "value contains '<|im_end|>', a special token of this model: "
            "the tokenizer may read it as a control token", "tokens",
            "datasets[1].test[1].question", model="chatml-model", row=1),
    finding("template-syntax-in-data", "value contains '{answer}': compat mode fills it with that "
            "column's value when the row is formatted", "syntax", "datasets[2].test[0].question",
            row=0),
    finding("empty-prompt", EMPTY, "blank", "datasets[3].infer_cfg.prompt_template",
            model="chatml-model", row=1),
    finding("empty-prompt", EMPTY, "blank", "datasets[3].infer_cfg.prompt_template",
            model="gemma-model", row=1),
    finding("empty-test-split", "the test split has no rows, so the dataset compiles to no prompt",
            "notest", "datasets[4].reader_cfg.test_split"),
    finding("shot-leak", "in-context example (training row 1) has the same input (question) as "
            "the test row", "leak", "datasets[5].infer_cfg.retriever", row=1),
    finding("system-dropped", "the prompt has a system message and this model's template merges "
            "it into a user turn (it has no system role); set the model's system_role to say "
            "what you want", "system", "datasets[6].infer_cfg.prompt_template",
            model="gemma-model", row=0),
]


def test_every_kind_is_found_with_its_location(fixtures: Path) -> None:
    proc = cli("lint", "findings.yaml", "--json", cwd=fixtures)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == EXPECTED
    # Model-level codes with fixtures of their own: tests/test_chat_controls.py, and for the
    # codes that need a real tokenizer tests/test_lint_token_ids.py, default-system
    # tests/test_default_system.py.
    elsewhere = {"unused-template-kwarg", "double-bos", "missing-bos", "eos-in-prompt",
                 "default-system"}
    assert {f["code"] for f in EXPECTED} | elsewhere == set(CODES)


def test_strict_turns_findings_into_exit_1(fixtures: Path) -> None:
    proc = cli("lint", "findings.yaml", "--strict", cwd=fixtures)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[-1] == "8 findings"
    assert lines[0] == (
        "findings.yaml: dataset 'typo', at datasets[0].infer_cfg.prompt_template.template: "
        "unknown-placeholder: placeholder {questoin} names no column, so it stays in the prompt "
        "verbatim; did you mean {question}?")


def test_python_config_and_a_model_override(fixtures: Path) -> None:
    proc = cli("lint", "typo_config.py", "--json", "--strict", cwd=fixtures)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout) == [finding(
        "unknown-placeholder", "placeholder {anwser} names no column, so it stays in the prompt "
        "verbatim; did you mean {answer}?", "py-typo",
        "datasets[0].infer_cfg.ice_template.template", config="typo_config.py")]
    # --model replaces the configs' models: gemma's tokens, no chatml ones.
    proc = cli("lint", "findings.yaml", "--only", "tokens", "--model", "gemma", "--json",
               cwd=fixtures)
    assert proc.returncode == 0 and json.loads(proc.stdout) == []


def test_nothing_on_the_example_configs() -> None:
    proc = cli("lint", "configs/", "--strict", cwd=REPO)
    assert (proc.returncode, proc.stdout) == (0, "0 findings\n"), proc.stderr


def test_check_prints_findings_as_warnings(fixtures: Path) -> None:
    proc = cli("findings.yaml", "--check", "--only", "leak", cwd=fixtures)
    assert proc.returncode == 0
    assert proc.stderr == (
        "compile-prompts: warning: findings.yaml: dataset 'leak', row 1, at "
        "datasets[5].infer_cfg.retriever: shot-leak: in-context example (training row 1) has "
        "the same input (question) as the test row\n")
    assert proc.stdout.endswith("checked, nothing written\n")


def test_a_config_that_does_not_compile_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "datasets:\n  - abbr: bad\n    reader_cfg: {input_columns: [q]}\n    infer_cfg:\n"
        "      prompt_template: {type: PromptTemplate, template: '{q}'}\n"
        "      retriever: {type: NoSuchRetriever}\n      inferencer: {type: GenInferencer}\n"
        "    rows: [{q: x}]\n")
    proc = cli("lint", "bad.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("compile-prompts: error: bad.yaml: dataset 'bad'")
    assert "unknown retriever 'NoSuchRetriever'" in proc.stderr and "Traceback" not in proc.stderr
