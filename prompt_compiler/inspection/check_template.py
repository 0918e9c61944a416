"""Does a model's meta template render what its own chat template renders?

A hand-written meta template is a transcription of a model's chat format; one wrong
newline moves scores. :func:`check_template` renders a fixed set of probe conversations
(:data:`PROBES`: user only; system + user; multi-turn; few-shot as turns) both ways --
through the model's meta template as a compiled prompt would be, and through the chat
template as ``apply_chat_template(tokenize=False)`` would -- with a generation prompt
(gen mode) and without one (the conversation ends with a reply; ppl mode), and reports
per probe whether the two texts are identical or where they first differ.

For API and chat-template models the meta template yields messages; they are rendered by
the same chat template, so the check shows what the role mapping changes. The model's
``system_role`` applies to both sides.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import PromptCompilerWarning
from ..policy import Policy
from ..promptlist import Marker, PromptList, RoleItem

__all__ = ["PROBES", "Probe", "ProbeResult", "check_template", "first_difference"]

_CONTEXT_BEFORE = 20
_CONTEXT_AFTER = 30


@dataclass(frozen=True, slots=True)
class Probe:
    """One probe conversation; ``reply`` ends it when there is no generation prompt."""

    name: str
    messages: tuple[Mapping[str, str], ...]
    reply: str


PROBES: tuple[Probe, ...] = (
    Probe("user", ({"role": "user", "content": "Hello!"},), "Hi there."),
    Probe("system-user", ({"role": "system", "content": "You are terse."},
                          {"role": "user", "content": "Hello!"}), "Hi."),
    Probe("multi-turn", ({"role": "user", "content": "Hi."},
                         {"role": "assistant", "content": "Hello! How can I help?"},
                         {"role": "user", "content": "What is 2+2?"}), "4"),
    Probe("few-shot", ({"role": "user", "content": "Q: 1+1"},
                       {"role": "assistant", "content": "A: 2"},
                       {"role": "user", "content": "Q: 2+2"},
                       {"role": "assistant", "content": "A: 4"},
                       {"role": "user", "content": "Q: 3+3"}), "A: 6"),
)
"""The fixed probe conversations."""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """The outcome of one probe, rendered with or without a generation prompt."""

    probe: str
    generation_prompt: bool
    status: str
    """``identical``, ``differ``, or ``rejected`` (the chat template raised for this
    conversation, e.g. a model without a system role: nothing to compare)."""
    meta_text: str | None = None
    chat_text: str | None = None
    position: int | None = None
    """The first differing character (``differ`` only)."""
    byte: int | None = None
    """The same position in UTF-8 bytes."""
    note: str | None = None
    """The chat template's own error message (``rejected``)."""

    @property
    def agrees(self) -> bool:
        return self.status != "differ"

    def excerpts(self) -> tuple[str, str]:
        """Both texts around the first difference."""
        assert self.position is not None and self.meta_text is not None
        assert self.chat_text is not None
        lo = max(0, self.position - _CONTEXT_BEFORE)
        hi = self.position + _CONTEXT_AFTER
        return self.meta_text[lo:hi], self.chat_text[lo:hi]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"probe": self.probe, "generation_prompt": self.generation_prompt,
                               "status": self.status, "position": self.position, "byte": self.byte}
        if self.position is not None:
            out["meta_excerpt"], out["chat_excerpt"] = self.excerpts()
        out.update(meta_text=self.meta_text, chat_text=self.chat_text, note=self.note)
        return out


def first_difference(a: str, b: str) -> int | None:
    """The first index where ``a`` and ``b`` differ (the shorter length if one is a prefix)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def probe_prompt(messages: Sequence[Mapping[str, str]]) -> PromptList:
    """A probe as a compiled prompt: system messages in ``begin`` (``fallback_role='HUMAN'``,
    the OpenCompass convention), the turns in ``round``."""
    items: list[Any] = []
    system = [m for m in messages if m["role"] == "system"]
    if system:
        items.append(Marker("begin", "begin"))
        items += [RoleItem.of("SYSTEM", m["content"], fallback_role="HUMAN") for m in system]
        items.append(Marker("begin", "end"))
    items.append(Marker("round", "begin"))
    roles = {"user": "HUMAN", "assistant": "BOT"}
    items += [RoleItem.of(roles[m["role"]], m["content"])
              for m in messages if m["role"] != "system"]
    items.append(Marker("round", "end"))
    return PromptList(tuple(items))


def _meta_text(model: Any, messages: Sequence[Mapping[str, str]], gen: bool, chat: Any) -> str:
    from ..render import to_chat_messages

    rendered = model.render(probe_prompt(messages), "gen" if gen else "ppl", Policy.of("default"))
    if isinstance(rendered, str):
        return rendered
    return str(chat.render(to_chat_messages(rendered, pass_openai=True), add_generation_prompt=gen))


def check_template(model: Any, chat_template: Any, *, strip_bos: bool = False,
                   probes: Sequence[Probe] = PROBES) -> list[ProbeResult]:
    """Render every probe both ways and compare.

    Args:
        model: A :class:`~prompt_compiler.model.spec.Model` (its meta template and system_role).
        chat_template: A :class:`~prompt_compiler.render.chat_template.ChatTemplate`.
        strip_bos: Remove a leading ``bos_token`` from the chat template's text (meta
            templates leave BOS to the tokenizer).
    """
    from ..model.system_role import apply_system_role
    from ..render.chat_template import RaisedTemplateError

    bos = chat_template.special_tokens.get("bos_token") if strip_bos else None
    out = []
    for probe in probes:
        for gen in (True, False):
            messages = list(probe.messages)
            if not gen:
                messages.append({"role": "assistant", "content": probe.reply})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PromptCompilerWarning)
                try:
                    chat_messages = apply_system_role([dict(m) for m in messages],
                                                      model.system_role, model=model.abbr)
                    chat = chat_template.render(chat_messages, add_generation_prompt=gen)
                except RaisedTemplateError as err:  # the template's own raise_exception()
                    out.append(ProbeResult(probe.name, gen, "rejected", note=err.message))
                    continue
                meta = _meta_text(model, messages, gen, chat_template)
            if isinstance(bos, str) and bos and chat.startswith(bos) and not meta.startswith(bos):
                chat = chat[len(bos):]
            pos = first_difference(meta, chat)
            if pos is None:
                out.append(ProbeResult(probe.name, gen, "identical", meta, chat))
            else:
                out.append(ProbeResult(probe.name, gen, "differ", meta, chat, pos,
                                       len(meta[:pos].encode("utf-8"))))
    return out
