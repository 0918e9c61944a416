"""OlympiadBenchTemplate / OlympiadBenchRawTemplate: prompt text read from OpenCompass's source.

``tests/data/olympiadbench/OlympiadBench.py`` is a stand-in written for these tests (the
code shape prompt_compiler reads, with our own short texts), so the expected prompts below
are written by hand. The real file is checked too, when an OpenCompass wheel is at hand
(``$PC_OPENCOMPASS_WHEEL`` or the corpus tool's cache), and compared with OpenCompass
itself when ``$PC_OPENCOMPASS_PYTHON`` names a Python with opencompass 0.5.4 installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest

import prompt_compiler as pc
from prompt_compiler.policy import Policy
from prompt_compiler.template import olympiadbench as ob

# These tests check what happens without an installed opencompass (docs/configs.md suggests
# `pip install --no-deps opencompass==0.5.4`, which makes one importable): it would be found first.
WITHOUT_OPENCOMPASS = pytest.mark.skipif(
    importlib.util.find_spec("opencompass") is not None,
    reason="needs no installed opencompass package (an installed one is found first)")

STAND_IN = Path(__file__).parent / "data" / "olympiadbench" / "OlympiadBench.py"
ROOT = Path(__file__).resolve().parents[1]


def package_with(source: Path | bytes, root: Path) -> Path:
    """``root/opencompass/datasets/OlympiadBench.py`` holding ``source``; returns ``root``."""
    folder = root / "opencompass" / "datasets"
    folder.mkdir(parents=True, exist_ok=True)
    (root / "opencompass" / "__init__.py").write_text("raise RuntimeError('never imported')\n")
    data = source.read_bytes() if isinstance(source, Path) else source
    (folder / "OlympiadBench.py").write_bytes(data)
    return root


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = package_with(STAND_IN, tmp_path / "site")
    monkeypatch.syspath_prepend(str(root))
    ob._read.cache_clear()
    return root


def row(**kw: Any) -> dict[str, Any]:
    base = {"problem": "P {x} {solution} #te0", "language": "English", "subject": "Math",
            "question_type": "Open-ended", "answer_type": "Numerical",
            "is_multiple_answer": False, "unit": "", "solution": "S"}
    return {**base, **kw}


@pytest.mark.parametrize(("kw", "expected"), [
    ({}, "Solve this Math task. [one: a number] Box <one>.\n{problem}\n\nSteps."),
    ({"subject": "Physics", "unit": "m"},
     "Solve this Physics task. [one: a number] Box <one>(unit), unit outside the box.\n"
     "{problem}\n\nSteps."),
    ({"is_multiple_answer": True, "answer_type": "Interval-open"},
     "Solve this Math task. [all: a range] Box <many>.\n{problem}\n\nSteps."),
    ({"is_multiple_answer": True, "answer_type": "Numerical,Numerical"},
     "Solve this Math task. [same: a number] Box <many>.\n{problem}\n\nSteps."),
    ({"is_multiple_answer": True, "answer_type": "Numerical,Interval"},
     "Solve this Math task. [each: a number & a range] Box <many>.\n{problem}\n\nSteps."),
    ({"answer_type": "Tuple"}, "Solve this Math task. Box <one>.\n{problem}\n\nSteps."),
    ({"question_type": "Theorem proof", "answer_type": None},
     "Prove this Math claim.\n{problem}\n\nSteps."),
    ({"language": "Chinese", "subject": "Physics", "is_multiple_answer": True, "unit": "s",
      "answer_type": "Numerical,Interval"},
     "ZH solve (ZH-PHYS)[zh each: ZH-NUM+ZH-INT]. Box <zh many>(zh unit) ZH no unit in box."
     "\n{problem}\n\nZH steps."),
    ({"language": "Chinese", "question_type": "Theorem proof"},
     "ZH prove (ZH-MATH).\n{problem}\n\nZH steps."),
    ({"language": "Chinese", "is_multiple_answer": 0},  # Python truthiness, as OpenCompass
     "ZH solve (ZH-MATH)[zh one: ZH-NUM]. Box <zh one>.\n{problem}\n\nZH steps."),
])
def test_instruction_chosen_per_row(stand_in: Path, kw: dict[str, Any], expected: str) -> None:
    assert ob.prompter_text().instruction(row(**kw)) == expected


def test_missing_columns_take_opencompass_defaults(stand_in: Path) -> None:
    # language English, subject Math, not a proof, answer_type '' (no type: an error)
    with pytest.raises(pc.PromptCompilerError) as info:
        ob.prompter_text().instruction({"problem": "p"})
    assert info.value.reference == ("ValueError", "Error parsing answer type !")
    assert ob.prompter_text().instruction({"question_type": "Theorem proof"}) == (
        "Prove this Math claim.\n{problem}\n\nSteps.")


def test_answer_type_errors(stand_in: Path) -> None:
    text = ob.prompter_text()
    with pytest.raises(pc.DataError, match="'Vector' names none of Numerical, Interval"):
        text.instruction(row(answer_type="Vector"))
    with pytest.raises(pc.DataError, match="the row's answer_type must be a str, got None") as info:
        text.instruction(row(answer_type=None))
    assert info.value.reference == ("TypeError", "argument of type 'NoneType' is not iterable")


def test_template_modes(stand_in: Path) -> None:
    tp = ob.OlympiadBenchTemplate()
    r = row()
    head = "Solve this Math task. [one: a number] Box <one>.\n"
    # compat: OpenCompass fills prompt, problem, then the masked output column in turn
    compat = tp.gen_item(r, "", Policy.of("opencompass"), output_column="solution")
    assert compat.to_list()[1] == {"role": "HUMAN", "prompt": head + "P {x}  #te0\n\nSteps."}
    default = tp.gen_item(r, "", Policy.of("default"), output_column="solution")
    assert default.to_list()[1] == {"role": "HUMAN",
                                    "prompt": head + "P {x} {solution} #te0\n\nSteps."}
    raw = ob.OlympiadBenchRawTemplate.create()
    for mode in ("opencompass", "default"):
        assert raw.gen_item(r, "", Policy.of(mode), output_column="solution") == [
            {"role": "user", "content": head + "P {x} {solution} #te0\n\nSteps."}]


def test_raw_problem_must_be_text_in_compat(stand_in: Path) -> None:
    raw = ob.OlympiadBenchRawTemplate.create()
    with pytest.raises(pc.DataError) as info:
        raw.gen_item(row(problem=7), "", Policy.of("opencompass"))
    assert info.value.reference == ("TypeError", "replace() argument 2 must be str, not int")
    assert raw.gen_item(row(problem=7), "", Policy.of("default"))[0]["content"].endswith(
        "\n7\n\nSteps.")


def test_row_errors_name_dataset_row_and_template(stand_in: Path) -> None:
    ds = _dataset({"type": "OlympiadBenchTemplate"})
    ds["rows"] = [row(), row(answer_type="Vector")]
    with pytest.raises(pc.DataError) as info:
        pc.Compiler().compile(ds, _LM)
    text = str(info.value)
    assert "dataset 'ob'" in text and "row 1" in text
    assert "infer_cfg.prompt_template" in text and "'Vector' names none of" in text


def test_settings_are_refused(stand_in: Path) -> None:
    with pytest.raises(pc.ConfigError, match="OlympiadBenchTemplate takes no settings"):
        pc.Compiler().compile(_dataset({"type": "OlympiadBenchTemplate", "x": 1}), _LM)


def test_wrong_source_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = package_with(b"def make_prompt():\n    return 1\n", tmp_path / "site")
    monkeypatch.syspath_prepend(str(root))
    ob._read.cache_clear()
    with pytest.raises(pc.UnsupportedError, match="does not have the structure of OpenCompass"):
        ob.prompter_text()


_LM = {"name": "lm", "parser": "lm", "meta_template": {"round": [
    {"role": "HUMAN", "begin": "<u>", "end": "</u>\n"},
    {"role": "BOT", "begin": "<a>", "end": "</a>\n", "generate": True}]}}


def _dataset(template: dict[str, Any]) -> dict[str, Any]:
    return {"abbr": "ob", "reader_cfg": {"input_columns": ["problem"], "output_column": "solution"},
            "infer_cfg": {"prompt_template": template, "retriever": {"type": "ZeroRetriever"},
                          "inferencer": {"type": "GenInferencer"}},
            "rows": [row()]}


# -- from config files, through the CLI ------------------------------------------------------

CONFIG = textwrap.dedent("""\
    from opencompass.datasets import OlympiadBenchDataset
    from opencompass.models import HuggingFaceCausalLM, OpenAISDK
    from opencompass.openicl.icl_inferencer import GenInferencer
    from opencompass.openicl.icl_retriever import ZeroRetriever

    datasets = [
        dict(type=OlympiadBenchDataset, abbr=f'ob_{kind}', path='ob', name='x',
             reader_cfg=dict(input_columns=['problem', 'language', 'subject', 'question_type',
                                            'answer_type', 'is_multiple_answer', 'unit'],
                             output_column='solution'),
             infer_cfg=dict(prompt_template=dict(type=kind),
                            retriever=dict(type=ZeroRetriever),
                            inferencer=dict(type=GenInferencer)))
        for kind in ('OlympiadBenchTemplate', 'OlympiadBenchRawTemplate')
    ]
    models = [dict(type=OpenAISDK, abbr='gpt', path='gpt', meta_template=dict(round=[
        dict(role='HUMAN', api_role='HUMAN'), dict(role='BOT', api_role='BOT', generate=True)]))]
