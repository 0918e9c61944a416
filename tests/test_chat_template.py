"""ChatTemplate: loading sources, transformers-equivalent rendering, errors, caching."""

from __future__ import annotations

import json
import pickle
from datetime import datetime
from pathlib import Path

import pytest
from conftest import run_conformance
from hypothesis import given
from hypothesis import strategies as st

from prompt_compiler.errors import (
    ConfigError,
    DataError,
    RenderError,
    TemplateError,
    TemplateSyntaxError,
    UnsupportedError,
)
from prompt_compiler.render.chat_template import ChatTemplate, RaisedTemplateError

# A small ChatML-style template, written for these tests.
CHATML = (
    "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CHAT = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello there"}]


# ------------------------------------------------------------------ rendering


def test_renders_messages_special_tokens_and_generation_prompt() -> None:
    tpl = ChatTemplate.from_string(CHATML, special_tokens={"bos_token": "<s>"})
    assert tpl.render(CHAT[:1], add_generation_prompt=True) == (
        "<s><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert tpl.render(CHAT[:1]) == "<s><|im_start|>user\nHi<|im_end|>\n"


def test_extra_kwargs_are_variables_and_override_special_tokens() -> None:
    tpl = ChatTemplate.from_string(
        "{{ bos_token }}|{{ 'think' if enable_thinking else 'fast' }}|{{ missing }}|",
        special_tokens={"bos_token": "<s>"},
    )
    assert tpl.render(CHAT, enable_thinking=False) == "<s>|fast||"
    assert tpl.render(CHAT, bos_token="<B>", enable_thinking=True) == "<B>|think||"


def test_trim_and_lstrip_blocks_like_transformers() -> None:
    tpl = ChatTemplate.from_string("a\n  {% if true %}\nb\n  {% endif %}\nc")
    assert tpl.render(CHAT) == "a\nb\nc"


def test_loop_controls_and_generation_block() -> None:
    tpl = ChatTemplate.from_string(
        "{% for m in messages %}{% if m.role == 'system' %}{% continue %}{% endif %}"
        "{% if loop.index > 3 %}{% break %}{% endif %}"
        "{% generation %}[{{ m.content }}]{% endgeneration %}{% endfor %}"
    )
    msgs = [{"role": "system", "content": "s"}]
    msgs += [{"role": "user", "content": str(i)} for i in range(5)]
    assert tpl.render(msgs) == "[0][1]"


def test_tojson_keeps_non_ascii_and_follows_json_dumps_options() -> None:
    tpl = ChatTemplate.from_string(
        "{{ tools[0] | tojson }}\n{{ tools[0] | tojson(indent=2) }}\n"
        "{{ tools[0] | tojson(sort_keys=true, separators=(',', ':')) }}\n"
        "{{ tools[0] | tojson(ensure_ascii=true) }}"
    )
    tool = {"name": "météo", "z": "<b>&'x'</b>", "a": [1, None]}
    out = tpl.render(CHAT, tools=[tool]).split("\n", 1)
    assert out[0] == '{"name": "météo", "z": "<b>&\'x\'</b>", "a": [1, null]}'
    assert out[1] == "\n".join([
        json.dumps(tool, ensure_ascii=False, indent=2),
        '{"a":[1,null],"name":"météo","z":"<b>&\'x\'</b>"}',
        json.dumps(tool),
    ])


def test_tools_and_documents_are_passed_and_checked() -> None:
    tpl = ChatTemplate.from_string(
        "{{ tools is none }}|{{ documents is none }}|"
        "{% for d in documents or [] %}{{ d.title }}{% endfor %}"
    )
    assert tpl.render(CHAT) == "True|True|"
    assert tpl.render(CHAT, tools=[], documents=[{"title": "T", "text": "x"}]) == "False|False|T"
    with pytest.raises(ConfigError, match=r"tools\[0\]"):
        tpl.render(CHAT, tools=["get_weather"])  # type: ignore[list-item]
    with pytest.raises(RenderError, match=r"documents\[0\]"):
        tpl.render(CHAT, documents=["plain text"])  # type: ignore[list-item]


# --------------------------------------------------------------------- errors


def test_raise_exception_carries_the_templates_exact_message() -> None:
    tpl = ChatTemplate.from_string(
        "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}"
        "{% endif %}ok"
    )
    assert tpl.render(CHAT) == "ok"
    with pytest.raises(RaisedTemplateError) as info:
        tpl.render([{"role": "system", "content": "x"}])
    err = info.value
    assert isinstance(err, TemplateError)
    assert err.message == str(err) == "System role not supported"
    assert err.reference == ("TemplateError", "System role not supported")


def test_syntax_error_is_raised_at_load_with_line() -> None:
    with pytest.raises(TemplateSyntaxError, match=r"line 2") as info:
        ChatTemplate.from_string("ok\n{% if x %}never closed")
    assert info.value.reference is not None and info.value.reference[0] == "TemplateSyntaxError"


def test_template_runtime_failure_is_a_render_error_with_jinja_wording() -> None:
    tpl = ChatTemplate.from_string("{{ messages[0].content + eos_token }}")
    with pytest.raises(RenderError) as info:
        tpl.render([{"role": "user", "content": "x"}])
    assert info.value.reference == ("UndefinedError", "'eos_token' is undefined")


def test_sandbox_blocks_mutation() -> None:
    tpl = ChatTemplate.from_string("{{ messages.append(1) }}")
    with pytest.raises(RenderError) as info:
        tpl.render(CHAT)
    assert info.value.reference is not None and info.value.reference[0] == "SecurityError"


# ----------------------------------------------------- continue_final_message


def test_continue_final_message_leaves_the_last_message_open() -> None:
    tpl = ChatTemplate.from_string(CHATML)
    out = tpl.render(CHAT, continue_final_message=True)
    assert out == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello there"
    # Trailing space the template keeps is kept.
    spaced = [*CHAT[:1], {"role": "assistant", "content": "Sure, "}]
    assert tpl.render(spaced, continue_final_message=True).endswith("assistant\nSure, ")
    # The input is not modified.
    assert spaced[-1]["content"] == "Sure, "


def test_continue_final_message_with_a_trimming_template() -> None:
    tpl = ChatTemplate.from_string(
        "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</{{ m.role }}>{% endfor %}"
    )
    msgs = [{"role": "assistant", "content": "  Sure,  "}]
    assert tpl.render(msgs, continue_final_message=True) == "<assistant>Sure,"


def test_continue_final_message_on_content_blocks_and_other_fields() -> None:
    tpl = ChatTemplate.from_string(
        "{% for m in messages %}"
        "{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>"
        "{% endif %}{% for b in m.content %}{{ b.text }}{% endfor %}<end>{% endfor %}"
    )
    msgs = [{"role": "assistant", "reasoning_content": "hmm",
             "content": [{"type": "text", "text": "A"}, {"type": "image"}]}]
    assert tpl.render(msgs, continue_final_message=True) == "<think>hmm</think>A"
    assert tpl.render(msgs, continue_final_message="reasoning_content") == "<think>hmm"


def test_continue_final_message_errors() -> None:
    tpl = ChatTemplate.from_string(CHATML)
    with pytest.raises(UnsupportedError):
        tpl.render(CHAT, continue_final_message=True, add_generation_prompt=True)
    with pytest.raises(DataError, match="no 'content'"):
        tpl.render([{"role": "assistant"}], continue_final_message=True)
    with pytest.raises(DataError):
        tpl.render([], continue_final_message=True)
    dropping = ChatTemplate.from_string(
        "{% for m in messages %}{{ m.role }}:{{ m.content[:2] }}{% endfor %}"
    )
    with pytest.raises(TemplateError, match="does not contain the final message"):
        dropping.render(CHAT, continue_final_message=True)
    with pytest.raises(TemplateError, match="never mentions"):
        tpl.render([{"role": "assistant", "reasoning": "r"}], continue_final_message="reasoning")


# -------------------------------------------------------------- strftime_now


def test_strftime_now_pinned_and_real() -> None:
    text = "{{ strftime_now('%d %b %Y') }}"
    pinned = ChatTemplate.from_string(text, now=datetime(2024, 7, 26, 9, 30))
    assert pinned.render(CHAT) == "26 Jul 2024"
    assert pinned.with_now(datetime(2025, 1, 2)).render(CHAT) == "02 Jan 2025"
    before = datetime.now().strftime("%d %b %Y")
    real = ChatTemplate.from_string(text).render(CHAT)
    assert real in {before, datetime.now().strftime("%d %b %Y")}


# ------------------------------------------------------------------- caching


def test_compiled_template_is_cached_per_object(monkeypatch: pytest.MonkeyPatch) -> None:
    tpl = ChatTemplate.from_string(CHATML)
    assert tpl.compiled() is tpl.compiled()
    env = tpl.compiled().environment
    calls: list[str] = []
    original = env.from_string
    monkeypatch.setattr(env, "from_string", lambda *a, **k: calls.append("x") or original(*a, **k))
    for i in range(200):
        tpl.render([{"role": "user", "content": str(i)}])
    assert calls == []


def test_pickles_and_compares_as_a_value() -> None:
    tpl = ChatTemplate.from_string(
        CHATML, special_tokens={"bos_token": "<s>"}, now=datetime(2024, 1, 1)
    )
    back = pickle.loads(pickle.dumps(tpl))
    assert back == tpl and hash(back) == hash(tpl)
    assert back.render(CHAT) == tpl.render(CHAT)


# ------------------------------------------------------------------- sources


def test_jinja_file_and_load_dispatch(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja"
    path.write_text(CHATML, encoding="utf-8")
    loaded = (ChatTemplate.from_file(path), ChatTemplate.load(path), ChatTemplate.load(str(path)))
    for tpl in loaded:
        assert tpl.source == CHATML and tpl.origin == str(path)
    assert ChatTemplate.load(CHATML).source == CHATML
    with pytest.raises(ConfigError, match="neither an existing file"):
        ChatTemplate.load(str(tmp_path / "absent.jinja"))
    with pytest.raises(ConfigError, match="no such file"):
        ChatTemplate.from_file(tmp_path / "absent.jinja")


def test_tokenizer_config_string_template_and_token_dicts(tmp_path: Path) -> None:
    config = {
        "chat_template": CHATML,
        "bos_token": {"__type": "AddedToken", "content": "<|begin|>", "lstrip": False},
        "eos_token": "<|end|>",
        "pad_token": None,
        "additional_special_tokens": ["<x>", {"content": "<y>"}],
    }
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    tpl = ChatTemplate.load(path)
    # transformers 5 does not give the template additional_special_tokens (a plain list).
    assert dict(tpl.special_tokens) == {"bos_token": "<|begin|>", "eos_token": "<|end|>"}
    assert tpl.render(CHAT[:1]).startswith("<|begin|><|im_start|>user")


def test_tokenizer_config_named_templates(tmp_path: Path) -> None:
    config = {"chat_template": [
        {"name": "default", "template": "D{{ messages|length }}"},
        {"name": "tool_use", "template": "T{{ tools|length }}"},
        {"name": "rag", "template": "R{{ documents|length }}"},
    ]}
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    tpl = ChatTemplate.from_file(path)
    assert tpl.render(CHAT) == "D2"
    assert tpl.render(CHAT, tools=[{"type": "function"}]) == "T1"  # tools pick tool_use
    assert tpl.render(CHAT, template_name="rag", documents=[{}]) == "R1"
    rag = ChatTemplate.from_file(path, name="rag")
    assert rag.render(CHAT, tools=[], documents=[]) == "R0"  # an explicit name is kept
    with pytest.raises(ConfigError, match="available"):
        ChatTemplate.from_file(path, name="absent")
    with pytest.raises(ConfigError, match="available"):
        tpl.render(CHAT, template_name="absent")
    config["chat_template"] = config["chat_template"][1:]
    path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ConfigError, match="none named 'default'"):
        ChatTemplate.from_file(path)


@pytest.mark.parametrize(("content", "expected"), [
    ('{"chat_template": 3}', "expected a template string"),
    ('{"bos_token": "<s>"}', "no 'chat_template' key"),
    ('{"chat_template": "x",\n "eos_token": }', "malformed JSON at line 2"),
    ('["chat_template"]', "expected a JSON object"),
    ('{"chat_template": [{"name": "default"}]}', r"chat_template\[0\]"),
    ('{"chat_template": "x", "eos_token": 5}', "eos_token"),
])
def test_bad_config_files_name_the_file(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "tokenizer_config.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=expected) as info:
        ChatTemplate.from_file(path)
    assert str(path) in str(info.value)


def test_model_folder_lookup_order(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"chat_template": "config", "bos_token": "<s>", "eos_token": "</s>"}),
        encoding="utf-8",
    )
    (tmp_path / "special_tokens_map.json").write_text(
        json.dumps({"eos_token": "<eos>"}), encoding="utf-8"
    )
    tpl = ChatTemplate.from_pretrained_dir(tmp_path)
    assert tpl.source == "config"
    assert dict(tpl.special_tokens) == {"bos_token": "<s>", "eos_token": "<eos>"}

    (tmp_path / "chat_template.json").write_text(
        json.dumps({"chat_template": "json"}), encoding="utf-8"
    )
    assert ChatTemplate.load(tmp_path).source == "json"

    (tmp_path / "chat_template.jinja").write_text("jinja {{ bos_token }}", encoding="utf-8")
    extra = tmp_path / "additional_chat_templates"
    extra.mkdir()
    (extra / "tool_use.jinja").write_text("tools {{ eos_token }}", encoding="utf-8")
    tpl = ChatTemplate.load(str(tmp_path))
    assert tpl.origin == str(tmp_path / "chat_template.jinja")
    assert tpl.render(CHAT) == "jinja <s>"
    assert tpl.render(CHAT, tools=[]) == "tools <eos>"
    assert sorted(tpl.alternates) == ["default", "tool_use"]


