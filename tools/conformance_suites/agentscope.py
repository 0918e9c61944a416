"""AgentScope suite: replays peer cases through ``prompt_compiler.api_formats``.

Every ``*.json`` case file in ``--cases`` (a list of cases: ``wrapper``, ``model_name``,
``args``, optional ``kwargs``) is paired with the same-named golden file (AgentScope 0.0.5
results). For each case we call :func:`format_messages` with the format named by the
wrapper class, resolving relative paths against the peers folder (the nearest ancestor
of ``--cases`` holding ``fixtures/``) and substituting ``$PEERS_DIR`` both ways.

Compared fields:

* ``output``: exactly, with :func:`_common.diff` (key order included).
* ``error``: our exception must be an instance of a class named like the reference's
  type (``RenderError`` is a ``TypeError``), and every ``<class '...'>`` and quoted
  identifier of the reference message must occur in ours (the *meaning*: which type or
  name was wrong); the wording is ours.
* ``warnings``: reference messages are mapped to (kind, subject): skipped OpenAI image
  url (subject: the url), not a vision model (the model name), unsupported DashScope url
  (the guessed media type), defaulted role. Our :class:`FormatWarning` carries the same
  pair; the two lists must be equal in order and length.

Divergences (decided from the case's input, see docs/divergences.md):

* ``ollama_chat`` and a message whose ``url`` is a list: 0.0.5 puts that list as one
  nested item into ``images``; we list the urls flat. The case is ``diverged`` when our
  output equals the reference with ``images`` flattened, otherwise ``failed``.

``--mode`` makes no difference for this suite: there is a single behaviour.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conformance_suites._common import Outcome, diff, outcome, peer_cases
from prompt_compiler.api_formats import (
    DEFAULT_FORMATS,
    DEFAULT_ROLE,
    INVALID_IMAGE_URL,
    NOT_VISION_MODEL,
    UNSUPPORTED_URL,
    FormatWarning,
    format_messages,
)

PLACEHOLDER = "$PEERS_DIR"

# Reference (loguru) warning messages -> (kind, which group is the subject).
_REFERENCE_WARNINGS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"The url (.*) is not a valid image url for OpenAI Chat API, skipped\.", re.S),
     INVALID_IMAGE_URL),
    (re.compile(r"The model (.*) is not a vision model\. Skip the url in the message\.", re.S),
     NOT_VISION_MODEL),
    (re.compile(r"Skip unsupported url \((\w+)\), expect image or audio\."), UNSUPPORTED_URL),
    (re.compile(r"(?s).*\brole\b.*\bassistant\b.*"), DEFAULT_ROLE),
)

OLLAMA_NESTED_REASON = (
    "ollama_chat with a list-valued url: AgentScope 0.0.5 nests the list inside 'images', "
    "which the Ollama API cannot take; we list the urls flat "
    "(docs/divergences.md, 'Ollama chat: several urls in one message')"
)


def _peers_dir(cases: Path) -> Path:
    for folder in (cases.resolve(), *cases.resolve().parents):
        if (folder / "fixtures").is_dir():
            return folder
    return cases.resolve().parent.parent


def _substitute(value: Any, old: str, new: str) -> Any:
    """``value`` with ``old`` replaced by ``new`` in every string, recursively."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_substitute(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, old, new) for k, v in value.items()}
    return value


def _reference_signature(message: str) -> tuple[str, str | None]:
    for pattern, kind in _REFERENCE_WARNINGS:
        match = pattern.fullmatch(message)
        if match:
            return kind, (match.group(1) if match.groups() else None)
    return "unrecognised reference warning", message


def _our_signature(warning: Warning | str, peers: str) -> tuple[str, str | None]:
    if not isinstance(warning, FormatWarning):
        return f"unexpected {type(warning).__name__}", str(warning)
    subject = {INVALID_IMAGE_URL: warning.url, NOT_VISION_MODEL: warning.detail,
               UNSUPPORTED_URL: warning.detail}.get(warning.kind)
    return warning.kind, (None if subject is None else subject.replace(peers, PLACEHOLDER))


def _error_diffs(expected: dict[str, Any], exc: BaseException) -> list[str]:
    out: list[str] = []
    names = {cls.__name__ for cls in type(exc).__mro__}
    if expected.get("type") not in names:
        out.append(f"error.type: expected {expected.get('type')}, got {type(exc).__name__}: {exc}")
    text = str(exc)
    for token in re.findall(r"<class '[\w.]+'>|'[\w.]+'", expected.get("message", "")):
        if token not in text:
            out.append(f"error.message: {token} (from {expected.get('message')!r}) "
                       f"not in {text!r}")
    return out


def _has_list_url(args: Any) -> bool:
    if isinstance(args, list):
        return any(_has_list_url(a) for a in args)
    return isinstance(args, dict) and isinstance(args.get("url"), list)


def _flatten_images(output: Any) -> Any:
    """The reference output with each ``images`` list flattened one level."""
    if not isinstance(output, list):
        return output
    fixed = []
    for message in output:
        if isinstance(message, dict) and isinstance(message.get("images"), list):
            message = dict(message)
            flat = [u for item in message["images"]
                    for u in (item if isinstance(item, list) else [item])]
            if flat:
                message["images"] = flat
            else:
                del message["images"]
        fixed.append(message)
    return fixed


def _run_case(case: dict[str, Any], ref: dict[str, Any], peers: Path) -> Outcome:
    case_id = case["id"]
    try:
        fmt = DEFAULT_FORMATS.get(case["wrapper"])
    except LookupError as exc:
        return Outcome(case_id, "failed", (f"no format for wrapper: {exc}",))
    args = _substitute(case.get("args", []), PLACEHOLDER, str(peers))
    kwargs = case.get("kwargs") or {}
    result: Any = None
    error: BaseException | None = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = format_messages(fmt, *args, model_name=case.get("model_name", ""),
                                     base_dir=peers, **kwargs)
        except Exception as exc:  # noqa: BLE001 - errors are data here
            error = exc
    result = _substitute(result, str(peers), PLACEHOLDER)

    diffs: list[str] = []
    expected_output = ref.get("output")
    diverged = (
        fmt.name == "ollama_chat" and "output" in ref and _has_list_url(case.get("args"))
    )
    if diverged:
        expected_output = _flatten_images(expected_output)
    if "error" in ref:
        if error is None:
            diffs.append(f"error: expected {ref['error']}, got output {result!r}")
        else:
            diffs += _error_diffs(ref["error"], error)
    elif error is not None:
        diffs.append(f"output: expected a result, got {type(error).__name__}: {error}")
    else:
        diffs += diff(expected_output, result, "output")

    expected_warnings = [_reference_signature(m) for m in ref.get("warnings", [])]
    actual_warnings = [_our_signature(w.message, str(peers)) for w in caught]
    if expected_warnings != actual_warnings:
        diffs.append(f"warnings: expected {expected_warnings}, got {actual_warnings}")

    if diverged and not diffs:
        return Outcome(case_id, "diverged", (OLLAMA_NESTED_REASON,))
    return outcome(case_id, diffs)


def run(cases: Path, golden: Path, mode: str) -> Iterator[Outcome]:
    """Outcomes of every case of every case file (``mode`` is accepted and ignored)."""
    peers = _peers_dir(cases)
    for item in peer_cases(cases, golden):
        if isinstance(item, Outcome):
            yield item
            continue
        stem, case, ref = item
        got = _run_case(case, ref, peers)
        yield Outcome(f"{stem}/{case.get('id')}", got.status, got.details)