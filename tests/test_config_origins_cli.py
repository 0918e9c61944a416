"""An error or warning about a dataset or model names the config file that defines it (and
the key path there), then the eval config that imports it: recorded while the configs load
(``prompt_compiler.config.origins``), whichever loader reads them (``read_base()`` by ours,
``_base_`` by mmengine). Through the CLI in a subprocess; expected lines written by hand."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MODEL_FILE = """\
from opencompass.models import HuggingFaceCausalLM

hf_m1 = [
    dict(
        type=HuggingFaceCausalLM,
        abbr='m1',
        path='org/m1',
        max_seq_lne=2048,
        max_out_len=MAX_OUT,
        batch_size=1,
    )
]
"""

DEEP_DATASET = """\
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from opencompass.openicl.icl_inferencer import GenInferencer

beta_datasets = [dict(abbr='beta', rows=[dict(question='one', a='1')],
    reader_cfg=dict(input_columns=['q'], output_column='a'),
    infer_cfg=dict(prompt_template=dict(type=PromptTemplate, template='Q: {q}'),
                   retriever=dict(type=ZeroRetriever), inferencer=dict(type=GenInferencer)))]
"""

COLLECTION = """\
from mmengine.config import read_base

with read_base():
    from .sub.beta import beta_datasets

collection_datasets = [*beta_datasets]
"""

EVAL_READ_BASE = """\
from mmengine.config import read_base

with read_base():
    from .datasets.collection import collection_datasets
    from .models.m1 import hf_m1

datasets = [*collection_datasets]
models = [*hf_m1]
"""

EVAL_BASE_LIST = """\
_base_ = ['models/m1_base.py', 'datasets/sub/beta_base.py']

