"""AdalFlow ``Prompt``: replay ``peers/cases/adalflow`` through ``JinjaPrompt``.

Case fields (all optional but ``id``): ``template`` (null = the default template),
``prompt_kwargs`` (presets), ``update_prompt_kwargs`` (applied after construction), ``nested``
(``{name: {"template", "prompt_kwargs", "type"?, "nested"?}}`` or ``{name: "<template>"}``: a
prompt given as the keyword ``name`` of every call; ``"type": "Template"`` makes it a bare
``jinja2.Template``), ``call_kwargs`` (one call) or ``calls`` (a list of calls on one prompt),
``to_dict`` (also serialise, rebuild with ``from_dict`` and render the rebuilt prompt with
``call_kwargs``).

Result fields, in this order: ``id``, ``variables`` (sorted; absent when construction failed),
``output`` / ``outputs`` / ``error`` (``{"type", "message"}``, message = first line), then with
``to_dict``: ``to_dict``, ``from_dict_variables``, ``from_dict_output``.

``--mode compat`` replays with ``compat="adalflow"``: every case must match. ``--mode default``
replays strictly; a case whose result differs is reported *diverged* (not failed) when the
compat replay matches the reference and the case leaves template variables unset: the only
difference between the two modes is then the unset-variable policy (AdalFlow: ``None``,
printed as ``None``; ours: an error naming the variable, see docs/divergences.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from conformance_suites._common import Outcome, diff, outcome, peer_cases
from prompt_compiler.errors import MissingFieldError, PromptCompilerError
from prompt_compiler.template.jinja_prompt import JinjaPrompt

COMPAT = "adalflow"


@dataclass(frozen=True)
class Replay:
    """One case replayed: the result in the golden shape, and what it left unset."""

    result: dict[str, Any]
    unset: tuple[str, ...]
    error: BaseException | None = None


def run(cases: Path, golden: Path, mode: str) -> Iterator[Outcome]:
    """Every case of every ``*.json`` file in ``cases`` against the same-named golden file."""
    for item in peer_cases(cases, golden):
        yield item if isinstance(item, Outcome) else check(item[1], item[2], mode)


def check(case: dict[str, Any], expected: dict[str, Any], mode: str) -> Outcome:
    """Compare one case with its reference result in ``mode`` (``compat`` or ``default``)."""
    case_id = str(case.get("id"))
    compat = replay(case, COMPAT)
    compat_diffs = diff(expected, compat.result)
    if mode == "compat":
        return outcome(case_id, compat_diffs)
    strict = replay(case, None)
    diffs = diff(expected, strict.result)
    if diffs and not compat_diffs and strict.unset:
        return Outcome(case_id, "diverged", (_divergence(strict),))
    return outcome(case_id, diffs)


def _divergence(strict: Replay) -> str:
    names = ", ".join(strict.unset)
    head = f"unset template variable(s) {names}: AdalFlow fills them with None"
    if isinstance(strict.error, MissingFieldError):
        return f"{head}; default mode raises MissingFieldError: {strict.error.message}"
    return f"{head}; default mode leaves them undefined (guards skip them, default() applies)"


def replay(case: dict[str, Any], compat: str | None) -> Replay:
    """Run one case through ``JinjaPrompt`` in the given mode."""
    result: dict[str, Any] = {"id": case.get("id")}
    unset: set[str] = set()
    try:
        prompt = JinjaPrompt(case.get("template"), case.get("prompt_kwargs") or {}, compat=compat)
    except Exception as exc:  # errors are data
        result["error"] = error_dict(exc)
        return Replay(result, (), exc)
    if case.get("update_prompt_kwargs"):
        prompt.update_prompt_kwargs(**case["update_prompt_kwargs"])
    result["variables"] = list(prompt.variables)

    failure: BaseException | None = None
    nested: dict[str, Any] = {}
    call_kwargs = case.get("call_kwargs") or {}
    try:
        specs = case.get("nested") or {}
        nested = {name: build_nested(spec, compat) for name, spec in specs.items()}
        calls = case["calls"] if "calls" in case else [call_kwargs]
        outputs = []
        for kwargs in calls:
            full = {**(kwargs or {}), **nested}
            unset.update(missing(prompt, full))
            outputs.append(prompt.call(**full))
        if "calls" in case:
            result["outputs"] = outputs
        else:
            result["output"] = outputs[0]
    except Exception as exc:
        failure = exc
        result["error"] = error_dict(exc)

    if case.get("to_dict"):
        data = prompt.to_dict()
        result["to_dict"] = json.loads(json.dumps(data, default=str))  # tuples -> lists
        try:
            rebuilt = JinjaPrompt.from_dict(data, compat=compat)
            result["from_dict_variables"] = list(rebuilt.variables)
            result["from_dict_output"] = rebuilt.call(**{**call_kwargs, **nested})
        except Exception as exc:
            result["from_dict_output"] = {"error": error_dict(exc)}
            failure = failure or exc
    return Replay(result, tuple(sorted(unset)), failure)


def build_nested(spec: Any, compat: str | None) -> JinjaPrompt | jinja2.Template:
    """A nested prompt from its case description."""
    if isinstance(spec, str):
        return JinjaPrompt(spec, compat=compat)
    if not isinstance(spec, dict):
        raise TypeError(f"nested prompt: expected a dict or a template string, got {spec!r}")
    if str(spec.get("type", "")).rsplit(".", 1)[-1] == "Template":
        return jinja2.Template(spec.get("template") or "")
    presets = dict(spec.get("prompt_kwargs") or {})
    for name, inner in (spec.get("nested") or {}).items():
        presets[name] = build_nested(inner, compat)
    return JinjaPrompt(spec.get("template"), presets, compat=compat)


def missing(prompt: JinjaPrompt, kwargs: dict[str, Any]) -> set[str]:
    """Template variables left unset by a call, in the prompt and in the prompts nested in it."""
    given = {**prompt.prompt_kwargs, **kwargs}
    plain = {k: v for k, v in given.items() if not isinstance(v, (JinjaPrompt, jinja2.Template))}
    names = set(prompt.missing_variables(**kwargs))
    for value in given.values():
        if isinstance(value, JinjaPrompt):
            names |= missing(value, plain)
    return names


def error_dict(exc: BaseException) -> dict[str, str]:
    """``{"type", "message"}`` as the reference records it (its exception when we reproduce one)."""
    if isinstance(exc, PromptCompilerError) and exc.reference is not None:
        kind, message = exc.reference
    else:
        kind, message = type(exc).__name__, str(exc)
    return {"type": kind, "message": message.splitlines()[0] if message else ""}
