"""Eval configs written as OpenCompass 0.5.x users write them, through the CLI.

Each test writes a small configs folder in OpenCompass's layout (our own dataset and model
configs, never OpenCompass's) and an eval config that imports from it with
``from opencompass.configs.<x> import y``, runs ``compile-prompts`` as a subprocess and
compares the records with prompts written by hand (what OpenCompass 0.5.4 hands its model
for such a config: see the comments at each test).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _cli import run_cli

QA_GEN = """\
from opencompass.datasets import QADataset
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever

qa_reader_cfg = dict(input_columns=['question'], output_column='answer')
qa_infer_cfg = dict(
    prompt_template=dict(type=PromptTemplate,
                         template=dict(round=[dict(role='HUMAN', prompt='Q: {question}')])),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=GenInferencer, max_out_len=64),
)
qa_datasets = [dict(abbr='qa', type=QADataset, path='opencompass/qa',
                    reader_cfg=qa_reader_cfg, infer_cfg=qa_infer_cfg)]
"""

API_META = """dict(round=[dict(role='HUMAN', api_role='HUMAN'),
                 dict(role='BOT', api_role='BOT', generate=True)])"""


def _suite(tmp_path: Path, eval_text: str, files: dict[str, str] | None = None) -> Path:
    """``tmp_path/oc/configs`` (OpenCompass's layout) and ``tmp_path/suite/eval_x.py``."""
    configs = tmp_path / "oc" / "configs"
    for rel, text in {"datasets/qa/qa_gen.py": QA_GEN, **(files or {})}.items():
        (configs / rel).parent.mkdir(parents=True, exist_ok=True)
        (configs / rel).write_text(text, encoding="utf-8")
    suite = tmp_path / "suite"
    (suite / "data").mkdir(parents=True)
    (suite / "data" / "qa.jsonl").write_text('{"question": "2+2?", "answer": "4"}\n',
                                             encoding="utf-8")
    (suite / "eval_x.py").write_text(eval_text, encoding="utf-8")
    return suite


def _compile(suite: Path, *extra: str, mode: str = "default") -> dict[str, list[Any]]:
    """Run the CLI on eval_x.py; ``{"<model>/<dataset>": [prompt, ...]}``."""
    out = suite / f"out-{mode}"
    proc = run_cli("eval_x.py", "--data-dir", "data", "-o", out, "--mode", mode,
                   "--opencompass-configs", suite.parent / "oc" / "configs", *extra, cwd=suite)
    assert proc.returncode == 0, proc.stderr
    found = {}
    for file in sorted(out.glob("*/*.jsonl")):
        records = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]
        found[f"{file.parent.name}/{file.stem}"] = [r["prompt"] for r in records]
    return found


def test_a_model_without_abbr_is_named_as_opencompass_names_it(tmp_path: Path) -> None:
    # OpenCompass 0.5.4 (utils/abbr.py model_abbr_from_cfg, on the config as run.py dumps and
    # reloads it): the type as imported, '_', the last two parts of realpath(path).
    suite = _suite(tmp_path, f"""\
from mmengine.config import read_base
from opencompass.models import OpenAISDK

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets

datasets = qa_datasets
models = [dict(type=OpenAISDK, path='Qwen/Qwen2.5-7B-Instruct', meta_template={API_META}),
          dict(type=OpenAISDK, path='gpt-4o', meta_template={API_META})]
""")
    for mode in ("default", "compat"):
        assert _compile(suite, mode=mode) == {
            # a one-part path lies in the folder the command runs in (here: suite/)
            "opencompass.models.OpenAISDK_suite_gpt-4o/qa": [
                [{"role": "user", "content": "Q: 2+2?"}]],
            "opencompass.models.OpenAISDK_Qwen_Qwen2.5-7B-Instruct/qa": [
                [{"role": "user", "content": "Q: 2+2?"}]],
        }


