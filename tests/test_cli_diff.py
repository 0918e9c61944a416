"""``compile-prompts diff``: run as a subprocess on hand-written outputs and on the shared
OpenCompass cases compiled in both modes (expected differences from the golden files)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _ocdir as O  # noqa: E402
from _cli import run_cli as cli  # noqa: E402
from test_opencompass_dir import GOLDEN, OC, _run_cli, _selected  # noqa: E402


def write(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def rec(index: int, prompt: Any, **extra: Any) -> dict[str, Any]:
    return {
        "dataset": "demo",
        "model": "base",
        "mode": extra.pop("mode", "gen"),
        "index": index,
        **extra,
        "ice_ids": [],
        "prompt": prompt,
    }


@pytest.fixture
def outputs(tmp_path: Path) -> Path:
    """A: 3 gen prompts + a ppl file; B: row 1 changed (a trailing space), row 2 gone, row 3 new."""
    write(
        tmp_path / "A/base/demo.jsonl", [rec(0, "Q: 1\nA:"), rec(1, "Q: 2\nA:"), rec(2, "Q: 3\nA:")]
    )
    write(
        tmp_path / "B/base/demo.jsonl",
        [rec(0, "Q: 1\nA:"), rec(1, "Q: 2 \nA:"), rec(3, "Q: 4\nA:")],
    )
    ppl = [rec(0, "x yes", mode="ppl", label=1), rec(0, "x no", mode="ppl", label="1")]
    write(tmp_path / "A/base/pp.jsonl", ppl)
    write(tmp_path / "B/base/pp.jsonl", ppl)
    (tmp_path / "A/manifest.json").write_text("{}")
    return tmp_path


def test_folders_text(outputs: Path) -> None:
    proc = cli("diff", "A", "B", cwd=outputs)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == (
        "demo x base: 1 same, 1 changed, 1 only in A, 1 only in B\n"
        "demo x base: 2 same, 0 changed, 0 only in A, 0 only in B\n"
        "\n"
        "*** demo x base [gen] row 1\n"
        "@@ -1,2 +1,2 @@\n"
        "-Q: 2↵\n"
        "+Q: 2·↵\n"
        " A:␃\n"
        "\n"
        "--- demo x base [gen] row 2: only in A\n"
        "\n"
        "+++ demo x base [gen] row 3: only in B\n"
        "\n"
        "differ: 1 changed, 1 only in A, 1 only in B (in 1 of 2 dataset x model pairs)\n"
    )


def test_folders_json_and_limits(outputs: Path) -> None:
    proc = cli("diff", "A", "B", "--json", cwd=outputs)
    assert proc.returncode == 1
    assert json.loads(proc.stdout) == {
        "pairs": [
            {"model": "base", "dataset": "demo", "same": 1, "changed": 1, "only_a": 1, "only_b": 1},
            {"model": "base", "dataset": "demo", "same": 2, "changed": 0, "only_a": 0, "only_b": 0},
        ],
        "items": [
            {
                "model": "base",
                "dataset": "demo",
                "mode": "gen",
                "index": 1,
                "label": None,
                "turn": None,
                "a": "Q: 2\nA:",
                "b": "Q: 2 \nA:",
            },
            {
                "model": "base",
                "dataset": "demo",
                "mode": "gen",
                "index": 2,
                "label": None,
                "turn": None,
                "a": "Q: 3\nA:",
                "b": None,
            },
            {
                "model": "base",
                "dataset": "demo",
                "mode": "gen",
                "index": 3,
                "label": None,
                "turn": None,
                "a": None,
                "b": "Q: 4\nA:",
            },
        ],
    }
    one = json.loads(cli("diff", "A", "B", "--json", "--max-items", "1", cwd=outputs).stdout)
    assert [i["index"] for i in one["items"]] == [1]
    text = cli("diff", "A", "B", "--max-items", "1", "--context", "0", cwd=outputs).stdout
    assert "@@ -1 +1 @@\n-Q: 2↵\n+Q: 2·↵\n\n... 2 more differing items" in text


def test_record_files_and_identical(outputs: Path) -> None:
    proc = cli("diff", "A/base/pp.jsonl", outputs / "B/base/pp.jsonl", cwd=outputs)
    assert (proc.returncode, proc.stdout) == (
        0,
        "demo x base: 2 same, 0 changed, 0 only in A, 0 only in B\n\n"
        "identical: 2 prompts in 1 dataset x model pair\n",
    )
    # two models' files of one run: names joined
    write(outputs / "C/other/demo.jsonl", [{**rec(0, "Q: 1\nA:"), "model": "other"}])
    proc = cli("diff", "A/base/demo.jsonl", "C/other/demo.jsonl", "--json", cwd=outputs)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["pairs"] == [
        {
            "model": "base | other",
            "dataset": "demo",
            "same": 1,
            "changed": 0,
            "only_a": 2,
            "only_b": 0,
        }
    ]


def test_usage_and_user_errors(outputs: Path) -> None:
    for args in (
        ["A"],
        ["A", "missing"],
        ["A", "A/base/demo.jsonl"],
        ["A", "B", "--context", "-1"],
    ):
        proc = cli("diff", *args, cwd=outputs)
        assert proc.returncode == 2, args
        assert "Traceback" not in proc.stderr
    (outputs / "B/base/demo.jsonl").write_text('{"index": 0, "prompt": "x"}\nnot json\n')
    proc = cli("diff", "A", "B", cwd=outputs)
    assert proc.returncode == 2  # trouble, not "they differ"
    assert proc.stderr.startswith("compile-prompts: error: ")
    assert "B/base/demo.jsonl" in proc.stderr and "line 2 is not JSON" in proc.stderr


# -- the shared OpenCompass cases: default vs compat -------------------------------------------


def _compile_all(
    root: Path, cases: list[dict[str, Any]], abbrs: dict[str, str], mode: str, extra: list[str] = ()
) -> Path:
    """Compile every case (grouped by identical model) and merge the outputs into one folder."""
    base = root / mode
    written = [O.write_case(base, c, abbrs[c["id"]]) for c in cases]
    groups: dict[str, list[O.Written]] = {}
    for w in written:
        groups.setdefault(w.model_key, []).append(w)
    merged = root / f"merged_{mode}"
    for n, ws in enumerate(groups.values()):
        out = base / f"out{n}"
        code, err = _run_cli(
            [str(w.eval_file) for w in ws]
            + ["--mode", mode, "--data-dir", str(base / "data"), "-o", str(out), *extra]
        )
        assert code == 0, err
        for f in out.glob("*/*.jsonl"):
            dest = merged / f.relative_to(out)
            assert not dest.exists()
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, dest)
    return merged


def test_default_vs_compat_reports_exactly_the_differing_items(
    shared_dir: Path, tmp_path: Path
) -> None:
    both = {c["id"]: c for c, _ in _selected("compat")}
    ids = sorted(both.keys() & {c["id"] for c, _ in _selected("default")})
    cases = [both[i] for i in ids]
    abbrs = O.unique_abbrs(cases)
    # The expectation, from the reference files alone: items whose golden prompts differ.
    expected: set[tuple[Any, ...]] = set()
    counts: dict[str, int] = {}
    for cid in ids:
        ref = {m: O.expected_prompts(O.load_json(OC / GOLDEN[m] / f"{cid}.json")) for m in GOLDEN}
        compat = {(i, json.dumps(mark)): p for i, mark, p in ref["compat"]}
        default = {(i, json.dumps(mark)): p for i, mark, p in ref["default"]}
        assert compat.keys() == default.keys(), cid
        counts[abbrs[cid]] = len(compat)
        expected |= {(abbrs[cid], *k) for k in compat if compat[k] != default[k]}
    assert expected, "the corpus has cases where the modes differ"
    a = _compile_all(tmp_path, cases, abbrs, "default")
    b = _compile_all(tmp_path, cases, abbrs, "compat")
    proc = cli("diff", a, b, "--json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    got = {
        (i["dataset"], i["index"], json.dumps(i["label"] if i["mode"] == "ppl" else i["turn"]))
        for i in report["items"]
    }
    assert got == expected
    assert all(i["a"] is not None and i["b"] is not None for i in report["items"])
    assert {p["dataset"]: p["same"] + p["changed"] for p in report["pairs"]} == counts
    assert all(p["only_a"] == p["only_b"] == 0 for p in report["pairs"])
    text = cli("diff", a, b, "--max-items", "0", cwd=tmp_path)
    assert text.returncode == 1
    assert text.stdout.count("\n*** ") == len(expected)
    assert (
        text.stdout.rstrip().splitlines()[-1].startswith(f"differ: {len(expected)} changed, 0 only")
    )
