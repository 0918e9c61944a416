"""Bad inputs -> one PromptCompilerError subclass that says where the problem is.

Every case compiles a small dataset dict through ``Compiler.compile`` and checks the
error class, its location in ``str(err)`` (dataset abbr, key path, row for row-level
errors), the important wording, and OpenCompass's own exception where one is reproduced.
"""

from __future__ import annotations

import copy

import pytest

from prompt_compiler import (
    Compiler,
    ConfigError,
    DataError,
    LabelError,
    MissingFieldError,
    MissingTokenError,
    PromptCompilerError,
    RegistryError,
    RenderError,
    RetrievalError,
    SectionError,
    TemplateError,
    UnknownRoleError,
    UnsupportedError,
)

LM = {"abbr": "m", "parser": "lm", "meta_template": {
    "round": [{"role": "HUMAN", "begin": "<H>", "end": "\n"},
              {"role": "BOT", "begin": "<B>", "generate": True}]}}
API = {"abbr": "gpt", "parser": "api", "meta_template": {
    "round": [{"role": "HUMAN", "api_role": "HUMAN"},
              {"role": "BOT", "api_role": "BOT", "generate": True}]}}


def dataset():
    return {
        "abbr": "tiny",
        "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
        "infer_cfg": {
            "ice_template": {"type": "PromptTemplate", "template": "Q: {q} A: {a}"},
            "prompt_template": {"type": "PromptTemplate", "template": "</E>Q: {q}",
                                "ice_token": "</E>"},
            "retriever": {"type": "FixKRetriever", "fix_id_list": [0]},
            "inferencer": {"type": "GenInferencer"},
        },
        "splits": {"train": [{"q": "t0", "a": "p"}, {"q": "t1", "a": "zz"}],
                   "test": [{"q": "x", "a": "y"}, {"q": "x2", "a": "y2"}]},
    }


def zero_shot(template):
    ds = dataset()
    del ds["infer_cfg"]["ice_template"]
    ds["infer_cfg"]["prompt_template"] = {"type": "PromptTemplate", "template": template}
    ds["infer_cfg"]["retriever"] = {"type": "ZeroRetriever"}
    return ds


def fails(ds, model=LM, mode="default", expected=PromptCompilerError) -> PromptCompilerError:
    with pytest.raises(PromptCompilerError) as info:
        Compiler(mode=mode).compile(ds, model)
    err = info.value
    assert type(err) is expected, f"{type(err).__name__}: {err}"
    return err


def located(err, *, key_path=None, row=None, dataset="tiny"):
    text = str(err)
    assert f"dataset {dataset!r}" in text
    if key_path is not None:
        assert err.key_path == key_path
        assert f"at {key_path}" in text
    if row is not None:
        assert err.row == row
        assert f"row {row}" in text
    return text


# -- templates ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["opencompass", "default"])
def test_unknown_role_in_round(mode):
    ds = zero_shot({"round": [{"role": "USER", "prompt": "{q}"}]})
    err = fails(ds, mode=mode, expected=UnknownRoleError)
    text = located(err, row=0)
    assert isinstance(err, KeyError)
    assert "model 'm'" in text
    assert "role 'USER'" in text and "is not in the meta template's round" in text
    assert "HUMAN, BOT" in text  # names the roles that exist
    if mode == "opencompass":
        assert err.reference == ("KeyError", "'USER'")
    else:
        assert err.reference[0] == "KeyError"
        assert err.reference[1].endswith("neither has an appropriate role nor a fallback role.\"")


def test_unknown_role_names_a_key_path():
    ds = zero_shot({"round": [{"role": "USER", "prompt": "{q}"}]})
    err = fails(ds, expected=UnknownRoleError)
    assert err.key_path is not None
    assert err.key_path.startswith(("infer_cfg.prompt_template", "model.meta_template"))


def test_missing_ice_token():
    ds = dataset()
    ds["infer_cfg"]["prompt_template"]["template"] = "Q: {q}"
    err = fails(ds, expected=MissingTokenError)
    text = located(err, key_path="infer_cfg.prompt_template.template")
    assert "ice_token '</E>' does not occur in the template" in text
    assert err.reference == ("LookupError", "'</E>' not in 'Q: {q}'")
    assert isinstance(err, LookupError)