def test_model_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no chat template found") as info:
        ChatTemplate.from_pretrained_dir(tmp_path)
    assert str(tmp_path) in str(info.value)
    (tmp_path / "tokenizer_config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="malformed JSON"):
        ChatTemplate.from_pretrained_dir(tmp_path)
    with pytest.raises(ConfigError, match="not a folder"):
        ChatTemplate.from_pretrained_dir(tmp_path / "tokenizer_config.json")


# ------------------------------------------------------------------ property

_PIECES = [*"ab {}%#-+'\"\n\té中🙂", "{{ x }}", "{% if %}", "{{ raise_exception('no') }}", "}}"]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=8).map("".join)


@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "system"]), _TEXT),
               min_size=1, max_size=5))
def test_contents_are_never_interpreted_and_rendering_is_deterministic(
    pairs: list[tuple[str, str]],
) -> None:
    messages = [{"role": role, "content": text} for role, text in pairs]
    expected = "".join(f"<|im_start|>{role}\n{text}<|im_end|>\n" for role, text in pairs)
    tpl = _PROPERTY_TEMPLATE
    assert tpl.render(messages) == expected
    assert tpl.render(messages) == expected


_PROPERTY_TEMPLATE = ChatTemplate.from_string(CHATML)


# --------------------------------------------------------------- conformance