def test_an_empty_abbr_is_an_error_naming_it(tmp_path: Path) -> None:
    suite = _suite(tmp_path, """\
from mmengine.config import read_base
from opencompass.models import OpenAISDK

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets

MODEL_NAME = ''
datasets = qa_datasets
models = [dict(type=OpenAISDK, abbr=f'{MODEL_NAME}', path='gpt-4o')]
""")
    proc = run_cli("eval_x.py", "--data-dir", "data", "--check", "--opencompass-configs",
                   tmp_path / "oc" / "configs", cwd=suite)
    assert proc.returncode == 1
    assert proc.stderr == (
        "compile-prompts: error: eval_x.py: at models[0].abbr: 'abbr' must be a non-empty "
        "string, got an empty string (hint: name the model (compat mode loads it as "
        "OpenCompass does, named after its 'type' and 'path'))\n")


def test_an_api_meta_template_may_begin_with_a_message(tmp_path: Path) -> None:
    # OpenCompass 0.5.4's APITemplateParser puts a dict `begin` in front of the messages as
    # it is; OpenAISDK and VLLMwithChatTemplate map its role SYSTEM to 'system'.
    suite = _suite(tmp_path, """\
from mmengine.config import read_base
from opencompass.models import OpenAISDK, VLLMwithChatTemplate

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets

reasoning_meta_template = dict(
    begin=dict(role='SYSTEM', api_role='SYSTEM', prompt='Think step by step.'),
    round=[dict(role='HUMAN', api_role='HUMAN'),
           dict(role='BOT', api_role='BOT', generate=True)],
)
datasets = [*qa_datasets]
models = [
    dict(type=OpenAISDK, abbr='api', path='gpt-4o', meta_template=reasoning_meta_template),
    dict(type=VLLMwithChatTemplate, abbr='vllm', path='internlm/internlm3-8b-instruct',
         meta_template=reasoning_meta_template),
]
""")
    expected = [[{"role": "system", "content": "Think step by step."},
                 {"role": "user", "content": "Q: 2+2?"}]]
    for mode in ("default", "compat"):
        assert _compile(suite, mode=mode) == {"api/qa": expected, "vllm/qa": expected}


def test_a_begin_message_needs_role_and_prompt(tmp_path: Path) -> None:
    suite = _suite(tmp_path, """\
from mmengine.config import read_base
from opencompass.models import OpenAISDK

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets

datasets = qa_datasets
models = [dict(type=OpenAISDK, abbr='api', path='gpt-4o', meta_template=dict(
    begin=dict(role='SYSTEM', text='x'), round=[dict(role='HUMAN', api_role='HUMAN')]))]
""")
    proc = run_cli("eval_x.py", "--data-dir", "data", "--check", "--opencompass-configs",
                   tmp_path / "oc" / "configs", cwd=suite)
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        "compile-prompts: error: eval_x.py: model 'api', at models[0].meta_template.begin: a "
        "meta template's begin given as a dict is one message: it needs a str 'role' and a "
        "str 'prompt', got {'role': 'SYSTEM', 'text': 'x'}"), proc.stderr


def test_more_opencompass_054_model_classes(tmp_path: Path) -> None:
    # TurboMindAPIModel parses with LMTemplateParser; LiteLLMAPI, TeleChatStream, GeminiSDK
    # and OpenAISDKRollout are BaseAPIModel classes. Without a meta template both parsers
    # join the prompt's items with '\n': here the one HUMAN prompt, which LiteLLMAPI and
    # OpenAISDKRollout send as one user message and GeminiSDK as one user content.
    suite = _suite(tmp_path, f"""\
from mmengine.config import read_base
from opencompass.models import GeminiSDK, LiteLLMAPI, OpenAISDKRollout
from opencompass.models.telechat_api.telechat_api_streaming import TeleChatStream
from opencompass.models.turbomind_api import TurboMindAPIModel

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets

datasets = qa_datasets
models = [
    dict(type=TurboMindAPIModel, abbr='tm-api', api_addr='http://0.0.0.0:23333',
         meta_template=dict(round=[dict(role='HUMAN', begin='<|User|>:', end='\\n'),
                                   dict(role='BOT', begin='<|Bot|>:', generate=True)])),
    dict(type=LiteLLMAPI, abbr='litellm', path='gpt-4o'),
    dict(type=TeleChatStream, abbr='telechat', path='TeleChat'),
    dict(type=GeminiSDK, abbr='gemini', path='gemini-pro'),
    dict(type=OpenAISDKRollout, abbr='rollout', path='m', meta_template={API_META}),
]
""")
    assert _compile(suite) == {
        "gemini/qa": [{"contents": [{"role": "user", "parts": [{"text": "Q: 2+2?"}]}]}],
        "litellm/qa": [[{"role": "user", "content": "Q: 2+2?"}]],
        "rollout/qa": [[{"role": "user", "content": "Q: 2+2?"}]],
        "telechat/qa": ["Q: 2+2?"],
        "tm-api/qa": ["<|User|>:Q: 2+2?\n<|Bot|>:"],
    }


