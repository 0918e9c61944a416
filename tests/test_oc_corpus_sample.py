"""A sample of OpenCompass 0.5.4's own dataset configs, compiled by ``tools/oc_corpus.py``.

The wheel is found at ``$PC_OPENCOMPASS_WHEEL``, in the tool's download cache, or fetched
with ``pip download``; without it the test is skipped (the reason says so). The whole corpus
(1,512 files) is a tool run: ``python tools/oc_corpus.py``.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"
sys.path.insert(0, str(TOOLS))
import oc_corpus  # noqa: E402

from prompt_compiler.template import olympiadbench  # noqa: E402


def _wheel() -> Path:
    given = os.environ.get("PC_OPENCOMPASS_WHEEL")
    if given:
        return Path(given)
    cached = sorted(oc_corpus.DEFAULT_CACHE.glob(f"opencompass-{oc_corpus.VERSION}-*.whl"))
    if cached:
        return cached[0]
    try:
        return oc_corpus.fetch_wheel(oc_corpus.DEFAULT_CACHE)
    except SystemExit as exc:
        pytest.skip(f"the OpenCompass {oc_corpus.VERSION} wheel cannot be obtained ({exc}); "
                    "set PC_OPENCOMPASS_WHEEL=/path/to/opencompass-0.5.4-py3-none-any.whl")


def _package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The wheel's configs, extracted, with its OlympiadBench.py importable (as the tool does)."""
    wheel = _wheel()
    if not wheel.is_file():
        pytest.skip(f"PC_OPENCOMPASS_WHEEL={wheel} is not a file")
    package = oc_corpus.extract_configs(wheel, tmp_path / "tree")
    source = oc_corpus.olympiad_source(package, tmp_path / "oc-source")
    assert source is not None
    monkeypatch.syspath_prepend(str(source))
    olympiadbench._read.cache_clear()
    return package


def test_sampled_configs_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = _package(tmp_path, monkeypatch)
    files = oc_corpus.dataset_files(package)
    assert len(files) == 1512
    sample = files[::50]  # 31 files across the alphabet
    outcomes = oc_corpus.run(package, sample, data_root=tmp_path / "rows", user_data=None,
                             mode="default", jobs=1)
    out = io.StringIO()
    oc_corpus.summarize(outcomes, out)
    failed = [o for o in outcomes if o.kind == "failed"]
    assert not failed, out.getvalue()
    assert sum(o.ok for o in outcomes) >= len(sample) - 5, out.getvalue()
    assert out.getvalue().splitlines()[-2].startswith(f"{len(sample)} files, ")


