"""OpenCompass-style config folders compile to the reference prompts.

For every conformance case whose reference compiled (status ok) with a Gen/PPL/CLP/Chat
inferencer, ``tests/_ocdir.py`` writes an OpenCompass-style tree (dataset config importing
from ``opencompass.*``, model config with an OpenCompass model class, an ``eval_*.py`` that
inherits both through ``read_base()``, and JSONL rows under a ``--data-dir``). The
``compile-prompts`` CLI then compiles it, and every output record's ``prompt`` must equal
the reference (``golden/`` in ``--mode compat``, ``golden_default/`` in ``--mode default``).

Cases whose model configs are identical are compiled in one CLI call (the identical models
collapse into one, so the pairs are exactly the cases); when such a call fails, each of its
cases is compiled alone so that the failure names the case.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _ocdir as O  # noqa: E402

from prompt_compiler.cli import main  # noqa: E402
from prompt_compiler.config import load_config  # noqa: E402

OC = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "opencompass"
GOLDEN = {"compat": "golden", "default": "golden_default"}


def _selected(mode: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(case, golden) pairs covered in ``mode`` (empty without ../shared)."""
    if not (OC / "cases").is_dir():
        return []
    out = []
    for file in sorted((OC / "cases").glob("*.json")):
        ref = OC / GOLDEN[mode] / file.name
        if not ref.is_file():
            continue
        case, golden = O.load_json(file), O.load_json(ref)
        if O.skip_reason(case, golden) is None:
            out.append((case, golden))
    return out


def _params() -> list[Any]:
    params = []
    for mode in GOLDEN:
        for case, golden in _selected(mode):
            params.append(pytest.param(mode, case["id"], id=f"{mode}-{case['id']}"))
    return params


def _run_cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse usage errors
            code = exc.code if isinstance(exc.code, int) else 2
        except Exception as exc:  # a crash: report it against the case, not the fixture
            return -1, f"{type(exc).__name__}: {exc}"
    return code, err.getvalue()


@pytest.fixture(scope="module")
def compiled(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """mode -> {case id: (golden, records or error text)}."""
    root = tmp_path_factory.mktemp("ocdir")
    results: dict[str, Any] = {}
    for mode in GOLDEN:
        pairs = _selected(mode)
        base = root / mode
        abbrs = O.unique_abbrs([c for c, _ in pairs])
        written = [O.write_case(base, c, abbrs[c["id"]]) for c, _ in pairs]
        goldens = {c["id"]: g for c, g in pairs}
        groups: dict[str, list[O.Written]] = {}
        for w in written:
            groups.setdefault(w.model_key, []).append(w)
        per_case: dict[str, Any] = {}
        for n, ws in enumerate(groups.values()):
            out = base / f"out{n}"
            code, err = _run_cli(
                [str(w.eval_file) for w in ws]
                + ["--mode", mode, "--data-dir", str(base / "data"), "-o", str(out)]
            )
            if code == 0:
                for w in ws:
                    per_case[w.case_id] = _records(out, w)
                continue
            for w in ws:  # find out which case(s) failed
                one = base / f"out_{O.module_name(w.case_id)}"
                code, err = _run_cli(
                    [
                        str(w.eval_file),
                        "--mode",
                        mode,
                        "--data-dir",
                        str(base / "data"),
                        "-o",
                        str(one),
                    ]
                )
                per_case[w.case_id] = _records(one, w) if code == 0 else f"exit {code}: {err}"
        results[mode] = {cid: (goldens[cid], per_case[cid]) for cid in goldens}
    return results


def _records(out: Path, w: O.Written) -> list[dict[str, Any]] | str:
    safe = "".join(c if c.isalnum() or c in "-_.+" else "_" for c in w.abbr)
    model = "".join(c if c.isalnum() or c in "-_.+" else "_" for c in w.model_abbr)
    file = out / model / f"{safe}.jsonl"
    if not file.is_file():
        written = sorted(p.name for p in out.rglob("*.jsonl"))
        return f"no output file {file.relative_to(out)}; written: {written}"
    return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(("mode", "case_id"), _params())
def test_opencompass_dir_matches_reference(
    compiled: dict[str, Any], mode: str, case_id: str
) -> None:
    golden, records = compiled[mode][case_id]
    assert not isinstance(records, str), f"{case_id} ({mode}): the CLI failed: {records}"
    diff = O.first_difference(O.expected_prompts(golden), O.actual_prompts(records, golden))
    assert diff is None, f"{case_id} ({mode}): {diff}"


def test_most_reference_cases_are_covered(shared_dir: Path) -> None:
    """Only options-carrying, error-status and ChatInferencer 'every' cases are left out."""
    cases = sorted((OC / "cases").glob("*.json"))
    ok = [f for f in cases if O.load_json(OC / "golden" / f.name).get("status") == "ok"]
    covered = _selected("compat")
    assert len(covered) >= 0.9 * len(ok), (len(covered), len(ok))


def test_generated_configs_are_opencompass_style(shared_dir: Path, tmp_path: Path) -> None:
    """The generated files load as intended: classes reduced to names, int label keys kept,
    the dataset loader class is unknown (rows from --data-dir), the model class picks the parser."""
    picked = {}
    for case, _golden in _selected("compat"):
        tpl = case["dataset"]["infer_cfg"].get("ice_template") or case["dataset"]["infer_cfg"].get(
            "prompt_template"
        )
        template = tpl.get("template")
        if isinstance(template, dict) and template and all(isinstance(k, int) for k in template):
            picked.setdefault("int_labels", case)
        picked.setdefault(case["model"]["parser"], case)
    assert "int_labels" in picked
    for case in picked.values():
        w = O.write_case(tmp_path, case, case["id"])
        text = (tmp_path / "configs" / "datasets" / f"{O.module_name(case['id'])}.py").read_text()
        assert "from opencompass.openicl.icl_prompt_template import" in text
        assert "from opencompass.datasets import" in text
        assert "'PromptTemplate'" not in text  # classes, not strings
        suite = load_config(w.eval_file)
        (ds,), (model,) = suite.datasets, suite.models
        assert ds.abbr == case["id"] and ds.key_path.endswith("[0]")
        assert ds.spec["type"] == O.loader_class(case["id"])
        assert ds.spec["reader_cfg"] == case["dataset"]["reader_cfg"]
        assert ds.spec["infer_cfg"] == case["dataset"]["infer_cfg"]
        assert model.spec["parser"] == case["model"]["parser"]
        assert model.spec["type"] == O.MODEL_CLASS[case["model"]["parser"]]
        assert model.spec["meta_template"] == case["model"]["meta_template"]
        labels = ds.spec["infer_cfg"].get(
            "ice_template", ds.spec["infer_cfg"].get("prompt_template")
        )
        if case is picked["int_labels"]:
            assert all(type(k) is int for k in labels["template"])