""")


def _project(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "eval_ob.py").write_text(CONFIG)
    rows = [row(), row(language="Chinese", question_type="Theorem proof", problem="Q #te1")]
    for abbr in ("ob_OlympiadBenchTemplate", "ob_OlympiadBenchRawTemplate"):
        (work / "data" / f"{abbr}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows))
    return work


def _cli(args: list[str], cwd: Path, site: Path | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)


@pytest.mark.parametrize("mode", ["compat", "default"])
def test_cli_compiles_olympiadbench_configs(tmp_path: Path, mode: str) -> None:
    work = _project(tmp_path)
    site = package_with(STAND_IN, tmp_path / "site")
    proc = _cli(["eval_ob.py", "--data-dir", "data", "-o", str(tmp_path / "out"),
                 "--mode", mode], cwd=work, site=site)
    assert proc.returncode == 0, proc.stderr
    first = ("Solve this Math task. [one: a number] Box <one>.\n"
             + ("P {x}  #te0" if mode == "compat" else "P {x} {solution} #te0") + "\n\nSteps.")
    second = "ZH prove (ZH-MATH).\nQ #te1\n\nZH steps."
    tpl = [json.loads(x) for x in
           (tmp_path / "out" / "gpt" / "ob_OlympiadBenchTemplate.jsonl").read_text().splitlines()]
    assert [r["prompt"] for r in tpl] == [[{"role": "user", "content": first}],
                                          [{"role": "user", "content": second}]]
    raw_file = tmp_path / "out" / "gpt" / "ob_OlympiadBenchRawTemplate.jsonl"
    raw = [json.loads(x) for x in raw_file.read_text().splitlines()]
    whole = first.replace("P {x}  #te0", "P {x} {solution} #te0")
    assert [r["prompt"] for r in raw] == [[{"role": "user", "content": whole}],
                                          [{"role": "user", "content": second}]]


@WITHOUT_OPENCOMPASS
def test_cli_without_opencompass_names_what_to_install(tmp_path: Path) -> None:
    work = _project(tmp_path)
    proc = _cli([str(work / "eval_ob.py"), "--data-dir", str(work / "data"), "--check"],
                cwd=tmp_path, site=None)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("compile-prompts: error: "), proc.stderr
    assert "prompt_template.type" in lines[0]
    assert "pip install --no-deps opencompass==0.5.4" in lines[0]
    assert "Traceback" not in proc.stderr


# -- the real OpenCompass source -------------------------------------------------------------


def _real_source() -> bytes:
    given = os.environ.get("PC_OPENCOMPASS_WHEEL")
    cache = Path.home() / ".cache" / "prompt_compiler" / "opencompass-0.5.4"
    wheels = [Path(given)] if given else sorted(cache.glob("opencompass-0.5.4-*.whl"))
    for wheel in wheels:
        if wheel.is_file():
            with zipfile.ZipFile(wheel) as zf:
                return zf.read("opencompass/datasets/OlympiadBench.py")
    pytest.skip("no OpenCompass 0.5.4 wheel (set PC_OPENCOMPASS_WHEEL, or run "
                "tools/oc_corpus.py once to download it)")


ROWS = [row(language=lang, subject=subj, question_type=qt, answer_type=at,
            is_multiple_answer=multi, unit=unit, problem=f"Find {{x}} {{solution}} #te{i}")
        for i, (lang, subj, qt, at, multi, unit) in enumerate([
            ("English", "Math", "Open-ended", "Numerical", False, ""),
            ("English", "Physics", "Open-ended", "Expression", False, "m"),
            ("English", "Math", "Open-ended", "Numerical,Interval", True, ""),
            ("English", "Math", "Open-ended", "Equation,Equation", True, "kg"),
            ("English", "Math", "Open-ended", "Interval", True, ""),
            ("English", "Physics", "Theorem proof", "Need_human_evaluate", False, ""),
            ("Chinese", "Math", "Open-ended", "Numerical", False, ""),
            ("Chinese", "Physics", "Open-ended", "Expression,Numerical", True, "s"),
            ("Chinese", "Math", "Open-ended", "Tuple", True, ""),
            ("Chinese", "Math", "Theorem proof", "Numerical", False, ""),
        ])]


def test_real_source_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = package_with(_real_source(), tmp_path / "site")
    monkeypatch.syspath_prepend(str(root))
    ob._read.cache_clear()
    text = ob.prompter_text()
    for r in ROWS:  # the same shape for every branch: instruction, problem slot, closing line
        made = text.instruction(r)
        assert made.count("\n{problem}\n\n") == 1 and not made.endswith("\n")
    assert len({text.instruction(r) for r in ROWS}) == len(ROWS)


def test_matches_opencompass_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python = os.environ.get("PC_OPENCOMPASS_PYTHON")
    if not python:
        pytest.skip("set PC_OPENCOMPASS_PYTHON to a Python with opencompass 0.5.4 installed "
                    "to compare with OpenCompass itself")
    script = textwrap.dedent("""\
        import json, sys
        from opencompass.datasets.OlympiadBench import (OlympiadBenchRawTemplate,
                                                        OlympiadBenchTemplate)
        out = []
        for r in json.load(sys.stdin):
            kw = dict(output_field='solution', output_field_replace_token='',
                      ice_field_replace_token='')
            tpl = OlympiadBenchTemplate().generate_item(dict(r), **kw)
            raw = OlympiadBenchRawTemplate().generate_item(dict(r), **kw)
            out.append([[dict(x) for x in tpl], raw])
        print(json.dumps(out))
    """)
    proc = subprocess.run([python, "-c", script], input=json.dumps(ROWS), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected = json.loads(proc.stdout.strip().splitlines()[-1])
    source = subprocess.run([python, "-c", "import opencompass, os; print(os.path.dirname("
                             "opencompass.__file__))"], capture_output=True, text=True)
    root = package_with(Path(source.stdout.strip()) / "datasets" / "OlympiadBench.py",
                        tmp_path / "site")
    monkeypatch.syspath_prepend(str(root))
    ob._read.cache_clear()
    tp, raw = ob.OlympiadBenchTemplate(), ob.OlympiadBenchRawTemplate.create()
    compat = Policy.of("opencompass")
    for r, (want_tpl, want_raw) in zip(ROWS, expected, strict=True):
        assert tp.gen_item(r, "", compat, output_column="solution").to_list() == want_tpl
        for mode in ("opencompass", "default"):
            assert raw.gen_item(r, "", Policy.of(mode), output_column="solution") == want_raw
        # default mode: OpenCompass's prompt with the problem inserted once (D1)
        default = tp.gen_item(r, "", Policy.of("default"), output_column="solution").to_list()
        assert default[1]["prompt"] == want_raw[0]["content"]


@WITHOUT_OPENCOMPASS
@pytest.mark.parametrize("engine", ["local", "ray"])
def test_text_read_beside_the_configs_folder_given(tmp_path: Path, engine: str) -> None:
    """No installed opencompass: the text is read beside --opencompass-configs DIR (the folder
    recorded on each dataset when it loads), in this process and in Ray's workers alike."""
    if engine == "ray":
        pytest.importorskip("ray")
    work = _project(tmp_path)
    package = package_with(STAND_IN, tmp_path / "oc") / "opencompass"
    (package / "configs" / "datasets").mkdir(parents=True)
    # the package under test, and no importable opencompass
    env = {**os.environ, "PYTHONPATH": str(Path(ob.__file__).parents[2])}
    proc = subprocess.run([sys.executable, "-m", "prompt_compiler", "eval_ob.py", "--data-dir",
                           "data", "-o", str(tmp_path / "out"), "--opencompass-configs",
                           str(package / "configs"), "--engine", engine],
                          capture_output=True, text=True, cwd=work, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    tpl = (tmp_path / "out" / "gpt" / "ob_OlympiadBenchTemplate.jsonl").read_text()
    assert "ZH prove (ZH-MATH)." in tpl