def test_shared_hf_chat_cases_pass(shared_dir: Path) -> None:
    peers = shared_dir / "conformance" / "peers"
    cases, golden = peers / "cases" / "hf_chat", peers / "golden" / "hf_chat"
    code, output = run_conformance("hf_chat", cases, golden)
    assert code == 0, output
    assert output.strip().splitlines()[-1].endswith(" passed, 0 failed")


# ------------------------------------------- transformers 5.x pre-processing and globals
# Expected texts written by hand from transformers 5.23's apply_chat_template rules.

ITEMS = ("{% for m in messages %}{% for k, v in m.items() %}{{ k }}={{ v }};{% endfor %}"
         "|{% endfor %}")


def test_none_valued_keys_are_dropped_before_rendering() -> None:
    tpl = ChatTemplate.from_string(
        "{% for m in messages %}{{ m.role }}:{{ m.content if 'content' in m else '-' }}"
        "{% if m.tool_calls is defined %}[tools]{% endif %};{% endfor %}")
    chat = [{"role": "user", "content": "Hi"},
            {"role": "assistant", "content": None, "tool_calls": None}]
    assert tpl.render(chat) == "user:Hi;assistant:-;"
    assert chat[1] == {"role": "assistant", "content": None, "tool_calls": None}  # caller's kept


