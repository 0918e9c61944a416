"""A catalogue of bad inputs to ``compile-prompts``: each one is a clean user error.

For every case the CLI (run in-process) must exit with status 1, print exactly one line on
stderr that starts with ``compile-prompts: error:`` and names the offending file (and the
key path, row index or line where that matters), print no traceback, and write nothing:
the ``-o`` folder does not exist afterwards.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from prompt_compiler.cli import main

# -- building blocks ---------------------------------------------------------------------

GOOD_ROWS = [{"question": "1+1? #te0", "answer": "2"}, {"question": "2+2? #te1", "answer": "4"}]

MODEL_YAML = """\
models:
  - abbr: m
    type: HuggingFaceCausalLM
    meta_template: null
    max_seq_len: 2048
    batch_size: 8
"""

CHAT_META = """\
    meta_template:
      round:
        - {role: HUMAN, begin: "<|User|>:", end: "\\n"}
        - {role: BOT, begin: "<|Bot|>:", end: "\\n", generate: true}
"""


def dataset_yaml(
    *,
    abbr: str | None = "demo",
    reader: str | None = None,
    infer: str | None = None,
    rows: str | None = None,
    extra: str = "",
) -> str:
    """A YAML ``datasets:`` list with one dataset; each part can be replaced."""
    reader = reader if reader is not None else "{input_columns: [question], output_column: answer}"
    infer = (
        infer
        if infer is not None
        else textwrap.dedent("""\
        prompt_template: {type: PromptTemplate, template: "Q: {question}\\nA:"}
        retriever: {type: ZeroRetriever}
        inferencer: {type: GenInferencer}""")
    )
    rows = rows if rows is not None else "rows: " + json.dumps(GOOD_ROWS, ensure_ascii=False)
    lines = ["datasets:"]
    lines.append(f"  - abbr: {abbr}" if abbr is not None else "  - type: null")
    if reader != "-":
        lines.append(f"    reader_cfg: {reader}")
    lines.append("    infer_cfg:")
    lines += ["      " + ln for ln in infer.splitlines()]
    if rows:
        lines += ["    " + ln for ln in rows.splitlines()]
    if extra:
        lines += ["    " + ln for ln in extra.splitlines()]
    return "\n".join(lines) + "\n"


def config(**kw: Any) -> str:
    return dataset_yaml(**kw) + MODEL_YAML


ICE_INFER = """\
ice_template: {type: PromptTemplate, template: "Q: {question}\\nA: {answer}\\n"}
prompt_template: {type: PromptTemplate, template: "</E>Q: {question}\\nA:", ice_token: "</E>"}
retriever: {type: FixKRetriever, fix_id_list: [0, 1]}
inferencer: {type: GenInferencer}"""

PY_DATASET = """\
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.models import HuggingFaceCausalLM

datasets = [dict(abbr='demo', reader_cfg=dict(input_columns=['question'], output_column='answer'),
                 infer_cfg=dict(prompt_template=dict(type=PromptTemplate, template='Q: {question}'),
                                retriever=dict(type=ZeroRetriever),
                                inferencer=dict(type=GenInferencer)),
                 rows=[dict(question='q #te0', answer='a')])]
