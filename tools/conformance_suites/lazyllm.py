"""LazyLLM prompter suite: replays ``cases/lazyllm/*.json`` through prompt_compiler.prompters.

Each case builds a prompter (``prompter``, ``init``), applies ``model_configs`` through
``set_model_tokens``, then runs ``call`` (one ``generate_prompt``) or ``calls`` (several on the
same prompter) and ``get_response`` entries. Results are compared field by field with the
golden file of the same name.

Errors compare as ``{"type", "message"}``: a prompt_compiler error that reproduces a LazyLLM
error carries LazyLLM's own ``(type, message)`` as ``reference``; other exceptions compare by
their own type and first line. Python's signature errors (``X.generate_prompt() got an
unexpected keyword argument ...``) compare without the function's qualified name, which names
the implementing class.

A case whose output differs is reported ``diverged`` (not ``failed``) only when one of the
documented rules below holds for its *input*; docs/divergences.md explains each (L1...).
``mode`` is accepted for uniformity: both modes run the same behaviour.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from prompt_compiler.errors import PromptCompilerError
from prompt_compiler.prompters import AlpacaPrompter, ChatPrompter, InstructionPrompter
from prompt_compiler.prompters._instruction import SLOT_PATTERN, extra_keys_block

from ._common import Outcome, diff, outcome, peer_cases

PROMPTERS: dict[str, type[InstructionPrompter]] = {
    "AlpacaPrompter": AlpacaPrompter,
    "ChatPrompter": ChatPrompter,
}
RESULT_KEYS = ("output", "outputs", "error", "get_response")
_QUALNAME = re.compile(r"^[\w.<>]+\(\) ")


# -- running a case -----------------------------------------------------------------------


def error_record(exc: BaseException) -> dict[str, str]:
    """An exception as the golden files write it: ``{"type", "message"}``."""
    if isinstance(exc, PromptCompilerError) and exc.reference is not None:
        kind, message = exc.reference
    else:
        kind, message = type(exc).__name__, str(exc)
    message = message.split("\n")[0]
    if kind == "TypeError":
        message = _QUALNAME.sub("", message)
    return {"type": kind, "message": message}


def _normalize_errors(value: Any) -> Any:
    """Golden results with signature-error messages stripped of the qualified name."""
    if isinstance(value, list):
        return [_normalize_errors(v) for v in value]
    if isinstance(value, dict) and set(value) == {"error"}:
        return {"error": _normalize_errors(value["error"])}
    if isinstance(value, dict) and value.get("type") == "TypeError" and "message" in value:
        return {**value, "message": _QUALNAME.sub("", str(value["message"]))}
    return value


def _attempt(fn: Callable[[], Any]) -> tuple[Any, dict[str, str] | None]:
    try:
        return fn(), None
    except Exception as exc:  # every failure is data here
        return None, error_record(exc)


def run_case(case: Mapping[str, Any], golden: Mapping[str, Any]) -> dict[str, Any]:
    """What prompt_compiler produces for ``case``, shaped like its golden result."""
    actual: dict[str, Any] = {}

    def build() -> InstructionPrompter:
        cls = PROMPTERS[case["prompter"]]
        prompter = cls(**dict(case.get("init") or {}))
        if case.get("model_configs"):
            prompter.set_model_tokens(**case["model_configs"])
        return prompter

    prompter, error = _attempt(build)
    if error is None and "call" in case:
        actual["output"], error = _attempt(partial(prompter.generate_prompt, **case["call"]))
    if error is None and "calls" in case:
        outputs = []
        for call in case["calls"]:
            value, call_error = _attempt(partial(prompter.generate_prompt, **call))
            outputs.append({"error": call_error} if call_error else value)
            if call_error and "outputs" not in golden:
                error = call_error
                break
        actual["outputs"] = outputs
    if error is None and "get_response" in case:
        responses = []
        for entry in case["get_response"]:
            value, resp_error = _attempt(
                partial(prompter.get_response, entry["output"], entry.get("input")))
            responses.append({"error": resp_error} if resp_error else value)
        actual["get_response"] = responses
    if error is not None:
        return {"error": error}
    return actual


# -- documented divergences (rules over the case input) ------------------------------------


def _instruction_texts(case: Mapping[str, Any]) -> tuple[str, str, bool]:
    """``(system text, user text, is_dict)`` of the case's instruction, extra keys included."""
    init = case.get("init") or {}
    instruction = init.get("instruction")
    keys = init.get("extra_keys", init.get("extro_keys"))
    block = extra_keys_block([keys] if isinstance(keys, str) else (keys or []))
    if isinstance(instruction, dict):
        user = str(instruction.get("user") or "") + block
        return str(instruction.get("system") or ""), user, True
    return f"{instruction or ''}\n{block}", "", False