def test_an_agent_model_needs_a_model_in_the_loop(tmp_path: Path) -> None:
    suite = _suite(tmp_path, """\
from mmengine.config import read_base
from opencompass.models import OpenAI
from opencompass.models.lagent import CodeAgent

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets

datasets = qa_datasets
models = [dict(abbr='gpt-3.5-react', type=CodeAgent, llm=dict(type=OpenAI, path='gpt-3.5'))]
""")
    proc = run_cli("eval_x.py", "--data-dir", "data", "-o", "out", "--opencompass-configs",
                   tmp_path / "oc" / "configs", cwd=suite)
    assert proc.returncode == 1
    assert proc.stderr == (
        "compile-prompts: error: eval_x.py: model 'gpt-3.5-react', at models[0].type: "
        "CodeAgent is an agent: it needs a model in the loop (the agent framework builds each "
        "prompt from the model's previous replies and tool results), so there is no prompt to "
        "compile without running the model (hint: give the model inside the agent (its 'llm') "
        "as the model, or see docs/opencompass-corpus.md (model-in-the-loop inferencers))\n")


STAND_IN = Path(__file__).parent / "data" / "olympiadbench" / "OlympiadBench.py"


@pytest.mark.skipif(importlib.util.find_spec("opencompass") is not None,
                    reason="an importable opencompass is read first")
def test_olympiadbench_text_is_read_beside_the_configs_folder(tmp_path: Path) -> None:
    # --opencompass-configs .../opencompass/configs: the package folder around it holds
    # datasets/OlympiadBench.py (here the tests' stand-in with its own short texts).
    ob = """\
from opencompass.datasets import OlympiadBenchDataset
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.openicl.icl_retriever import ZeroRetriever

ob_datasets = [dict(
    type=OlympiadBenchDataset, abbr='ob', path='opencompass/OlympiadBench', name='x',
    reader_cfg=dict(input_columns=['problem', 'language', 'subject', 'question_type',
                                   'answer_type', 'is_multiple_answer', 'unit'],
                    output_column='solution'),
    infer_cfg=dict(prompt_template=dict(type='OlympiadBenchTemplate'),
                   retriever=dict(type=ZeroRetriever), inferencer=dict(type=GenInferencer)))]
"""
    suite = _suite(tmp_path, f"""\
from mmengine.config import read_base
from opencompass.models import OpenAISDK

with read_base():
    from opencompass.configs.datasets.OlympiadBench.ob_gen import ob_datasets

datasets = ob_datasets
models = [dict(type=OpenAISDK, abbr='api', path='gpt-4o', meta_template={API_META})]
""", {"datasets/OlympiadBench/ob_gen.py": ob})
    package = tmp_path / "oc"  # the folder holding configs/ stands for opencompass/
    (package / "datasets").mkdir()
    shutil.copy(STAND_IN, package / "datasets" / "OlympiadBench.py")
    (suite / "data" / "ob.jsonl").write_text(json.dumps(
        {"problem": "P #te0", "language": "English", "subject": "Math",
         "question_type": "Open-ended", "answer_type": "Numerical", "is_multiple_answer": False,
         "unit": "", "solution": "S"}) + "\n", encoding="utf-8")
    assert _compile(suite, "--only", "ob") == {"api/ob": [[{
        "role": "user",
        "content": "Solve this Math task. [one: a number] Box <one>.\nP #te0\n\nSteps."}]]}


