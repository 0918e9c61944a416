"""The truncation report, end to end: ``tests/data/truncation/suite.yaml`` through the CLI.

Counts by hand (the built-in whitespace counter): each shot ``Q: one two\\nA: x\\n`` is 5
tokens, ``Q: short\\nA:`` 3, so row 0 is 18 tokens with 3 shots, 13 with 2 (max_seq_len 13).
Row 1's question alone is 14 tokens: every shot dropped and still over. PPL: shots of 5,
``S: r\\nL: yes`` 4, so 14 with 2 shots and 9 with 1, for both labels.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _cli import run_cli as run

SUITE = Path(__file__).resolve().parent / "data" / "truncation" / "suite.yaml"



def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def report(rec: dict[str, Any]) -> tuple[Any, ...]:
    return (
        rec["ice_ids"],
        rec.get("dropped_ice_ids"),
        rec.get("token_len_before"),
        rec.get("token_len_after"),
        rec.get("over_limit"),
    )


@pytest.mark.parametrize("mode", ["default", "compat"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_truncation_report(tmp_path: Path, mode: str, jobs: str) -> None:
    proc = run(SUITE, "-o", "out", "--mode", mode, "--jobs", jobs, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == (
        '1 prompt is over max_seq_len with every in-context example dropped ("over_limit": true)'
    )
    gen = records(tmp_path / "out/limited/qa.jsonl")
    assert [report(r) for r in gen] == [
        ([0, 1], [2], 18, 13, None),
        ([], [0, 1, 2], 29, 14, True),
    ]
    assert gen[0]["prompt"] == "Q: one two\nA: x\n\nQ: three four\nA: y\n\nQ: short\nA:"
    assert list(gen[1]) == [
        "dataset",
        "model",
        "mode",
        "index",
        "row",
        "ice_ids",
        "dropped_ice_ids",
        "token_len_before",
        "token_len_after",
        "over_limit",
        "prompt",
        "prompt_sha256",
        "max_out_len",
        "stop",
        "stop_token_ids",
        "gold",
    ]
    ppl = records(tmp_path / "out/limited/yn.jsonl")
    assert [(r["label"], *report(r)) for r in ppl] == [
        ("yes", [0], [1], 14, 9, None),
        ("no", [0], [1], 14, 9, None),
    ]
    # without max_seq_len nothing is dropped and no report keys are written
    for rec in records(tmp_path / "out/free/qa.jsonl") + records(tmp_path / "out/free/yn.jsonl"):
        assert not {"dropped_ice_ids", "token_len_before", "token_len_after", "over_limit"} & set(
            rec
        )
    manifest = json.loads((tmp_path / "out/manifest.json").read_text(encoding="utf-8"))
    assert manifest["outputs"]["limited/qa.jsonl"]["over_limit"] == 1
    assert "over_limit" not in manifest["outputs"]["limited/yn.jsonl"]
    assert "over_limit" not in manifest["outputs"]["free/qa.jsonl"]


def test_check_mode_summary_counts_over_limit(tmp_path: Path) -> None:
    proc = run(SUITE, "--check", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    outputs = json.loads(proc.stdout)["outputs"]
    assert {k: v.get("over_limit", 0) for k, v in outputs.items()} == {
        "free/qa.jsonl": 0,
        "free/yn.jsonl": 0,
        "limited/qa.jsonl": 1,
        "limited/yn.jsonl": 0,
    }


def test_html_report_shows_the_truncation(tmp_path: Path) -> None:
    assert run(SUITE, "-o", "out", cwd=tmp_path).returncode == 0
    assert run("view", "out", "-o", "r.html", cwd=tmp_path).returncode == 0
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert '2</a> <span class="note">(1 over limit)</span>' in page
    assert "dropped by max_seq_len: [0, 1, 2]; over max_seq_len" in page
    assert "dropped by max_seq_len: [2]<" in page
