"""The emit stage: records -> JSON lines, written atomically, plus a manifest of hashes.

Record schema (one JSON object per line of ``OUT/<model>/<dataset>.jsonl``)::

    {"dataset", "model", "mode": "gen"|"ppl"|"clp"|"chat"|"ll"|"loss", "index", "row",
     "label" (ppl, ll), "turn" (chat; multiround gen), "continuation" (ll), "ice_ids",
     "dropped_ice_ids", "token_len_before", "token_len_after" (only when max_seq_len dropped
     examples or the prompt is over it), "over_limit": true (only then), "prompt",
     "prompt_sha256", "input_ids" (with --tokenize), "mask_length" (ppl, clp, ll records
     with --tokenize), "max_out_len", "stop", "stop_token_ids", "gold",
     "spans" (with --spans: see :mod:`prompt_compiler.inspection.spans`)}

``index`` counts the compiled test rows (it restarts at 0 under ``test_range``); ``row`` is
the row's id in the dataset's test split, stable under ``test_range``, ``--limit``,
``--only`` and ``--jobs``. ``max_out_len``, ``stop`` and ``stop_token_ids`` are the
generation settings (:mod:`prompt_compiler.model.generation`); ``input_ids`` and
``mask_length`` are described in :mod:`prompt_compiler.model.token_ids`.
``prompt`` is exactly what the model receives (a string, or a list of messages);
``prompt_sha256`` hashes its UTF-8 text (a string) or its canonical JSON (a list).
The truncation report: ``dropped_ice_ids`` are the retrieved example ids that ``max_seq_len``
removed (from the end), ``token_len_before`` / ``token_len_after`` the prompt's tokens with
all retrieved examples and as written; ``over_limit`` marks a prompt still over the limit.

Bytes of a line (:func:`record_bytes`): the object in the key order above, as Python's
``json.dumps(obj, ensure_ascii=False)`` writes it (``", "`` and ``": "`` separators,
non-ASCII as UTF-8, control characters as ``\\n``/``\\u001f`` escapes), then ``\\n``. Strings
are encoded with orjson, whose escaping is identical. Text that is not valid Unicode
(a lone surrogate) cannot be written as UTF-8 and is a :class:`~.errors.DataError`.
The CLI builds the same bytes for planned gen and ppl jobs without Record objects
(:mod:`prompt_compiler.plan.lines`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import orjson

from ..assemble.base import SPANS_UNKNOWN, Record
from ..errors import DataError, LimitError
from ..promptlist import canonical_prompt, json_default, prompt_sha256
from ..safety import limits
from ..safety.values import is_finite_json

SCORED = frozenset({"ppl", "clp", "ll"})
"""Record modes scored on the prompt's tokens: with ids they carry ``mask_length``."""

__all__ = ["SCORED", "prompt_sha256", "record_bytes", "record_json", "sha256_file"]


def _json_value(value: Any) -> bytes:
    """One value as ``json.dumps(value, ensure_ascii=False)`` writes it, fast for str and int."""
    kind = type(value)
    if kind is str:
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            raise DataError(f"the text {value[:60]!r} holds a lone surrogate, which has no "
                            "UTF-8 form") from None
    if kind is int:
        return str(value).encode()
    if kind is list and all(type(v) is int for v in value):
        return repr(value).encode()  # "[1, 2]": a list of ints' repr is its JSON
    if value is None:
        return b"null"
    if kind is bool:
        return b"true" if value else b"false"
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except ValueError:  # strict JSON: no NaN/Infinity token is ever written
        raise DataError(f"the value {value!r:.60} holds NaN or Infinity, which strict JSON "
                        "cannot write") from None
    except UnicodeEncodeError:
        raise DataError(f"the value {value!r:.60} holds a lone surrogate, which has no "
                        "UTF-8 form") from None


_KEYS: dict[str, bytes] = {}


def record_bytes(obj: dict[str, Any]) -> bytes:
    """The JSON line of one record object (see the module docstring), newline included."""
    items = []
    try:
        for key, value in obj.items():
            k = _KEYS.get(key)
            if k is None:
                k = _KEYS[key] = _json_value(key) + b": "
            items.append(k + (orjson.dumps(value) if type(value) is str else _json_value(value)))
    except orjson.JSONEncodeError:
        for value in obj.values():
            _json_value(value)  # raises the DataError naming the text
        raise
    return b"{" + b", ".join(items) + b"}\n"


