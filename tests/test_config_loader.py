"""The config stage: OpenCompass-style Python configs, YAML, JSON jobs, folders, bad inputs."""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import pytest

from prompt_compiler.config import (
    SuiteConfig,
    load_config,
    load_configs,
    opencompass_shim,
    renderer_for_model_class,
)
from prompt_compiler.config.python.shim import Placeholder, is_placeholder, placeholder_name
from prompt_compiler.errors import ConfigError, RegistryError

DATA = Path(__file__).parent / "data"
OC = DATA / "opencompass_configs"
CONFIGS = OC / "configs"
YAML = DATA / "yaml_configs"

GSM8K_SPEC = {
    "abbr": "gsm8k",
    "type": "GSM8KDataset",
    "path": "opencompass/gsm8k",
    "reader_cfg": {"input_columns": ["question"], "output_column": "answer"},
    "infer_cfg": {
        "prompt_template": {
            "type": "PromptTemplate",
            "template": {
                "round": [{"role": "HUMAN", "prompt": "{question}\nPlease reason step by step."}]
            },
        },
        "retriever": {"type": "ZeroRetriever"},
        "inferencer": {"type": "GenInferencer", "max_out_len": 512},
    },
}

MRPC_PROMPTS = {
    label: "Are the two sentences equivalent?\n</E>S1: {sentence1}\nS2: {sentence2}\n"
    f"Answer: {label}"
    for label in (0, 1)
}

API_META = {
    "round": [
        {"role": "HUMAN", "api_role": "HUMAN"},
        {"role": "BOT", "api_role": "BOT", "generate": True},
    ],
    "reserved_roles": [{"role": "SYSTEM", "api_role": "SYSTEM"}],
}


def _no_shim_left() -> None:
    assert not [name for name in sys.modules if name.split(".")[0] == "opencompass"]
    assert not [f for f in sys.meta_path if type(f).__name__ == "_ShimFinder"]


# --- OpenCompass-style Python configs ----------------------------------------------------


def test_dataset_config_compiles_unchanged() -> None:
    suite = load_config(CONFIGS / "datasets" / "gsm8k" / "gsm8k_gen.py")
    assert isinstance(suite, SuiteConfig)
    assert suite.models == ()
    (ds,) = suite.datasets
    assert (ds.abbr, ds.key_path) == ("gsm8k", "gsm8k_datasets[0]")
    assert ds.config_path.endswith("gsm8k_gen.py")
    # types are class-name strings; eval_cfg (evaluator, postprocessors) is dropped
    assert ds.spec == GSM8K_SPEC
    _no_shim_left()


def test_ppl_label_dict_keeps_int_keys() -> None:
    (ds,) = load_config(CONFIGS / "datasets" / "mrpc" / "mrpc_ppl.py").datasets
    prompt = ds.spec["infer_cfg"]["prompt_template"]
    assert prompt == {"type": "PromptTemplate", "template": MRPC_PROMPTS, "ice_token": "</E>"}
    assert list(prompt["template"]) == [0, 1]
    assert ds.spec["infer_cfg"]["retriever"] == {"type": "FixKRetriever", "fix_id_list": [0, 1]}
    assert ds.spec["type"] == "jsonl"


def test_suite_with_relative_read_base() -> None:
    suite = load_config(CONFIGS / "eval_demo.py")
    assert [(d.abbr, d.key_path) for d in suite.datasets] == [
        ("gsm8k", "datasets[0]"),
        ("mrpc-validation", "datasets[1]"),
    ]
    assert suite.datasets[0].spec == GSM8K_SPEC
    assert [(m.abbr, m.spec["parser"], m.spec["type"]) for m in suite.models] == [
        ("internlm2-chat-7b-hf", "lm", "HuggingFaceCausalLM"),
        ("gpt-4o", "api", "OpenAISDK"),
        ("qwen2-7b-instruct-hf", "hf_chat", "HuggingFacewithChatTemplate"),
    ]
    gpt = suite.models[1]
    assert gpt.spec == {
        "name": "gpt-4o",
        "source": f"{CONFIGS / 'eval_demo.py'}:models[1]",
        "parser": "api",
        "meta_template": API_META,
        "max_seq_len": 4096,
        "batch_size": 8,
        "type": "OpenAISDK",
        "max_out_len": 2048,
        "path": "gpt-4o",  # the served model's name (--format openai-batch's body.model)
    }
    qwen = suite.models[2].spec
    assert (qwen["meta_template"], qwen["max_seq_len"], qwen["batch_size"]) == (None, None, 8)
    _no_shim_left()