def test_reasoning_is_given_under_both_thinking_and_reasoning_content() -> None:
    tpl = ChatTemplate.from_string(ITEMS)
    out = tpl.render([{"role": "assistant", "reasoning": "r1", "content": "a"},
                      {"role": "assistant", "content": "b", "thinking": "t2"},
                      {"role": "assistant", "thinking": "t3", "reasoning_content": "rc3"},
                      {"role": "user", "content": "c", "reasoning_content": None}])
    assert out == ("thinking=r1;role=assistant;reasoning=r1;content=a;reasoning_content=r1;|"
                   "thinking=t2;role=assistant;content=b;reasoning_content=t2;|"
                   "thinking=t3;role=assistant;reasoning_content=rc3;|"
                   "role=user;content=c;|")


def test_continue_final_message_on_a_reasoning_field_continues_every_copy() -> None:
    # A template that reads `thinking` (gpt-oss style) continues the reasoning given as
    # reasoning_content: both copies carry the cut tag, the one the template prints is cut.
    tpl = ChatTemplate.from_string(
        "{% for m in messages %}<{{ m.role }}>{% if m.thinking %}[{{ m.thinking }}]{% endif %}"
        "{{ m.content }}</{{ m.role }}>{% endfor %}")
    chat = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "reasoning_content": "Let me think"}]
    assert tpl.render(chat, continue_final_message="reasoning_content") == (
        "<user>q</user><assistant>[Let me think")
    with pytest.raises(TemplateError, match="never mentions 'thinking'"):
        ChatTemplate.from_string("{{ messages[0].content }}").render(
            chat, continue_final_message="thinking")
    with pytest.raises(DataError, match="no 'reasoning' to continue"):  # not one of the copies
        tpl.render(chat, continue_final_message="reasoning")