# -- configs OpenCompass 0.5.4 itself cannot load: one line saying where and why ------------

def _error(suite: Path) -> str:
    proc = run_cli("eval_x.py", "--data-dir", "data", "-o", "out", "--opencompass-configs",
                   suite.parent / "oc" / "configs", cwd=suite)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout
    assert proc.stderr.count("\n") == 1, proc.stderr
    return proc.stderr


def test_a_config_the_configs_folder_lacks(tmp_path: Path) -> None:
    suite = _suite(tmp_path, """\
from mmengine.config import read_base

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets
    from opencompass.configs.datasets.qa.qa_judge_gen import qa_datasets as judged

datasets = qa_datasets + judged
""")
    configs = (tmp_path / "oc" / "configs").resolve()
    assert _error(suite) == (
        "compile-prompts: error: eval_x.py: `with read_base(): from "
        "opencompass.configs.datasets.qa.qa_judge_gen import ...` (line 5): the OpenCompass "
        f"configs folder {configs} has no datasets/qa/qa_judge_gen.py (OpenCompass 0.5.4 stops "
        "on this config too) (hint: the config may be written for another OpenCompass version "
        "than the configs folder's; give --opencompass-configs the configs/ of the OpenCompass "
        "it was written for)\n")


def test_a_name_the_base_config_does_not_define(tmp_path: Path) -> None:
    suite = _suite(tmp_path, """\
from mmengine.config import read_base

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import subjective_datasets as qa

datasets = [*qa]
""")
    assert _error(suite) == (
        "compile-prompts: error: eval_x.py: `with read_base(): from ... import "
        "subjective_datasets` (line 4): that config defines no 'subjective_datasets' "
        "(OpenCompass 0.5.4 stops on this config too)\n")


def test_calling_an_import_while_the_config_loads(tmp_path: Path) -> None:
    # mmengine's lazy-import mode makes names imported from opencompass lazy objects:
    # calling one raises.
    suite = _suite(tmp_path, """\
from mmengine.config import read_base
from opencompass.models import OpenAISDK
from opencompass.utils import build_model_from_cfg

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets

datasets = qa_datasets
models = [build_model_from_cfg(dict(type=OpenAISDK, abbr='api', path='gpt-4o'))]
""")
    assert _error(suite) == (
        "compile-prompts: error: eval_x.py: calls `build_model_from_cfg(...)` (line 9), a name "
        "imported outside `with read_base():`: OpenCompass loads configs in mmengine's "
        "lazy-import mode, where such names cannot be called while the config loads "
        "(OpenCompass 0.5.4 stops on this config too) (hint: copy or build the values without "
        "calling an import (e.g. `dict(d)`, `[dict(x) for x in xs]`, or the config dict's own "
        "`.deepcopy()`))\n")


def test_deepcopy_from_the_standard_library_works(tmp_path: Path) -> None:
    # OpenCompass's eval_mmlu_with_zero_retriever_overwritten.py: `from copy import deepcopy`
    # is a real import for mmengine where the standard library lies in the environment
    # (conda, a system Python), as OpenCompass is installed; here wherever Python lies.
    suite = _suite(tmp_path, f"""\
from copy import deepcopy

from mmengine.config import read_base
from opencompass.models import OpenAISDK
from opencompass.openicl.icl_retriever import ZeroRetriever

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets

datasets = []
for d in qa_datasets:
    d = deepcopy(d)
    d['infer_cfg']['retriever'] = dict(type=ZeroRetriever)
    d['infer_cfg']['prompt_template']['template']['round'][0]['prompt'] = 'Zero: {{question}}'
    datasets.append(d)
models = [dict(type=OpenAISDK, abbr='api', path='gpt-4o', meta_template={API_META})]
""")
    assert _compile(suite) == {"api/qa": [[{"role": "user", "content": "Zero: 2+2?"}]]}