def test_suite_with_package_style_imports_and_locals_collection() -> None:
    suite = load_config(CONFIGS / "eval_collect.py")
    # `datasets = sum([v for k, v in locals().items() if k.endswith('_datasets')], [])`
    assert [d.abbr for d in suite.datasets] == ["mrpc-validation", "gsm8k"]
    # no `models` variable: *_models lists are collected
    assert [(m.abbr, m.key_path) for m in suite.models] == [("gpt-4o", "gpt_4o_models[0]")]


def test_package_style_import_without_root_is_a_clear_error(tmp_path: Path) -> None:
    cfg = tmp_path / "eval.py"
    cfg.write_text(
        "from mmengine.config import read_base\n"
        "with read_base():\n"
        "    from opencompass.configs.datasets.gsm8k.gsm8k_gen import gsm8k_datasets\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert str(info.value).startswith(str(cfg))
    assert "needs OpenCompass's configs folder" in str(info.value)
    assert "--opencompass-configs DIR" in str(info.value)
    _no_shim_left()
    # with an explicit root the same import resolves
    suite = load_config(cfg, opencompass_root=OC)
    assert [d.abbr for d in suite.datasets] == ["gsm8k"]


def test_classic_base_style_runs_imports_through_the_shim() -> None:
    suite = load_config(CONFIGS / "legacy" / "eval_legacy.py")
    assert [d.abbr for d in suite.datasets] == ["demo-inline"]
    assert suite.datasets[0].spec["rows"] == [{"q": "one", "a": "1"}, {"q": "two", "a": "2"}]
    (model,) = suite.models
    assert (model.abbr, model.spec["type"], model.spec["parser"]) == (
        "internlm2-7b-base", "HuggingFaceBaseModel", "lm",
    )
    _no_shim_left()


def test_loading_is_deterministic_and_returns_copies() -> None:
    first = load_config(CONFIGS / "eval_demo.py")
    second = load_config(CONFIGS / "eval_demo.py")
    assert first == second
    first.datasets[0].spec["infer_cfg"]["retriever"]["type"] = "changed"
    assert second.datasets[0].spec["infer_cfg"]["retriever"]["type"] == "ZeroRetriever"


# --- the shim ----------------------------------------------------------------------------


def test_shim_placeholders_remember_qualified_names() -> None:
    with opencompass_shim():
        from opencompass import datasets  # type: ignore[import-not-found]
        from opencompass.openicl.icl_retriever import (  # type: ignore[import-not-found]
            FixKRetriever,
        )

        qualified = "opencompass.openicl.icl_retriever.FixKRetriever"
        assert placeholder_name(FixKRetriever) == qualified
        assert placeholder_name(datasets.GSM8KDataset) == "opencompass.datasets.GSM8KDataset"
        assert datasets.GSM8KDataset is datasets.GSM8KDataset
        instance = FixKRetriever(fix_id_list=[0])
        assert is_placeholder(instance) and instance.kwargs == {"fix_id_list": [0]}
        assert issubclass(FixKRetriever, Placeholder)
        with pytest.raises(AttributeError):
            _ = FixKRetriever.__wrapped__
    _no_shim_left()


def test_shim_restores_a_previously_imported_opencompass(monkeypatch: pytest.MonkeyPatch) -> None:
    real = types.ModuleType("opencompass")
    monkeypatch.setitem(sys.modules, "opencompass", real)
    with opencompass_shim():
        import opencompass  # type: ignore[import-not-found]

        assert opencompass is not real
    assert sys.modules["opencompass"] is real


def test_shim_is_removed_after_an_error(tmp_path: Path) -> None:
    cfg = tmp_path / "boom.py"
    cfg.write_text("from opencompass.models import OpenAI\nraise RuntimeError('boom')\n")
    with pytest.raises(ConfigError):
        load_config(cfg)
    _no_shim_left()


@pytest.mark.parametrize(
    ("name", "renderer"),
    [
        ("HuggingFaceCausalLM", "lm"),
        ("HuggingFaceBaseModel", "lm"),
        ("HuggingFace", "lm"),
        ("TurboMindModel", "lm"),
        ("VLLM", "lm"),
        ("LightllmAPI", "lm"),
        ("OpenAI", "api"),
        ("OpenAISDK", "api"),
        ("Qwen", "api"),
        ("ZhiPuAI", "api"),
        ("Gemini", "api"),
        ("Claude", "api"),
        ("HuggingFacewithChatTemplate", "hf_chat"),
        ("TurboMindModelwithChatTemplate", "hf_chat"),
        ("VLLMwithChatTemplate", "hf_chat"),
        ("opencompass.models.OpenAISDK", "api"),
        ("MyHomeMadeModel", None),
    ],
)
def test_model_class_selects_renderer(name: str, renderer: str | None) -> None:
    assert renderer_for_model_class(name) == renderer


# --- YAML and JSON ----------------------------------------------------------------------


def test_yaml_suite_matches_the_python_configs() -> None:
    suite = load_config(YAML / "suite.yaml")
    py = load_config(CONFIGS / "eval_demo.py")
    assert [d.abbr for d in suite.datasets] == ["gsm8k", "mrpc-validation", "qa-csv"]
    assert suite.datasets[0].spec == GSM8K_SPEC  # eval_cfg dropped here too
    # dotted type names are reduced to the class name
    assert suite.datasets[1].spec["infer_cfg"] == py.datasets[1].spec["infer_cfg"]
    assert [(m.abbr, m.spec["parser"]) for m in suite.models] == [
        ("internlm2-chat-7b-hf", "lm"), ("gpt-4o", "api"), ("my-chat-server", "hf_chat"),
    ]
    assert suite.models[0].spec["meta_template"] == py.models[0].spec["meta_template"]
    assert suite.models[2].spec == {
        "name": "my-chat-server",
        "source": f"{YAML / 'suite.yaml'}:models[2]",
        "parser": "hf_chat",
        "meta_template": None,
        "max_seq_len": None,
        "batch_size": None,
        "max_out_len": 256,
    }


def test_yaml_collects_star_datasets() -> None:
    (ds,) = load_config(YAML / "gsm8k_only.yml").datasets
    assert (ds.abbr, ds.key_path) == ("gsm8k-inline", "gsm8k_datasets[0]")
    assert list(ds.spec["splits"]) == ["train", "test"]


def test_json_compile_job(tmp_path: Path) -> None:
    job = tmp_path / "job.json"
    job.write_text(textwrap.dedent("""\
        {"id": "demo", "source": {"variant": null},
         "dataset": {"reader_cfg": {"input_columns": ["q"], "output_column": "label"},
                     "infer_cfg": {"prompt_template": {"type": "PromptTemplate",
                                       "template": {"__items__": [[0, "no {q}"], [1, "yes {q}"]]}},
                                   "retriever": {"type": "ZeroRetriever"},
                                   "inferencer": {"type": "PPLInferencer"}},
                     "rows": [{"q": "a", "label": 0}]},
         "model": {"name": "m", "source": "hand-written", "parser": "lm",
                   "meta_template": null, "max_seq_len": 2048, "batch_size": 8},
         "options": {"normalizing_str": "A:"}}
    """))
    suite = load_config(job)
    assert (suite.job_id, suite.options) == ("demo", {"normalizing_str": "A:"})
    (ds,) = suite.datasets
    assert ds.abbr == "dataset" and "abbr" not in ds.spec  # absent stays absent
    assert ds.spec["infer_cfg"]["prompt_template"]["template"] == {0: "no {q}", 1: "yes {q}"}
    (model,) = suite.models
    assert model.spec == {
        "name": "m", "source": "hand-written", "parser": "lm", "meta_template": None,
        "max_seq_len": 2048, "batch_size": 8,
    }


def test_every_shared_case_loads(shared_dir: Path) -> None:
    cases = sorted((shared_dir / "conformance" / "opencompass" / "cases").glob("*.json"))
    assert cases
    for suite in load_configs(cases):
        assert len(suite.datasets) == len(suite.models) == 1
        assert suite.models[0].spec["parser"] in ("lm", "api", "hf_chat")


def test_meta_template_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    library = types.ModuleType("prompt_compiler.model.meta_library")
    calls: list[str] = []

    def load_model_template(name_or_path: str) -> object:
        calls.append(name_or_path)
        return types.SimpleNamespace(meta_template={"round": [{"role": "HUMAN"}]}, renderer="lm",
                                     default_system=None)

    library.load_model_template = load_model_template  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "prompt_compiler.model.meta_library", library)
    cfg = tmp_path / "m.yaml"
    cfg.write_text("models:\n  - {abbr: chat, meta_template: internlm2-chat}\n")
    (model,) = load_config(cfg).models
    assert calls == ["internlm2-chat"]
    assert (model.spec["parser"], model.spec["meta_template"]) == (
        "lm", {"round": [{"role": "HUMAN"}]},
    )


