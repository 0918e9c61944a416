"""The emit stage: records -> JSON lines, written atomically, plus a manifest of hashes.

Record schema (one JSON object per line of ``OUT/<model>/<dataset>.jsonl``)::

    {"dataset", "model", "mode": "gen"|"ppl"|"clp"|"chat"|"ll"|"loss", "index", "row",
     "label" (ppl, ll), "turn" (chat; multiround gen), "continuation" (ll), "ice_ids",
     "dropped_ice_ids", "token_len_before", "token_len_after" (only when max_seq_len dropped
     examples or the prompt is over it), "over_limit": true (only then), "prompt",
     "prompt_sha256", "input_ids" (with --tokenize), "mask_length" (ppl, clp, ll records
     with --tokenize), "max_out_len", "stop", "stop_token_ids", "gold",
     "spans" (with --spans: see :mod:`prompt_compiler.assemble.spans`)}

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

__all__ = ["ABSENT", "SCORED", "SLOT", "TEXT_SLOT", "plain", "prompt_sha256", "record_bytes",
           "record_json", "record_object", "record_pieces", "sha256_file", "value_bytes"]


class _Slot:
    """A value a line's writer fills in later (:func:`record_pieces`)."""

    __slots__ = ("json",)

    def __init__(self, json_bytes: bytes) -> None:
        self.json = json_bytes


SLOT: Any = _Slot(b"\0")
"""A value filled in as JSON bytes (an int, a list, any JSON value)."""
TEXT_SLOT: Any = _Slot(b'"\0"')
"""A string filled in as its JSON-escaped text between the quotes the pieces keep."""
ABSENT: Any = object()
"""A field left out of the record (:func:`record_object`'s ``spans`` default)."""


def value_bytes(value: Any) -> bytes:
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
    if kind is _Slot:
        slot: bytes = value.json
        return slot
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
                k = _KEYS[key] = value_bytes(key) + b": "
            items.append(k + (orjson.dumps(value) if type(value) is str else value_bytes(value)))
    except orjson.JSONEncodeError:
        for value in obj.values():
            value_bytes(value)  # raises the DataError naming the text
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
    if rec.mode in ("ppl", "ll"):
        _check_strict(rec, "label", rec.label)
    if rec.mode == "ll":
        _check_strict(rec, "continuation", rec.extra.get("continuation"))
    return record_object(
        rec.dataset, rec.model, rec.mode, rec.index, rec.row, label=rec.label, turn=rec.turn,
        continuation=rec.extra.get("continuation"), ice_ids=list(rec.ice_ids),
        dropped=list(rec.retrieved_ids[len(rec.ice_ids):]), over_limit=rec.over_limit,
        token_len_before=rec.token_len_full, token_len_after=rec.token_len, prompt=prompt,
        prompt_sha256=digest, input_ids=None if rec.input_ids is None else list(rec.input_ids),
        mask_length=rec.mask_length, max_out_len=rec.max_out_len, stop=list(rec.stop),
        stop_token_ids=list(rec.stop_token_ids), gold=_plain(rec, rec.gold),
        spans=ABSENT if rec.spans is None else None if rec.spans is SPANS_UNKNOWN else rec.spans)


def record_object(dataset: str, model: str, mode: str, index: Any, row: Any, *, ice_ids: Any,
                  prompt: Any, prompt_sha256: Any, max_out_len: Any, stop: Any,
                  stop_token_ids: Any, gold: Any, label: Any = None, turn: Any = None,
                  continuation: Any = None, dropped: Any = (), over_limit: bool = False,
                  token_len_before: Any = None, token_len_after: Any = None,
                  input_ids: Any = None, mask_length: Any = None, spans: Any = ABSENT
                  ) -> dict[str, Any]:
    """One record's object: which fields a record of ``mode`` has, in their order (the one
    place of both; the module docstring). Values are written as given (a :data:`SLOT` or
    :data:`TEXT_SLOT` stands for one a line's writer fills in: :func:`record_pieces`)."""
    out: dict[str, Any] = {"dataset": dataset, "model": model, "mode": mode, "index": index,
                           "row": row}
    if mode in ("ppl", "ll"):
        out["label"] = label
    if mode == "chat" or turn is not None:
        out["turn"] = turn
    if mode == "ll":
        out["continuation"] = continuation
    out["ice_ids"] = ice_ids
    if dropped or over_limit:  # the truncation report
        out["dropped_ice_ids"] = dropped
        out["token_len_before"] = token_len_before
        out["token_len_after"] = token_len_after
    if over_limit:
        out["over_limit"] = True
    out["prompt"] = prompt
    out["prompt_sha256"] = prompt_sha256
    if input_ids is not None:
        out["input_ids"] = input_ids
        if mode in SCORED:
            out["mask_length"] = mask_length
    out["max_out_len"] = max_out_len
    out["stop"] = stop
    out["stop_token_ids"] = stop_token_ids
    out["gold"] = gold
    if spans is not ABSENT:
        out["spans"] = spans
    return out


def record_pieces(obj: dict[str, Any]) -> tuple[dict[str, bytes], bytes]:
    """The bytes of a record line around its slots (:data:`SLOT`, :data:`TEXT_SLOT`):
    ``(before, end)``, ``before[key]`` the bytes between the previous slot and the slot of
    ``key`` (a text slot's quotes included), ``end`` those after the last slot. A line is the
    pieces with each slot's JSON between them (a text slot's escaped text without quotes)."""
    keys = [key for key, value in obj.items() if type(value) is _Slot]
    parts = record_bytes(obj).split(b"\0")  # JSON text never holds a raw NUL
    return dict(zip(keys, parts, strict=False)), parts[-1]


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


def plain(value: Any) -> Any:
    """A JSON-ready copy of a data value (tuples as lists; other types by their ``str``).

    Raises:
        ValueError: it holds NaN or Infinity.
    """
    return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False, default=str))


def _plain(rec: Record, value: Any) -> Any:
    try:
        return plain(value)
    except ValueError as exc:
        raise _unwritable(rec, "gold answer", exc) from None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
