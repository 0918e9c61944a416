"""The OpenCompass loader bridge: a loader class with no native reader, run by OpenCompass 0.5.4
in its own interpreter (``--opencompass-python``), its rows cached.

Three long-tail classes (none of the 40 native ones), each on small files in its native layout
(``tests/data/oc_bridge/data``, written by hand), through OpenCompass's own dataset configs
(Python, ``read_base``), a YAML config and the library. Expected rows were recorded from the
real classes by ``tools/record_bridge_rows.py`` (run with OpenCompass's interpreter; it imports
``opencompass.datasets`` whole, not our runner). The tests that run OpenCompass need its
interpreter in ``$PC_OPENCOMPASS_PYTHON`` (``.ci/run`` builds that venv); the interpreter given
to the CLI is a wrapper that logs each start, so a cached run is seen to start none.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent / "data" / "oc_bridge"
CLASSES = ("GSMHardDataset", "C3Dataset", "TabMWPDataset")
ERROR = "compile-prompts: error: "

EVAL_PY = """\
from mmengine.config import read_base

with read_base():
    from opencompass.configs.datasets.gsm_hard.gsmhard_gen import gsmhard_datasets
    from opencompass.configs.datasets.CLUE_C3.CLUE_C3_ppl_e24a31 import C3_datasets
    from opencompass.configs.datasets.TabMWP.TabMWP_gen import TabMWP_datasets