def test_meta_template_from_the_real_library(tmp_path: Path) -> None:
    library = pytest.importorskip("prompt_compiler.model.meta_library")
    template = library.list_model_templates()[0]
    cfg = tmp_path / "m.py"
    cfg.write_text(f"models = [dict(abbr='m', meta_template={template.name!r})]\n")
    (model,) = load_config(cfg).models
    assert model.spec["parser"] == template.renderer
    assert model.spec["meta_template"] == template.meta_template_dict()
    assert type(model.spec["meta_template"]) is dict  # plain data, not the read-only view


# --- folders ----------------------------------------------------------------------------


def test_folder_is_walked_in_sorted_order() -> None:
    suites = load_configs([CONFIGS])
    names = [s.path.relative_to(CONFIGS).as_posix() for s in suites]
    assert names == sorted(names)
    assert names[:2] == ["datasets/gsm8k/gsm8k_gen.py", "datasets/mrpc/mrpc_ppl.py"]
    assert "eval_demo.py" in names and "legacy/eval_legacy.py" in names


def test_folder_skips_files_that_define_nothing(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "helper.py").write_text("X = 1\n")
    (tmp_path / "rows.json").write_text('[{"q": 1}]')
    (tmp_path / ".hidden.yaml").write_text("models: 3\n")
    (tmp_path / "notes.txt").write_text("not a config")
    (tmp_path / "m.yaml").write_text("models:\n  - {abbr: m, renderer: api}\n")
    suites = load_configs([tmp_path])
    assert [s.path.name for s in suites] == ["m.yaml"]
    with pytest.raises(ConfigError, match="defines no datasets and no models"):
        load_configs([tmp_path / "helper.py"])