def _calls(case: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [case["call"]] if "call" in case else list(case.get("calls") or [])


def _histories(case: Mapping[str, Any], call: Mapping[str, Any]) -> list[Any]:
    return list((case.get("init") or {}).get("history") or []) + list(call.get("history") or [])


def _l1(case: Mapping[str, Any]) -> str | None:
    init = case.get("init") or {}
    keys = init.get("extra_keys") or init.get("extro_keys")
    if isinstance(init.get("instruction"), dict) and keys:
        return "L1: dict instruction with extra keys: 0.4.1 drops the extra-keys block; we keep it"
    return None


def _l2(case: Mapping[str, Any]) -> str | None:
    system, user, _ = _instruction_texts(case)
    slots = list(dict.fromkeys(SLOT_PATTERN.findall(system + user)))
    for call in _calls(case):
        value = call.get("input")
        if isinstance(value, (str, int)) and len(slots) == 1:
            try:
                system.format(**{slots[0]: value}), user.format(**{slots[0]: value})
            except (KeyError, IndexError, ValueError, AttributeError):
                return ("L2: str input with literal braces in the instruction: 0.4.1's "
                        "str.format raises; we fill the slot and keep the braces")
    return None


def _l3(case: Mapping[str, Any]) -> str | None:
    for call in _calls(case):
        if call.get("return_dict"):
            continue
        items = _histories(case, call)
        kinds = {"dict" if isinstance(i, dict) else "pair" for i in items}
        if len(kinds) > 1:
            return ("L3: text history mixing pairs and dicts: 0.4.1 garbles or raises; "
                    "we render each item")
        for item in items:
            if isinstance(item, list) and (len(item) < 2 or None in item):
                return "L3: text history with a short pair or a null: 0.4.1 raises or writes None"
            if isinstance(item, dict) and (None in item.values() or item.get("role") not in
                                           ("user", "assistant", "tool")):
                return ("L3/L4: text history with a null field or a system/other role: 0.4.1 "
                        "writes None or drops the turn; we write '' / the system turn, or raise")
    return None


def _l5(case: Mapping[str, Any]) -> str | None:
    init = case.get("init") or {}
    if case.get("prompter") == "ChatPrompter" and not init.get("instruction") and (
            init.get("extra_keys") or init.get("extro_keys")):
        return "L5: ChatPrompter without instruction but with extra keys: 0.4.1 drops the block"
    return None


def _input_dicts(case: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for call in _calls(case):
        if isinstance(call.get("input"), dict):
            yield call["input"]


def _l6_to_l8(case: Mapping[str, Any]) -> str | None:
    system, user, _ = _instruction_texts(case)
    slots = set(SLOT_PATTERN.findall(system + user))
    for value in _input_dicts(case):
        rest = set(value) - slots
        if len(rest) > 1 and {"role", "content"} <= rest:
            return ("L6: a chat message as input: 0.4.1 rejects its keys; "
                    "we take it as the user turn")
        filled = [v for k, v in value.items() if k in slots]
        if any(not isinstance(v, str) for v in filled):
            return "L7: a non-str slot value: 0.4.1's str.replace raises; we insert str(value)"
        if any(SLOT_PATTERN.search(v) and set(SLOT_PATTERN.findall(v)) & slots for v in filled):
            return ("L8: a slot value containing another slot: 0.4.1 substitutes again in "
                    "hash order; we substitute once")
    return None


def _l9(case: Mapping[str, Any]) -> str | None:
    instruction = (case.get("init") or {}).get("instruction")
    if isinstance(instruction, dict) and set(instruction) - {"system", "user"}:
        return "L9: dict instruction with keys other than system/user: 0.4.1 ignores them; we raise"
    if case.get("prompter") == "AlpacaPrompter" and instruction is None:
        return "L10: AlpacaPrompter without instruction: we write '' where 0.4.1 may write None"
    return None


def _l11(case: Mapping[str, Any]) -> str | None:
    tokens = case.get("model_configs") or {}
    chat = case.get("prompter") == "ChatPrompter"
    if chat and case.get("get_response") and not tokens.get("soa"):
        return "L11: get_response without an soa token: 0.4.1 may split on ''; we return the output"
    return None


RULES: tuple[Callable[[Mapping[str, Any]], str | None], ...] = (
    _l1, _l2, _l3, _l5, _l6_to_l8, _l9, _l11)


def divergence_reasons(case: Mapping[str, Any]) -> list[str]:
    """The documented divergences whose condition holds for this case's input."""
    return [reason for rule in RULES if (reason := rule(case))]


# -- suite entry point -----------------------------------------------------------------------


def check_case(case: Mapping[str, Any], golden: Mapping[str, Any]) -> Outcome:
    """Run one case and compare it with its golden result."""
    expected = {k: _normalize_errors(v) if k != "output" else v
                for k, v in golden.items() if k in RESULT_KEYS}
    try:
        actual = run_case(case, golden)
    except Exception as exc:  # a bug in the suite or the library: report, keep going
        return Outcome(case["id"], "failed", (f"crashed: {type(exc).__name__}: {exc}",))
    diffs = diff(expected, actual)
    if not diffs:
        return outcome(case["id"], [])
    reasons = divergence_reasons(case)
    if reasons:
        return Outcome(case["id"], "diverged", tuple(reasons))
    return outcome(case["id"], diffs)


def run(cases: Path, golden: Path, mode: str) -> Iterator[Outcome]:
    """Every case of every ``*.json`` file in ``cases`` against ``golden``."""
    del mode  # the prompters have a single behaviour; see the module docstring
    for item in peer_cases(cases, golden):
        yield item if isinstance(item, Outcome) else check_case(item[1], item[2])