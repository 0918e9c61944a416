"""Models that hand compiled prompts to a chat template, an API format or a prompter, and
dataset templates written in Jinja2 (expected strings derived by hand)."""

import pytest

import prompt_compiler as pc

DATASET = {
    "abbr": "d",
    "reader_cfg": {"input_columns": ["q", "opts"], "output_column": "a"},
    "infer_cfg": {
        "prompt_template": {"type": "PromptTemplate", "engine": "jinja2", "template": {"round": [
            {"role": "HUMAN", "prompt": "Q: {{ q }}\n{% for o in opts %}- {{ o }}\n{% endfor %}"},
            {"role": "BOT", "prompt": "{{ a }}"}]}},
        "retriever": {"type": "ZeroRetriever"},
        "inferencer": {"type": "GenInferencer"},
    },
    "rows": [{"q": "2+2?", "opts": ["3", "4"], "a": "4"}],
}
LM_META = {"round": [{"role": "HUMAN", "begin": "<u>", "end": "</u>\n"},
                     {"role": "BOT", "begin": "<b>", "end": "</b>\n", "generate": True}]}
API_META = {"round": [{"role": "HUMAN", "api_role": "HUMAN"},
                      {"role": "BOT", "api_role": "BOT", "generate": True}]}


def compile_one(model, dataset=DATASET, mode="default"):
    return pc.Compiler(mode=mode).compile(dataset, model).records[0]


@pytest.mark.parametrize("mode", ["default", "opencompass"])
def test_jinja_dataset_template_loops_over_a_list_column_and_masks_the_answer(mode):
    rec = compile_one({"abbr": "m", "parser": "lm", "meta_template": LM_META}, mode=mode)
    assert rec.prompt == "<u>Q: 2+2?\n- 3\n- 4\n</u>\n<b>"


def test_jinja_syntax_error_names_the_key_path():
    bad = {**DATASET, "infer_cfg": {**DATASET["infer_cfg"], "prompt_template": {
        "type": "PromptTemplate", "engine": "jinja2", "template": "{% for x in %}"}}}
    with pytest.raises(pc.TemplateSyntaxError) as info:
        compile_one({"abbr": "m", "parser": "lm"}, dataset=bad)
    assert "infer_cfg.prompt_template" in str(info.value) and "dataset 'd'" in str(info.value)


def test_chat_template_renders_the_chat_messages():
    template = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
                "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    rec = compile_one({"abbr": "m", "parser": "hf_chat", "chat_template": template})
    # OpenCompass's default chat meta gives user messages a trailing '\n' (SYSTEM slot merge).
    assert rec.chat_messages == [{"role": "user", "content": "Q: 2+2?\n- 3\n- 4\n\n"}]
    assert rec.model_input == "<|user|>Q: 2+2?\n- 3\n- 4\n\n\n<|assistant|>"


def test_chat_template_needs_an_hf_chat_model():
    with pytest.raises(pc.ConfigError, match="chat_template needs parser 'hf_chat'"):
        compile_one({"abbr": "m", "parser": "lm", "chat_template": "{{ messages }}"})


def test_api_format_shapes_the_request():
    rec = compile_one({"abbr": "m", "parser": "api", "meta_template": API_META,
                       "api_format": "GeminiChatWrapper"})
    assert rec.rendered == [{"role": "HUMAN", "prompt": "Q: 2+2?\n- 3\n- 4\n"}]
    assert rec.model_input == [
        {"role": "user", "parts": ["## Dialogue History\nuser: Q: 2+2?\n- 3\n- 4\n"]}]
    assert rec.prompt == rec.model_input


def test_unknown_api_format_is_a_registry_error():
    with pytest.raises(pc.RegistryError) as info:
        compile_one({"abbr": "m", "parser": "api", "meta_template": API_META,
                     "api_format": "telepathy"})
    assert "model 'm'" in str(info.value) and "api_format" in str(info.value)


def test_prompter_builds_the_final_input_with_model_tokens():
    rec = compile_one({"abbr": "m", "parser": "hf_chat", "prompter": {
        "type": "ChatPrompter", "instruction": "You are a calculator.", "model": "internlm2-chat"}})
    text = rec.model_input
    assert text.startswith("<|im_start|>system\n") and "You are a calculator." in text
    assert "<|im_start|>user\n\nQ: 2+2?\n- 3\n- 4\n" in text
    assert text.endswith("<|im_start|>assistant\n\n")


def test_unknown_prompter_type():
    with pytest.raises(pc.RegistryError, match="unknown prompter 'Nope'"):
        compile_one({"abbr": "m", "parser": "hf_chat", "prompter": {"type": "Nope"}})


def test_parser_is_read_as_renderer_and_the_old_names_warn():
    by_parser = pc.Compiler().compile(DATASET, {"abbr": "m", "parser": "api",
                                                "meta_template": API_META})
    by_renderer = pc.Compiler().compile(DATASET, {"abbr": "m", "renderer": "api",
                                                  "meta_template": API_META})
    assert by_parser.records == by_renderer.records
    assert by_renderer.records[0].prompt == [{"role": "user", "content": "Q: 2+2?\n- 3\n- 4\n"}]
    model = pc.Compiler().model({"abbr": "m", "parser": "hf_chat"})
    assert model.renderer == "hf_chat"
    with pytest.warns(DeprecationWarning, match="use Model.renderer"):
        assert model.parser == "hf_chat"
    from prompt_compiler.model import spec

    with pytest.warns(DeprecationWarning, match="use RENDERERS"):
        assert spec.PARSERS == spec.RENDERERS == ("lm", "api", "hf_chat")


@pytest.mark.parametrize(("key", "other"), [("renderer", {}), ("parser", {}),
                                            ("renderer", {"parser": "lm"})])
def test_an_unknown_renderer_names_the_key_written(key, other):
    cfg = {"abbr": "m", key: "vllm", **other}
    with pytest.raises(pc.PromptCompilerError) as info:
        compile_one(cfg)
    where = "model.renderer" if other else f"model.{key}"
    assert where in str(info.value), str(info.value)