def test_missing_ice_token_in_label_dict_value():
    ds = dataset()
    ds["infer_cfg"]["prompt_template"]["template"] = {"A": "</E>a {q}", "B": "b {q}"}
    err = fails(ds, expected=MissingTokenError)
    located(err, key_path="infer_cfg.prompt_template.template['B']")
    assert err.reference == ("LookupError", "'</E>' not in 'b {q}'")


def test_prompt_template_needs_ice_token_with_an_ice_template():
    ds = dataset()
    ds["infer_cfg"]["prompt_template"] = {"type": "PromptTemplate", "template": "Q: {q}"}
    err = fails(ds, expected=MissingTokenError)
    text = located(err, key_path="infer_cfg.prompt_template.ice_token")
    assert "prompt_template needs an ice_token when an ice_template is given" in text
    assert err.reference == ("NotImplementedError", "ice_token of prompt_template is not provided")


def test_ice_template_alone_needs_ice_token():
    ds = dataset()
    del ds["infer_cfg"]["prompt_template"]
    err = fails(ds, expected=MissingTokenError)
    located(err, key_path="infer_cfg.ice_template.ice_token")
    assert err.reference == ("NotImplementedError", "ice_token of ice_template is not provided")


def test_label_missing_from_label_dict():
    ds = dataset()
    ds["infer_cfg"]["ice_template"]["template"] = {"p": "Q: {q} A: {a}", "n": "no"}
    ds["infer_cfg"]["retriever"]["fix_id_list"] = [0, 1]  # train row 1 has label 'zz'
    err = fails(ds, expected=LabelError)
    text = located(err, key_path="infer_cfg.ice_template.template", row=0)
    assert "label 'zz' is not a key of the label template; keys: 'p', 'n'" in text
    assert err.reference == ("KeyError", "'zz'")


def test_unknown_template_type():
    ds = dataset()
    ds["infer_cfg"]["prompt_template"]["type"] = "PromptTemplat"
    err = fails(ds, expected=RegistryError)
    text = located(err, key_path="infer_cfg.prompt_template.type")
    assert ("unknown template type 'PromptTemplat'; "
            "available: PromptTemplate, RawPromptTemplate") in text
    assert "did you mean 'PromptTemplate'" in text


def test_template_must_be_str_or_dict():
    ds = dataset()
    ds["infer_cfg"]["prompt_template"]["template"] = ["</E>"]
    err = fails(ds, expected=TemplateError)
    text = located(err, key_path="infer_cfg.prompt_template.template")
    assert "a template must be a str or a dict, got list" in text
    assert err.reference[0] == "AssertionError"


# -- config shape ---------------------------------------------------------------------------------


def test_infer_cfg_missing():
    ds = dataset()
    del ds["infer_cfg"]
    err = fails(ds, expected=ConfigError)
    assert "infer_cfg is required" in located(err, key_path="infer_cfg")


def test_no_template_at_all():
    ds = dataset()
    del ds["infer_cfg"]["prompt_template"], ds["infer_cfg"]["ice_template"]
    err = fails(ds, expected=ConfigError)
    text = located(err, key_path="infer_cfg")
    assert "infer_cfg needs a prompt_template or an ice_template" in text


def test_reader_cfg_missing():
    ds = dataset()
    del ds["reader_cfg"]
    err = fails(ds, expected=ConfigError)
    assert "reader_cfg is required" in located(err, key_path="reader_cfg")


def test_unknown_retriever_lists_available_and_suggests():
    ds = dataset()
    ds["infer_cfg"]["retriever"]["type"] = "FixKRetreiver"
    err = fails(ds, expected=RegistryError)
    text = located(err, key_path="infer_cfg.retriever.type")
    assert isinstance(err, LookupError)
    assert "unknown retriever 'FixKRetreiver'; available: ZeroRetriever, FixKRetriever, " in text
    assert "did you mean 'FixKRetriever'" in text


def test_unknown_inferencer_lists_available_and_suggests():
    ds = dataset()
    ds["infer_cfg"]["inferencer"]["type"] = "opencompass.openicl.GenInferencr"
    err = fails(ds, expected=RegistryError)
    text = located(err, key_path="infer_cfg.inferencer.type")
    assert "unknown inferencer 'GenInferencr'; available: GenInferencer, PPLInferencer, " \
           "CLPInferencer, ChatInferencer" in text
    assert "did you mean 'GenInferencer'" in text