def test_dict_global_is_transformers_restricted_callable() -> None:
    tpl = ChatTemplate.from_string(
        "{{ dict(a=1)['a'] }} {{ dict.fromkeys(['x', 'y'], 0) | tojson }}")
    assert tpl.render(CHAT) == '1 {"x": 0, "y": 0}'
    with pytest.raises(RenderError, match="items"):
        ChatTemplate.from_string("{{ dict.items }}x{{ dict.items() }}").render(CHAT)


def test_namespace_refuses_private_attributes() -> None:
    ok = ChatTemplate.from_string(
        "{% set ns = namespace(n=1) %}{% set ns.n = ns.n + 1 %}{{ ns.n }}")
    assert ok.render(CHAT) == "2"
    for text in ("{% set ns = namespace(_x=1) %}{{ ns._x }}",
                 "{% set ns = namespace() %}{% set ns._x = 1 %}x"):
        with pytest.raises(RenderError, match="underscore-prefixed attribute '_x'") as info:
            ChatTemplate.from_string(text).render(CHAT)
        assert info.value.reference is not None and info.value.reference[0] == "SecurityError"


def test_message_values_are_plain_data() -> None:
    class Text(str):
        def shout(self) -> str:
            return self.upper()

    tpl = ChatTemplate.from_string("{{ messages[0].content }}|{{ messages[0].extra }}|"
                                   "{{ messages[0].content.shout is defined }}")
    assert tpl.render([{"role": "user", "content": Text("hi"), "extra": object()}]) == (
        "hi|<object>|False")


def test_an_empty_conversation_is_refused() -> None:
    # transformers: "Cannot apply chat template to an empty conversation".
    tpl = ChatTemplate.from_string("{{ bos_token }}{{ messages | length }}",
                                   special_tokens={"bos_token": "<s>"})
    assert tpl.render(CHAT[:1]) == "<s>1"
    for empty in ([], ()):
        with pytest.raises(DataError, match="at least one message") as info:
            tpl.render(empty)
        assert info.value.key_path == "messages"


