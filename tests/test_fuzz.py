"""No crash on any input: generated and mutated configs and rows compile or fail cleanly.

The generator is ``tools/fuzz_cases.py`` (shared with ``tools/fuzz.py``, which runs thousands
of examples); here Hypothesis drives it through ``st.randoms()`` for a few seconds. The rule:
the CLI's compile command exits 0 (strict JSON output) or 1 with one ``compile-prompts:
error:`` line; the library raises nothing but :class:`PromptCompilerError`. Below them, the
crash sites the issue listed, each as a YAML/JSON/JSONL file on disk with its expected message.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prompt_compiler import Compiler
from prompt_compiler.cli import main
from prompt_compiler.errors import PromptCompilerError

sys.path.insert(0, str(REPO / "tools"))
import fuzz  # noqa: E402
import fuzz_cases  # noqa: E402

FAST = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


# -- properties --------------------------------------------------------------------------------


@FAST
@given(st.randoms(use_true_random=False))
def test_generated_cases_compile_or_fail_with_one_line(rng: random.Random) -> None:
    case = fuzz_cases.make_case(rng)
    with tempfile.TemporaryDirectory() as folder:
        outcome = fuzz.run_in_process(case, Path(folder))
    assert outcome.status == "ok", (outcome, case.notes, case.args)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False), st.sampled_from(["opencompass", "default"]))
def test_library_raises_only_project_errors(rng: random.Random, mode: str) -> None:
    dataset, model = copy.deepcopy(rng.choice(fuzz_cases.BASES))
    tree = {"dataset": dataset, "model": model}
    for _ in range(rng.randrange(1, 4)):
        (fuzz_cases._targeted if rng.random() < 0.5 else fuzz_cases._mutate)(tree, rng, [])
    try:
        with warnings.catch_warnings():  # ignored-setting warnings are expected here
            warnings.simplefilter("ignore")
            Compiler(mode=mode).compile(tree["dataset"], tree["model"])
    except PromptCompilerError:
        pass  # any other exception fails the test


def test_fuzz_tool_reports_its_figures() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "fuzz.py"), "--examples", "5", "--no-corpus",
         "--seed", "3", "--cli", "1"],
        capture_output=True, text=True, timeout=300, cwd=REPO)
    last = proc.stdout.strip().splitlines()[-1]
    assert last == ("5 examples, 0 crashes, 0 hangs; CLI subprocess: 1 examples, 0 crashes, "
                    "0 hangs"), proc.stdout + proc.stderr
    assert proc.returncode == 0


def test_cli_examples_in_every_environment_variant() -> None:
    """``--cli`` runs examples plain, under LC_ALL=C, with --jobs 2, with a symlink planted
    at the lock's path and stopped by SIGTERM (tools/fuzz.py VARIANTS): none may crash."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "fuzz.py"), "--examples", "1", "--no-corpus",
         "--seed", "5", "--cli", "10"],
        capture_output=True, text=True, timeout=300, cwd=REPO)
    last = proc.stdout.strip().splitlines()[-1]
    assert last == ("1 examples, 0 crashes, 0 hangs; CLI subprocess: 10 examples, 0 crashes, "
                    "0 hangs"), proc.stdout + proc.stderr


# -- the known crash sites, from files on disk ----------------------------------------------------

ROWS = [{"question": "q1", "answer": "a1"}, {"question": "q2", "answer": "a2"}]


def _suite(infer: dict | None = None, model: dict | None = None,
           rows: list | None = None) -> dict:
    infer = infer or {"prompt_template": {"type": "PromptTemplate", "template": "Q: {question}"},
                      "retriever": {"type": "ZeroRetriever"},
                      "inferencer": {"type": "GenInferencer"}}
    return {"datasets": [{"abbr": "d", "reader_cfg": {"input_columns": ["question"],
                                                      "output_column": "answer"},
                          "infer_cfg": infer, "splits": {"train": rows or ROWS,
                                                         "test": rows or ROWS}}],
            "models": [model or {"abbr": "m", "parser": "lm", "meta_template": None}]}


META = {"round": [{"role": "HUMAN", "begin": "<u>", "end": "</u>"},
                  {"role": "BOT", "begin": "<b>", "end": "</b>", "generate": True}]}