def test_unknown_inferencer_parameter_is_ignored_with_a_warning():
    # OpenCompass's inferencers take **kwargs and ignore unknown ones (temperature, ...).
    from prompt_compiler.compiler import IgnoredSettingWarning

    ds = dataset()
    ds["infer_cfg"]["inferencer"]["foo"] = 1
    plain = Compiler().compile(dataset(), LM).records
    with pytest.warns(IgnoredSettingWarning, match="dataset 'tiny': GenInferencer ignores foo"):
        assert Compiler().compile(ds, LM).records == plain
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Compiler(mode="opencompass").compile(ds, LM).records == Compiler(
            mode="opencompass").compile(dataset(), LM).records


def test_unknown_retriever_parameter():
    ds = dataset()
    ds["infer_cfg"]["retriever"]["k"] = 2
    err = fails(ds, expected=ConfigError)
    assert "FixKRetriever does not take 'k'" in located(err, key_path="infer_cfg.retriever")


def test_unknown_renderer():
    err = fails(dataset(), model={"abbr": "m", "parser": "vllm"}, expected=RegistryError)
    text = located(err, key_path="model.parser")
    assert "model 'm'" in text
    assert "unknown renderer 'vllm' (did you mean 'lm'?); available: lm, api, hf_chat" in text


def test_unknown_compat_mode():
    with pytest.raises(ConfigError) as info:
        Compiler(mode="oc")
    assert "unknown compat mode 'oc'; expected 'default' or 'opencompass'" in str(info.value)


# -- data -----------------------------------------------------------------------------------------


def test_input_column_absent_from_rows():
    ds = dataset()
    ds["reader_cfg"]["input_columns"] = ["q", "missing"]
    err = fails(ds, expected=MissingFieldError)
    text = located(err, key_path="reader_cfg.input_columns", row=0)
    assert isinstance(err, KeyError)
    assert "input column 'missing' is not in the rows; columns: q, a" in text


def test_missing_split():
    ds = dataset()
    ds["reader_cfg"]["train_split"] = "dev"
    err = fails(ds, expected=DataError)
    text = located(err, key_path="reader_cfg.train_split")
    assert "the train split 'dev' is missing; available splits: 'train', 'test'" in text


def test_no_rows():
    ds = dataset()
    del ds["splits"]
    err = fails(ds, expected=ConfigError)
    assert "the dataset has no rows" in located(err, key_path="dataset")


# -- retrieval ------------------------------------------------------------------------------------


def test_fix_id_out_of_range():
    ds = dataset()
    ds["infer_cfg"]["retriever"]["fix_id_list"] = [0, 5]
    err = fails(ds, expected=RetrievalError)
    text = located(err, key_path="infer_cfg.retriever.fix_id_list[1]")
    assert "fix_id_list[1] = 5 is out of range: the training split has 2 rows" in text
    assert err.reference == ("AssertionError", "Index 5 is out of range of 2")  # as OpenCompass


def test_examples_without_ice_template():
    ds = dataset()
    del ds["infer_cfg"]["ice_template"]
    err = fails(ds, expected=RetrievalError)
    text = located(err, key_path="infer_cfg")
    assert "the retriever chose in-context examples but infer_cfg has no ice_template" in text
    assert err.reference[0] == "AssertionError"
    assert "use `ZeroRetriever`" in err.reference[1]


def test_mdl_retriever_unsupported():
    ds = dataset()
    ds["infer_cfg"]["retriever"] = {"type": "MDLRetriever", "ice_num": 1}
    err = fails(ds, expected=UnsupportedError)
    assert "with the evaluated model itself" in located(err, key_path="infer_cfg.retriever")


def test_embedding_retriever_without_the_extra(monkeypatch):
    import sys

    from prompt_compiler.retrieve import embed as embed_retrieve

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    embed_retrieve.load_embedder.cache_clear()
    ds = dataset()
    ds["infer_cfg"]["retriever"] = {"type": "TopkRetriever", "ice_num": 1}
    err = fails(ds, expected=UnsupportedError)
    assert "need the 'sentence-transformers' package" in located(
        err, key_path="infer_cfg.retriever")
    assert err.hint == "pip install 'compile-prompts[embed]'"
    embed_retrieve.load_embedder.cache_clear()


# -- rendering / inferencers ----------------------------------------------------------------------