datasets = [*_base_.beta_datasets]
models = [*_base_.hf_m1]
"""


def cli(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    configs = tmp_path / "suite" / "configs"
    (configs / "models").mkdir(parents=True)
    (configs / "datasets" / "sub").mkdir(parents=True)
    (configs / "models" / "m1.py").write_text(MODEL_FILE.replace("MAX_OUT", "16"))
    (configs / "datasets" / "sub" / "beta.py").write_text(DEEP_DATASET)
    (configs / "datasets" / "collection.py").write_text(COLLECTION)
    (configs / "eval_x.py").write_text(EVAL_READ_BASE)
    (configs / "eval_y.py").write_text(EVAL_BASE_LIST)
    (configs / "eval_w.py").write_text(  # an import inside a function: mmengine loads it
        EVAL_READ_BASE + "def sep():\n    import os\n    return os.sep\nSEP = sep()\n")
    for name in ("models/m1", "datasets/sub/beta"):  # classic style: classes by name
        text = (configs / f"{name}.py").read_text()
        (configs / f"{name}_base.py").write_text("\n".join(
            _quoted_types(line) for line in text.splitlines() if not line.startswith("from ")))
    return tmp_path / "suite"


def _quoted_types(line: str) -> str:
    for name in ("HuggingFaceCausalLM", "PromptTemplate", "ZeroRetriever", "GenInferencer"):
        line = line.replace(f"={name}", f"='{name}'")
    return line


WARNING = ("compile-prompts: warning: configs/models/{m1} (imported by configs/{eval}): "
           "model 'm1', at hf_m1[0].max_seq_lne: OpenCompass's HuggingFaceCausalLM takes no "
           "key 'max_seq_lne' (did you mean 'max_seq_len'?): OpenCompass 0.5.4 fails building "
           "such a model (compat mode stops), the default mode ignores the key\n")
DATASET_ERROR = ("compile-prompts: error: configs/datasets/sub/{beta} (imported by "
                 "configs/{eval}): dataset 'beta', model 'm1', row 0, at "
                 "beta_datasets[0].reader_cfg.input_columns: input column 'q' is not in the "
                 "rows; columns: question, a\n")


# read_base() (our loader, two levels deep for the dataset; mmengine's lazy-import mode for
# eval_w.py) and _base_ (mmengine's classic mode)
EVALS = [("eval_x.py", ""), ("eval_w.py", ""), ("eval_y.py", "_base")]


@pytest.mark.parametrize(("eval_name", "suffix"), EVALS)
def test_model_key_typo_and_deep_dataset_error_name_their_own_files(
        tree: Path, eval_name: str, suffix: str) -> None:
    proc = cli(f"configs/{eval_name}", "--check", cwd=tree)
    assert proc.returncode == 1
    assert proc.stderr == (WARNING + DATASET_ERROR).format(
        eval=eval_name, m1=f"m1{suffix}.py", beta=f"beta{suffix}.py")


@pytest.mark.parametrize(("eval_name", "suffix"), EVALS)
def test_an_invalid_model_value_is_named_in_the_models_file(tree: Path, eval_name: str,
                                                           suffix: str) -> None:
    file = tree / "configs" / "models" / f"m1{suffix}.py"
    file.write_text(file.read_text().replace("max_out_len=16", "max_out_len='16'"))
    proc = cli(f"configs/{eval_name}", "--check", cwd=tree)
    assert proc.returncode == 1
    assert proc.stderr == (
        f"compile-prompts: error: configs/models/m1{suffix}.py (imported by "
        f"configs/{eval_name}): "
        "model 'm1', at hf_m1[0].max_out_len: 'max_out_len' must be an integer or None, "
        "got str\n")


def test_named_relative_to_the_working_folder(tree: Path) -> None:
    proc = cli("eval_x.py", "--check", cwd=tree / "configs")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        "compile-prompts: error: datasets/sub/beta.py (imported by eval_x.py): dataset "
        "'beta', model 'm1', row 0, at beta_datasets[0].reader_cfg.input_columns: input "
        "column 'q' is not in the rows; columns: question, a")
    (tree.parent / "elsewhere").mkdir()
    elsewhere = cli(tree / "configs" / "eval_x.py", "--check", cwd=tree.parent / "elsewhere")
    assert elsewhere.returncode == 1
    assert elsewhere.stderr.splitlines()[-1].startswith(
        f"compile-prompts: error: {os.path.realpath(tree)}/configs/datasets/sub/beta.py "
        f"(imported by {tree}/configs/eval_x.py): dataset 'beta', model 'm1', row 0, at "
        "beta_datasets[0].reader_cfg")


def test_an_entry_the_eval_config_defines_is_named_there(tree: Path) -> None:
    (tree / "configs" / "eval_z.py").write_text(
        DEEP_DATASET + "models = [dict(abbr='m2', meta_template='chatml')]\n")
    proc = cli("configs/eval_z.py", "--check", cwd=tree)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        "compile-prompts: error: configs/eval_z.py: dataset 'beta', model 'm2', row 0, at "
        "beta_datasets[0].reader_cfg.input_columns: input column 'q' is not in the rows; "
        "columns: question, a")


def test_a_yaml_models_file_names_itself(tree: Path) -> None:
    (tree / "m.yaml").write_text("models:\n  - {abbr: my, meta_template: chatml, "
                                 "max_out_len: x}\n")
    proc = cli("configs/datasets/sub/beta.py", "m.yaml", "--check", cwd=tree)
    assert proc.returncode == 1
    assert proc.stderr == ("compile-prompts: error: m.yaml: model 'my', at models[0]."
                           "max_out_len: 'max_out_len' must be an integer or None, got str\n")


def test_check_prints_each_dataset_warning_once(tree: Path) -> None:
    beta = tree / "configs" / "datasets" / "sub" / "beta.py"
    beta.write_text(DEEP_DATASET.replace("input_columns=['q']", "input_columns=['question']")
                    .replace("'Q: {q}'", "'Q: {question} {nope}'"))
    (tree / "configs" / "models" / "m1.py").write_text(
        MODEL_FILE.replace("MAX_OUT", "16").replace("max_seq_lne", "max_seq_len"))
    (tree / "e.yaml").write_text(
        "datasets:\n  - abbr: e\n    reader_cfg: {input_columns: [q], output_column: a}\n"
        "    infer_cfg:\n      prompt_template: {type: PromptTemplate, template: 'Q: {q}'}\n"
        "      retriever: {type: ZeroRetriever}\n      inferencer: {type: GenInferencer}\n"
        "    splits: {train: [], test: []}\n"
        "models:\n  - {abbr: me, meta_template: chatml}\n")
    for jobs in ("1", "2"):
        proc = cli("configs/eval_x.py", "e.yaml", "--check", "--jobs", jobs, cwd=tree)
        assert proc.returncode == 0, proc.stderr
        assert sorted(proc.stderr.splitlines()) == [
            "compile-prompts: warning: configs/datasets/sub/beta.py (imported by "
            "configs/eval_x.py): dataset 'beta', at beta_datasets[0].infer_cfg.prompt_template."
            "template: placeholder {nope} names no column, so it stays in the prompt verbatim",
            "compile-prompts: warning: e.yaml: dataset 'e', at datasets[0].reader_cfg."
            "test_split: the test split has no rows, so nothing is compiled for this dataset",
        ]


def test_lint_names_the_defining_file(tree: Path) -> None:
    error = cli("lint", "configs/eval_x.py", cwd=tree)
    assert error.returncode == 1
    assert error.stderr == (
        "compile-prompts: error: configs/datasets/sub/beta.py (imported by configs/eval_x.py): "
        "dataset 'beta', row 0, at beta_datasets[0].reader_cfg.input_columns: input column 'q' "
        "is not in the rows; columns: question, a\n")
    beta = tree / "configs" / "datasets" / "sub" / "beta.py"
    beta.write_text(DEEP_DATASET.replace("rows=[dict(question='one', a='1')]",
                                         "rows=[dict(q='one', a='1')]")
                    .replace("'Q: {q}'", "'Q: {q} {qq}'"))
    found = cli("lint", "configs/eval_x.py", cwd=tree)
    assert found.returncode == 0, found.stderr
    assert found.stdout == (
        "configs/datasets/sub/beta.py (imported by configs/eval_x.py): dataset 'beta', at "
        "beta_datasets[0].infer_cfg.prompt_template.template: unknown-placeholder: placeholder "
        "{qq} names no column, so it stays in the prompt verbatim; did you mean {q}?\n"
        "1 finding\n")
