"""OpenCompass 0.5.4 cases: compile each case through the public API and compare.

Every field present in a reference output is compared: retrieved ids, the
intermediate PromptList, the final prompt, chat messages, PPL labels and per-label
prompts, token counts, the normalizing split, and errors (an expected error must be
raised as a ``PromptCompilerError`` whose ``reference`` names OpenCompass's exception).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import prompt_compiler as pc

from ._common import Outcome, diff, load_json, outcome

ORACLE_REPLY = "ORACLE_REPLY"


def decode(value: Any) -> Any:
    """Undo the case format's ``{"__items__": [[key, value], ...]}`` encoding."""
    if isinstance(value, dict):
        if set(value) == {"__items__"}:
            return {decode(k): decode(v) for k, v in value["__items__"]}
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def to_json(value: Any) -> Any:
    """A compiled value in the reference files' JSON shape."""
    if isinstance(value, pc.PromptList):
        return value.to_list()
    if isinstance(value, list):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


def _error_diffs(expected: dict[str, Any] | None, err: BaseException | None) -> list[str]:
    if expected is None:
        return [f"unexpected error: {type(err).__name__}: {err}"] if err else []
    if err is None:
        return [f"expected OpenCompass's {expected['type']}: {expected['message']!r}, but compiled fine"]
    ref = getattr(err, "reference", None)
    if not isinstance(err, pc.PromptCompilerError):
        return [f"expected {expected['type']}, got a non-library {type(err).__name__}: {err}"]
    if ref is None:
        return [f"expected {expected['type']}: {expected['message']!r}; got {type(err).__name__} "
                f"without a reference: {err}"]
    out = []
    if ref[0] != expected["type"]:
        out.append(f"error type: expected {expected['type']}, got {ref[0]} ({err})")
    elif ref[1] != expected["message"]:
        out.append(f"error message: expected {expected['message']!r}, got {ref[1]!r}")
    return out


def _gen_rows(result: pc.CompiledDataset, golden_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for rec in result.records:
        row = {"index": rec.index, "ice_idx": list(rec.retrieved_ids),
               "intermediate": to_json(rec.intermediate), "prompt": to_json(rec.rendered)}
        if rec.chat_messages is not None:
            row["chat_messages"] = rec.chat_messages
        rows.append(row)
    return rows


def _clp_rows(result: pc.CompiledDataset) -> list[dict[str, Any]]:
    return [{"index": r.index, "prompt": to_json(r.rendered)} for r in result.records]


def _ppl_rows(result: pc.CompiledDataset) -> list[dict[str, Any]]:
    rows: dict[int, dict[str, Any]] = {}
    for rec in result.records:
        row = rows.setdefault(rec.index, {"index": rec.index, "ice_idx_initial": list(rec.retrieved_ids),
                                          "per_label": []})
        entry = {"label": rec.label, "ice_idx": list(rec.ice_ids),
                 "intermediate": to_json(rec.intermediate), "prompt": to_json(rec.rendered),
                 "token_len": rec.token_len}
        entry.update(to_json(dict(rec.extra)))
        if rec.chat_messages is not None:
            entry["chat_messages"] = rec.chat_messages
        row["per_label"].append(entry)
    return list(rows.values())


def _chat_rows(result: pc.CompiledDataset) -> list[dict[str, Any]]:
    rows: dict[int, dict[str, Any]] = {}
    for rec in result.records:
        row = rows.setdefault(rec.index, {"index": rec.index, "chat": rec.extra["chat"], "prompts": [],
                                          "origin_prompt": rec.extra.get("origin_prompt")})
        row["prompts"].append(to_json(rec.rendered))
        if rec.chat_messages is not None:
            row.setdefault("chat_messages", []).append(rec.chat_messages)
    return list(rows.values())


def _by_label(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-label entries keyed by label (for label orders that came from a Python set)."""
    return [{**r, "per_label": sorted(r["per_label"], key=lambda e: repr(e["label"]))} for r in rows]


def _select(expected: Any, actual: Any) -> Any:
    """``actual`` restricted to the keys ``expected`` has (recursively, for dict rows)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return {k: _select(expected[k], actual[k]) if k in actual else actual.get(k)
                for k in expected if k in actual}
    if isinstance(expected, list) and isinstance(actual, list) and all(isinstance(e, dict) for e in expected):
        return [_select(e, a) for e, a in zip(expected, actual)] + actual[len(expected):]
    return actual


def check_case(case: dict[str, Any], golden: dict[str, Any], mode: str) -> list[str]:
    """The differences between compiling ``case`` and its reference output."""
    case, golden = decode(case), decode(golden)
    compiler = pc.Compiler(mode="opencompass" if mode == "compat" else "default")
    result: pc.CompiledDataset | None = None
    err: BaseException | None = None
    try:
        result = compiler.compile(case["dataset"], case["model"], options=case.get("options") or {},
                                  reply=lambda _prompt: ORACLE_REPLY)
    except pc.PromptCompilerError as exc:
        err = exc
    if golden.get("status") == "error" or err is not None:
        return _error_diffs(golden.get("error") if golden.get("status") == "error" else None, err)
    assert result is not None
    diffs: list[str] = []
    kind = golden.get("inferencer")
    expected_rows = golden.get("rows", [])
    if kind == "GenInferencer":
        actual_rows = _gen_rows(result, expected_rows)
    elif kind == "PPLInferencer":
        actual_rows = _ppl_rows(result)
        if "labels" in golden:
            exp_labels, act_labels = golden["labels"], list(result.labels or ())
            if golden.get("labels_order_from_set"):
                exp_labels, act_labels = sorted(exp_labels, key=repr), sorted(act_labels, key=repr)
                expected_rows, actual_rows = _by_label(expected_rows), _by_label(actual_rows)
            diffs += diff(exp_labels, act_labels, "labels")
        if "inference_error" in golden:
            exp = golden["inference_error"]
            act = result.reference_failure
            exp_t = (exp["type"], exp["message"]) if exp else None
            if exp_t != act:
                diffs.append(f"inference_error: expected {exp_t}, got {act}")
    elif kind == "CLPInferencer":
        actual_rows = _clp_rows(result)
    elif kind == "ChatInferencer":
        actual_rows = _chat_rows(result)
        if "infer_mode" in golden and golden["infer_mode"] != result.infer_mode:
            diffs.append(f"infer_mode: expected {golden['infer_mode']!r}, got {result.infer_mode!r}")
    else:
        return [f"unknown inferencer in reference: {kind!r}"]
    diffs += diff(expected_rows, _select(expected_rows, actual_rows), "rows")
    return diffs


def run(cases: Path, golden: Path, mode: str) -> Iterator[Outcome]:
    for case_file in sorted(cases.glob("*.json")):
        ref_file = golden / case_file.name
        case_id = case_file.stem
        if not ref_file.exists():
            yield Outcome(case_id, "failed", (f"no reference file {ref_file}",))
            continue
        try:
            diffs = check_case(load_json(case_file), load_json(ref_file), mode)
        except Exception as exc:  # a bug, not a case failure: show it in full
            import traceback

            diffs = ["crashed: " + "".join(traceback.format_exception(exc)).rstrip()]
        yield outcome(case_id, diffs)
