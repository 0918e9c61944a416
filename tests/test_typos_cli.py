"""Misspelt keys and silent mismatches, end to end: a config file (YAML and Python), the CLI
as a subprocess, the message and the exit status (all written by hand)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import prompt_compiler as pc
from prompt_compiler.errors import PromptCompilerError, UnexpectedKeyError
from tests._cli import run_cli

ROW = '{"question": "2+2?", "answer": "4"}\n'


def _yaml(*, dataset: str = "", reader: str = "", infer: str = "", model: str = "",
          template: str = "Q: {question}", rows: str = "path") -> str:
    source = {"path": "    path: data/qa.jsonl\n",
              "inline": '    rows: [{question: "2+2?", answer: "4"}]\n',
              "data-dir": ""}[rows]
    return (
        "datasets:\n"
        f"  - {dataset or 'abbr: qa'}\n"
        f"{source}"
        f"    reader_cfg: {{input_columns: [question], output_column: answer{reader}}}\n"
        f"    {infer or 'infer_cfg'}:\n"
        f"      prompt_template: {{type: PromptTemplate, template: '{template}'}}\n"
        "      retriever: {type: ZeroRetriever}\n"
        "      inferencer: {type: GenInferencer}\n"
        "models:\n"
        "  - abbr: m\n"
        "    type: HuggingFaceCausalLM\n"
        f"{model}")


def _py(*, dataset: str = "abbr='qa'", reader: str = "", infer: str = "infer_cfg",
        model: str = "", template: str = "Q: {question}", rows: str = "path") -> str:
    source = {"path": "path='data/qa.jsonl', ",
              "inline": "rows=[dict(question='2+2?', answer='4')], ",
              "data-dir": ""}[rows]
    return textwrap.dedent(f"""\
        from opencompass.models import HuggingFaceCausalLM
        from opencompass.openicl.icl_prompt_template import PromptTemplate
        from opencompass.openicl.icl_retriever import ZeroRetriever
        from opencompass.openicl.icl_inferencer import GenInferencer

        datasets = [dict({dataset}, {source}
                         reader_cfg=dict(input_columns=['question'],
                                         output_column='answer'{reader}),
                         {infer}=dict(prompt_template=dict(type=PromptTemplate,
                                                           template='{template}'),
                                      retriever=dict(type=ZeroRetriever),
                                      inferencer=dict(type=GenInferencer)))]
        models = [dict(abbr='m', type=HuggingFaceCausalLM{model})]
        """)


def _write(tmp_path: Path, kind: str, text: str) -> str:
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "qa.jsonl").write_text(ROW, encoding="utf-8")
    name = f"suite.{kind}"
    (tmp_path / name).write_text(text, encoding="utf-8")
    return name


def _config(tmp_path: Path, kind: str, **parts: str) -> str:
    yaml_parts = dict(parts)
    py_parts = dict(parts)
    for key, (y, p) in {"dataset": ("abr: qa", "abr='qa'"),
                        "infer": ("infer_cgf", "infer_cgf"),
                        "model": ("    meta_templat: {round: [{role: HUMAN, begin: '<u>'}]}\n",
                                  ", meta_templat=dict(round=[dict(role='HUMAN', begin='<u>')])"),
                        "reader": (", test_splt: test", ", test_splt='test'")}.items():
        if parts.get(key) == "typo":
            yaml_parts[key], py_parts[key] = y, p
    text = _yaml(**yaml_parts) if kind == "yaml" else _py(**py_parts)
    return _write(tmp_path, kind, text)


KINDS = ["yaml", "py"]


@pytest.mark.parametrize("kind", KINDS)
def test_infer_cfg_misspelt_beside_a_path_is_an_error(tmp_path: Path, kind: str) -> None:
    name = _config(tmp_path, kind, infer="typo")
    proc = run_cli(name, "-o", "out", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        f"compile-prompts: error: {name}: dataset 'qa', at datasets[0].infer_cgf: the dataset has "
        "no 'infer_cfg' but has 'infer_cgf': a misspelling of 'infer_cfg'? (hint: rename "
        "'infer_cgf' to 'infer_cfg')\n")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_abbr_misspelt_is_an_error(tmp_path: Path, kind: str) -> None:
    name = _config(tmp_path, kind, dataset="typo")
    proc = run_cli(name, "--check", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == (
        f"compile-prompts: error: {name}: at datasets[0].abr: the dataset has no 'abbr' but has "
        "'abr': a misspelling of 'abbr'? (hint: rename 'abr' to 'abbr')\n")


@pytest.mark.parametrize("kind", KINDS)
def test_a_model_key_its_class_does_not_take(tmp_path: Path, kind: str) -> None:
    name = _config(tmp_path, kind, model="typo")
    said = (f"{name}: model 'm', at models[0].meta_templat: OpenCompass's HuggingFaceCausalLM "
            "takes no key 'meta_templat' (did you mean 'meta_template'?): OpenCompass 0.5.4 "
            "fails building such a model (compat mode stops), the default mode ignores the key")
    # default mode: a warning, the prompts compiled without a meta template
    proc = run_cli(name, "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"compile-prompts: warning: {said}\n"
    assert proc.stdout == "1 dataset x model pair, 1 prompt (default mode), written to out/\n"
    # compat mode: OpenCompass fails building the model, so does compat mode
    proc = run_cli(name, "--mode", "compat", "-o", "out2", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == (f"compile-prompts: error: {name}: dataset 'qa', model 'm', at "
                           f"{said.split(' at ', 1)[1]}\n")
    assert not (tmp_path / "out2").exists()
    # --strict: every warning fails
    proc = run_cli(name, "--check", "--strict", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"compile-prompts: error: {name}: dataset 'qa', model 'm', at "
                                  "models[0].meta_templat: OpenCompass's HuggingFaceCausalLM")


def test_the_compat_error_is_a_type_error_with_opencompass_s_exception(tmp_path: Path) -> None:
    name = _config(tmp_path, "yaml", model="typo")
    suite = pc.load(tmp_path / name)
    with pytest.raises(UnexpectedKeyError) as info:
        list(pc.compile(suite, mode="opencompass", data_dir=tmp_path / "data"))
    assert isinstance(info.value, TypeError)
    assert info.value.reference == (
        "TypeError", "HuggingFaceCausalLM.__init__() got an unexpected keyword argument "
        "'meta_templat'")


@pytest.mark.parametrize("kind", KINDS)
def test_a_reader_cfg_key_opencompass_refuses(tmp_path: Path, kind: str) -> None:
    name = _config(tmp_path, kind, reader="typo")
    said = (f"{name}: dataset 'qa', at datasets[0].reader_cfg.test_splt: reader_cfg takes no key "
            "'test_splt' (did you mean 'test_split'?): OpenCompass 0.5.4 fails building such a "
            "dataset (compat mode stops), the default mode ignores the key")
    proc = run_cli(name, "--check", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"compile-prompts: warning: {said}\n"
    proc = run_cli(name, "--check", "--mode", "compat", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == ("compile-prompts: error: " + said.replace(
        "dataset 'qa', at", "dataset 'qa', model 'm', at") + "\n")


def test_a_near_miss_in_infer_cfg_and_in_a_model_without_a_known_class(tmp_path: Path) -> None:
    text = _yaml(rows="inline").replace(
        "      retriever: {type: ZeroRetriever}\n",
        "      retriever: {type: ZeroRetriever}\n      inferencre: {type: PPLInferencer}\n"
    ).replace("    type: HuggingFaceCausalLM\n", "    renderer: lm\n    max_seq_lne: 10\n")
    name = _write(tmp_path, "yaml", text)
    proc = run_cli(name, "--check", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (
        f"compile-prompts: warning: {name}: model 'm', at models[0].max_seq_lne: model key "
        "'max_seq_lne' is read neither by this project nor by OpenCompass (did you mean "
        "'max_seq_len'?)\n"
        f"compile-prompts: warning: {name}: dataset 'qa', at datasets[0].infer_cfg.inferencre: "
        "infer_cfg key 'inferencre' is read neither by this project nor by OpenCompass (did you "
        "mean 'inferencer'?)\n")
    proc = run_cli(name, "--check", "--strict", cwd=tmp_path)
    assert proc.returncode == 1


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rows", ["inline", "path", "data-dir"])
def test_output_column_and_placeholder_no_row_has(tmp_path: Path, kind: str, rows: str) -> None:
    make = _yaml if kind == "yaml" else _py
    text = make(rows=rows, template="Q: {questoin}")
    text = text.replace("output_column: answer", "output_column: answr").replace(
        "output_column='answer'", "output_column='answr'")
    name = _write(tmp_path, kind, text)
    extra = ["--data-dir", "data"] if rows == "data-dir" else []
    proc = run_cli(name, *extra, "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    where = f"{name}: dataset 'qa', at datasets[0]"
    assert proc.stderr == (
        f"compile-prompts: warning: {where}.infer_cfg.prompt_template.template: placeholder "
        "{questoin} names no column, so it stays in the prompt verbatim; did you mean "
        "{question}?\n"
        f"compile-prompts: warning: {where}.reader_cfg.output_column: output_column 'answr' "
        "names no column of the rows (did you mean 'answer'?), so every record's gold is null\n")
    for args in (["-o", "out2", "--strict"], ["--check", "--strict"]):
        proc = run_cli(name, *extra, *args, cwd=tmp_path)
        assert proc.returncode == 1, args
        assert proc.stderr == (
            f"compile-prompts: error: {name}: dataset 'qa', model 'm', at datasets[0].infer_cfg."
            "prompt_template.template: placeholder {questoin} names no column, so it stays in "
            "the prompt verbatim; did you mean {question}?\n")
    suite = pc.load(tmp_path / name)
    data = tmp_path / "data" if rows == "data-dir" else None
    with pytest.raises(PromptCompilerError, match="questoin"):
        list(pc.compile(suite, strict=True, data_dir=data))


@pytest.mark.parametrize("kind", KINDS)
def test_output_column_and_placeholder_with_parquet_rows(tmp_path: Path, kind: str) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    make = _yaml if kind == "yaml" else _py
    text = make(rows="path", template="Q: {questoin}").replace("data/qa.jsonl", "data/qa.parquet")
    text = text.replace("output_column: answer", "output_column: answr").replace(
        "output_column='answer'", "output_column='answr'")
    name = _write(tmp_path, kind, text)
    pq.write_table(pa.table({"question": ["2+2?"], "answer": ["4"]}),
                   str(tmp_path / "data" / "qa.parquet"))
    proc = run_cli(name, "--check", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    where = f"{name}: dataset 'qa', at datasets[0]"
    assert proc.stderr.startswith(
        f"compile-prompts: warning: {where}.infer_cfg.prompt_template.template: placeholder "
        "{questoin} names no column, so it stays in the prompt verbatim; did you mean "
        "{question}?\n"
        f"compile-prompts: warning: {where}.reader_cfg.output_column: output_column 'answr' "
        "names no column of the rows (did you mean 'answer'?), so every record's gold is null\n")
    proc = run_cli(name, "--check", "--strict", cwd=tmp_path)
    assert proc.returncode == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_misspelt_prompt_template_key(tmp_path: Path, kind: str) -> None:
    make = _yaml if kind == "yaml" else _py
    text = make(rows="inline")
    text = text.replace("template: 'Q: {question}'}", "template: 'Q: {question}', ice_tokn: '<E>'}")
    text = text.replace("template='Q: {question}'),", "template='Q: {question}', ice_tokn='<E>'),")
    name = _write(tmp_path, kind, text)
    for mode in ("default", "compat"):
        proc = run_cli(name, "--check", "--mode", mode, cwd=tmp_path)
        assert proc.returncode == 1
        assert proc.stderr == (
            f"compile-prompts: error: {name}: dataset 'qa', model 'm', at "
            "datasets[0].infer_cfg.prompt_template: PromptTemplate takes template, ice_token, "
            "sep_token, engine; unexpected: ice_tokn (did you mean 'ice_token'?)\n")
