"""OpenCompass loader classes read from OpenCompass's data folder, through the CLI.

A user's layout: ``work/data/...`` as the OpenCompassData zips unpack, the configs in another
folder (Python with ``from opencompass.datasets import MMLUDataset``, and YAML), compiled by
``compile-prompts`` as a subprocess from ``work`` (OpenCompass reads ``./data`` there) and from
another folder with ``COMPASS_DATA_CACHE``. Expected prompts are written by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

MMLU_PY = """\
from mmengine.config import read_base
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import FixKRetriever
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.datasets import MMLUDataset

mmlu_datasets = []
for name in ['anatomy', 'virology']:
    mmlu_datasets.append(dict(
        abbr=f'lukaemon_mmlu_{name}', type=MMLUDataset, path='opencompass/mmlu', name=name,
        reader_cfg=dict(input_columns=['input', 'A', 'B', 'C', 'D'], output_column='target',
                        train_split='dev'),
        infer_cfg=dict(
            ice_template=dict(type=PromptTemplate,
                              template='{input}\\nA. {A}\\nB. {B}\\nC. {C}\\nD. {D}\\nAnswer: {target}\\n'),
            prompt_template=dict(type=PromptTemplate, ice_token='</E>',
                                 template='</E>{input}\\nA. {A}\\nB. {B}\\nC. {C}\\nD. {D}\\nAnswer:'),
            retriever=dict(type=FixKRetriever, fix_id_list=[0]),
            inferencer=dict(type=GenInferencer))))
datasets = mmlu_datasets
"""

GSM8K_YAML = """\
datasets:
  - abbr: gsm8k
    type: GSM8KDataset
    path: opencompass/gsm8k
    reader_cfg: {input_columns: [question], output_column: answer}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "Q: {question}\\nA:"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