datasets = gsmhard_datasets + C3_datasets + TabMWP_datasets
"""

TABMWP_YAML = """\
datasets:
  - abbr: tabmwp
    type: TabMWPDataset
    path: ./data/tabmwp/
    reader_cfg:
      input_columns: [question, table]
      output_column: test_elements
      train_split: dev
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template: "Table: {table}\\nQuestion: {question}\\nAnswer:"
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
"""


def _expected(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / "expected" / f"{name}.json").read_text("utf-8"))
    return data


def _one_line(done: Any) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    text: str = lines[0]
    return text


def _fake_python(folder: Path, body: str) -> Path:
    script = folder / "fake-python"
    script.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def _env(cache: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PROMPT_COMPILER_OPENCOMPASS_PYTHON"}
    env["XDG_CACHE_HOME"] = str(cache)
    env.update(more)
    return env


def _cli(*args: object, cwd: Path, env: dict[str, str]) -> Any:
    import subprocess

    return subprocess.run([sys.executable, "-m", "prompt_compiler", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=900)


# --- without OpenCompass ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["py", "yaml"])
def test_not_native_without_interpreter_is_one_line_naming_the_flag(
        tmp_path: Path, kind: str) -> None:
    if kind == "py":
        (tmp_path / "cfg.py").write_text(
            "from opencompass.datasets import GSMHardDataset\n"
            "datasets = [dict(abbr='gh', type=GSMHardDataset, path='./x.jsonl',\n"
            "    reader_cfg=dict(input_columns=['question'], output_column='answer'),\n"
            "    infer_cfg=dict(prompt_template=dict(type='PromptTemplate', template='{question}'),\n"
            "        retriever=dict(type='ZeroRetriever'), inferencer=dict(type='GenInferencer')))]\n",
            encoding="utf-8")
    else:
        (tmp_path / "cfg.yaml").write_text(
            TABMWP_YAML.replace("tabmwp\n", "gh\n").replace("TabMWPDataset", "GSMHardDataset")
            .replace("./data/tabmwp/", "./x.jsonl"), encoding="utf-8")
    done = _cli(f"cfg.{kind}", "--model", "chatml", "--check", cwd=tmp_path,
                env=_env(tmp_path / "cache"))
    assert done.returncode == 1
    assert _one_line(done) == (
        f"{ERROR}cfg.{kind}: dataset 'gh', model 'chatml', at datasets[0]: GSMHardDataset has "
        "no native reader in prompt_compiler; its rows need OpenCompass's own loader (hint: "
        "pass --opencompass-python PATH (the python of a venv with opencompass installed; or "
        "set PROMPT_COMPILER_OPENCOMPASS_PYTHON), or --data-dir DIR holding "
        "DIR/<abbr>/<split>.jsonl)")


def _yaml_case(folder: Path) -> None:
    (folder / "cfg.yaml").write_text(TABMWP_YAML, encoding="utf-8")


def test_child_failure_shows_its_last_stderr_line(tmp_path: Path) -> None:
    _yaml_case(tmp_path)
    fake = _fake_python(tmp_path, "echo 'Traceback (most recent call last):' >&2\n"
                                  "echo '  File x, line 1' >&2\n"
                                  "echo 'KeyError: problems_dev' >&2\nexit 3")
    done = _cli("cfg.yaml", "--model", "chatml", "--check", "--opencompass-python", fake,
                cwd=tmp_path, env=_env(tmp_path / "cache"))
    assert done.returncode == 1
    assert _one_line(done) == (
        f"{ERROR}cfg.yaml: dataset 'tabmwp', model 'chatml', at datasets[0]: OpenCompass's "
        f"TabMWPDataset.load() failed in {fake}: KeyError: problems_dev")
    assert not list((tmp_path / "cache" / "prompt_compiler" / "opencompass-rows").iterdir())


def test_child_bounded_by_its_time_limit(tmp_path: Path) -> None:
    _yaml_case(tmp_path)
    fake = _fake_python(tmp_path, "exec sleep 30")
    env = _env(tmp_path / "cache", PROMPT_COMPILER_MAX_OPENCOMPASS_SECONDS="1",
               PROMPT_COMPILER_OPENCOMPASS_PYTHON=str(fake))
    done = _cli("cfg.yaml", "--model", "chatml", "--check", cwd=tmp_path, env=env)
    assert done.returncode == 1
    assert _one_line(done) == (
        f"{ERROR}cfg.yaml: dataset 'tabmwp', model 'chatml', at datasets[0]: OpenCompass's "
        f"TabMWPDataset.load() ran past 1 s in {fake}; the limit is 1 seconds "
        "(PROMPT_COMPILER_MAX_OPENCOMPASS_SECONDS raises it)")


def test_interpreter_that_does_not_exist(tmp_path: Path) -> None:
    _yaml_case(tmp_path)
    done = _cli("cfg.yaml", "--model", "chatml", "--check", "--opencompass-python",
                "./no/python", cwd=tmp_path, env=_env(tmp_path / "cache"))
    assert done.returncode == 1
    assert _one_line(done) == (
        f"{ERROR}cfg.yaml: dataset 'tabmwp', model 'chatml', at datasets[0]: cannot run the "
        f"OpenCompass interpreter {tmp_path / 'no' / 'python'}: No such file or directory "
        "(hint: --opencompass-python names a python with opencompass installed)")


# --- with OpenCompass 0.5.4 --------------------------------------------------------------


def _oc_python() -> Path:
    given = os.environ.get("PC_OPENCOMPASS_PYTHON")
    if not given:
        pytest.skip("set PC_OPENCOMPASS_PYTHON to the python of a venv with opencompass==0.5.4 "
                    "(.ci/run builds one)")
    if not os.environ.get("PC_OPENCOMPASS_PACKAGE"):
        pytest.skip("set PC_OPENCOMPASS_PACKAGE (OpenCompass's configs are read from it)")
    return Path(given)


class World:
    """A user's folder: OpenCompass's ``./data`` layout, a cache, a logging interpreter."""

    def __init__(self, root: Path, python: Path) -> None:
        self.root = root
        shutil.copytree(HERE / "data", root / "data")
        (root / "eval_bridge.py").write_text(EVAL_PY, encoding="utf-8")
        (root / "tabmwp.yaml").write_text(TABMWP_YAML, encoding="utf-8")
        self.log = root / "starts.log"
        self.python = _fake_python(root, f'echo start >> "{self.log}"\nexec "{python}" "$@"')
        self.cache = root / "cache"
        self.env = _env(self.cache)

    def starts(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

    def cli(self, *args: object) -> Any:
        return _cli(*args, "--opencompass-python", self.python, cwd=self.root, env=self.env)

    def configs(self) -> str:
        return str(Path(os.environ["PC_OPENCOMPASS_PACKAGE"]) / "opencompass" / "configs")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("oc_bridge"), _oc_python())


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_python_config_first_run_then_cached_run(world: World) -> None:
    args = ("eval_bridge.py", "--model", "chatml", "--opencompass-configs", world.configs())
    done = world.cli(*args, "-o", "out1")
    assert done.returncode == 0, done.stderr
    assert world.starts() == 1  # one OpenCompass process loads the three datasets
    gsm = _expected("GSMHardDataset")["rows"][""]
    records = _records(world.root / "out1" / "chatml" / "gsm-hard.jsonl")
    assert [r["gold"] for r in records] == [row["answer"] for row in gsm]
    assert gsm[1]["question"] in records[1]["prompt"]
    c3 = _expected("C3Dataset")["rows"][""]
    records = _records(world.root / "out1" / "chatml" / "C3.jsonl")
    assert [r["gold"] for r in records if r["label"] == 0] == [row["label"] for row in c3]
    tab = _expected("TabMWPDataset")["rows"]["test"]
    records = _records(world.root / "out1" / "chatml" / "__data_tabmwp_.jsonl")
    assert [r["gold"] for r in records] == [row["test_elements"] for row in tab]

    again = world.cli(*args, "-o", "out2")
    assert again.returncode == 0, again.stderr
    assert world.starts() == 1  # the cache: no OpenCompass process
    for name in ("gsm-hard", "C3", "__data_tabmwp_"):
        first = (world.root / "out1" / "chatml" / f"{name}.jsonl").read_bytes()
        assert (world.root / "out2" / "chatml" / f"{name}.jsonl").read_bytes() == first
    manifest = json.loads((world.root / "out2" / "manifest.json").read_text("utf-8"))
    inputs = {i["path"]: i["sha256"] for i in manifest["inputs"]}
    for name in ("CLUE/C3/dev_0.json", "gsm-hard/test.jsonl", "tabmwp/problems_dev.json",
                 "tabmwp/problems_test.json", "tabmwp/problems_train.json"):
        data = (world.root / "data" / name).read_bytes()
        assert inputs[f"data/{name}"] == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("name", CLASSES)
def test_rows_equal_what_the_real_class_returns(world: World, name: str) -> None:
    from prompt_compiler.data.opencompass.bridge import load_with_opencompass

    expected = _expected(name)
    old = os.getcwd()
    os.environ["XDG_CACHE_HOME"], saved = str(world.cache), os.environ.get("XDG_CACHE_HOME")
    try:
        os.chdir(world.root)
        loaded = load_with_opencompass(name, expected["kwargs"], world.python)
    finally:
        os.chdir(old)
        if saved is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = saved
    if expected["splits"] is None:
        assert loaded.rows is not None and loaded.splits is None
        got = {"": list(loaded.rows)}
    else:
        assert loaded.splits is not None and list(loaded.splits) == expected["splits"]
        got = {k: list(v) for k, v in loaded.splits.items()}
    # json text: key order, int vs float, None, lists and nested dicts all compared
    assert json.dumps(got, ensure_ascii=False) == json.dumps(expected["rows"], ensure_ascii=False)


def test_yaml_config_reads_the_cache(world: World) -> None:
    before = world.starts()
    done = world.cli("tabmwp.yaml", "--model", "chatml", "-o", "out_yaml")
    assert done.returncode == 0, done.stderr
    records = _records(world.root / "out_yaml" / "chatml" / "tabmwp.jsonl")
    tab = _expected("TabMWPDataset")["rows"]["test"]
    # a plain string template: the model gets the text as it is (no chat turns)
    assert [r["prompt"] for r in records] == [
        "Table: [TITLE]: Boxes\nBox | kg\nA | 1.5\nB | 2.25\n"
        "Question: What is the total weight? (Unit: kg)\nAnswer:",
        "Table: x | y\n0.5 | 1/3\nQuestion: Is 0.5 more than 1/3?\n"
        "Options: (A) yes (B) no\nAnswer:"]
    assert [r["gold"] for r in records] == [row["test_elements"] for row in tab]
    assert world.starts() == before  # same class and arguments as the Python config's


def test_library_call_with_the_environment_variable(world: World) -> None:
    import subprocess

    code = (
        "import prompt_compiler as pc\n"
        "suite = pc.load('tabmwp.yaml', models=['chatml'])\n"
        "print(sum(1 for _ in pc.compile(suite)))\n"
        "suite = pc.load('tabmwp.yaml', models=['chatml'])\n"
        "import os; p = os.environ.pop('PROMPT_COMPILER_OPENCOMPASS_PYTHON')\n"
        "print(sum(1 for _ in pc.compile(suite, opencompass_python=p)))\n")
    env = {**world.env, "PROMPT_COMPILER_OPENCOMPASS_PYTHON": str(world.python)}
    before = world.starts()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=world.root, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "2"]
    assert world.starts() == before


def test_missing_data_names_the_path_and_never_downloads(world: World) -> None:
    (world.root / "missing.yaml").write_text(
        TABMWP_YAML.replace("tabmwp\n", "gh\n").replace("TabMWPDataset", "GSMHardDataset")
        .replace("./data/tabmwp/", "./data/gsm-hard-none/test.jsonl"), encoding="utf-8")
    done = world.cli("missing.yaml", "--model", "chatml", "--check")
    assert done.returncode == 1
    assert _one_line(done) == (
        f"{ERROR}missing.yaml: dataset 'gh', model 'chatml', at datasets[0]: OpenCompass's "
        f"GSMHardDataset.load() failed in {world.python}: data not found at "
        "./data/gsm-hard-none/test.jsonl; OpenCompass would download it there "
        "(prompt_compiler never downloads: fetch it with OpenCompass or unpack its data zip)")
    assert not (world.root / "data" / "gsm-hard-none").exists()


def test_one_failing_dataset_of_a_batch(world: World) -> None:
    c3 = TABMWP_YAML.replace("tabmwp\n", "c3\n").replace("TabMWPDataset", "C3Dataset").replace(
        "./data/tabmwp/", "./data/CLUE/C3/../C3/dev_0.json").replace(
        "[question, table]", "[question, content]").replace("test_elements", "label").replace(
        "      train_split: dev\n", "").replace("Table: {table}", "Passage: {content}")
    gone = TABMWP_YAML.replace("tabmwp\n", "gh\n").replace("TabMWPDataset", "GSMHardDataset")\
        .replace("./data/tabmwp/", "./data/gsm-hard-gone/test.jsonl")
    (world.root / "batch.yaml").write_text(
        c3 + gone.split("datasets:\n")[1].replace("[question, table]", "[question]")
        .replace("test_elements", "answer").replace("      train_split: dev\n", "")
        .replace("Table: {table}\\n", ""),
        encoding="utf-8")
    before = world.starts()
    done = world.cli("batch.yaml", "--model", "chatml", "-o", "out_batch")
    assert done.returncode == 1
    # one process for both; the failed one loads again for its own error line
    assert world.starts() == before + 2
    assert _one_line(done) == (
        f"{ERROR}batch.yaml: dataset 'gh', model 'chatml', at datasets[1]: OpenCompass's "
        f"GSMHardDataset.load() failed in {world.python}: data not found at "
        "./data/gsm-hard-gone/test.jsonl; OpenCompass would download it there "
        "(prompt_compiler never downloads: fetch it with OpenCompass or unpack its data zip)")
    done = world.cli("batch.yaml", "--model", "chatml", "--only", "c3", "-o", "out_batch")
    assert done.returncode == 0, done.stderr
    assert world.starts() == before + 2  # C3's rows were cached by the batch
    rows = _expected("C3Dataset")["rows"][""]
    records = _records(world.root / "out_batch" / "chatml" / "c3.jsonl")
    assert [r["gold"] for r in records] == [row["label"] for row in rows]


def test_a_changed_data_file_runs_the_loader_again(world: World) -> None:
    data = world.root / "data" / "gsm-hard" / "test.jsonl"
    original = data.read_bytes()
    args = ("eval_bridge.py", "--model", "chatml", "--opencompass-configs", world.configs(),
            "--only", "gsm-hard", "-o")
    try:
        data.write_bytes(original + b'{"input": "One more?", "code": "", "target": 1}\n')
        before = world.starts()
        done = world.cli(*args, "out_changed")
        assert done.returncode == 0, done.stderr
        assert world.starts() == before + 1
        records = _records(world.root / "out_changed" / "chatml" / "gsm-hard.jsonl")
        assert [r["gold"] for r in records][-2:] == ["0", "1"]
        done = world.cli(*args, "out_changed2")
        assert world.starts() == before + 1
    finally:
        data.write_bytes(original)