# --- bad inputs -------------------------------------------------------------------------

_DS = (
    "reader_cfg=dict(input_columns=['q'], output_column='a'), "
    "infer_cfg=dict(prompt_template=dict(type='PromptTemplate', template='{q}'), "
    "retriever=dict(type='ZeroRetriever'), inferencer=dict(type='GenInferencer'))"
)
BAD_CONFIGS = [
    ("py_syntax", "x.py", "datasets = [\n  dict(abbr='a',\n", ConfigError,
     ["invalid Python syntax at line"]),
    ("py_raises", "x.py", "a = 1\nb = 2\nc = a / 0\n", ConfigError,
     ["ZeroDivisionError", "line 3"]),
    ("py_bad_read_base", "x.py",
     "from mmengine.config import read_base\nwith read_base():\n    from .nope import x_datasets\n",
     ConfigError, ["nope.py"]),
    ("py_set_value", "x.py", f"datasets = [dict(abbr='a', labels={{1, 2}}, {_DS})]\n",
     ConfigError, ["datasets[0].labels", "'set'"]),
    ("py_unknown_model_class", "x.py",
     "from opencompass.models import HuggingFaceCasualLM\n"
     "models = [dict(abbr='m', type=HuggingFaceCasualLM)]\n",
     RegistryError, ["models[0].type", "did you mean 'HuggingFaceCausalLM'", "renderer="]),
    ("yaml_syntax", "x.yaml", "datasets:\n  - abbr: a\n   bad: [\n", ConfigError,
     ["invalid YAML", "line 3"]),
    ("yaml_python_tag", "x.yaml", "models:\n  - !!python/object:os.system {}\n", ConfigError,
     ["line 2", "Python objects"]),
    ("yaml_top_list", "x.yaml", "- 1\n- 2\n", ConfigError, ["mapping at the top level"]),
    ("json_syntax", "x.json", '{"models": [\n  {"abbr": "m",}\n]}', ConfigError,
     ["line 2, column", "invalid JSON"]),
    ("json_bad_items", "x.json", '{"models": [{"abbr": "m", "renderer": "lm", '
     '"meta_template": {"__items__": [[[1], 2]]}}]}', ConfigError, ["__items__"]),
    ("json_job_bad_options", "x.json",
     '{"dataset": {"reader_cfg": {}, "infer_cfg": {"prompt_template": {"type": "PromptTemplate"},'
     ' "retriever": {"type": "ZeroRetriever"}, "inferencer": {"type": "GenInferencer"}}},'
     ' "model": {"name": "m", "parser": "lm"}, "options": [1]}',
     ConfigError, ["at options"]),
    ("unknown_renderer", "x.yaml", "models:\n  - {abbr: m, renderer: hf-chat}\n", RegistryError,
     ["models[0].renderer", "did you mean 'hf_chat'", "available: lm, api, hf_chat"]),
    ("model_without_renderer", "x.yaml", "models:\n  - {abbr: m}\n", ConfigError,
     ["model 'm'", "at models[0]", "cannot tell which renderer"]),
    ("model_missing_abbr", "x.yaml", "models:\n  - {renderer: lm}\n", ConfigError,
     ["models[0].abbr"]),
    ("model_bad_max_seq_len", "x.yaml", "models:\n  - {abbr: m, renderer: lm, max_seq_len: '2k'}\n",
     ConfigError, ["models[0].max_seq_len", "integer"]),
    ("model_bad_meta_template", "x.yaml",
     "models:\n  - {abbr: m, renderer: lm, meta_template: [1]}\n", ConfigError,
     ["models[0].meta_template", "got list"]),
    ("models_not_a_list", "x.yaml", "models: {abbr: m}\n", ConfigError, ["at models", "got dict"]),
    ("datasets_not_a_list", "x.py", "datasets = dict(abbr='a')\n", ConfigError,
     ["at datasets", "got dict"]),
    ("dataset_not_a_dict", "x.py", "datasets = ['gsm8k']\n", ConfigError,
     ["at datasets[0]", "got str"]),
    ("dataset_missing_abbr", "x.py", f"datasets = [dict({_DS})]\n", ConfigError,
     ["datasets[0].abbr", "needs an 'abbr'"]),
    ("dataset_missing_reader_cfg", "x.py",
     "datasets = [dict(abbr='a', infer_cfg=dict())]\n", ConfigError,
     ["dataset 'a'", "datasets[0].reader_cfg"]),
    ("dataset_missing_infer_cfg", "x.py",
     "datasets = [dict(abbr='a', reader_cfg=dict())]\n", ConfigError,
     ["dataset 'a'", "datasets[0].infer_cfg"]),
    ("infer_cfg_not_a_dict", "x.py",
     "datasets = [dict(abbr='a', reader_cfg=dict(), infer_cfg=[1])]\n", ConfigError,
     ["datasets[0].infer_cfg", "got list"]),
    ("infer_cfg_missing_inferencer", "x.py",
     "x_datasets = [dict(abbr='a', reader_cfg=dict(), infer_cfg=dict(prompt_template=dict("
     "type='PromptTemplate', template='{q}'), retriever=dict(type='ZeroRetriever')))]\n",
     ConfigError, ["x_datasets[0].infer_cfg.inferencer"]),
    ("infer_cfg_without_templates", "x.py",
     "datasets = [dict(abbr='a', reader_cfg=dict(), infer_cfg=dict("
     "retriever=dict(type='ZeroRetriever'), inferencer=dict(type='GenInferencer')))]\n",
     ConfigError, ["datasets[0].infer_cfg", "needs a prompt_template or an ice_template"]),
    ("template_without_type", "x.py",
     "datasets = [dict(abbr='a', reader_cfg=dict(), infer_cfg=dict("
     "prompt_template=dict(template='{q}'), retriever=dict(type='ZeroRetriever'), "
     "inferencer=dict(type='GenInferencer')))]\n",
     ConfigError, ["datasets[0].infer_cfg.prompt_template", "no 'type'"]),
    ("defines_nothing", "x.yaml", "work_dir: out\n", ConfigError,
     ["defines no datasets and no models"]),
    ("unsupported_suffix", "x.toml", "a = 1\n", ConfigError, ["unsupported config type '.toml'"]),
]


@pytest.mark.parametrize(
    ("name", "filename", "content", "error", "fragments"),
    BAD_CONFIGS,
    ids=[case[0] for case in BAD_CONFIGS],
)
def test_bad_config(
    tmp_path: Path,
    name: str,
    filename: str,
    content: str,
    error: type[Exception],
    fragments: list[str],
) -> None:
    path = tmp_path / filename
    path.write_text(content, encoding="utf-8")
    with pytest.raises(error) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(str(path)), message  # every message names the file
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert isinstance(info.value, ConfigError)
    _no_shim_left()


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file") as info:
        load_config(tmp_path / "absent.py")
    assert str(tmp_path / "absent.py") in str(info.value)


def test_error_in_a_base_config_names_that_file(tmp_path: Path) -> None:
    (tmp_path / "base.py").write_text("x_datasets = []\nvalue = {}['missing']\n")
    top = tmp_path / "top.py"
    top.write_text(
        "from mmengine.config import read_base\nwith read_base():\n"
        "    from .base import x_datasets\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(top)
    message = str(info.value)
    assert message.startswith(str(top))
    assert "KeyError" in message and "base.py, line 2" in message