def test_the_config_dicts_own_deepcopy_works(tmp_path: Path) -> None:
    # ... while the config dict's own deepcopy() (used by OpenCompass's eval_ruler.py) and
    # plain dict copies are fine.
    suite = _suite(tmp_path, f"""\
from mmengine.config import read_base
from opencompass.models import OpenAISDK

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets

datasets = []
for suffix in ('a', 'b'):
    d = qa_datasets[0].deepcopy()
    d['abbr'] = 'qa_' + suffix
    d['infer_cfg']['prompt_template']['template']['round'][0]['prompt'] = suffix + ': {{question}}'
    datasets.append(d)
models = [dict(type=OpenAISDK, abbr='api', path='gpt-4o', meta_template={API_META})]
models[0]['max_out_len'] = 16
""")
    (suite / "data" / "qa.jsonl").rename(suite / "data" / "qa_a.jsonl")
    (suite / "data" / "qa_b.jsonl").write_text('{"question": "3+3?", "answer": "6"}\n')
    assert _compile(suite) == {"api/qa_a": [[{"role": "user", "content": "a: 2+2?"}]],
                               "api/qa_b": [[{"role": "user", "content": "b: 3+3?"}]]}


# -- model_dataset_combinations -----------------------------------------------------------

def test_model_dataset_combinations_pick_the_pairs(tmp_path: Path) -> None:
    # OpenCompass 0.5.4's partitioners (partitioners/base.py) pair each entry's models with
    # that entry's datasets only; `models`/`datasets` just list them. As in its eval_ruler.py,
    # each model may get its own copy of a dataset under the same abbr.
    suite = _suite(tmp_path, f"""\
from mmengine.config import read_base
from opencompass.models import OpenAISDK

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets

short = qa_datasets[0].deepcopy()
short['infer_cfg']['prompt_template']['template']['round'][0]['prompt'] = 'Short: {{question}}'
base = dict(type=OpenAISDK, path='gpt-4o', meta_template={API_META})
models = [dict(base, abbr='m-long'), dict(base, abbr='m-short'), dict(base, abbr='m-none')]
model_dataset_combinations = [
    dict(models=[models[0]], datasets=qa_datasets),
    dict(models=[models[1]], datasets=[short]),
]
datasets = [*qa_datasets]
""")
    for mode in ("default", "compat"):
        assert _compile(suite, mode=mode) == {
            "m-long/qa": [[{"role": "user", "content": "Q: 2+2?"}]],
            "m-short/qa": [[{"role": "user", "content": "Short: 2+2?"}]],
        }


def test_two_datasets_of_one_abbr_for_one_model_are_an_error(tmp_path: Path) -> None:
    suite = _suite(tmp_path, f"""\
from mmengine.config import read_base
from opencompass.models import OpenAISDK

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets

other = qa_datasets[0].deepcopy()
other['reader_cfg']['test_range'] = '[0:1]'
datasets = [*qa_datasets, other]
models = [dict(type=OpenAISDK, abbr='api', path='gpt-4o', meta_template={API_META})]
""")
    assert _error(suite) == (
        "compile-prompts: error: eval_x.py: at datasets[1]: two different datasets are both "
        "named 'qa' for model 'api' (the other is in eval_x.py at datasets[0]): OpenCompass "
        "writes both to the one predictions file api/qa.json, so one of them is lost (hint: "
        "give one of them another abbr)\n")


