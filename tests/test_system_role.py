"""system_role on prompts and message lists (library level; the CLI is in test_switches.py)."""

from __future__ import annotations

import pytest

import prompt_compiler as pc
from prompt_compiler.model.system_role import apply_system_role, chat_template_system
from prompt_compiler.promptlist import Marker, PromptList, RoleItem
from prompt_compiler.render.chat_template import ChatTemplate

PROMPT = PromptList((Marker("begin", "begin"), RoleItem.of("SYSTEM", "S", fallback_role="HUMAN"),
                     Marker("begin", "end"), Marker("round", "begin"), RoleItem.of("HUMAN", "U"),
                     RoleItem.of("BOT", "A"), Marker("round", "end")))


def test_merge_folds_into_the_first_user_turn() -> None:
    out = apply_system_role(PROMPT, "merge", model="m")
    assert [i.prompt for i in out if isinstance(i, RoleItem)] == ["S\n\nU", "A"]


def test_merge_without_a_user_turn_makes_one() -> None:
    only = PromptList((Marker("begin", "begin"), RoleItem.of("SYSTEM", "S"),
                       Marker("begin", "end")))
    out = apply_system_role(only, "merge", model="m")
    assert out.items == (Marker("begin", "begin"), RoleItem.of("HUMAN", "S"),
                         Marker("begin", "end"))


def test_message_lists_of_raw_templates() -> None:
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    merged = apply_system_role(messages, "merge", model="m")
    assert merged == [{"role": "user", "content": "S\n\nU"}]
    with pytest.warns(pc.errors.PromptCompilerWarning, match="model 'm': system message dropped"):
        assert apply_system_role(messages, "drop", model="m") == [{"role": "user", "content": "U"}]
    with pytest.raises(pc.errors.RenderError, match="system_role: error"):
        apply_system_role(messages, "error", model="m")
    assert apply_system_role(messages, "native", model="m") is messages


@pytest.mark.parametrize(("source", "expected"), [
    ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}",
     "native"),
    ("{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no') }}{% endif %}"
     "<t>{{ m.content }}</t>{% endfor %}", "error"),
    ("{% for m in messages if m.role != 'system' %}<t>{{ m.content }}</t>{% endfor %}", "dropped"),
    ("<t>{% for m in messages %}{{ m.content }}\n\n{% endfor %}</t>", "merged"),
])
def test_chat_template_system_handling(source: str, expected: str) -> None:
    assert chat_template_system(ChatTemplate.from_string(source)) == expected


def test_native_on_a_chat_template_that_drops_system_is_an_error() -> None:
    dropping = "{% for m in messages if m.role != 'system' %}<t>{{ m.content }}</t>{% endfor %}"
    with pytest.raises(pc.ConfigError, match="chat template drops a system message"):
        pc.Compiler().model({"abbr": "m", "parser": "hf_chat", "chat_template": dropping,
                             "system_role": "native"})