def test_a_message_that_is_not_a_dict_is_refused() -> None:
    tpl = ChatTemplate.from_string("{% for m in messages %}{{ m }}{% endfor %}")
    with pytest.raises(DataError, match=r"messages\[1\] must be a message dict.*got str"):
        tpl.render([{"role": "user", "content": "a"}, "just text"])  # type: ignore[list-item]
    with pytest.raises(DataError, match=r"messages\[0\].*got list"):
        tpl.render([[{"role": "user", "content": "a"}]])  # type: ignore[list-item]


def test_none_is_dropped_at_the_top_level_only() -> None:
    tpl = ChatTemplate.from_string(
        "{% for m in messages %}{{ m | tojson }};{% endfor %}")
    chat = [{"role": "user", "name": None,
             "content": [{"type": "text", "text": "x", "image": None}]}]
    assert tpl.render(chat) == (
        '{"role": "user", "content": [{"type": "text", "text": "x", "image": null}]};')


def test_dataclasses_and_pydantic_style_models_become_dicts() -> None:
    import dataclasses

    @dataclasses.dataclass
    class Part:
        type: str
        text: str
        image: object = None

    class Model:  # pydantic's model_dump protocol, without pydantic
        def model_dump(self) -> dict[str, object]:
            return {"type": "text", "text": "dumped"}

    tpl = ChatTemplate.from_string(
        "{% for p in messages[0].content %}{{ p.type }}:{{ p.text }}:{{ p.image }};{% endfor %}")
    chat = [{"role": "user", "content": [Part("text", "hi", object()), Model()]}]
    assert tpl.render(chat) == "text:hi:<object>;text:dumped:;"


def test_continue_final_message_on_thinking_tags_every_reasoning_copy() -> None:
    # The message has reasoning under `thinking` only; continuing "thinking" must also cut a
    # template that prints reasoning_content (the aliased copy).
    tpl = ChatTemplate.from_string(
        "{% for m in messages %}<{{ m.role }}>"
        "{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}"
        "{{ m.content }}</{{ m.role }}>{% endfor %}")
    chat = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "thinking": "First,"}]
    assert tpl.render(chat, continue_final_message="thinking") == (
        "<user>q</user><assistant><think>First,")


def test_tokenizer_config_tokens_as_transformers_5_exposes_them(tmp_path: Path) -> None:
    # Hand-checked with transformers 5.23 (AutoTokenizer.from_pretrained on such a folder).
    template = ("B={{ bos_token }} E={{ eos_token }} P={{ pad_token }} I={{ image_token }} "
                "O={{ boi_token }} F={{ foo_token }} V={{ vid_token }} "
                "A={{ additional_special_tokens }} X={{ extra_special_tokens }}|")
    config = {
        "chat_template": template, "bos_token": "<s>", "eos_token": "</s>",
        "image_token": "<img>",                                   # any *_token string
        "boi_token": {"__type": "AddedToken", "content": "<boi>"},  # an AddedToken dict
        "foo_token": {"content": "<foo>"},                        # not an AddedToken: ignored
        "add_bos_token": True,                                    # not a token
        "additional_special_tokens": ["<a1>"],                    # a list: not a variable
    }
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    chat = [{"role": "user", "content": "hi"}]
    assert ChatTemplate.load(tmp_path).render(chat) == (
        "B=<s> E=</s> P= I=<img> O=<boi> F= V= A= X=|")

    config["extra_special_tokens"] = {"image_token": "<IMG3>", "vid_token": "<v>"}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    assert ChatTemplate.load(tmp_path).render(chat) == (
        "B=<s> E=</s> P= I=<IMG3> O=<boi> F= V=<v> A= X=|")

    # special_tokens_map.json: its named tokens win, its other *_token keys only fill gaps.
    del config["extra_special_tokens"]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    (tmp_path / "special_tokens_map.json").write_text(json.dumps({
        "eos_token": {"content": "<E2>", "lstrip": False}, "pad_token": "<pad>",
        "image_token": "<IMG2>", "foo_token": {"content": "<foo2>"},
        "additional_special_tokens": ["<a2>"]}), encoding="utf-8")
    assert ChatTemplate.load(tmp_path).render(chat) == (
        "B=<s> E=<E2> P=<pad> I=<img> O=<boi> F=<foo2> V= A= X=|")