models = [dict(abbr='m', type=HuggingFaceCausalLM, meta_template=None, max_seq_len=2048)]
"""


@dataclass
class Case:
    id: str
    files: dict[str, str]
    words: list[str]  # must all appear in the message ("{tmp}" = the tmp folder)
    args: list[str] = field(default_factory=lambda: ["cfg.yaml"])
    bug: str | None = None  # xfail(strict) reason when the CLI does not handle it cleanly


CASES = [
    # -- reading config files --------------------------------------------------------------
    Case(
        "py-syntax",
        {"cfg.py": "datasets = [dict(abbr='x',\nmodels = 3\n"},
        ["cfg.py", "syntax", "line"],
        ["cfg.py"],
    ),
    Case(
        "py-raises",
        {"cfg.py": "x = 1\nraise RuntimeError('boom in config')\n"},
        ["cfg.py", "RuntimeError", "boom in config", "line 2"],
        ["cfg.py"],
    ),
    Case(
        "py-read-base-missing",
        {
            "cfg.py": "from mmengine.config import read_base\n"
            "with read_base():\n"
            "    from .nothere import datasets\n"
        },
        ["cfg.py", "nothere"],
        ["cfg.py"],
    ),
    Case(
        "yaml-syntax",
        {"cfg.yaml": "datasets:\n  - abbr: [x\n    reader_cfg: {}\n"},
        ["cfg.yaml", "invalid YAML", "line"],
    ),
    Case(
        "yaml-python-apply",
        {
            "cfg.yaml": "datasets: !!python/object/apply:os.system "
            "['touch {tmp}/PWNED']\n" + MODEL_YAML
        },
        ["cfg.yaml", "line 1", "not allowed"],
    ),
    Case(
        "yaml-python-name",
        {"cfg.yaml": "datasets:\n  - abbr: x\n    type: !!python/name:os.system\n"},
        ["cfg.yaml", "line 3", "not allowed"],
    ),
    Case(
        "json-syntax",
        {"cfg.json": '{"datasets": [\n  {"abbr": "x",}\n]}\n'},
        ["cfg.json", "line 2", "invalid JSON"],
        ["cfg.json"],
    ),
    Case(
        "json-bad-items",
        {
            "cfg.json": json.dumps(
                {
                    "id": "j",
                    "model": {"name": "m", "parser": "lm"},
                    "dataset": {"__items__": [[[1], 2]]},
                }
            )
        },
        ["cfg.json", "__items__"],
        ["cfg.json"],
    ),
    Case(
        "unsupported-suffix", {"cfg.txt": "datasets: []\n"}, ["cfg.txt", "unsupported"], ["cfg.txt"]
    ),
    Case("no-such-file", {}, ["missing.yaml", "no such config file"], ["missing.yaml"]),
    Case(
        "empty-directory",
        {"empty/.keep": ""},
        ["nothing to compile", "empty"],
        ["empty"],
    ),
    Case("file-defines-nothing", {"cfg.yaml": "work_dir: x\n"}, ["cfg.yaml", "no datasets"]),
    # -- registry names ---------------------------------------------------------------------
    Case(
        "unknown-retriever",
        {"cfg.yaml": config(infer=ICE_INFER.replace("FixKRetriever", "FixKRetreiver"))},
        ["cfg.yaml", "demo", "FixKRetreiver", "retriever"],
    ),
    Case(
        "unknown-inferencer",
        {"cfg.yaml": config(infer=ICE_INFER.replace("GenInferencer", "GenerateInferencer"))},
        ["cfg.yaml", "demo", "GenerateInferencer", "inferencer"],
    ),
    Case(
        "unknown-template-type",
        {
            "cfg.yaml": config(
                infer=ICE_INFER.replace(
                    "ice_template: {type: PromptTemplate", "ice_template: {type: PromptTemplat"
                )
            )
        },
        ["cfg.yaml", "demo", "PromptTemplat", "ice_template"],
    ),
    Case(
        "unknown-model-class",
        {"cfg.yaml": dataset_yaml() + MODEL_YAML.replace("HuggingFaceCausalLM", "MyLocalLM")},
        ["cfg.yaml", "models[0].type", "MyLocalLM", "renderer"],
    ),
    Case(
        "unknown-renderer",
        {
            "cfg.yaml": dataset_yaml()
            + MODEL_YAML.replace("type: HuggingFaceCausalLM", "renderer: chatlm")
        },
        ["cfg.yaml", "models[0].renderer", "chatlm", "did you mean"],
    ),
    Case(
        "model-unknown-library-template",
        {
            "cfg.yaml": dataset_yaml()
            + MODEL_YAML.replace("meta_template: null", "meta_template: internlm2-chatt")
        },
        ["cfg.yaml", "models[0].meta_template", "internlm2-chatt"],
    ),
    Case(
        "model-option-unknown-name",
        {"cfg.yaml": dataset_yaml()},
        ["internlm2-chatt", "did you mean"],
        ["cfg.yaml", "--model", "internlm2-chatt"],
    ),
    # -- templates / meta templates ---------------------------------------------------------
    Case(
        "role-missing-from-meta",
        {
            "cfg.yaml": config(
                infer=textwrap.dedent("""\
        prompt_template:
          type: PromptTemplate
          template:
            round:
              - {role: HUMAN, prompt: "{question}"}
              - {role: JUDGE, prompt: "verdict"}
        retriever: {type: ZeroRetriever}
        inferencer: {type: GenInferencer}""")
            ).replace("    meta_template: null\n", CHAT_META)
        },
        ["cfg.yaml", "demo", "JUDGE", "row 0"],
    ),
    Case(
        "ice-token-declared-but-absent",
        {
            "cfg.yaml": config(
                infer=ICE_INFER.replace('"</E>Q: {question}\\nA:"', '"Q: {question}\\nA:"')
            )
        },
        ["cfg.yaml", "demo", "</E>", "prompt_template"],
    ),
    Case(
        "prompt-template-without-ice-token",
        {
            "cfg.yaml": config(
                infer=ICE_INFER.replace(', ice_token: "</E>"', "").replace('"</E>Q:', '"Q:')
            )
        },
        ["cfg.yaml", "demo", "ice_token"],
    ),
    Case(
        "fix-id-list-out-of-range",
        {"cfg.yaml": config(infer=ICE_INFER.replace("[0, 1]", "[0, 7]"))},
        ["cfg.yaml", "demo", "7"],
    ),
    Case(
        "label-missing-from-label-dict",
        {
            "cfg.yaml": config(
                reader="{input_columns: [question], output_column: answer}",
                infer=textwrap.dedent("""\
            ice_template:
              type: PromptTemplate
              template: {'2': "</E>Q: {question} A: two", '4': "</E>Q: {question} A: four"}
              ice_token: "</E>"
            retriever: {type: FixKRetriever, fix_id_list: [0, 1]}
            inferencer: {type: PPLInferencer}"""),
                rows="rows: "
                + json.dumps(
                    [{"question": "1+1?", "answer": "2"}, {"question": "x?", "answer": "5"}]
                ),
            )
        },
        ["cfg.yaml", "demo", "'5'"],
    ),
    Case(
        "meta-round-not-a-list",
        {
            "cfg.yaml": dataset_yaml()
            + MODEL_YAML.replace("meta_template: null", "meta_template: {round: {role: HUMAN}}")
        },
        ["cfg.yaml", "round"],
    ),
    Case(
        "meta-duplicate-role",
        {
            "cfg.yaml": dataset_yaml()
            + MODEL_YAML.replace(
                "meta_template: null",
                "meta_template: {round: [{role: HUMAN, begin: a}, {role: HUMAN, begin: b}]}",
            )
        },
        ["cfg.yaml", "HUMAN"],
    ),
    # -- dataset shape ------------------------------------------------------------------------
    Case(
        "dataset-without-abbr",
        {"cfg.yaml": config(abbr=None)},
        ["cfg.yaml", "datasets[0].abbr", "abbr"],
    ),
    Case(
        "reader-cfg-missing",
        {"cfg.yaml": config(reader="-")},
        ["cfg.yaml", "demo", "datasets[0].reader_cfg"],
    ),
    Case(
        "infer-cfg-not-a-dict",
        {
            "cfg.yaml": "datasets:\n  - abbr: demo\n    reader_cfg: {input_columns: [q], "
            "output_column: a}\n    infer_cfg: [1, 2]\n" + MODEL_YAML
        },
        ["cfg.yaml", "datasets[0].infer_cfg", "list"],
    ),
    Case(
        "retriever-missing",
        {
            "cfg.yaml": config(
                infer=ICE_INFER.replace(
                    "retriever: {type: FixKRetriever, fix_id_list: [0, 1]}\n", ""
                )
            )
        },
        ["cfg.yaml", "demo", "retriever"],
    ),
    Case(
        "models-not-a-list",
        {"cfg.yaml": dataset_yaml() + "models: {abbr: m, type: HuggingFaceCausalLM}\n"},
        ["cfg.yaml", "models", "list"],
    ),
    Case(
        "max-seq-len-not-int",
        {"cfg.yaml": dataset_yaml() + MODEL_YAML.replace("2048", '"2048"')},
        ["cfg.yaml", "models[0].max_seq_len", "str"],
    ),
    Case(
        "duplicate-dataset-abbr",
        # Identical definitions reached twice count once; different ones under one abbr clash.
        {"a.yaml": config(), "b.yaml": dataset_yaml(extra="note: another definition")},
        ["b.yaml", "demo", "a.yaml"],
        ["a.yaml", "b.yaml"],
    ),
    Case(
        "duplicate-model-abbr",
        {"a.yaml": config(), "b.yaml": MODEL_YAML.replace("2048", "4096")},
        ["b.yaml", "'m'", "a.yaml"],
        ["a.yaml", "b.yaml"],
    ),
    Case(
        "input-column-absent",
        {"cfg.yaml": config(reader="{input_columns: [question, context], output_column: answer}")},
        ["cfg.yaml", "demo", "context"],
    ),
    Case(
        "range-not-a-slice",
        {
            "cfg.yaml": config(
                reader="{input_columns: [question], output_column: answer, test_range: '[a:b]'}"
            )
        },
        ["cfg.yaml", "demo", "test_range", "[a:b]"],
    ),
    Case(
        "only-matches-nothing", {"cfg.yaml": config()}, ["--only"], ["cfg.yaml", "--only", "zzz*"]
    ),
    # -- rows ------------------------------------------------------------------------------------
    Case(
        "jsonl-malformed-line",
        {
            "cfg.yaml": config(rows="path: rows.jsonl"),
            "rows.jsonl": '{"question": "a", "answer": "b"}\n{"question": "c",\n',
        },
        ["rows.jsonl", "line 2"],
    ),
    Case(
        "jsonl-row-not-object",
        {
            "cfg.yaml": config(rows="path: rows.jsonl"),
            "rows.jsonl": '{"question": "a", "answer": "b"}\n["c", "d"]\n',
        },
        ["rows.jsonl", "line 2"],
    ),
    Case(
        "json-row-not-object",
        {
            "cfg.yaml": config(rows="path: rows.json"),
            "rows.json": '[{"question": "a", "answer": "b"}, 7]\n',
        },
        ["rows.json", "row 1"],
    ),
    Case(
        "inline-row-not-object",
        {"cfg.yaml": config(rows='rows: [{question: a, answer: b}, "oops"]')},
        ["cfg.yaml", "demo", "row 1"],
    ),
    Case(
        "data-file-missing",
        {"cfg.yaml": config(rows="path: nothere.jsonl")},
        ["cfg.yaml", "demo", "nothere.jsonl", "does not exist (looked for"],
    ),
    Case(
        "csv-ragged-row",
        {"cfg.yaml": config(rows="path: rows.csv"), "rows.csv": "question,answer\na,b\nc,d,e\n"},
        ["rows.csv", "line 3"],
    ),
    Case(
        "data-not-utf8",
        {"cfg.yaml": config(rows="path: rows.jsonl"), "rows.jsonl": "\udcff"},
        ["rows.jsonl"],
    ),
    Case(
        "data-dir-lacks-rows",
        {
            "cfg.yaml": config(rows="type: GSM8KDataset\npath: opencompass/gsm8k"),
            "dd/other.jsonl": '{"question": "a", "answer": "b"}\n',
        },
        ["cfg.yaml", "demo", "dd"],
        ["cfg.yaml", "--data-dir", "dd"],
    ),
    Case(
        "no-data-dir-for-loader-class",
        {"cfg.yaml": config(rows="type: GSM8KDataset\npath: opencompass/gsm8k")},
        ["cfg.yaml", "demo", "--data-dir"],
    ),
    Case(
        "python-config-bad-value",
        {"cfg.py": PY_DATASET.replace("rows=[", "seed={1}, rows=[")},  # (object() is refused)
        ["cfg.py", "datasets[0].seed", "set"],
        ["cfg.py"],
    ),
]


def _write(tmp: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if "\udcff" in text:
            path.write_bytes(b'{"question": "\xff\xfe"}\n')
        else:
            path.write_text(text.replace("{tmp}", str(tmp)), encoding="utf-8")


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=c.bug)] if c.bug else []
        )
        for c in CASES
    ],
)
def test_bad_input_is_one_clean_error(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, case.files)
    monkeypatch.chdir(tmp_path)  # relative paths as a user types them; nothing lands elsewhere
    out = tmp_path / "out"
    try:
        code = main([*case.args, "-o", str(out)])
    except SystemExit as exc:  # argparse: a usage error, not a user error
        code = exc.code
    captured = capsys.readouterr()
    err = captured.err
    assert code == 1, f"exit {code}; stderr={err!r} stdout={captured.out!r}"
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {err!r}"
    assert lines[0].startswith("compile-prompts: error: "), err
    assert "Traceback" not in err + captured.out
    message = lines[0]
    for word in case.words:
        word = word.replace("{tmp}", str(tmp_path))
        assert word in message, f"{word!r} not in {message!r}"
    written = sorted(str(p.relative_to(tmp_path)) for p in out.rglob("*") if not p.is_dir())
    assert not written, f"files were written: {written}"
    assert not (tmp_path / "PWNED").exists(), "a YAML tag executed code"


# Errors raised while compiling (after loading) leave the empty folder OUT/<model>/ behind.
@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            c,
            id=c.id,
            marks=[],
        )
        for c in CASES
    ],
)
def test_bad_input_leaves_no_output_folder(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, case.files)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    code = main([*case.args, "-o", str(out)])
    capsys.readouterr()
    assert code == 1
    assert not out.exists(), (
        f"left behind: {sorted(str(p.relative_to(tmp_path)) for p in out.rglob('*'))}"
    )


def test_failed_run_keeps_an_existing_output_folder_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failing run into a folder with earlier results neither removes nor adds files."""
    out = tmp_path / "out"
    (out / "old").mkdir(parents=True)
    (out / "old" / "x.jsonl").write_text("{}\n", encoding="utf-8")
    (out / "manifest.json").write_text(  # an earlier output of this tool, so it may be replaced
        '{"tool": "prompt_compiler", "outputs": {"old/x.jsonl": {}}}\n', encoding="utf-8")
    (tmp_path / "cfg.yaml").write_text(
        config(infer=ICE_INFER.replace("[0, 1]", "[0, 7]")), encoding="utf-8"
    )
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert main([str(tmp_path / "cfg.yaml"), "-o", str(out)]) == 1
    assert "fix_id_list" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_catalogue_is_large_enough() -> None:
    assert len({c.id for c in CASES}) == len(CASES) >= 30