def test_a_base_config_importing_a_missing_config_is_named(tmp_path: Path) -> None:
    # As OpenCompass 0.5.4's own datasets/collections/base_core.py, which imports a
    # TheoremQA config its wheel does not ship.
    collection = """\
from mmengine.config import read_base

with read_base():
    from ..qa.qa_gen import qa_datasets
    from ..TheoremQA.TheoremQA_post_v2_gen_2c2583 import TheoremQA_datasets

datasets = sum((v for k, v in locals().items() if k.endswith('_datasets')), [])
"""
    suite = _suite(tmp_path, """\
from mmengine.config import read_base

with read_base():
    from opencompass.configs.datasets.collections.base_core import datasets
""", {"datasets/collections/base_core.py": collection})
    configs = tmp_path / "oc" / "configs"
    folder = configs / "datasets" / "collections"
    assert _error(suite) == (
        "compile-prompts: error: eval_x.py: `with read_base(): from "
        f"..TheoremQA.TheoremQA_post_v2_gen_2c2583 import ...` ({folder / 'base_core.py'}, "
        f"line 5): there is no config file {folder}/../TheoremQA/TheoremQA_post_v2_gen_2c2583.py"
        " (OpenCompass 0.5.4 stops on this config too)\n")


# -- chatml_datasets ------------------------------------------------------------------------

CHATOBJ = """\
chatobj_custom_reader_cfg = dict(input_columns=['question'], output_column='answer')
chatobj_custom_infer_cfg = dict(
    prompt_template=dict(type='RawPromptTemplate',
                         messages=[{'role': 'user', 'content': '{question}\\nBox it.'}]),
    retriever=dict(type='ZeroRetriever'),
    inferencer=dict(type='GenInferencer'),
)
chatobj_custom_datasets = dict(type='ChatMLDataset')
"""


