"""Config shapes found in OpenCompass's own dataset configs, compiled through the CLI.

Each test writes an OpenCompass-style tree (``configs/datasets/...`` pulled into an eval
config by ``read_base()``), runs ``compile-prompts`` as a subprocess from another working
directory, and compares the records with prompts written by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CLI = str(Path(sys.executable).with_name("compile-prompts"))

MODEL = """
from opencompass.models import HuggingFaceCausalLM
models = [dict(type=HuggingFaceCausalLM, abbr='m', meta_template=dict(round=[
    dict(role='HUMAN', begin='<H>', end='\\n'),
    dict(role='BOT', begin='<B>', generate=True)]))]
"""


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def eval_config(root: Path, module: str) -> Path:
    return write(root, "configs/eval_x.py", textwrap.dedent(f"""
        from mmengine.config import read_base
        with read_base():
            from .datasets.{module} import *
        """) + MODEL)


def compile_(root: Path, config: Path, *extra: str
             ) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = root / "out"
    elsewhere = root / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    proc = subprocess.run([CLI, str(config), "-o", str(out), *extra], cwd=elsewhere,
                          capture_output=True, text=True)
    return proc, out


def records(out: Path, name: str) -> list[dict[str, object]]:
    lines = (out / "m" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def gen_dataset(name: str, extra: str, reader: str = "dict(input_columns=['q'], output_column='a')",
                template: str = "dict(round=[dict(role='HUMAN', prompt='Q: {q}'), "
                                "dict(role='BOT', prompt='{a}')])",
                inferencer: str = "dict(type=GenInferencer)") -> str:
    return f"""
        import os
        from opencompass.openicl.icl_prompt_template import PromptTemplate
        from opencompass.openicl.icl_retriever import ZeroRetriever
        from opencompass.openicl.icl_inferencer import GenInferencer
        {name} = [dict({extra}
            reader_cfg={reader},
            infer_cfg=dict(
                prompt_template=dict(type=PromptTemplate, template={template}),
                retriever=dict(type=ZeroRetriever),
                inferencer={inferencer}))]
        """


def test_os_module_in_a_read_base_chain(tmp_path: Path) -> None:
    # os.path / os.environ at config level need an mmengine that treats frozen stdlib
    # modules as built-in (Python 3.11+).
    write(tmp_path, "data/os_demo.jsonl", '{"q": "x1", "a": "y1"}\n')
    write(tmp_path, "configs/datasets/demo/demo_gen.py", gen_dataset(
        "demo_datasets",
        "abbr='os-demo' + os.environ.get('PC_NO_SUCH_VARIABLE', ''), type='JsonlDataset', "
        "path=os.path.join(os.path.dirname(__file__), '..', '..', '..', 'data', "
        "'os_demo.jsonl'),"))
    proc, out = compile_(tmp_path, eval_config(tmp_path, "demo.demo_gen"))
    assert proc.returncode == 0, proc.stderr
    assert [r["prompt"] for r in records(out, "os-demo")] == ["<H>Q: x1\n<B>"]


def test_abbr_is_derived_from_path_and_name(tmp_path: Path) -> None:
    # OpenCompass names a dataset without abbr '<path>_<name>' with '/' -> '_'; its rows'
    # subdivision column keeps the dataset class default 'dataset'.
    write(tmp_path, "data/opencompass_xcopa_en.jsonl", '{"q": "x1", "a": "y1"}\n')
    write(tmp_path, "configs/datasets/xcopa/xcopa_gen.py", gen_dataset(
        "xcopa_datasets", "type='XCOPADataset', path='opencompass/xcopa', name='en',",
        template="dict(round=[dict(role='HUMAN', prompt='Q: {q} [{subdivision}]'), "
                 "dict(role='BOT', prompt='{a}')])"))
    proc, out = compile_(tmp_path, eval_config(tmp_path, "xcopa.xcopa_gen"),
                         "--data-dir", str(tmp_path / "data"))
    assert proc.returncode == 0, proc.stderr
    rows = records(out, "opencompass_xcopa_en")
    assert [(r["dataset"], r["prompt"]) for r in rows] == [
        ("opencompass_xcopa_en", "<H>Q: x1 [dataset]\n<B>")]


def test_ignored_inferencer_keywords_and_a_tuple_reader_cfg(tmp_path: Path) -> None:
    write(tmp_path, "data/pj.jsonl", '{"q": "x1", "a": "y1"}\n')
    write(tmp_path, "configs/datasets/pj/pj_gen.py", gen_dataset(
        "pj_datasets", "abbr='pj', type='JsonlDataset', path='../data/pj.jsonl',",
        reader="(dict(input_columns=['q'], output_column='a'),)",
        inferencer="dict(type=GenInferencer, max_out_len=10, temperature=0.7, do_sample=False)"))
    config = eval_config(tmp_path, "pj.pj_gen")
    proc, out = compile_(tmp_path, config)
    assert proc.returncode == 0, proc.stderr
    assert "GenInferencer ignores do_sample, temperature" in proc.stderr
    assert [r["prompt"] for r in records(out, "pj")] == ["<H>Q: x1\n<B>"]
    proc, out = compile_(tmp_path, config, "--mode", "compat")
    assert proc.returncode == 0 and "ignores" not in proc.stderr


def test_path_only_custom_dataset_circular_mcq(tmp_path: Path) -> None:
    data = write(tmp_path, "data/cn_reason.jsonl",
                 '{"question": "q0", "A": "a0", "B": "b0", "C": "c0", "D": "d0", '
                 '"answer": "B"}\n')
    write(tmp_path, "configs/datasets/cb/cb_gen.py", f"""
        cb_datasets = [
            dict(path={str(data)!r}, data_type='circular-mcq', infer_method='gen'),
            dict(path={str(data)!r}, abbr='cb_qa', data_type='qa', infer_method='gen'),
        ]
        """)
    proc, out = compile_(tmp_path, eval_config(tmp_path, "cb.cb_gen"))
    assert proc.returncode == 0, proc.stderr
    assert [r["prompt"] for r in records(out, "cn_reason")] == [
        "<H>Question: q0\nA. a0\nB. b0\nC. c0\nD. d0\n<B>",
        "<H>Question: q0\nA. d0\nB. a0\nC. b0\nD. c0\n<B>",
        "<H>Question: q0\nA. c0\nB. d0\nC. a0\nD. b0\n<B>",
        "<H>Question: q0\nA. b0\nB. c0\nC. d0\nD. a0\n<B>",
    ]
    assert [r["prompt"] for r in records(out, "cb_qa")] == ["<H>q0\n<B>"]


def test_path_only_custom_dataset_mcq_ppl(tmp_path: Path) -> None:
    data = write(tmp_path, "data/mcq.jsonl",
                 '{"question": "q0", "A": "a0", "B": "b0", "answer": "A"}\n')
    write(tmp_path, "configs/datasets/cb/cb_ppl.py", f"""
        cb_datasets = [dict(path={str(data)!r}, infer_method='ppl')]
        """)
    proc, out = compile_(tmp_path, eval_config(tmp_path, "cb.cb_ppl"))
    assert proc.returncode == 0, proc.stderr
    assert [(r["label"], r["prompt"]) for r in records(out, "mcq")] == [
        ("A", "<H>Question: q0\nA. a0\nB. b0\n<B>Answer: A"),
        ("B", "<H>Question: q0\nA. a0\nB. b0\n<B>Answer: B"),
    ]


@pytest.mark.parametrize("entry", ["dict(type='JsonlDataset', reader_cfg={})", "dict(abbr=3)"])
def test_a_dataset_without_abbr_or_path_is_still_an_error(tmp_path: Path, entry: str) -> None:
    write(tmp_path, "configs/datasets/bad/bad.py", f"bad_datasets = [{entry}]\n")
    proc, _ = compile_(tmp_path, eval_config(tmp_path, "bad.bad"))
    assert proc.returncode == 1
    assert proc.stderr.startswith("compile-prompts: error: ")
    assert "abbr" in proc.stderr and "Traceback" not in proc.stderr


def scoring_dataset(name: str, inferencer: str, reader: str, template: str) -> str:
    return f"""
        from opencompass.openicl.icl_prompt_template import PromptTemplate
        from opencompass.openicl.icl_retriever import ZeroRetriever
        from opencompass.openicl.icl_inferencer import {inferencer.split(',')[0]}
        {name}_datasets = [dict(abbr='{name}', type='JsonlDataset', path='../data/rows.jsonl',
            reader_cfg={reader},
            infer_cfg=dict(
                prompt_template=dict(type=PromptTemplate, template={template}),
                retriever=dict(type=ZeroRetriever),
                inferencer=dict(type={inferencer})))]
        """


def test_scoring_inferencers_through_the_cli(tmp_path: Path) -> None:
    write(tmp_path, "data/rows.jsonl", '{"q": "x1", "a": "yes", "cont": " tail"}\n')
    write(tmp_path, "configs/datasets/s/ll.py", scoring_dataset(
        "ll_ds", "LLInferencer", "dict(input_columns=['q'], output_column='a')",
        "dict(yes='Q: {q} yes', no='Q: {q} no')"))
    write(tmp_path, "configs/datasets/s/pplonly.py", scoring_dataset(
        "pplonly_ds", "PPLOnlyInferencer", "dict(input_columns=['q'], output_column=None)",
        "dict(round=[dict(role='HUMAN', prompt='Q: {q}'), dict(role='BOT', prompt='ok')])"))
    write(tmp_path, "configs/datasets/s/sc.py", scoring_dataset(
        "sc_ds", "SCInferencer, sc_size=5, max_out_len=9",
        "dict(input_columns=['q'], output_column='a')",
        "dict(round=[dict(role='HUMAN', prompt='Q: {q}'), dict(role='BOT', prompt='{a}')])"))
    write(tmp_path, "configs/datasets/s/swce.py", scoring_dataset(
        "swce_ds", "SWCELossInferencer, block_size=64",
        "dict(input_columns=['q'], output_column=None)", "'Doc {q}.'"))
    write(tmp_path, "configs/datasets/s/all.py", """
        from mmengine.config import read_base
        with read_base():
            from .ll import *
            from .pplonly import *
            from .sc import *
            from .swce import *
        """)
    proc, out = compile_(tmp_path, eval_config(tmp_path, "s.all"))
    assert proc.returncode == 0, proc.stderr
    assert [(r["mode"], r["label"], r["continuation"], r["prompt"])
            for r in records(out, "ll_ds")] == [
        ("ll", "yes", " tail", "Q: x1 yes"), ("ll", "no", " tail", "Q: x1 no")]
    # scored whole: the BOT turn is rendered in full (ppl mode)
    assert [(r["mode"], r["prompt"]) for r in records(out, "pplonly_ds")] == [
        ("ppl", "<H>Q: x1\n<B>ok")]
    assert [(r["mode"], r["prompt"]) for r in records(out, "sc_ds")] == [("gen", "<H>Q: x1\n<B>")]
    assert [(r["mode"], r["prompt"]) for r in records(out, "swce_ds")] == [("loss", "Doc x1.")]


@pytest.mark.parametrize("inferencer", ["AgentInferencer", "AttackInferencer", "ToTInferencer"])
def test_model_in_the_loop_inferencers_are_a_clear_error(tmp_path: Path, inferencer: str) -> None:
    write(tmp_path, "data/rows.jsonl", '{"q": "x1", "a": "y"}\n')
    write(tmp_path, "configs/datasets/s/loop.py", scoring_dataset(
        "loop_ds", inferencer, "dict(input_columns=['q'], output_column='a')", "'Q: {q}'"))
    proc, _ = compile_(tmp_path, eval_config(tmp_path, "s.loop"), "--check")
    assert proc.returncode == 1
    line = proc.stderr.strip()
    assert line.startswith("compile-prompts: error: ") and "\n" not in line
    assert f"{inferencer} needs a model in the loop" in line
    assert "loop_ds" in line and "infer_cfg.inferencer.type" in line