def test_once_failing_families(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # OlympiadBench (text from the wheel's source), Xiezhi (rows need a labels list), and MDL
    # (counted as model-in-the-loop, as documented) in both modes.
    package = _package(tmp_path, monkeypatch)
    root = package / "configs" / "datasets"
    files = sorted({*root.glob("OlympiadBench/OlympiadBench_0shot_*.py"),
                    *root.glob("xiezhi/xiezhi_*.py"),
                    root / "commonsenseqa" / "commonsenseqa_ppl_716f78.py"})
    assert len(files) == 9
    for mode in ("default", "opencompass"):
        outcomes = oc_corpus.run(package, files, data_root=tmp_path / mode, user_data=None,
                                 mode=mode, jobs=1)
        kinds = {o.file: o.kind for o in outcomes}
        assert kinds.pop("commonsenseqa/commonsenseqa_ppl_716f78.py") == "loop"
        raw = "OlympiadBench/OlympiadBench_0shot_llmverify_rawprompt_gen_d3e9e4.py"
        if mode == "opencompass":  # raw templates fail on chat-template models there (D18)
            assert kinds.pop(raw) == "reference"
        assert set(kinds.values()) == {"ok"}, [o for o in outcomes if not o.ok]
        assert all(o.prompts > 0 for o in outcomes if o.ok)


XIEZHI = {"reader_cfg": {"input_columns": ["question", "labels"], "output_column": "answer"},
          "infer_cfg": {"retriever": {"type": "XiezhiRetriever", "ice_num": 3},
                        "inferencer": {"type": "PPLInferencer"}}}


def test_xiezhi_rows_carry_label_lists() -> None:
    train = oc_corpus.synthetic_rows(XIEZHI, "train", 4)
    test = oc_corpus.synthetic_rows(XIEZHI, "test", 2)
    assert [r["labels"] for r in train] == [["label 0", "label common"],
                                            ["label 1", "label common"],
                                            ["label 2", "label common"],
                                            ["label 0", "label common"]]
    assert test[1] == {"question": "question value #te1", "answer": "answer value #te1",
                       "labels": ["label 1", "label common"]}


def test_olympiad_rows_cycle_through_branches() -> None:
    spec = {"reader_cfg": {"input_columns": ["problem"], "output_column": "solution"},
            "infer_cfg": {"prompt_template": {"type": "OlympiadBenchRawTemplate"}}}
    rows = oc_corpus.synthetic_rows(spec, "test", 3)
    assert [(r["language"], r["question_type"], r["is_multiple_answer"]) for r in rows] == [
        ("English", "Open-ended", False), ("Chinese", "Open-ended", True),
        ("English", "Theorem proof", False)]
    assert rows[0]["problem"] == "problem value #te0"


@pytest.mark.parametrize(("reason", "kind"), [
    ("at infer_cfg.retriever: MDLRetriever scores candidate example sets with the evaluated "
     "model itself", "loop"),
    ("AgentInferencer needs a model in the loop: ...", "loop"),
    ("embedding retrievers (Topk, DPP, Votek) need the 'sentence-transformers' package, which "
     "is not installed", "no-embed-extra"),
    ("cannot load sentence-transformers model 'all-mpnet-base-v2' (name): OSError",
     "no-embed-model"),
    ("unknown template type 'X'", "failed"),
])
def test_classify(reason: str, kind: str) -> None:
    assert oc_corpus.classify("a/b.py", reason) == kind
    assert oc_corpus.classify("s3eval/s3eval_gen.py", "KeyError") == "reference"


def test_embed_model_substitution(tmp_path: Path) -> None:
    from types import SimpleNamespace

    local = tmp_path / "model"
    local.mkdir()
    topk = SimpleNamespace(spec={"infer_cfg": {"retriever": {"type": "TopkRetriever"}}})
    named = SimpleNamespace(spec={"infer_cfg": {"retriever": {
        "type": "opencompass.openicl.icl_retriever.VotekRetriever",
        "sentence_transformers_model_name": str(local)}}})
    fixk = SimpleNamespace(spec={"infer_cfg": {"retriever": {"type": "FixKRetriever"}}})
    assert oc_corpus.substitute_embed_model([topk, named, fixk], Path("/m"))
    assert topk.spec["infer_cfg"]["retriever"]["sentence_transformers_model_name"] == "/m"
    assert named.spec["infer_cfg"]["retriever"]["sentence_transformers_model_name"] == str(local)
    assert "sentence_transformers_model_name" not in fixk.spec["infer_cfg"]["retriever"]
    assert not oc_corpus.substitute_embed_model([named, fixk], Path("/m"))


def test_summary_line() -> None:
    Out = oc_corpus.Outcome
    out = io.StringIO()
    status = oc_corpus.summarize([
        Out("a.py", True, pairs=2, prompts=5),
        Out("b.py", True, pairs=1, prompts=3, substituted=True),
        Out("c.py", False, "MDL", kind="loop"), Out("d.py", False, "no", kind="no-embed-extra"),
        Out("e.py", False, "none", kind="empty"), Out("f.py", False, "x", kind="reference"),
    ], out)
    assert status == 0
    assert out.getvalue().splitlines()[-2:] == [
        "6 files, 2 ok, 0 failed; 1 need a model in the loop, 1 fail in OpenCompass too, "
        "1 define no datasets, 1 need the embed extra (sentence-transformers), not installed; "
        "1 of the ok ones with --embed-model in place of their own",
        "3 dataset x model pairs, 8 prompts"]
    assert oc_corpus.summarize([Out("g.py", False, "BUG", kind="failed")], io.StringIO()) == 1