def test_python_yaml_tag_never_executes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Even inside a folder walk (files there may be skipped), the tag is refused, not run."""
    marker = tmp_path / "PWNED"
    (tmp_path / "cfgs").mkdir()
    (tmp_path / "cfgs" / "evil.yaml").write_text(
        f"models: !!python/object/apply:os.system ['touch {marker}']\n", encoding="utf-8"
    )
    code = main([str(tmp_path / "cfgs"), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and "evil.yaml" in err and "not allowed" in err
    assert not marker.exists()


def _two_configs_one_bad(tmp: Path) -> list[str]:
    (tmp / "a.yaml").write_text(
        config(infer=ICE_INFER.replace("[0, 1]", "[0, 7]")), encoding="utf-8"
    )
    (tmp / "b.yaml").write_text(dataset_yaml(abbr="demo2"), encoding="utf-8")
    return [str(tmp / "a.yaml"), str(tmp / "b.yaml")]


def test_parallel_failure_is_one_clean_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*_two_configs_one_bad(tmp_path), "--jobs", "2", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1
    assert len(err.splitlines()) == 1 and err.startswith("compile-prompts: error: "), err
    assert "a.yaml" in err, err
    assert "fix_id_list[1] = 7" in err and "Traceback" not in err


def test_parallel_failure_writes_no_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main([*_two_configs_one_bad(tmp_path), "--jobs", "2", "-o", str(out)]) == 1
    capsys.readouterr()
    left = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert not left, f"files left behind: {left}"
