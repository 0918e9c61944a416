"""The native readers of OpenCompass loader classes against rows recorded from the classes.

Each folder ``tests/data/opencompass/<Class>/<case>/`` holds small files written by hand in the
class's native layout (``data/...``), the ``load`` arguments (``case.json``) and what OpenCompass
0.5.4's own class returned for them (``recorded.json``, written by ``tools/record_oc_rows.py``).
Rows are compared as JSON text, so column order and ``1`` vs ``1.0`` count. A recording that
holds a value JSON cannot (``"$unrecordable"``: a ``datetime`` Arrow inferred) must send the
dataset to OpenCompass's own loader instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prompt_compiler.data.opencompass import loader_files, loader_rows
from prompt_compiler.errors import PromptCompilerError

CASES = Path(__file__).parent / "data" / "opencompass"
CASE_DIRS = sorted(c.parent for c in CASES.glob("*/*/recorded.json"))


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("COMPASS_DATA_CACHE", raising=False)
    monkeypatch.delenv("DATASET_SOURCE", raising=False)
    monkeypatch.delenv("PROMPT_COMPILER_OPENCOMPASS_PYTHON", raising=False)


def _ours(case: Path) -> dict[str, Any]:
    kwargs = json.loads((case / "case.json").read_text(encoding="utf-8"))["kwargs"]
    loaded = loader_rows(case.parent.name, {"type": case.parent.name, "abbr": "x", **kwargs})
    if loaded.rows is not None:
        return {"rows": list(loaded.rows)}
    assert loaded.splits is not None
    return {"splits": {k: list(v) for k, v in loaded.splits.items()}}


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_native_reader_matches_opencompass(
        case: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(case)
    text = (case / "recorded.json").read_text(encoding="utf-8")
    expected = json.loads(text)
    if '"$unrecordable"' in text:  # a value no native reader gives: OpenCompass's loader must
        with pytest.raises(PromptCompilerError, match="--opencompass-python"):
            _ours(case)
        return
    if "error" in expected:
        with pytest.raises(PromptCompilerError):
            _ours(case)
        return
    ours = _ours(case)
    assert json.dumps(ours, ensure_ascii=False, indent=1) == json.dumps(
        expected, ensure_ascii=False, indent=1)


@pytest.mark.parametrize("case", CASE_DIRS, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_loader_files_are_the_files_read(
        case: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(case)
    kwargs = json.loads((case / "case.json").read_text(encoding="utf-8"))["kwargs"]
    files = loader_files(case.parent.name, {"type": case.parent.name, **kwargs})
    data = sorted(p.resolve() for p in (case / "data").rglob("*") if p.is_file())
    assert sorted(f.resolve() for f in files) == data


def test_hf_dataset_calls_not_covered_go_to_opencompass(clean_env: None) -> None:
    with pytest.raises(PromptCompilerError, match="--opencompass-python"):
        loader_rows("HFDataset", {"type": "HFDataset", "path": "glue", "name": "cola",
                                  "split": "train"})
