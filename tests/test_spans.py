"""``--spans``: span provenance of every record, through the CLI.

By hand on ``tests/data/view/suite.yaml``; then on every record of the shared OpenCompass
cases in both modes: the spans tile the prompt (or each message's content) in order without
gaps, and a column span's text is that row's value as inserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _ocdir as O  # noqa: E402
from test_cli_diff import _compile_all  # noqa: E402
from test_opencompass_dir import _selected  # noqa: E402

from prompt_compiler.assemble.spans import add_spans  # noqa: E402
from prompt_compiler.data.reader import ReaderConfig, prepare_rows  # noqa: E402

SUITE = Path(__file__).resolve().parent / "data" / "view" / "suite.yaml"
T = {"kind": "template"}
M = {"kind": "meta"}
S = {"kind": "separator"}


def col(name: str, split: str, row: int) -> dict[str, Any]:
    return {"kind": "column", "column": name, "split": split, "row": row}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_spans_by_hand(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "prompt_compiler", str(SUITE), "-o", "out", "--spans"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    qa = lines(tmp_path / "out/chatml/qa.jsonl")[0]
    assert qa["prompt"] == "Q: 1+1?\nA: 2\n\nQ: Is <b> & </b> markup?\nA:"
    assert qa["spans"] == [
        [0, 3, T],
        [3, 7, col("q", "train", 0)],
        [7, 11, T],
        [11, 12, col("a", "train", 0)],
        [12, 13, T],
        [13, 14, S],
        [14, 17, T],
        [17, 38, col("q", "test", 0)],
        [38, 41, T],
    ]
    yes = lines(tmp_path / "out/chatml/yesno.jsonl")[0]
    assert yes["prompt"] == (
        "<|im_start|>user\nSnow is cold.<|im_end|>\n<|im_start|>assistant\nAnswer: yes<|im_end|>\n"
    )
    assert yes["spans"] == [
        [0, 17, M],
        [17, 30, col("s", "test", 0)],
        [30, 63, M],
        [63, 74, T],
        [74, 85, M],
    ]
    api = lines(tmp_path / "out/api/yesno.jsonl")[3]
    # an OpenAI-compatible API model: the request messages, spans per message
    assert api["prompt"] == [
        {"role": "user", "content": "Fire is cold."},
        {"role": "assistant", "content": "Answer: no"},
    ]
    assert api["spans"] == [[[0, 13, col("s", "test", 1)]], [[0, 10, T]]]
    # without the flag, no spans
    proc = subprocess.run(
        [sys.executable, "-m", "prompt_compiler", str(SUITE), "-o", "plain"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert "spans" not in lines(tmp_path / "plain/chatml/qa.jsonl")[0]
    assert lines(tmp_path / "plain/chatml/qa.jsonl")[0]["prompt"] == qa["prompt"]


def test_spans_of_many_rows_are_traced_to_the_last(tmp_path: Path) -> None:
    """2,200 rows of 60 values: 132,000 traced values, past the 131,072 the trace could once
    number (spans were null from row 2,184 on). The last row's spans name its own values."""
    from test_data_special_tokens import _wide_suite

    names = [f"c{k}" for k in range(60)]
    _wide_suite(tmp_path, 2200, 60, "models:\n  - {abbr: m, type: HuggingFaceCausalLM, path: m}\n",
                value="v")
    proc = subprocess.run([sys.executable, "-m", "prompt_compiler", "wide.yaml", "-o", "out",
                           "--spans"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    last = lines(tmp_path / "out/m/wide.jsonl")[-1]
    assert last["prompt"] == " ".join(["v"] * 60)
    want: list[Any] = []
    for k, name in enumerate(names):
        want.append([2 * k, 2 * k + 1, col(name, "test", 2199)])
        if k < 59:
            want.append([2 * k + 1, 2 * k + 2, T])
    assert last["spans"] == want


def _check_tiling(text: str, spans: list[Any], where: str) -> None:
    assert isinstance(spans, list), where
    pos = 0
    for start, end, origin in spans:
        assert start == pos and end > start, (where, spans)
        assert origin["kind"] in ("template", "meta", "column", "separator"), where
        pos = end
    assert pos == len(text), (where, pos, len(text))


def _check_columns(
    text: str, spans: list[Any], rows: Any, case: dict[str, Any], mode: str, where: str
) -> int:
    """Column spans hold that row's value as inserted; returns how many were checked."""
    infer = case["dataset"]["infer_cfg"]
    token = infer["inferencer"].get("gen_field_replace_token", "")
    output = case["dataset"]["reader_cfg"].get("output_column")
    n = 0
    for start, end, origin in spans:
        if origin["kind"] != "column":
            continue
        row = (rows.train if origin["split"] == "train" else rows.test)[origin["row"]]
        value = row[origin["column"]]
        got = text[start:end]
        options = {str(value)}
        if isinstance(value, list):  # a chat column: one message per element
            options |= {str(v) for v in value}
            options |= {m.get("content") for m in value if isinstance(m, dict)}
        if origin["column"] == output and origin["split"] == "test":
            options.add(token)  # the answer masked in gen prompts
        if mode == "compat" and "{" in str(value):
            continue  # re-filled inside (defect D1): the value as compat inserted it
        assert got in options, (where, origin, got, value)
        n += 1
    return n


def test_spans_hold_on_the_shared_cases(shared_dir: Path, tmp_path: Path) -> None:
    checked = records = 0
    for mode in ("default", "compat"):
        cases = [c for c, _ in _selected(mode)]
        abbrs = O.unique_abbrs(cases)
        out = _compile_all(tmp_path, cases, abbrs, mode, extra=["--spans"])
        for case in cases:
            ds = case["dataset"]
            rows = prepare_rows(
                abbrs[case["id"]],
                ReaderConfig.from_dict(ds["reader_cfg"]),
                splits=ds.get("splits"),
                rows=ds.get("rows"),
            )
            model = "".join(c if c.isalnum() or c in "-_.+" else "_" for c in case["model"]["name"])
            name = "".join(c if c.isalnum() or c in "-_.+" else "_" for c in abbrs[case["id"]])
            for rec in lines(out / model / f"{name}.jsonl"):
                records += 1
                mark = rec.get("label", rec.get("turn"))
                where = f"{mode} {case['id']} row {rec['index']} {mark}"
                prompt, spans = rec["prompt"], rec["spans"]
                assert spans is not None, where
                if isinstance(prompt, str):
                    _check_tiling(prompt, spans, where)
                    checked += _check_columns(prompt, spans, rows, case, mode, where)
                    continue
                assert len(spans) == len(prompt), where
                for k, (msg, msg_spans) in enumerate(zip(prompt, spans, strict=True)):
                    body = msg.get("content", msg.get("prompt")) if isinstance(msg, dict) else msg
                    if not isinstance(body, str):
                        assert msg_spans is None, where
                        continue
                    _check_tiling(body, msg_spans, f"{where} message {k}")
                    checked += _check_columns(body, msg_spans, rows, case, mode, where)
    assert records > 2000 and checked > 2000, (records, checked)


def test_sentinel_text_in_data_gives_null_spans() -> None:
    """A value that already holds the private-use sentinels cannot be traced: null, not a guess."""
    import prompt_compiler as pc
    from prompt_compiler.emit.records import record_json

    ds = {
        "abbr": "d",
        "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
        "infer_cfg": {
            "prompt_template": {"type": "PromptTemplate", "template": "Q: {q}"},
            "retriever": {"type": "ZeroRetriever"},
            "inferencer": {"type": "GenInferencer"},
        },
        "rows": [{"q": "plain", "a": "x"}, {"q": "odd \ue001 text", "a": "y"}],
    }
    compiler = pc.Compiler()
    job, kind, params = compiler.job(ds, {"abbr": "m"})
    run = compiler.run(job, kind, params)
    recs = [record_json(r) for r in add_spans(job, kind, params, run.records, run.labels,
                                              lambda rec: record_json(rec)["prompt"])]
    assert recs[0]["spans"] == [[0, 3, T], [3, 8, col("q", "test", 0)]]
    assert recs[1]["spans"] is None
    assert recs[1]["prompt"] == "Q: odd \ue001 text"


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["open-col", "open-meta", "open-tpl", "close", "text"]),
            st.text(alphabet="ab\n ", min_size=1, max_size=4),
        ),
        max_size=20,
    )
)
def test_strip_tags_tiles_the_text(ops: list[tuple[str, str]]) -> None:
    from prompt_compiler.assemble.spans import CLOSE, Tags, strip_tags

    tags = Tags()
    origins = {"open-col": col("c", "test", 0), "open-meta": M, "open-tpl": T}
    parts, plain, depth = [], [], 0
    for op, text in ops:
        if op.startswith("open"):
            wrapped = tags.wrap(origins[op], "x")  # OPEN + the code + "x" + CLOSE
            parts.append(wrapped[:-2])
            depth += 1
        elif op == "close" and depth:
            parts.append(CLOSE)
            depth -= 1
        else:
            parts.append(text)
            plain.append(text)
    parts.append(CLOSE * depth)
    text, spans = strip_tags("".join(parts), tags, S)
    assert text == "".join(plain)
    pos = 0
    for start, end, _origin in spans:
        assert start == pos < end
        pos = end
    assert pos == len(text)
    assert all(a[2] is not b[2] for a, b in zip(spans, spans[1:], strict=False))  # merged