def record_json(rec: Record) -> dict[str, Any]:
    """The JSON object written for one record (see the module docstring).

    Every value of it has a strict JSON form in UTF-8, whichever serialiser writes it.

    Raises:
        DataError: the prompt or label holds NaN/Infinity or a lone surrogate (row named).
    """
    given = rec.prompt
    try:
        text = given if isinstance(given, str) else canonical_prompt(given)
    except ValueError as exc:  # NaN/Infinity inside a message list
        raise _unwritable(rec, "prompt", exc) from None
    limit = limits.current().prompt_chars
    if len(text) > limit:  # the final check; templates are bounded as they render
        raise LimitError(f"the prompt has {len(text):,} characters; "
                         + limits.describe("prompt_chars", limit, "characters"),
                         dataset=rec.dataset, model=rec.model, row=rec.index)
    prompt = text if isinstance(given, str) else json.loads(text)
    try:
        digest = prompt_sha256(prompt)
    except DataError as err:
        raise err.located(dataset=rec.dataset, model=rec.model, row=rec.index) from None
    out: dict[str, Any] = {"dataset": rec.dataset, "model": rec.model, "mode": rec.mode,
                           "index": rec.index, "row": rec.row}
    if rec.mode in ("ppl", "ll"):
        _check_strict(rec, "label", rec.label)
        out["label"] = rec.label
    if rec.mode == "chat" or rec.turn is not None:
        out["turn"] = rec.turn
    if rec.mode == "ll":
        _check_strict(rec, "continuation", rec.extra.get("continuation"))
        out["continuation"] = rec.extra.get("continuation")
    out["ice_ids"] = list(rec.ice_ids)
    dropped = list(rec.retrieved_ids[len(rec.ice_ids):])
    if dropped or rec.over_limit:  # the truncation report
        out["dropped_ice_ids"] = dropped
        out["token_len_before"] = rec.token_len_full
        out["token_len_after"] = rec.token_len
    if rec.over_limit:
        out["over_limit"] = True
    out["prompt"] = prompt
    out["prompt_sha256"] = digest
    if rec.input_ids is not None:
        out["input_ids"] = list(rec.input_ids)
        if rec.mode in SCORED:
            out["mask_length"] = rec.mask_length
    out["max_out_len"] = rec.max_out_len
    out["stop"] = list(rec.stop)
    out["stop_token_ids"] = list(rec.stop_token_ids)
    out["gold"] = _plain(rec, rec.gold)
    if rec.spans is not None:
        out["spans"] = None if rec.spans is SPANS_UNKNOWN else rec.spans
    return out


def _check_strict(rec: Record, name: str, value: Any) -> None:
    """Refuse a record field that strict JSON in UTF-8 cannot hold."""
    if isinstance(value, (int, bool)) or value is None:
        return
    if not is_finite_json(value):
        raise _unwritable(rec, name, ValueError("NaN or Infinity"))
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False, default=json_default).encode("utf-8")
    except (ValueError, TypeError, UnicodeEncodeError) as exc:
        raise _unwritable(rec, name, exc) from None


def _unwritable(rec: Record, name: str, exc: BaseException) -> DataError:
    if isinstance(exc, UnicodeEncodeError):
        bad = exc.object[exc.start:exc.end]
        why = f"holds a lone surrogate {bad!r}, which is not Unicode text (not writable as UTF-8)"
    elif "Out of range float" in str(exc) or "NaN" in str(exc):
        why = "holds NaN or Infinity, which strict JSON cannot write"
    else:
        why = f"cannot be written as JSON: {exc}"
    return DataError(f"the {name} of this record {why}", dataset=rec.dataset, model=rec.model,
                     row=rec.index, hint="fix the value in the data or the config")


def _plain(rec: Record, value: Any) -> Any:
    """A JSON-ready copy of a data value (tuples as lists; other types by their ``str``)."""
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False, default=str))
    except ValueError as exc:
        raise _unwritable(rec, "gold answer", exc) from None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