def test_chatml_datasets_are_built_as_opencompass_builds_them(tmp_path: Path) -> None:
    # OpenCompass 0.5.4's run.py: each chatml_datasets entry becomes a ChatMLDataset with the
    # configs folder's chatobj_custom settings, appended to `datasets`; ChatMLDataset rows
    # are the first user message (question) and the first answer (answer).
    demo = """\
datasets = [dict(abbr='demo', path='./data/demo.jsonl', evaluator=dict(type='math_evaluator'),
                 test_range='[0:2]')]
"""
    suite = _suite(tmp_path, f"""\
from mmengine.config import read_base
from opencompass.models import OpenAISDK

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets
    from opencompass.configs.chatml_datasets.demo.demo_gen import datasets as demo_chatml

models = [dict(type=OpenAISDK, abbr='api', path='gpt-4o', meta_template={API_META})]
datasets = [*qa_datasets]
chatml_datasets = sum((v for k, v in locals().items() if k.endswith('_chatml')), [])
""", {"datasets/chatobj_custom/chatobj_custom_gen.py": CHATOBJ,
      "chatml_datasets/demo/demo_gen.py": demo})
    rows = [
        {"question": [{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": "Sum {answer}: 2+2?"}], "answer": ["4"],
         "source": "x"},
        {"question": [{"role": "user", "content": "A metal?"},
                      {"role": "assistant", "content": "iron"},
                      {"role": "user", "content": "Another?"}], "answer": ["iron", "tin"]},
        {"question": [{"role": "user", "content": "Not compiled (test_range)"}],
         "answer": ["-"]},
    ]
    (suite / "data" / "demo.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = "Sum {answer}: 2+2?\nBox it."
    for mode in ("default", "compat"):
        if mode == "compat":  # OpenCompass fills `question`, then `answer` inside it (D1)
            first = "Sum 4: 2+2?\nBox it."
        assert _compile(suite, mode=mode) == {
            "api/qa": [[{"role": "user", "content": "Q: 2+2?"}]],
            "api/demo": [[{"role": "user", "content": first}],
                         [{"role": "user", "content": "A metal?\nBox it."}]],
        }


# -- shapes of OpenCompass's own configs the config guard reads as data ----------------------

SUMMARIZER = """\
from opencompass.summarizers import DefaultSummarizer

demo_summary_groups = [dict(name='demo', subsets=['qa'])]


class DemoSummarizer(DefaultSummarizer):
    open('{mark}', 'w')  # never runs: a class body is not run

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


summarizer = dict(type=DemoSummarizer, summary_groups=demo_summary_groups)
"""


def test_a_class_in_a_shipped_summarizer_is_an_inert_name(tmp_path: Path) -> None:
    # OpenCompass 0.5.4's summarizers/scireasoner.py defines a summarizer class; prompts
    # never depend on it.
    mark = tmp_path / "ran"
    suite = _suite(tmp_path, f"""\
from mmengine.config import read_base
from opencompass.models import OpenAISDK

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets
    from opencompass.configs.summarizers.demo import summarizer

datasets = qa_datasets
models = [dict(type=OpenAISDK, abbr='api', path='gpt-4o', meta_template={API_META})]
try:
    models[0]['max_out_len'] = int('not a number')
except:
    models[0]['max_out_len'] = 8
""", {"summarizers/demo.py": SUMMARIZER.format(mark=mark)})
    assert _compile(suite) == {"api/qa": [[{"role": "user", "content": "Q: 2+2?"}]]}
    assert not mark.exists()


def test_a_bare_except_does_not_catch_the_time_limit(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    suite = _suite(tmp_path, """\
from mmengine.config import read_base

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets

datasets = qa_datasets
try:
    while True:
        pass
except:
    pass
""")
    env = {**os.environ, "PROMPT_COMPILER_MAX_CONFIG_STEPS": "100000"}
    proc = subprocess.run([sys.executable, "-m", "prompt_compiler", "eval_x.py", "--check",
                           "--opencompass-configs", str(tmp_path / "oc" / "configs")],
                          cwd=suite, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "PROMPT_COMPILER_MAX_CONFIG_STEPS" in proc.stderr, proc.stderr


def test_a_project_imports_its_own_dataset_configs_from_a_sibling_folder(tmp_path: Path) -> None:
    # project/evals/eval_x.py: `from ..my_datasets.foo import foo_datasets`, run from the
    # project's root (as OpenCompass's run.py is run from its checkout).
    project = tmp_path / "project"
    (project / "evals").mkdir(parents=True)
    (project / "my_datasets").mkdir()
    (project / "data").mkdir()
    (project / "my_datasets" / "foo.py").write_text(QA_GEN.replace("qa", "foo"))
    (project / "data" / "foo.jsonl").write_text('{"question": "1+1?", "answer": "2"}\n')
    (project / "evals" / "eval_x.py").write_text(f"""\
from mmengine.config import read_base
from opencompass.models import OpenAISDK

with read_base():
    from ..my_datasets.foo import foo_datasets

datasets = foo_datasets
models = [dict(type=OpenAISDK, abbr='api', path='gpt-4o', meta_template={API_META})]
""")
    proc = run_cli("evals/eval_x.py", "--data-dir", "data", "-o", "out", cwd=project)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(x) for x in (project / "out" / "api" / "foo.jsonl").read_text(
        encoding="utf-8").splitlines()]
    assert [r["prompt"] for r in records] == [[{"role": "user", "content": "Q: 1+1?"}]]


def test_base_model_classes_that_parse_like_api_models(tmp_path: Path) -> None:
    # HuggingFaceChatGLM3, Llama2, Llama2Chat, Mixtral and LLaMA2AccessoryModel set an
    # APITemplateParser in OpenCompass 0.5.4: the prompt is the message list their generate()
    # turns into a chat history (each message begin + prompt + end, _role2api_role).
    suite = _suite(tmp_path, """\
from mmengine.config import read_base
from opencompass.models import HuggingFaceChatGLM3, Llama2

with read_base():
    from opencompass.configs.datasets.qa.qa_gen import qa_datasets

meta = dict(round=[dict(role='HUMAN', api_role='HUMAN', begin='<|user|>'),
                   dict(role='BOT', api_role='BOT', begin='<|assistant|>', generate=True)])
datasets = qa_datasets
models = [dict(type=HuggingFaceChatGLM3, abbr='glm3', path='THUDM/chatglm3-6b',
               meta_template=meta),
          dict(type=Llama2, abbr='llama2', path='llama-2-7b')]
""")
    for mode in ("default", "compat"):
        assert _compile(suite, mode=mode) == {
            "glm3/qa": [[{"role": "HUMAN", "prompt": "<|user|>Q: 2+2?"}]],
            "llama2/qa": ["Q: 2+2?"],
        }
