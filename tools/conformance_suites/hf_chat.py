"""Hugging Face chat templates: replay ``peers/cases/hf_chat`` through ``ChatTemplate``.

Case fields: ``id``, ``chat_template`` (text, or a list of ``{"name", "template"}``),
``messages``, and optionally ``add_generation_prompt``, ``continue_final_message`` (bool or
field name), ``tools``, ``documents``, ``special_tokens``, ``extra`` (more template
variables), ``chat_template_name`` (a named template) and ``now`` (ISO date/time pinned for
``strftime_now``). The reference tokenizer carried ``<s>``/``</s>`` as bos/eos unless a
case gives its own (see ``REFERENCE_TOKENIZER_TOKENS``). The reference is
``transformers.apply_chat_template(tokenize=False)``: ``output`` must match byte for byte;
an ``error`` must be met by an error of the same kind (and, for errors the template or
jinja raised, the same type name and first message line).
Both modes compare the same way: the target is byte-identical output.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from conformance_suites._common import Outcome, diff, outcome, peer_cases
from prompt_compiler.errors import PromptCompilerError
from prompt_compiler.render.chat_template import ChatTemplate

# The reference tokenizer had these tokens even where a case's special_tokens is empty or
# absent (e.g. axolotl's alpaca template renders "<s>"..."</s>" with special_tokens {});
# a case's own values override them.
REFERENCE_TOKENIZER_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


def run(cases: Path, golden: Path, mode: str) -> Iterator[Outcome]:
    """Every case of every ``*.json`` file in ``cases`` against the same-named golden file."""
    del mode  # byte-identical output is the target in both modes
    for item in peer_cases(cases, golden):
        if isinstance(item, Outcome):
            yield item
        else:
            _, case, expected = item
            yield outcome(str(case.get("id")), _compare(expected, *_render_case(case)))


def _render_case(case: dict[str, Any]) -> tuple[str | None, BaseException | None]:
    """The rendered text, or the exception the renderer raised (never both)."""
    try:
        now = datetime.fromisoformat(case["now"]) if case.get("now") else None
        source = case["chat_template"]
        special_tokens = {**REFERENCE_TOKENIZER_TOKENS, **(case.get("special_tokens") or {})}
        if isinstance(source, str):
            template = ChatTemplate.from_string(source, special_tokens=special_tokens, now=now)
        else:
            template = ChatTemplate.from_config({"chat_template": source},
                                                special_tokens=special_tokens, now=now)
        text = template.render(
            case["messages"],
            add_generation_prompt=bool(case.get("add_generation_prompt", False)),
            continue_final_message=case.get("continue_final_message") or False,
            tools=case.get("tools"),
            documents=case.get("documents"),
            template_name=case.get("chat_template_name"),
            **(case.get("extra") or {}),
        )
        return text, None
    except PromptCompilerError as exc:
        return None, exc


def _compare(expected: dict[str, Any], text: str | None, error: BaseException | None) -> list[str]:
    if "output" in expected:
        if error is not None:
            raised = f"{type(error).__name__}: {error}"
            return [f"output: expected text, but the renderer raised {raised}"]
        return diff(expected["output"], text, "output")
    want = expected.get("error")
    if not isinstance(want, dict):
        return ["reference result has neither 'output' nor 'error'"]
    want_type, want_message = str(want.get("type")), _first_line(str(want.get("message", "")))
    if error is None:
        return [f"error: expected {want_type}: {want_message!r}, but rendering succeeded: {text!r}"]
    reference = getattr(error, "reference", None)
    if reference is not None:
        # The error reproduces one the template (or jinja) raised: same type, same words.
        out = []
        if reference[0] != want_type:
            out.append(f"error.type: expected {want_type}, got {reference[0]}")
        if _first_line(reference[1]) != want_message:
            got = _first_line(reference[1])
            out.append(f"error.message: expected {want_message!r}, got {got!r}")
        return out
    # One of transformers' own argument checks: our wording, same exception kind.
    kind = getattr(builtins, want_type, None)
    if isinstance(kind, type) and issubclass(kind, BaseException):
        if isinstance(error, kind):
            return []
        return [f"error: expected a {want_type}, got {type(error).__name__}: {error}"]
    return [f"error: expected {want_type}: {want_message!r}, got {type(error).__name__}: {error}"]


def _first_line(message: str) -> str:
    return message.splitlines()[0] if message else ""
