"""Shared pieces of the conformance suites: outcomes and readable structural diffs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_DIFFS = 12


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of one case: ``passed``, ``failed`` (with diffs) or ``diverged`` (with reason)."""

    case_id: str
    status: str
    details: tuple[str, ...] = field(default=())

    def report(self) -> str:
        head = {"failed": "FAIL", "diverged": "DIVERGED"}.get(self.status, self.status.upper())
        body = "".join(f"\n    {line}" for line in self.details[:MAX_DIFFS])
        more = len(self.details) - MAX_DIFFS
        if more > 0:
            body += f"\n    ... and {more} more differences"
        return f"{head} {self.case_id}{body}"


def outcome(case_id: str, diffs: list[str]) -> Outcome:
    return Outcome(case_id, "failed" if diffs else "passed", tuple(diffs))


def load_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def paired_files(cases: Path, golden: Path, pattern: str = "*.json") -> Iterator[tuple[Path, Path | None]]:
    """Each case file with its reference file of the same name (None when absent)."""
    for case_file in sorted(cases.glob(pattern)):
        ref = golden / case_file.relative_to(cases)
        yield case_file, (ref if ref.exists() else None)


def peer_cases(cases: Path, golden: Path) -> Iterator[Outcome | tuple[str, dict[str, Any], dict[str, Any]]]:
    """Each case of every peer case file with its reference result, as
    ``(file stem, case, result)``; a missing file or result yields a failed Outcome instead."""
    for case_file, ref_file in paired_files(cases, golden):
        case_list = load_json(case_file)
        if ref_file is None:
            yield Outcome(case_file.stem, "failed", (f"no reference file {case_file.name} in {golden}",))
            continue
        if not isinstance(case_list, list):
            yield Outcome(case_file.stem, "failed", (f"{case_file}: expected a JSON list of cases",))
            continue
        results = {r.get("id"): r for r in load_json(ref_file).get("results", []) if isinstance(r, dict)}
        for case in case_list:
            ref = results.get(case.get("id"))
            if ref is None:
                yield Outcome(str(case.get("id")), "failed", (f"no reference result in {ref_file.name}",))
            else:
                yield case_file.stem, case, ref


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 300 else text[:300] + "..."


def _first_difference(a: str, b: str) -> str:
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    lo = max(0, i - 40)
    return (
        f"strings differ at char {i} (lengths {len(a)} vs {len(b)}):\n"
        f"        expected ...{a[lo:i + 60]!r}\n"
        f"        actual   ...{b[lo:i + 60]!r}"
    )


def diff(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Differences between two JSON-like values, each as ``path: what differs``."""
    where = path or "<root>"
    if isinstance(expected, dict) and isinstance(actual, dict):
        out: list[str] = []
        for key in expected:
            if key not in actual:
                out.append(f"{where}.{key}: missing (expected {_show(expected[key])})")
            else:
                out.extend(diff(expected[key], actual[key], f"{path}.{key}" if path else str(key)))
        for key in actual:
            if key not in expected:
                out.append(f"{where}.{key}: unexpected {_show(actual[key])}")
        if not out and list(expected) != list(actual):
            out.append(f"{where}: key order {list(expected)} != {list(actual)}")
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        out = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            out.extend(diff(e, a, f"{path}[{i}]"))
        if len(expected) != len(actual):
            out.append(
                f"{where}: {len(expected)} items expected, {len(actual)} produced"
                + (f"; first extra {_show(actual[len(expected)])}" if len(actual) > len(expected) else
                   f"; first missing {_show(expected[len(actual)])}")
            )
        return out
    if isinstance(expected, str) and isinstance(actual, str):
        return [] if expected == actual else [f"{where}: {_first_difference(expected, actual)}"]
    if type(expected) is not type(actual) or expected != actual:
        return [f"{where}: expected {_show(expected)}, got {_show(actual)}"]
    return []