ROUND = {"prompt_template": {"type": "PromptTemplate", "template": {"round": [
    {"role": "HUMAN", "prompt": "{question}"}, {"role": "BOT", "prompt": "{answer}"}]}},
    "retriever": {"type": "ZeroRetriever"}, "inferencer": {"type": "GenInferencer"}}


def _with_role(role: object) -> dict:
    infer = copy.deepcopy(ROUND)
    infer["prompt_template"]["template"]["round"][0]["role"] = role
    return _suite(infer, {"abbr": "m", "parser": "lm", "meta_template": META})


BIG = "9" * 4400


def _infinite_label_yaml() -> str:
    return (
        "datasets:\n"
        "  - abbr: d\n"
        "    reader_cfg: {input_columns: [question], output_column: answer}\n"
        "    infer_cfg:\n"
        "      prompt_template:\n"
        "        type: PromptTemplate\n"
        "        template: {1.0e+400: 'A {question}', 1: 'B {question}'}\n"
        "      retriever: {type: ZeroRetriever}\n"
        "      inferencer: {type: PPLInferencer}\n"
        "    rows: [{question: q1, answer: a1}]\n"
        "models: [{abbr: m, parser: lm, meta_template: null}]\n"
    )


CRASH_SITES = [
    # (id, file name, file text, words the one-line error must contain)
    ("huge-int-yaml", "cfg.yaml",
     json.dumps(_suite()).replace('"q1"', BIG), ["cfg.yaml", "more than 4,300 digits"]),
    ("huge-int-json", "cfg.json",
     json.dumps(_suite()).replace('"q1"', BIG), ["cfg.json", "more than 4,300 digits"]),
    ("deep-nesting-json", "cfg.json",
     json.dumps(_suite()).replace('"q1"', "[" * 5000 + "1" + "]" * 5000),
     ["cfg.json", "nested too deeply"]),
    ("deep-nesting-150", "cfg.json",
     json.dumps(_suite()).replace('"q1"', "[" * 150 + "1" + "]" * 150),
     ["cfg.json", "datasets[0].splits.train[0].question[0]", "more than 100 levels"]),
    ("role-is-a-list", "cfg.json", json.dumps(_with_role(["HUMAN"])),
     ["cfg.json", "prompt_template.template.round[0]", "'role' must be a str, got list"]),
    ("role-is-a-dict", "cfg.json", json.dumps(_with_role({"HUMAN": 1})),
     ["cfg.json", "'role' must be a str, got dict"]),
    ("meta-end-is-a-dict", "cfg.json",
     json.dumps(_suite(ROUND, {"abbr": "m", "parser": "lm",
                               "meta_template": {**META, "end": {"role": "BOT"}}})),
     ["cfg.json", "meta_template.end", "must be a string, got dict"]),
    ("meta-role-begin-is-a-dict", "cfg.json",
     json.dumps(_suite(ROUND, {"abbr": "m", "parser": "lm", "meta_template": {"round": [
         {"role": "HUMAN", "begin": {"x": 1}}, {"role": "BOT", "generate": True}]}})),
     ["cfg.json", "meta_template.round[0].begin", "begin must be a string, got dict"]),
    ("chat-turn-is-a-dict", "cfg.json", json.dumps(_suite(
        {"prompt_template": {"type": "PromptTemplate", "template": "{dialogue}"},
         "retriever": {"type": "ZeroRetriever"}, "inferencer": {"type": "ChatInferencer"}},
        {"abbr": "m", "parser": "lm", "meta_template": META},
        [{"question": [{"role": "user", "content": {"text": "hi"}},
                       {"role": "assistant", "content": "x"}], "answer": ""}])),
     ["cfg.json", "row 0", "message 0: 'content' must be a str, got dict"]),
    ("seed-minus-one", "cfg.yaml", json.dumps(_suite(
        {"ice_template": {"type": "PromptTemplate", "template": "</E>{question}",
                          "ice_token": "</E>"},
         "retriever": {"type": "RandomRetriever", "ice_num": 1, "seed": -1},
         "inferencer": {"type": "GenInferencer"}})),
     ["cfg.yaml", "infer_cfg.retriever.seed", "between 0 and 4,294,967,295, got -1"]),
    ("lone-surrogate-in-config", "cfg.yaml",
     json.dumps(_suite(rows=[{"question": "x\ud800", "answer": "a"}])),
     ["cfg.yaml", "splits.train[0].question", "lone surrogate '\\ud800'"]),
    ("infinite-label", "cfg.yaml", _infinite_label_yaml(),
     ["row 0", "label", "NaN or Infinity"]),
]