"""

DATA = {
    "data/mmlu/dev/anatomy_dev.csv": 'Bones?,206,"2\r\n06",1,0,A\r\n',
    "data/mmlu/test/anatomy_test.csv": "Heart chambers?,1,2,3,4,D\n",
    "data/mmlu/dev/virology_dev.csv": "Virus?,yes,no,maybe,never,B\n",
    "data/mmlu/test/virology_test.csv": 'Size?,"small, very",big,huge,tiny,A\n',
    "data/gsm8k/train.jsonl": '{"question": "1+1?", "answer": "#### 2"}\n',
    "data/gsm8k/test.jsonl": '{"question": "2+3?", "answer": "#### 5"}\n'
                             '{"question": "{x} stays", "answer": "#### 0"}\n',
}

EXPECTED = {  # dataset -> the prompts, written by hand
    "lukaemon_mmlu_anatomy": [
        "Bones?\nA. 206\nB. 2\n06\nC. 1\nD. 0\nAnswer: A\n\n"
        "Heart chambers?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer:"],
    "lukaemon_mmlu_virology": [
        "Virus?\nA. yes\nB. no\nC. maybe\nD. never\nAnswer: B\n\n"
        "Size?\nA. small, very\nB. big\nC. huge\nD. tiny\nAnswer:"],
    "gsm8k": ["Q: 2+3?\nA:", "Q: {x} stays\nA:"],
}


def user_layout(root: Path, data: dict[str, str], configs: dict[str, str]) -> Path:
    """``root/work/<data file>``, ``root/configs/<config>``, an empty ``root/elsewhere`` and
    ``root/home``."""
    for name, text in data.items():
        file = root / "work" / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(text.encode())
    (root / "configs").mkdir()
    for name, text in configs.items():
        (root / "configs" / name).write_text(text)
    (root / "elsewhere").mkdir()
    (root / "home").mkdir()
    return root


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    return user_layout(tmp_path, DATA, {"eval_mmlu.py": MMLU_PY, "gsm8k.yaml": GSM8K_YAML})


def run(*args: object, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("COMPASS_DATA_CACHE",
                                                              "DATASET_SOURCE")}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=full, timeout=300)


def prompts(out: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for file in sorted((out / "echo").glob("*.jsonl")):
        found[file.stem] = [json.loads(line)["prompt"] for line in file.read_text().splitlines()]
    return found


@pytest.mark.parametrize("config", ["eval_mmlu.py", "gsm8k.yaml"])
def test_rows_from_the_data_folder_of_the_working_folder(layout: Path, config: str) -> None:
    work = layout / "work"
    done = run(layout / "configs" / config, "--model", "echo", "-o", work / "out", cwd=work,
               HOME=str(layout / "home"))
    assert done.returncode == 0, done.stderr
    want = {k: v for k, v in EXPECTED.items() if (k == "gsm8k") == (config == "gsm8k.yaml")}
    assert prompts(work / "out") == want
    manifest = json.loads((work / "out" / "manifest.json").read_text())
    inputs = {Path(i["path"]).name: i["sha256"] for i in manifest["inputs"]}
    read = [n for n in DATA if (n.startswith("data/gsm8k")) == (config == "gsm8k.yaml")]
    for name in read:
        data = (work / name).read_bytes()
        assert inputs[Path(name).name] == hashlib.sha256(data).hexdigest()


def test_compass_data_cache_from_another_folder(layout: Path) -> None:
    first = run(layout / "configs" / "eval_mmlu.py", "--model", "echo", "-o", layout / "a",
                cwd=layout / "work", HOME=str(layout / "home"))
    second = run(layout / "configs" / "eval_mmlu.py", "--model", "echo", "-o", layout / "b",
                 cwd=layout / "elsewhere", HOME=str(layout / "home"),
                 COMPASS_DATA_CACHE=str(layout / "work"))
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    for name in ("lukaemon_mmlu_anatomy", "lukaemon_mmlu_virology"):
        assert ((layout / "a" / "echo" / f"{name}.jsonl").read_bytes()
                == (layout / "b" / "echo" / f"{name}.jsonl").read_bytes())


def test_home_cache_is_the_second_place(layout: Path) -> None:
    cache = layout / "home" / ".cache" / "opencompass"
    cache.mkdir(parents=True)
    (layout / "work" / "data").rename(cache / "data")
    done = run(layout / "configs" / "gsm8k.yaml", "--model", "echo", "-o", layout / "out",
               cwd=layout / "elsewhere", HOME=str(layout / "home"))
    assert done.returncode == 0, done.stderr
    assert prompts(layout / "out") == {"gsm8k": EXPECTED["gsm8k"]}


def test_data_dir_keeps_precedence(layout: Path) -> None:
    (layout / "dd").mkdir()
    (layout / "dd" / "gsm8k.jsonl").write_text('{"question": "from dd", "answer": "1"}\n')
    done = run(layout / "configs" / "gsm8k.yaml", "--model", "echo", "-o", layout / "out",
               "--data-dir", layout / "dd", cwd=layout / "work", HOME=str(layout / "home"))
    assert done.returncode == 0, done.stderr
    assert prompts(layout / "out") == {"gsm8k": ["Q: from dd\nA:"]}


def test_missing_data_is_one_line(layout: Path) -> None:
    config = layout / "configs" / "gsm8k.yaml"
    done = run(config, "--model", "echo", "-o", layout / "out", cwd=layout / "elsewhere",
               HOME=str(layout / "home"))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        f"compile-prompts: error: {config}: dataset 'gsm8k', model 'echo', at datasets[0]: "
        f"no data at {layout / 'elsewhere' / 'data' / 'gsm8k'} (nor at "
        f"{layout / 'home' / '.cache' / 'opencompass' / 'data' / 'gsm8k'}): OpenCompass would "
        "download 'opencompass/gsm8k' there (from its dataset URLs, or the hub DATASET_SOURCE "
        "names); this project never downloads (hint: unpack OpenCompass's data (the "
        "OpenCompassData zip) in the working folder, or set COMPASS_DATA_CACHE to the folder "
        "holding its data/ folder; or pass --data-dir DIR holding DIR/gsm8k/<split>.jsonl)\n")


def test_malformed_native_file_names_file_and_line(layout: Path) -> None:
    bad = layout / "work" / "data" / "mmlu" / "test" / "virology_test.csv"
    bad.write_text("ok,1,2,3,4,A\nshort,1,2\n")
    done = run(layout / "configs" / "eval_mmlu.py", "--model", "echo", "-o", layout / "out",
               cwd=layout / "work", HOME=str(layout / "home"))
    assert done.returncode == 1
    assert (f"{bad}: line 2: 3 fields, expected 6 (OpenCompass's loader asserts it)"
            in done.stderr)
    assert len(done.stderr.splitlines()) == 1


def _one_case_per_class() -> list[Path]:
    """The first recorded case of each native class whose test split's first and last
    columns are two columns of strings (their rows come out of the CLI as prompt and gold; a gen
    prompt never shows the output column)."""
    cases = Path(__file__).parent / "data" / "opencompass"
    chosen = []
    for folder in sorted(p for p in cases.iterdir() if p.is_dir()):
        for case in sorted(folder.iterdir()):
            if not (case / "recorded.json").is_file():
                continue  # rows holding OpenCompass's text: compared in test_oc_native
            spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
            if spec.get("needs") == "opencompass-package" and not os.environ.get(
                    "PC_OPENCOMPASS_PACKAGE"):
                continue  # its rows need OpenCompass's text, read from that package
            recorded = json.loads((case / "recorded.json").read_text(encoding="utf-8"))
            rows = _test_rows(recorded)
            if rows and len(rows[0]) > 1 and all(
                    isinstance(v, str) for r in rows for v in (_first(r), _last(r))):
                chosen.append(case)
                break
    return chosen


def _test_rows(recorded: dict[str, object]) -> list[dict[str, object]]:
    if "rows" in recorded:
        return recorded["rows"]  # type: ignore[return-value]
    splits = recorded.get("splits") or {}
    assert isinstance(splits, dict)
    return splits.get("test") or (next(iter(splits.values())) if splits else [])


def _first(row: dict[str, object]) -> object:
    return next(iter(row.values()))


def _last(row: dict[str, object]) -> object:
    return list(row.values())[-1]


def test_every_native_class_through_the_cli_from_yaml(tmp_path: Path) -> None:
    """One YAML suite naming one case of each native class, its files merged into one
    ``./data``; each dataset's prompt is its first column, its gold the last, as recorded
    from OpenCompass's class."""
    import shutil

    import yaml

    work = tmp_path / "work"
    datasets, expected = [], {}
    for case in _one_case_per_class():
        shutil.copytree(case / "data", work / "data", dirs_exist_ok=True)
        recorded = json.loads((case / "recorded.json").read_text(encoding="utf-8"))
        rows = _test_rows(recorded)
        first, last = list(rows[0])[0], list(rows[0])[-1]
        split = ("test" if "rows" in recorded or "test" in recorded["splits"]
                 else next(iter(recorded["splits"])))
        abbr = f"{case.parent.name}-{case.name}"
        kwargs = json.loads((case / "case.json").read_text(encoding="utf-8"))["kwargs"]
        datasets.append({
            "abbr": abbr, "type": case.parent.name, **kwargs,
            "reader_cfg": {"input_columns": [first], "output_column": last,
                           "train_split": split, "test_split": split},
            "infer_cfg": {"prompt_template": {"type": "PromptTemplate",
                                              "template": "{" + first + "}"},
                          "retriever": {"type": "ZeroRetriever"},
                          "inferencer": {"type": "GenInferencer"}}})
        expected[abbr] = [(r[first], r[last]) for r in rows]
    assert len(expected) >= 15
    config = tmp_path / "configs" / "natives.yaml"
    config.parent.mkdir()
    config.write_text(yaml.safe_dump({"datasets": datasets}, allow_unicode=True))
    package = os.environ.get("PC_OPENCOMPASS_PACKAGE")
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), package) if p)
    done = run(config, "--model", "echo", "-o", work / "out", cwd=work,
               HOME=str(tmp_path / "home"), PYTHONPATH=path)
    assert done.returncode == 0, done.stderr
    for abbr, pairs in expected.items():
        lines = (work / "out" / "echo" / f"{abbr}.jsonl").read_text(encoding="utf-8")
        got = [(r["prompt"], r["gold"]) for r in map(json.loads, lines.splitlines())]
        assert got == pairs, abbr
