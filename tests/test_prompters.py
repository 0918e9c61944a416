"""LazyLLM-style prompters: hand-checked strings, the LazyLLM doc's examples, errors, runner."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_conformance

from prompt_compiler.errors import (
    ConfigError,
    DataError,
    MissingFieldError,
    RenderError,
    TemplateError,
    UnsupportedError,
)
from prompt_compiler.prompters import (
    ALPACA_PREAMBLE,
    DEFAULT_SYSTEM,
    AlpacaPrompter,
    ChatPrompter,
    ModelTokens,
)

SYS = DEFAULT_SYSTEM
CHATML = {  # internlm2-like tokens, written out by hand
    "sos": "<|im_start|>system\n", "eos": "<|im_end|>\n",
    "soh": "<|im_start|>user\n", "eoh": "<|im_end|>\n",
    "soa": "<|im_start|>assistant\n", "eoa": "<|im_end|>",
    "soe": "<|im_start|>environment\n", "eoe": "<|im_end|>\n",
    "tool_start_token": "<|function|>", "tool_args_token": "<|args|>",
    "tool_end_token": "<|action_end|>", "system": "SYS.",
}
WEATHER = {"type": "function", "function": {"name": "weather", "description": "城市",
                                            "parameters": {"type": "object"}}}


# -- ChatPrompter, text form ------------------------------------------------------------------

def test_chat_plain_instruction_glues_system_and_has_six_newlines():
    p = ChatPrompter("You are a helpful translator.")
    assert p.generate_prompt("hello") == (
        f"{SYS}You are a helpful translator.\n\n\n\n\n\nhello\n\n")


def test_chat_without_instruction():
    assert ChatPrompter().generate_prompt("hi") == f"{SYS}\n\n\n\nhi\n\n"


def test_chat_single_slot_takes_str_input_and_format_unescapes_braces():
    p = ChatPrompter("Q {{ x }}: {q}")
    assert p.generate_prompt("why") == f"{SYS}Q {{ x }}: why\n\n\n\n\n\n\n\n"
    # "{{x}}" contains the slot pattern "{x}", so it counts as a slot (as in LazyLLM).
    assert ChatPrompter("{{x}} {x}").generate_prompt("1").startswith(f"{SYS}{{x}} 1\n")


def test_chat_dict_input_fills_slots_and_one_free_key():
    p = ChatPrompter("Role: {role}.")
    out = p.generate_prompt({"role": "teacher", "question": "What?"})
    assert out == f"{SYS}Role: teacher.\n\n\n\n\n\nWhat?\n\n"


def test_chat_extra_keys_block_and_older_spelling():
    p = ChatPrompter("Use it.", extro_keys="ctx")
    out = p.generate_prompt({"ctx": "C", "q": "Q"})
    block = "Here are some extra messages you can referred to:\n\n### ctx:\nC\n\n"
    assert out == f"{SYS}Use it.\n{block}\n\n\n\n\nQ\n\n"
    assert ChatPrompter("Use it.", ["ctx"]).generate_prompt({"ctx": "C", "q": "Q"}) == out


def test_chat_tools_are_json5_after_the_instruction():
    out = ChatPrompter("Go.").generate_prompt("x", tools=[WEATHER])
    tools = ('[{type: "function", "function": {name: "weather", description: "\\u57ce\\u5e02", '
             'parameters: {type: "object"}}}]')
    assert out == f"{SYS}Go.\n\n### Function-call Tools. \n\n{tools}\n\n\n\n\n\nx\n\n"


def test_chat_history_with_model_tokens_and_label():
    p = ChatPrompter("Calc.").set_model_tokens(**CHATML)
    out = p.generate_prompt("3?", history=[["1?", "1"]], label="3")
    assert out == (
        "<|im_start|>system\nSYS.Calc.\n\n<|im_end|>\n\n\n"
        "<|im_start|>user\n1?<|im_end|>\n<|im_start|>assistant\n1<|im_end|>\n"
        "<|im_start|>user\n\n3?\n<|im_end|>\n<|im_start|>assistant\n\n3")


def test_chat_tool_history_text():
    p = ChatPrompter().set_model_tokens(**CHATML)
    history = [
        {"role": "user", "content": "W?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "weather", "arguments": {"city": "北京"}}}]},
        {"role": "tool", "content": '{"t": 20}'},
    ]
    out = p.generate_prompt("ok", history=history)
    assert ("<|im_start|>assistant\n<|function|>\nweather<|args|>{city: \"北京\"}<|action_end|>\n"
            "<|im_end|><|im_start|>environment\n{'t': 20}<|im_end|>\n") in out


def test_tool_call_without_args_token_is_the_raw_function_dict():
    p = ChatPrompter()
    history = [{"role": "assistant", "content": "",
                "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}]
    assert "\n{'name': 'f', 'arguments': {'a': 1}}\n" in p.generate_prompt("x", history=history)


def test_init_history_is_prepended():
    p = ChatPrompter(history=[["q0", "a0"]])
    assert p.generate_prompt("q2", history=[["q1", "a1"]]) == f"{SYS}\n\nq0a0q1a1\n\nq2\n\n"


def test_dict_instruction_user_part_prefixes_input():
    p = ChatPrompter({"system": "S.", "user": "U {input} "})
    assert p.generate_prompt({"input": "i", "q": "Q"}) == f"{SYS}S.\n\n\n\nU i Q\n\n"


def test_tool_tokens_in_instruction_are_replaced_by_set_model_tokens():
    p = ChatPrompter("Call with {tool_start_token}name{tool_args_token}.")
    p._set_model_configs(tool_start_token="<S>", tool_args_token="<A>")  # LazyLLM's name
    assert p.instruction.system.startswith("Call with <S>name<A>.")


# -- ChatPrompter, dict form ------------------------------------------------------------------

def test_chat_return_dict():
    p = ChatPrompter("Calc.")
    out = p.generate_prompt("3?", history=[["1?", "1"]], tools=[WEATHER], label="x",
                            return_dict=True)
    assert out == {"messages": [
        {"role": "system", "content": f"{SYS}\nCalc.\n\n"},
        {"role": "user", "content": "1?"}, {"role": "assistant", "content": "1"},
        {"role": "user", "content": "3?"}], "tools": [WEATHER]}


def test_return_dict_with_model_system_and_no_instruction():
    p = ChatPrompter().set_model_tokens(system="Qwen.")
    assert p.generate_prompt("hi", return_dict=True) == {"messages": [
        {"role": "system", "content": "Qwen."}, {"role": "user", "content": "hi"}]}


# -- AlpacaPrompter -----------------------------------------------------------------------------

def test_alpaca_single_slot():
    out = AlpacaPrompter("Sum: {x}").generate_prompt("1+1")
    assert out == f"{SYS}\n{ALPACA_PREAMBLE}Sum: 1+1\n\n\n\n### Response:\n"


def test_alpaca_dict_instruction_return_dict():
    p = AlpacaPrompter({"system": "Haiku.", "user": "Topic: {input}\n"})
    assert p.generate_prompt({"input": "autumn"}, return_dict=True) == {"messages": [
        {"role": "system", "content": f"{SYS}\n{ALPACA_PREAMBLE}Haiku."},
        {"role": "user", "content": "Topic: autumn\n"}]}


def test_alpaca_uses_only_the_system_token():
    p = AlpacaPrompter("Q: {q}").set_model_tokens(**CHATML)
    assert p.generate_prompt("x") == f"SYS.\n{ALPACA_PREAMBLE}Q: x\n\n\n\n### Response:\n"


def test_get_response():
    alpaca = AlpacaPrompter("Q: {q}")
    assert alpaca.get_response("prompt### Response:\nAnswer") == "\nAnswer"
    assert alpaca.get_response("PROMPT rest", input="PROMPT") == " rest"
    chat = ChatPrompter().set_model_tokens(soa="<A>")
    assert chat.get_response("x<A>one<A>two") == "two"
    assert ChatPrompter().get_response("unchanged") == "unchanged"


# -- errors (reference = what lazyllm 0.4.1 raises) ------------------------------------------

def test_error_two_slots_str_input():
    with pytest.raises(TemplateError, match=r"2 slots \(\{a\}, \{b\}\)") as info:
        ChatPrompter("{a} {b}").generate_prompt("x")
    assert info.value.reference == ("AssertionError", "")


def test_error_missing_slot_key():
    with pytest.raises(MissingFieldError, match=r"lacks the key\(s\) \['b'\]") as info:
        ChatPrompter("{a} {b}").generate_prompt({"a": "1"})
    assert info.value.reference == ("KeyError", "'b'")


def test_error_unexpected_keys():
    with pytest.raises(DataError, match="unexpected input keys") as info:
        ChatPrompter("{a}").generate_prompt({"a": "1", "x": "2", "y": "3"})
    assert info.value.reference == ("AssertionError", "Unexpected keys found in input: ['x', 'y']")


def test_error_input_types():
    with pytest.raises(RenderError, match="must be a str, an int or a dict, got list"):
        ChatPrompter().generate_prompt(["x"])
    with pytest.raises(RenderError, match="must be a str or a chat message") as info:
        ChatPrompter().generate_prompt(5, return_dict=True)
    assert info.value.reference == ("TypeError", "input must be a string or a dict")
    assert isinstance(info.value, TypeError)


def test_error_alpaca_rejects_history_and_free_input():
    with pytest.raises(UnsupportedError, match="history"):
        AlpacaPrompter("Q: {q}").generate_prompt("x", history=[["a", "b"]], return_dict=True)
    with pytest.raises(TemplateError, match="no slot for the free input") as info:
        AlpacaPrompter("Say hi.").generate_prompt("unused")
    reference = ("AssertionError", "All keys should in instruction or extro-keys")
    assert info.value.reference == reference
    with pytest.raises(DataError, match="'other' is neither a slot nor an extra key"):
        AlpacaPrompter("Q: {q}").generate_prompt({"q": "1", "other": "2"})


def test_error_tools_at_init_and_call():
    with pytest.raises(UnsupportedError, match="tools were given at construction"):
        ChatPrompter(tools=[WEATHER]).generate_prompt("x", tools=[WEATHER])


def test_error_config():
    with pytest.raises(ConfigError, match="unknown model token 'bos'"):
        ChatPrompter().set_model_tokens(bos="<s>")
    with pytest.raises(ConfigError, match="not both"):
        ChatPrompter("x", extra_keys=["a"], extro_keys=["a"])
    with pytest.raises(ConfigError, match="only have the keys 'system' and 'user'"):
        ChatPrompter({"system": "s", "assistant": "a"})
    with pytest.raises(ConfigError, match="must be a str or a list"):
        ChatPrompter("x", extra_keys=5)  # type: ignore[arg-type]


def test_error_history_items():
    with pytest.raises(DataError, match="at most 2 items"):
        ChatPrompter().generate_prompt("x", history=[["a", "b", "c"]])
    with pytest.raises(DataError, match="role 'developer' is not one of"):
        ChatPrompter().generate_prompt("x", history=[{"role": "developer", "content": "d"}])


# -- documented divergences (docs/divergences-lazyllm.md) ---------------------------------------

def test_l1_extra_keys_kept_with_dict_instruction():
    p = ChatPrompter({"system": "S.", "user": "U: "}, extra_keys=["k"])
    msgs = p.generate_prompt({"k": "K", "q": "Q"}, return_dict=True)["messages"]
    assert msgs[1]["content"] == (
        "U: Here are some extra messages you can referred to:\n\n### k:\nK\n\nQ")


def test_l2_literal_braces_with_str_input():
    p = ChatPrompter('Reply like {"a": 1}. Q: {q}')
    assert p.generate_prompt("why").startswith(f'{SYS}Reply like {{"a": 1}}. Q: why\n\n')


def test_l3_mixed_history_and_short_pair_and_null_content():
    p = ChatPrompter().set_model_tokens(soh="<H>", soa="<A>")
    history = [["u1", "a1"], {"role": "user", "content": "u2"}, ["u3"],
               {"role": "assistant", "content": None}]
    expected = f"{SYS}\n\n<H>u1<A>a1<H>u2<H>u3<A>\n<H>\nq\n<A>\n"
    assert p.generate_prompt("q", history=history) == expected


def test_l4_history_system_turn_uses_system_tokens():
    p = ChatPrompter().set_model_tokens(sos="<S>", eos="</S>")
    out = p.generate_prompt("q", history=[{"role": "system", "content": "HS"}])
    assert out == f"<S>{SYS}</S>\n\n<S>HS</S>\n\nq\n\n"


def test_l6_message_dict_input():
    p = ChatPrompter("Hi.")
    out = p.generate_prompt({"role": "user", "content": "hello"}, return_dict=True)
    assert out["messages"][1] == {"role": "user", "content": "hello"}
    tool = ChatPrompter().set_model_tokens(soe="<E>", eoe="</E>")
    assert tool.generate_prompt({"role": "tool", "content": "r"}).endswith("<E>\nr\n</E>\n")


def test_l7_l8_single_pass_with_non_str_values():
    p = ChatPrompter("{a} and {b}")
    out = p.generate_prompt({"a": "{b}", "b": 2}, return_dict=True)
    assert out["messages"][0]["content"] == f"{SYS}\n{{b}} and 2\n\n"


def test_calls_do_not_leak_state_or_mutate_input():
    p = ChatPrompter("{a}", history=[["q", "a"]])
    value = {"a": "1", "q": "Q"}
    history = [{"role": "user", "content": "u"}]
    first = p.generate_prompt(value, history=history, return_dict=True)
    first["messages"].append("junk")
    assert p.generate_prompt(value, history=history, return_dict=True) != first
    assert value == {"a": "1", "q": "Q"} and history == [{"role": "user", "content": "u"}]


def test_model_tokens_value_object():
    tokens = ModelTokens().updated(soa="<A>", stop_words=["x"], eos=None)
    assert (tokens.soa, tokens.stop_words, tokens.eos) == ("<A>", ("x",), "")
    with pytest.raises(AttributeError):
        tokens.soa = "y"  # type: ignore[misc]


# -- LazyLLM's own documentation (seed 003) ---------------------------------------------------
#
# The doc predates 0.4.1 in three places, all visible in the recorded 0.4.1 outputs: Alpaca's
# preamble had " ### Instruction:" (leading space), Alpaca's template lacked the "\n" before
# "### Response:" (0.4.1 has "{tools}\n{user}### Response:"), and tools were written with
# json.dumps where 0.4.1 writes JSON5. ``_as_041`` applies exactly those three edits to the
# doc's text; everything else must match byte for byte.

DOC_TOKENS = {"sos": "<|start_system|>", "eos": "<|end_system|>",
              "soh": "<|Human|>:", "soa": "<|Assistant|>:"}  # the doc's (pre-0.4) defaults
TOOL_AGENT = ("你是一个工具调用的Agent，我会给你提供一些工具，"
              "请根据用户输入，帮我选择最合适的工具并使用")
DOC_TOOLS = [dict(type="function", function=dict(name="example"))]


def _as_041(doc: str) -> str:
    doc = doc.replace(" ### Instruction:", "### Instruction:")
    doc = doc.replace('[{"type": "function", "function": {"name": "example"}}]',
                      '[{type: "function", "function": {name: "example"}}]')
    return re.sub(r"### Response:\n$", "\n### Response:\n", doc)


def test_doc_alpaca_slot_and_extra_key():
    doc1 = ("You are an AI-Agent developed by LazyLLM.\nBelow is an instruction that describes a "
            "task, paired with extra messages such as input that provides further context if "
            "possible. Write a response that appropriately completes the request.\n\n ### "
            "Instruction:\n请完成加法运算, 输入为a+b\n\n\n### Response:\n")
    p = AlpacaPrompter("请完成加法运算, 输入为{instruction}")
    assert p.generate_prompt("a+b") == _as_041(doc1)
    doc2 = ("You are an AI-Agent developed by LazyLLM.\nBelow is an instruction that describes a "
            "task, paired with extra messages such as input that provides further context if "
            "possible. Write a response that appropriately completes the request.\n\n ### "
            "Instruction:\n请完成加法运算\n\nHere are some extra messages you can referred to:"
            "\n\n### input:\na+b\n\n\n### Response:\n")
    p = AlpacaPrompter("请完成加法运算", extro_keys="input")
    assert p.generate_prompt("a+b") == _as_041(doc2)


def test_doc_chat_slot_and_no_slot():
    p = ChatPrompter("请完成加法运算，输入为{input}").set_model_tokens(**DOC_TOKENS)
    assert p.generate_prompt("a+b") == (
        "<|start_system|>You are an AI-Agent developed by LazyLLM.请完成加法运算，输入为a+b\n\n"
        "<|end_system|>\n\n\n<|Human|>:\n\n<|Assistant|>:\n")
    p = ChatPrompter("请完成加法运算").set_model_tokens(**DOC_TOKENS)
    # The doc's own text stops at "<|Assistant|>" (it lost its closing ":\n'").
    assert p.generate_prompt("a+b").startswith(
        "<|start_system|>You are an AI-Agent developed by LazyLLM.请完成加法运算\n\n<|end_system|>"
        "\n\n\n<|Human|>:\na+b\n<|Assistant|>")


@pytest.mark.parametrize("at_init", [True, False])
def test_doc_tools(at_init):
    kwargs = {"tools": DOC_TOOLS} if at_init else {}
    call = {} if at_init else {"tools": DOC_TOOLS}
    alpaca = AlpacaPrompter(TOOL_AGENT, extro_keys="input", **kwargs)
    assert alpaca.generate_prompt("帮我查询一下今天的天气", **call) == _as_041(
        "You are an AI-Agent developed by LazyLLM.\nBelow is an instruction that describes a "
        "task, paired with extra messages such as input that provides further context if "
        "possible. Write a response that appropriately completes the request.\n\n ### "
        f"Instruction:\n{TOOL_AGENT}\n\nHere are some extra messages you can referred to:\n\n"
        "### input:\n帮我查询一下今天的天气\n\n\n### Function-call Tools. \n\n"
        '[{"type": "function", "function": {"name": "example"}}]\n\n### Response:\n')
    chat = ChatPrompter(TOOL_AGENT, **kwargs).set_model_tokens(**DOC_TOKENS)
    assert chat.generate_prompt("帮我查询一下今天的天气", **call) == _as_041(
        f"<|start_system|>You are an AI-Agent developed by LazyLLM.{TOOL_AGENT}\n\n"
        '### Function-call Tools. \n\n[{"type": "function", "function": {"name": "example"}}]'
        "\n\n<|end_system|>\n\n\n<|Human|>:\n帮我查询一下今天的天气\n<|Assistant|>:\n")


def test_doc_alpaca_tools_return_dict():
    p = AlpacaPrompter(TOOL_AGENT, extro_keys="input", tools=DOC_TOOLS)
    system = _as_041(
        "You are an AI-Agent developed by LazyLLM.\nBelow is an instruction that describes a "
        "task, paired with extra messages such as input that provides further context if "
        "possible. Write a response that appropriately completes the request.\n\n ### "
        f"Instruction:\n{TOOL_AGENT}\n\nHere are some extra messages you can referred to:\n\n"
        "### input:\n帮我查询一下今天的天气\n\n")
    assert p.generate_prompt("帮我查询一下今天的天气", return_dict=True) == {
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": ""}],
        "tools": [{"type": "function", "function": {"name": "example"}}]}


def test_doc_chat_history():
    p = ChatPrompter("你是一个对话机器人，现在你要和用户进行友好的对话")
    p.set_model_tokens(**DOC_TOKENS)
    pair = [["你好", "你好，我是一个对话机器人，有什么能为您服务的"]]
    assert p.generate_prompt("我们聊会儿天吧", history=pair) == (
        "<|start_system|>You are an AI-Agent developed by LazyLLM."
        "你是一个对话机器人，现在你要和用户进行友好的对话\n\n<|end_system|>\n\n<|Human|>:你好<|Assistant|>:你好，我是一个对话机器人，"
        "有什么能为您服务的\n<|Human|>:\n我们聊会儿天吧\n<|Assistant|>:\n")
    expected = {"messages": [
        {"role": "system", "content": "You are an AI-Agent developed by LazyLLM.\n"
                                      "你是一个对话机器人，现在你要和用户进行友好的对话\n\n"},
        {"role": "user", "content": "你好"},
        {"role": "assistant", "content": "你好，我是一个对话机器人，有什么能为您服务的"},
        {"role": "user", "content": "我们聊会儿天吧"}]}
    assert p.generate_prompt("我们聊会儿天吧", history=pair, return_dict=True) == expected
    dicts = [dict(role="user", content="你好"),
             dict(role="assistant", content="你好，我是一个对话机器人，有什么能为您服务的")]
    assert p.generate_prompt("我们聊会儿天吧", history=dicts, return_dict=True) == expected


def test_doc_quick_start_return_dict_with_str_instruction():
    # The doc shows this output under a {"user": ...} instruction, but it is what a *str*
    # instruction gives (a user instruction goes to the user turn, as 0.4.1 records show);
    # the doc also changed the instruction's ", 现在" into "，现在".
    instruction = ("你是一个由LazyLLM开发的知识问答助手，"
                   "你的任务是根据提供的上下文信息来回答用户的问题。"
                   "上下文信息是{context}，用户的问题是{input}, 现在请你做出回答。")
    out = AlpacaPrompter(instruction).generate_prompt(dict(context="背景", input="输入"),
                                                      return_dict=True)
    doc_system = _as_041(
        "You are an AI-Agent developed by LazyLLM.\nBelow is an instruction that describes a "
        "task, paired with extra messages such as input that provides further context if "
        "possible. Write a response that appropriately completes the request.\n\n ### "
        "Instruction:\n你是一个由LazyLLM开发的知识问答助手，你的任务是根据提供的上下文信息来回答用户"
        "的问题。上下文信息是背景，用户的问题是输入，现在请你做出回答。\n\n")
    system = doc_system.replace("，现在", ", 现在")
    assert out == {"messages": [{"role": "system", "content": system},
                                {"role": "user", "content": ""}]}


# -- model templates of this project ----------------------------------------------------------

def test_for_model_applies_the_template_tokens():
    if importlib.util.find_spec("prompt_compiler.model.meta_library") is None:
        pytest.skip("prompt_compiler.model.meta_library is not available")
    from prompt_compiler.model.meta_library import load_model_template

    try:
        template = load_model_template("internlm2-chat")
    except LookupError:
        pytest.skip("no internlm2-chat model template")
    expected = ChatPrompter("Calc.").set_model_tokens(**dict(template.prompter))
    built = ChatPrompter.for_model("internlm2-chat", "Calc.")
    assert built.model_tokens == expected.model_tokens
    assert ChatPrompter("Calc.", model="internlm2-chat").generate_prompt("q") == \
        expected.generate_prompt("q")
    assert built.model_tokens.soa  # the template does define prompter tokens


# -- the conformance runner -------------------------------------------------------------------

def test_runner_on_the_reference_corpus(shared_dir: Path):
    peers = shared_dir / "conformance" / "peers"
    code, out = run_conformance("lazyllm", peers / "cases" / "lazyllm",
                                peers / "golden" / "lazyllm-v0.4.1")
    last = out.strip().splitlines()[-1]
    assert code == 0, out
    assert re.fullmatch(r"\d+ passed, 0 failed(, \d+ diverged)?", last), out
    # Every divergence names its documented rule (L1, L2, ... in docs/divergences-lazyllm.md).
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("DIVERGED"):
            assert re.match(r"\s+L\d+", lines[i + 1]), out


def test_runner_calls_get_response_and_errors(tmp_path: Path):
    sys.path.insert(0, str(REPO / "tools"))
    try:
        from conformance_suites import lazyllm as suite
    finally:
        sys.path.remove(str(REPO / "tools"))
    cases = [
        {"id": "calls", "prompter": "ChatPrompter", "init": {"instruction": "{a}"},
         "model_configs": {"soa": "<A>"},
         "calls": [{"input": "x"}, {"input": "1", "tools": [WEATHER], "return_dict": True},
                   {"input": {"a": "1"}, "format": "anthropic"}],
         "get_response": [{"output": "p<A>r", "input": None}, {"output": "pr", "input": "p"}]},
        {"id": "err", "prompter": "AlpacaPrompter", "init": {"instruction": "Hi."},
         "call": {"input": "free"}},
    ]
    golden = {"results": [
        {"id": "calls", "outputs": [
            "You are an AI-Agent developed by LazyLLM.x\n\n\n\n\n\n\n<A>\n",
            {"messages": [{"role": "system", "content": f"{SYS}\n1\n\n"},
                          {"role": "user", "content": ""}], "tools": [WEATHER]},
            {"error": {"type": "TypeError",
                       "message": "LazyLLMPrompterBase.generate_prompt() "
                                  "got an unexpected keyword argument 'format'"}},
        ], "get_response": ["r", "r"]},
        {"id": "err", "error": {"type": "AssertionError",
                                "message": "All keys should in instruction or extro-keys"}},
    ]}
    (tmp_path / "cases").mkdir()
    (tmp_path / "golden").mkdir()
    (tmp_path / "cases" / "x.json").write_text(json.dumps(cases), encoding="utf-8")
    (tmp_path / "golden" / "x.json").write_text(json.dumps(golden), encoding="utf-8")
    outcomes = list(suite.run(tmp_path / "cases", tmp_path / "golden", "compat"))
    assert [(o.case_id, o.status) for o in outcomes] == [("calls", "passed"), ("err", "passed")], \
        [o.report() for o in outcomes]
    # A difference without a documented rule fails, with a readable diff.
    golden["results"][1]["error"]["message"] = "something else"
    (tmp_path / "golden" / "x.json").write_text(json.dumps(golden), encoding="utf-8")
    status = [o.status for o in suite.run(tmp_path / "cases", tmp_path / "golden", "compat")]
    assert status == ["passed", "failed"]