def test_end_section_compat_ppl():
    ds = zero_shot({"round": [{"role": "HUMAN", "prompt": "{q}"}], "end": "E"})
    ds["infer_cfg"]["inferencer"] = {"type": "PPLInferencer"}
    err = fails(ds, mode="opencompass", expected=SectionError)
    text = located(err, row=0)
    assert "closes a section that was never opened" in text
    assert err.reference == ("IndexError", "pop from empty list")
    # the default mode (D3) renders it
    assert Compiler().compile(ds, LM).records


def test_generating_role_in_begin_api_compat():
    ds = zero_shot({"begin": [{"role": "BOT", "prompt": "ex"}],
                    "round": [{"role": "HUMAN", "prompt": "{q}"}]})
    err = fails(ds, model=API, mode="opencompass", expected=RenderError)
    located(err, row=0)
    assert err.reference == ("TypeError", "'NoneType' object is not subscriptable")
    assert Compiler().compile(ds, API).records  # D14


def test_clp_with_api_model():
    ds = dataset()
    ds["infer_cfg"]["inferencer"] = {"type": "CLPInferencer"}
    err = fails(ds, model=API, expected=UnsupportedError)
    text = located(err)
    assert "model 'gpt'" in text
    assert "API models" in text


def test_chat_infer_mode_invalid():
    ds = zero_shot({"round": [{"role": "HUMAN", "prompt": "{q}"}]})
    ds["infer_cfg"]["inferencer"] = {"type": "ChatInferencer", "infer_mode": "sometimes"}
    err = fails(ds, expected=ConfigError)
    assert "infer_mode must be one of last, every, every_with_gt, got 'sometimes'" in located(
        err, key_path="infer_cfg.inferencer.infer_mode")


def chat_rows(rows, template, mode):
    ds = zero_shot(template)
    ds["infer_cfg"]["inferencer"] = {"type": "ChatInferencer"}
    ds["reader_cfg"]["input_columns"] = [k for k in rows[0] if k != "a"]
    del ds["splits"]
    ds["rows"] = copy.deepcopy(rows)
    return ds


ROW_LEVEL = [
    pytest.param(
        [{"q": "x", "a": "y"}, {"q": "x", "a": "y"}, {"q": 5, "a": "y"}],
        {"round": [{"role": "HUMAN", "prompt": "{q}"}]}, "default", DataError,
        id="chat-row-not-buildable"),
    pytest.param(
        [{"s": "x", "q": "x", "a": "y"}, {"s": "x", "q": "x", "a": "y"},
         {"s": "", "q": "x", "a": "y"}],
        {"begin": "{s}", "round": [{"role": "HUMAN", "prompt": "{q}"}]}, "opencompass", RenderError,
        id="chat-empty-string-item-D16"),
]


@pytest.mark.parametrize(("rows", "template", "mode", "expected"), ROW_LEVEL)
def test_row_level_error_message_wording(rows, template, mode, expected):
    err = fails(chat_rows(rows, template, mode), mode=mode, expected=expected)
    text = located(err)
    assert "row " in text
    if expected is DataError:
        assert "cannot build a chat from this row" in text
        assert err.reference == ("ValueError", "Cannot construct chat from the dataset.")
    else:
        assert "an empty string item" in text
        assert err.reference == ("TypeError", "string indices must be integers, not 'str'")


@pytest.mark.parametrize(("rows", "template", "mode", "expected"), ROW_LEVEL)
def test_row_level_error_names_the_failing_row(rows, template, mode, expected):
    err = fails(chat_rows(rows, template, mode), mode=mode, expected=expected)
    located(err, row=2)


@pytest.mark.parametrize("parser", ["lm", "api"])
def test_non_str_role_prompt_is_a_located_error_in_default(parser):
    ds = zero_shot({"round": [{"role": "HUMAN", "prompt": 5}]})
    model = LM if parser == "lm" else API
    err = fails(ds, model=model, expected=RenderError)
    text = located(err, key_path="infer_cfg.prompt_template")
    assert "a role prompt must be a str, got 5" in text


def test_non_str_role_prompt_is_a_located_error_in_compat():
    ds = zero_shot({"round": [{"role": "HUMAN", "prompt": 5}]})
    err = fails(ds, mode="opencompass", expected=RenderError)
    text = located(err, key_path="infer_cfg.prompt_template", row=0)
    assert "a role prompt must be a str, got 5" in text
