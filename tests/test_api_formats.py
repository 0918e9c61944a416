"""Per-API message formats (AgentScope 0.0.5 strategies): units, seed examples, registry, suite."""

from __future__ import annotations

import json
import re
import sys
import warnings

import pytest
from conftest import REPO, run_conformance

from prompt_compiler.api_formats import (
    DEFAULT_FORMATS,
    DEFAULT_ROLE,
    INVALID_IMAGE_URL,
    NOT_VISION_MODEL,
    UNSUPPORTED_URL,
    FormatRegistry,
    FormatWarning,
    MessageFormat,
    Msg,
    chat_to_msgs,
    content_text,
    format_chat,
    format_messages,
    guess_media_type,
)
from prompt_compiler.errors import ConfigError, RegistryError, RenderError

SYS = Msg("system", "You're a helpful assistant", role="system")
BOB = Msg("Bob", "Hi.", role="assistant")
ALICE = Msg("Alice", "Nice to meet you!", role="assistant")
SEED_TEXT = "You're a helpful assistant\n\n## Dialogue History\nBob: Hi.\nAlice: Nice to meet you!"
PNG_BYTES = b"abcdef"  # base64 "YWJjZGVm", the value the seed's example shows


def quiet(fmt, *args, **kwargs):
    """format_messages, failing the test if any warning is emitted."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return format_messages(fmt, *args, **kwargs)


# --- The seed document's examples (AgentScope's prompt-engineering guide) -------------------
# The guide's printed outputs rewrite "You're" as "You are" although the input says
# "You're"; the text passes through unchanged, so the expectations keep the input's words.


def test_seed_openai_non_vision():
    prompt = quiet("OpenAIChatWrapper", SYS, [BOB, ALICE], model_name="gpt-4")
    assert prompt == [
        {"role": "system", "name": "system", "content": "You're a helpful assistant"},
        {"role": "assistant", "name": "Bob", "content": "Hi."},
        {"role": "assistant", "name": "Alice", "content": "Nice to meet you!"},
    ]


def test_seed_openai_vision(tmp_path):
    (tmp_path / "test.png").write_bytes(PNG_BYTES)
    (tmp_path / "test.mp3").write_bytes(b"ID3")
    png, mp3 = str(tmp_path / "test.png"), str(tmp_path / "test.mp3")
    with pytest.warns(FormatWarning) as record:
        prompt = format_messages(
            "openai",
            SYS,
            [
                Msg("user", "Describe this image", role="user", url="https://xxx.png"),
                Msg("user", "And these images", role="user", url=[png, mp3]),
            ],
            model_name="gpt-4o",
        )
    assert prompt == [
        {"role": "system", "name": "system", "content": "You're a helpful assistant"},
        {"role": "user", "name": "user", "content": [
            {"type": "text", "text": "Describe this image"},
            {"type": "image_url", "image_url": {"url": "https://xxx.png"}},
        ]},
        {"role": "user", "name": "user", "content": [
            {"type": "text", "text": "And these images"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,YWJjZGVm"}},
        ]},
    ]
    # The invalid url (the mp3) is ignored, with a warning naming it.
    assert [(w.message.kind, w.message.url) for w in record] == [(INVALID_IMAGE_URL, mp3)]


@pytest.mark.parametrize("fmt", ["DashScopeChatWrapper", "ZhipuAIChatWrapper"])
def test_seed_dashscope_and_zhipu(fmt):
    prompt = quiet(fmt, SYS, [Msg("Bob", "Hi!", role="assistant"), ALICE])
    assert prompt == [
        {"role": "system", "content": "You're a helpful assistant"},
        {"role": "user", "content": "## Dialogue History\nBob: Hi!\nAlice: Nice to meet you!"},
    ]


def test_seed_dashscope_multimodal():
    # The guide's placeholders ("url_to_png1") carry no extension; with one they are
    # recognised as images. Media parts come before the text (the recorded 0.0.5
    # behaviour; the guide's printout lists the text first).
    prompt = quiet(
        "DashScopeMultiModalWrapper",
        Msg("system", "You're a helpful assistant", role="system", url="url_to_png1.png"),
        [
            Msg("Bob", "Hi!", role="assistant", url="url_to_png2.png"),
            Msg("Alice", "Nice to meet you!", role="assistant", url="url_to_png3.png"),
        ],
        base_dir="/nonexistent-dir",
    )
    assert prompt == [
        {"role": "system", "content": [
            {"image": "url_to_png1.png"}, {"text": "You're a helpful assistant"},
        ]},
        {"role": "user", "content": [
            {"image": "url_to_png2.png"},
            {"image": "url_to_png3.png"},
            {"text": "## Dialogue History\nBob: Hi!\nAlice: Nice to meet you!"},
        ]},
    ]


def test_seed_litellm():
    prompt = quiet(
        "LiteLLMChatWrapper",
        Msg("system", "You are a helpful assistant", role="system"),
        [
            Msg("user", "What is the weather today?", role="user"),
            Msg("assistant", "It is sunny today", role="assistant"),
        ],
    )
    assert prompt == [{
        "role": "user",
        "content": (
            "You are a helpful assistant\n\n"
            "## Dialogue History\nuser: What is the weather today?\n"
            "assistant: It is sunny today"
        ),
    }]


def test_seed_ollama_chat():
    alice = Msg("Alice", "Nice to meet you!", role="assistant",
                url="https://example.com/image.jpg")
    prompt = quiet("OllamaChatWrapper", SYS, [BOB, alice])
    assert prompt == [{
        "role": "system",
        "content": SEED_TEXT,
        "images": ["https://example.com/image.jpg"],
    }]


def test_seed_ollama_generate():
    prompt = quiet("OllamaGenerationWrapper", SYS, [BOB, ALICE])
    assert prompt == (
        SEED_TEXT
    )


def test_seed_gemini():
    # The guide's printout shows "Hi!" for the input "Hi." and a single newline after the
    # system text; the recorded 0.0.5 output has a blank line (same string as Ollama
    # generate), which is what we produce.
    bob, alice = Msg("Bob", "Hi.", role="model"), Msg("Alice", "Nice to meet you!", role="model")
    prompt = quiet("GeminiChatWrapper", SYS, [bob, alice])
    assert prompt == [{
        "role": "user",
        "parts": [SEED_TEXT],
    }]


# --- Format units (hand-checked) -------------------------------------------------------------

HIST = '## Dialogue History\nuser: Q {x}\nsystem: Be brief.\nBob: {"k": "值"}'
DIALOGUE = [
    {"name": "user", "content": "Q {x}", "role": "user"},
    {"name": "system", "content": "Be brief.", "role": "system"},
    {"name": "Bob", "content": {"k": "值"}, "role": "assistant"},
]


@pytest.mark.parametrize(("fmt", "expected"), [
    ("openai", [
        {"role": "user", "name": "user", "content": "Q {x}"},
        {"role": "system", "name": "system", "content": "Be brief."},
        {"role": "assistant", "name": "Bob", "content": '{"k": "值"}'},
    ]),
    ("dashscope_chat", [
        {"role": "user", "content": HIST},
    ]),
    ("dashscope_multimodal", [
        {"role": "user", "content": [
            {"text": HIST},
        ]},
    ]),
    ("litellm", [
        {"role": "user", "content": HIST},
    ]),
    ("ollama_chat", [
        {"role": "system", "content": HIST},
    ]),
    ("ollama_generate", HIST),
    ("gemini", [
        {"role": "user", "parts": [HIST]},
    ]),
])
def test_system_not_first_is_a_dialogue_line(fmt, expected):
    assert quiet(fmt, DIALOGUE) == expected


@pytest.mark.parametrize(("fmt", "only_system", "empty"), [
    ("openai", [{"role": "system", "name": "s", "content": "S"}], []),
    ("dashscope_chat", [{"role": "system", "content": "S"},
                        {"role": "user", "content": "## Dialogue History\n"}],
     [{"role": "user", "content": "## Dialogue History\n"}]),
    ("dashscope_multimodal", [{"role": "system", "content": [{"text": "S"}]},
                              {"role": "user", "content": [{"text": "## Dialogue History\n"}]}],
     [{"role": "user", "content": [{"text": "## Dialogue History\n"}]}]),
    ("litellm", [{"role": "user", "content": "S\n"}], [{"role": "user", "content": ""}]),
    ("ollama_chat", [{"role": "system", "content": "S\n"}], [{"role": "system", "content": ""}]),
    ("ollama_generate", "S\n\n## Dialogue History\n", "## Dialogue History\n"),
    ("gemini", [{"role": "user", "parts": ["S\n\n## Dialogue History\n"]}],
     [{"role": "user", "parts": ["## Dialogue History\n"]}]),
])
def test_only_system_and_empty(fmt, only_system, empty):
    assert quiet(fmt, Msg("s", "S", role="system")) == only_system
    assert quiet(fmt) == empty
    assert quiet(fmt, None, []) == empty


def test_system_text_ending_in_newline_gets_no_extra_newline():
    out = quiet("litellm", Msg("s", "S\n", role="system"), Msg("u", "hi", role="user"))
    assert out == [{"role": "user", "content": "S\n\n## Dialogue History\nu: hi"}]


def test_content_text():
    assert content_text("a") == "a"
    assert content_text({"城": 1}) == '{"城": 1}'
    assert content_text(["x", 1, None]) == '["x", 1, null]'
    assert content_text(True) == "true"
    assert content_text(None) == "None"


def test_openai_nested_lists_and_none_inside():
    out = quiet("openai", [None, [{"name": "a", "content": "1", "role": "user"}], []], None)
    assert out == [{"role": "user", "name": "a", "content": "1"}]


def test_openai_local_image_is_resolved_against_base_dir(tmp_path, monkeypatch):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "a.JPG").write_bytes(PNG_BYTES)
    monkeypatch.chdir(REPO)  # the current directory must not matter
    msg = Msg("u", "see", role="user", url=["img/a.JPG", "img/a.JPG?x=1"])
    with pytest.warns(FormatWarning) as record:
        out = format_messages("openai", msg, model_name="gpt-4-turbo", base_dir=tmp_path)
    assert out[0]["content"][1] == {"type": "image_url",
                                    "image_url": {"url": "data:image/jpg;base64,YWJjZGVm"}}
    assert len(out[0]["content"]) == 2
    assert [w.message.kind for w in record] == [INVALID_IMAGE_URL]
    # Deterministic: same input, same output.
    with pytest.warns(FormatWarning):
        assert format_messages("openai", msg, model_name="gpt-4-turbo", base_dir=tmp_path) == out


def test_openai_vision_override_and_non_vision_warning():
    msg = Msg("u", "see", role="user", url="https://x.org/a.webp")
    with pytest.warns(FormatWarning) as record:
        out = format_messages("openai", msg, model_name="gpt-3.5-turbo")
    assert out == [{"role": "user", "name": "u", "content": "see"}]
    assert [(w.message.kind, w.message.detail) for w in record] == [
        (NOT_VISION_MODEL, "gpt-3.5-turbo")]
    out = quiet("openai", msg, model_name="my-model", vision=True)
    assert out[0]["content"][1]["image_url"]["url"] == "https://x.org/a.webp"


def test_dashscope_multimodal_media(tmp_path):
    (tmp_path / "a.wav").write_bytes(b"RIFF")
    msg = Msg("u", "hear", role="user",
              url=["a.wav", "missing.png", "https://x.org/v.mp4", "https://x.org/a.gif"])
    with pytest.warns(FormatWarning) as record:
        out = format_messages("dashscope_multimodal", msg, base_dir=tmp_path)
    assert out == [{"role": "user", "content": [
        {"audio": "file://a.wav"}, {"image": "missing.png"},
        {"text": "## Dialogue History\nu: hear"},
    ]}]
    assert [(w.message.kind, w.message.detail) for w in record] == [
        (UNSUPPORTED_URL, "video"), (UNSUPPORTED_URL, "file")]


def test_guess_media_type():
    assert [guess_media_type(u) for u in ("a.PNG", "b.mp3", "c.mkv", "d.gif", "e.jpg?x=1")] == [
        "image", "audio", "video", "file", "file"]


def test_ollama_chat_lists_several_urls_flat():
    msgs = [Msg("a", "1", role="user", url=["x.png", "y.wav"]), Msg("b", "2", role="user", url="z")]
    assert quiet("ollama_chat", msgs)[0]["images"] == ["x.png", "y.wav", "z"]


def test_text_only_formats_ignore_urls():
    msg = Msg("u", "see", role="user", url="https://x.org/a.png")
    expected = [{"role": "user", "content": "## Dialogue History\nu: see"}]
    assert quiet("dashscope_chat", msg) == expected
    assert quiet("ollama_generate", msg) == "## Dialogue History\nu: see"


def test_missing_role_defaults_to_assistant_with_warning():
    with pytest.warns(FormatWarning) as record:
        out = format_messages("openai", {"name": "n", "content": "c"}, Msg("m", "d"))
    assert [m["role"] for m in out] == ["assistant", "assistant"]
    assert [w.message.kind for w in record] == [DEFAULT_ROLE, DEFAULT_ROLE]


def test_msg_is_immutable_and_stores_urls_as_tuple():
    msg = Msg("a", "b", role="user", url=["x", "y"])
    assert msg.url == ("x", "y") and msg.urls == ("x", "y")
    with pytest.raises(AttributeError):
        msg.name = "c"  # type: ignore[misc]


# --- Errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "args", "needle"), [
    ("dashscope_chat", ("hello",), "got <class 'str'>"),
    ("openai", ([1],), "got <class 'int'>"),
    ("dashscope_chat", ([SYS, [BOB]],), "got <class 'list'>"),
    ("gemini", ([BOB, None],), "got <class 'list'>"),
    ("litellm", ((BOB,),), "got <class 'tuple'>"),
])
def test_wrong_argument_types(fmt, args, needle):
    with pytest.raises(RenderError, match=re.escape(needle)) as info:
        format_messages(fmt, *args)
    assert isinstance(info.value, TypeError)
    assert f"format {DEFAULT_FORMATS.get(fmt).name!r}, argument 1" in str(info.value)


def test_bad_message_fields():
    with pytest.raises(RenderError, match="no 'name' field"):
        format_messages("openai", {"content": "x"})
    with pytest.raises(RenderError, match="'url' must be"):
        format_messages("openai", {"name": "a", "content": "x", "url": 3})
    with pytest.raises(RenderError, match="'role' must be a string"):
        format_messages("openai", {"name": "a", "content": "x", "role": 1})
    with pytest.raises(RenderError, match="'url' must be"):
        Msg("a", "b", url=[1])  # type: ignore[list-item]


def test_unknown_option_and_unknown_format():
    with pytest.raises(TypeError, match="multi_agent_mode"):
        format_messages("dashscope_chat", SYS, multi_agent_mode=False)  # type: ignore[call-arg]
    with pytest.raises(RegistryError, match="unknown message format 'anthropic'") as info:
        format_messages("anthropic", SYS)
    assert "openai" in str(info.value)


# --- Registry --------------------------------------------------------------------------------


def test_registry_names_and_aliases():
    assert DEFAULT_FORMATS.names() == (
        "openai", "dashscope_chat", "dashscope_multimodal", "litellm", "zhipuai",
        "ollama_chat", "ollama_generate", "gemini")
    assert DEFAULT_FORMATS.aliases() == {
        "OpenAIChatWrapper": "openai", "DashScopeChatWrapper": "dashscope_chat",
        "DashScopeMultiModalWrapper": "dashscope_multimodal", "LiteLLMChatWrapper": "litellm",
        "ZhipuAIChatWrapper": "zhipuai", "OllamaChatWrapper": "ollama_chat",
        "OllamaGenerationWrapper": "ollama_generate", "GeminiChatWrapper": "gemini"}
    assert DEFAULT_FORMATS.get("OpenAI").name == "openai"
    assert "geminichatwrapper" in DEFAULT_FORMATS and "gpt" not in DEFAULT_FORMATS
    assert len(DEFAULT_FORMATS) == 8


def test_registry_duplicates_raise_and_extension_is_copy():
    upper = MessageFormat("upper", lambda msgs, ctx: [str(m.content).upper() for m in msgs],
                          aliases=("UpperWrapper",))
    extended = DEFAULT_FORMATS.with_format(upper)
    assert "upper" in extended and "upper" not in DEFAULT_FORMATS
    assert format_messages("UpperWrapper", BOB, registry=extended) == ["HI."]
    assert format_messages(upper, BOB) == ["HI."]
    with pytest.raises(ConfigError, match="'openai' .* already taken by format 'openai'"):
        extended.with_format(MessageFormat("openai", upper.render))
    with pytest.raises(ConfigError, match="'upperwrapper' of format 'x' is already taken"):
        FormatRegistry([upper, MessageFormat("x", upper.render, ("upperwrapper",))])


# --- From OpenAI-style chat messages ---------------------------------------------------------


def test_format_chat_from_openai_style_messages():
    chat = [
        {"role": "system", "content": "Answer with a letter."},
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A"},
        {"role": "user", "content": "Q2", "name": "Ann"},
    ]
    assert quiet_chat("dashscope_chat", chat) == [
        {"role": "system", "content": "Answer with a letter."},
        {"role": "user", "content": "## Dialogue History\nuser: Q1\nassistant: A\nAnn: Q2"},
    ]
    assert quiet_chat("ollama_generate", chat) == (
        "Answer with a letter.\n\n## Dialogue History\nuser: Q1\nassistant: A\nAnn: Q2")
    assert quiet_chat("openai", chat)[3] == {"role": "user", "name": "Ann", "content": "Q2"}


def quiet_chat(fmt, chat, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return format_chat(fmt, chat, **kwargs)


def test_chat_content_parts_become_text_and_urls():
    chat = [{"role": "user", "content": [
        {"type": "text", "text": "What is"},
        {"type": "image_url", "image_url": {"url": "https://x.org/a.png"}},
        {"type": "text", "text": "this?"},
    ]}]
    assert chat_to_msgs(chat) == [Msg("user", "What is\nthis?", "user", ("https://x.org/a.png",))]
    assert quiet_chat("dashscope_multimodal", chat) == [{"role": "user", "content": [
        {"image": "https://x.org/a.png"}, {"text": "## Dialogue History\nuser: What is\nthis?"}]}]


def test_chat_errors():
    with pytest.raises(RenderError, match="list of chat messages"):
        format_chat("openai", "hello")  # type: ignore[arg-type]
    with pytest.raises(RenderError, match=r"messages\[0\]: expected a dict with 'role'"):
        format_chat("openai", [{"content": "x"}])
    with pytest.raises(RenderError, match="unsupported content part 'audio'"):
        format_chat("openai", [{"role": "user", "content": [{"type": "audio"}]}])


# --- Conformance suite -----------------------------------------------------------------------


def test_conformance_runner_over_shared_cases(shared_dir):
    peers = shared_dir / "conformance" / "peers"
    code, out = run_conformance("agentscope", peers / "cases" / "agentscope",
                                peers / "golden" / "agentscope")
    assert code == 0, out
    last = out.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ passed, 0 failed(, \d+ diverged)?", last), out
    diverged = re.findall(r"^DIVERGED (\S+)", out, flags=re.M)
    assert all("ollama_chat" in case for case in diverged), diverged


def _suite():
    sys.path.insert(0, str(REPO / "tools"))
    try:
        from conformance_suites import agentscope
    finally:
        sys.path.remove(str(REPO / "tools"))
    return agentscope


def test_suite_detects_mismatches(tmp_path):
    """The suite fails wrong outputs, wrong warnings and wrong errors; it is not lenient."""
    (tmp_path / "fixtures").mkdir()
    cases_dir, golden_dir = tmp_path / "cases", tmp_path / "golden"
    cases_dir.mkdir()
    golden_dir.mkdir()
    msg = {"name": "u", "content": "x", "role": "user", "url": "https://x.org/a.html"}
    cases = [
        {"id": "ok", "wrapper": "LiteLLMChatWrapper", "model_name": "m", "args": [msg]},
        {"id": "bad_output", "wrapper": "LiteLLMChatWrapper", "model_name": "m", "args": [msg]},
        {"id": "bad_warning", "wrapper": "DashScopeMultiModalWrapper", "model_name": "m",
         "args": [msg]},
        {"id": "error_ok", "wrapper": "GeminiChatWrapper", "model_name": "m", "args": [7]},
        {"id": "error_wrong_class", "wrapper": "GeminiChatWrapper", "model_name": "m",
         "args": [7]},
    ]
    text = "## Dialogue History\nu: x"
    results = [
        {"id": "ok", "output": [{"role": "user", "content": text}], "warnings": []},
        {"id": "bad_output", "output": [{"role": "user", "content": text + "!"}], "warnings": []},
        {"id": "bad_warning", "output": [{"role": "user", "content": [{"text": text}]}],
         "warnings": ["Skip unsupported url (video), expect image or audio."]},
        {"id": "error_ok", "error": {"type": "TypeError", "message": "got <class 'int'>."},
         "warnings": []},
        {"id": "error_wrong_class", "error": {"type": "TypeError",
                                              "message": "got <class 'float'>."},
         "warnings": []},
    ]
    (cases_dir / "c.json").write_text(json.dumps(cases), encoding="utf-8")
    (golden_dir / "c.json").write_text(json.dumps({"results": results}), encoding="utf-8")
    statuses = {o.case_id: o.status for o in _suite().run(cases_dir, golden_dir, "compat")}
    assert statuses == {"c/ok": "passed", "c/bad_output": "failed", "c/bad_warning": "failed",
                        "c/error_ok": "passed", "c/error_wrong_class": "failed"}


def test_user_doc_example_runs_as_printed(tmp_path, monkeypatch, capsys):
    """The example in docs/api_formats.md prints what its comments say."""
    text = (REPO / "docs" / "api_formats.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/api_formats.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == (
        "[{'role': 'system', 'content': \"You're a helpful assistant.\"}, {'role': 'user', "
        "'content': \"## Dialogue History\\nBob: Hi, how can I help you?\\nuser: What's the "
        "date today?\"}]"
    )
    assert printed[-1] == (
        "{'type': 'image_url', 'image_url': {'url': 'https://example.com/cat.png'}} "
        "['invalid_image_url']"
    )
