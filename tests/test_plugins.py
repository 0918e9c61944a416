"""Retrievers from installed packages, found through entry points as ``pkg/name``."""

from importlib import metadata

import pytest

import prompt_compiler as pc
from prompt_compiler.retrieve.basic import FixKRetriever


def _build_first_two(params, where):
    return FixKRetriever(fix_id_list=(0, 1))


class _Dist:
    name = "fake-plugin"


def _fake_entry_points(group=None):
    ep = metadata.EntryPoint("first_two", f"{__name__}:_build_first_two", "prompt_compiler.retrievers")
    object.__setattr__(ep, "dist", _Dist())
    return [ep] if group == "prompt_compiler.retrievers" else []


DATASET = {
    "abbr": "d", "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
    "infer_cfg": {
        "ice_template": {"type": "PromptTemplate", "template": "{q}={a}"},
        "prompt_template": {"type": "PromptTemplate", "template": "</E>{q}=", "ice_token": "</E>"},
        "retriever": {"type": "fake-plugin/first_two"},
        "inferencer": {"type": "GenInferencer"},
    },
    "splits": {"train": [{"q": "1", "a": "x"}, {"q": "2", "a": "y"}, {"q": "3", "a": "z"}],
               "test": [{"q": "4", "a": "w"}]},
}


def test_plugin_retriever_is_loaded_by_qualified_name(monkeypatch):
    monkeypatch.setattr(metadata, "entry_points", _fake_entry_points)
    result = pc.Compiler().compile(DATASET, {"abbr": "m", "parser": "lm"})
    assert result.records[0].prompt == "1=x\n2=y\n4="


def test_unknown_plugin_is_a_registry_error(monkeypatch):
    monkeypatch.setattr(metadata, "entry_points", _fake_entry_points)
    bad = {**DATASET, "infer_cfg": {**DATASET["infer_cfg"], "retriever": {"type": "other/first_two"}}}
    with pytest.raises(pc.RegistryError, match="unknown retriever 'other/first_two'"):
        pc.Compiler().compile(bad, {"abbr": "m", "parser": "lm"})


def test_registering_a_taken_name_raises():
    with pytest.raises(pc.RegistryError, match="already registered"):
        pc.Compiler().register_retriever("FixKRetriever", _build_first_two)