@pytest.mark.parametrize(("name", "text", "words"),
                         [pytest.param(n, t, w, id=i) for i, n, t, w in CRASH_SITES])
def test_known_crash_site_is_one_clean_error(
    name: str, text: str, words: list[str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROMPT_COMPILER_TRACEBACK", "1")  # a bug must not hide as one line
    code = main([name, "-o", "out"])
    err = capsys.readouterr().err
    assert code == 1, err
    # warnings (e.g. an unknown placeholder) may precede the one error line
    lines = [x for x in err.splitlines() if not x.startswith("compile-prompts: warning: ")]
    assert len(lines) == 1 and lines[0].startswith("compile-prompts: error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert not (tmp_path / "out").exists()


def test_lone_surrogate_in_a_jsonl_row_names_the_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "rows.jsonl").write_text('{"question": "ok", "answer": "a"}\n'
                                         '{"question": "bad \\ud800", "answer": "a"}\n',
                                         encoding="utf-8")
    suite = _suite()
    del suite["datasets"][0]["splits"]
    suite["datasets"][0]["path"] = "rows.jsonl"
    suite["datasets"][0]["reader_cfg"]["train_split"] = "test"
    (tmp_path / "cfg.json").write_text(json.dumps(suite), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROMPT_COMPILER_TRACEBACK", "1")
    assert main(["cfg.json", "-o", "out"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "row 1" in err and "lone surrogate" in err, err


def test_huge_int_in_a_jsonl_row_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "rows.jsonl").write_text('{"question": "ok", "answer": "a"}\n'
                                         f'{{"question": {BIG}, "answer": "a"}}\n',
                                         encoding="utf-8")
    suite = _suite()
    del suite["datasets"][0]["splits"]
    suite["datasets"][0]["path"] = "rows.jsonl"
    (tmp_path / "cfg.json").write_text(json.dumps(suite), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["cfg.json", "-o", "out"]) == 1
    err = capsys.readouterr().err
    assert "rows.jsonl: line 2 (row 1): an integer of more than 4,300 digits" in err, err


def test_huge_int_yaml_through_the_cli_subprocess(tmp_path: Path) -> None:
    (tmp_path / "cfg.yaml").write_text(json.dumps(_suite()).replace('"q1"', BIG),
                                       encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "prompt_compiler", "cfg.yaml", "-o", "out"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr == ("compile-prompts: error: cfg.yaml: an integer of more than 4,300 "
                           "digits (Python does not read longer integers; write it as a "
                           "string)\n")


def test_a_strict_json_label_is_written_as_is(tmp_path: Path) -> None:
    """Finite float labels stay numbers; the output parses with NaN/Infinity refused."""
    (tmp_path / "cfg.yaml").write_text(_infinite_label_yaml().replace("1.0e+400", "2.5"),
                                       encoding="utf-8")
    assert main([str(tmp_path / "cfg.yaml"), "-o", str(tmp_path / "out")]) == 0
    lines = (tmp_path / "out" / "m" / "d.jsonl").read_text(encoding="utf-8").splitlines()
    labels = [json.loads(line, parse_constant=lambda t: pytest.fail(t))["label"] for line in lines]
    assert labels == [2.5, 1]


def test_a_name_over_255_bytes_still_compiles(tmp_path: Path) -> None:
    suite = _suite(model={"abbr": "é" * 200, "parser": "lm", "meta_template": None})
    (tmp_path / "cfg.json").write_text(json.dumps(suite), encoding="utf-8")
    assert main([str(tmp_path / "cfg.json"), "-o", str(tmp_path / "out")]) == 0
    names = [p.name for p in (tmp_path / "out").rglob("*")]
    assert names and all(len(n.encode()) <= 255 for n in names)
