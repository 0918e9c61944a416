"""Large datasets through the CLI: rows streamed from JSONL, the plan, and --jobs row ranges.

The configs are written in the shape of OpenCompass's MMLU gen and C-Eval ppl configs; the
expected prompts are written by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prompt_compiler.data.reader import ReaderConfig, iter_rows, prepare_rows
from prompt_compiler.data.sources import JsonlRows
from prompt_compiler.errors import DataError

MODEL = """\
from opencompass.models import HuggingFaceCausalLM

models = [dict(
    type=HuggingFaceCausalLM, abbr='internlm-chat', max_seq_len=2048,
    meta_template=dict(round=[
        dict(role='HUMAN', begin='<|User|>:', end='\\n'),
        dict(role='BOT', begin='<|Bot|>:', end='<eoa>\\n', generate=True),
    ]),
)]
"""

GEN = """\
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import FixKRetriever
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.datasets import MMLUDataset

_q = 'Q: {input}\\nA. {A}\\nB. {B}\\nAnswer: '
mmlu_datasets = [dict(
    abbr='mmlu-tiny', type=MMLUDataset, path='opencompass/mmlu',
    reader_cfg=dict(input_columns=['input', 'A', 'B'], output_column='target', train_split='dev'),
    infer_cfg=dict(
        ice_template=dict(type=PromptTemplate, template=dict(round=[
            dict(role='HUMAN', prompt=_q), dict(role='BOT', prompt='{target}\\n')])),
        prompt_template=dict(type=PromptTemplate, ice_token='</E>', template=dict(
            begin='</E>', round=[dict(role='HUMAN', prompt=_q)])),
        retriever=dict(type=FixKRetriever, fix_id_list=[0, 1]),
        inferencer=dict(type=GenInferencer)),
)]
"""

PPL = """\
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import FixKRetriever
from opencompass.openicl.icl_inferencer import PPLInferencer

ceval_datasets = [dict(
    abbr='ceval-tiny', type='CEvalDataset', path='opencompass/ceval-exam',
    reader_cfg=dict(input_columns=['input', 'A', 'B'], output_column='target',
                    train_split='dev', test_split='val'),
    infer_cfg=dict(
        ice_template=dict(type=PromptTemplate, ice_token='</E>', template={
            answer: dict(begin='</E>', round=[
                dict(role='HUMAN', prompt='{input}\\nA. {A}\\nB. {B}\\n答案: '),
                dict(role='BOT', prompt=answer)])
            for answer in ['A', 'B']}),
        retriever=dict(type=FixKRetriever, fix_id_list=[0]),
        inferencer=dict(type=PPLInferencer)),
)]
"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


def mmlu_row(i: int) -> dict[str, str]:
    return {"input": f"q{i} {{A}} 50%", "A": f"a{i}", "B": f"b{i}", "target": "AB"[i % 2]}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "mmlu_gen.py").write_text(GEN, encoding="utf-8")
    (tmp_path / "ceval_ppl.py").write_text(PPL, encoding="utf-8")
    write_rows(tmp_path / "data" / "mmlu-tiny" / "dev.jsonl", [mmlu_row(i) for i in range(2)])
    write_rows(tmp_path / "data" / "ceval-tiny" / "dev.jsonl", [mmlu_row(i) for i in range(2)])
    return tmp_path


@pytest.mark.parametrize("mode", ["default", "compat"])
def test_gen_prompts_through_the_cli_written_by_hand(project: Path, mode: str) -> None:
    write_rows(project / "data" / "mmlu-tiny" / "test.jsonl", [mmlu_row(i) for i in (7, 8, 9)])
    # the first rows are compiled the generic way, later ones through the compiled plan
    proc = cli("mmlu_gen.py", "--model", "model.py", "--data-dir", "data", "-o", "out",
               "--mode", mode, cwd=project)
    assert proc.returncode == 0, proc.stderr
    lines = (project / "out" / "internlm-chat" / "mmlu-tiny.jsonl").read_text("utf-8").splitlines()
    prompts = [json.loads(line)["prompt"] for line in lines]
    ice = ("<|User|>:Q: q0 {A} 50%\nA. a0\nB. b0\nAnswer: \n<|Bot|>:A\n<eoa>\n"
           "<|User|>:Q: q1 {A} 50%\nA. a1\nB. b1\nAnswer: \n<|Bot|>:B\n<eoa>\n")
    if mode == "compat":  # OpenCompass fills '{A}' inside a value again, by a later column (D1)
        ice = ice.replace("q0 {A}", "q0 a0").replace("q1 {A}", "q1 a1")
    for i, prompt in zip((7, 8, 9), prompts, strict=True):
        mine = f"q{i} {{A}} 50%" if mode == "default" else f"q{i} a{i} 50%"
        assert prompt == (ice + f"<|User|>:Q: {mine}\nA. a{i}\nB. b{i}\nAnswer: \n<|Bot|>:")


def test_ppl_prompts_through_the_cli_written_by_hand(project: Path) -> None:
    write_rows(project / "data" / "ceval-tiny" / "val.jsonl",
               [{"input": f"问{i}", "A": "x", "B": "y", "target": "A"} for i in range(3)])
    proc = cli("ceval_ppl.py", "--model", "model.py", "--data-dir", "data", "-o", "out",
               cwd=project)
    assert proc.returncode == 0, proc.stderr
    lines = (project / "out" / "internlm-chat" / "ceval-tiny.jsonl").read_text("utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert [(r["index"], r["label"]) for r in records] == [
        (0, "A"), (0, "B"), (1, "A"), (1, "B"), (2, "A"), (2, "B")]
    # the example's turns, then FixK's separator '\n' and end-of-examples '\n'
    ice = "<|User|>:q0 {A} 50%\nA. a0\nB. b0\n答案: \n<|Bot|>:A<eoa>\n" + "\n" + "\n"
    assert records[5]["prompt"] == (ice + "<|User|>:问2\nA. x\nB. y\n答案: \n<|Bot|>:B<eoa>\n")


@pytest.mark.parametrize("config", ["mmlu_gen.py", "ceval_ppl.py"])
def test_jobs_split_a_large_dataset_into_row_ranges_with_identical_bytes(project: Path,
                                                                        config: str) -> None:
    rows = [mmlu_row(i) for i in range(4_100)]  # SPLIT_ROWS = 2,000: two ranges
    write_rows(project / "data" / "mmlu-tiny" / "test.jsonl", rows)
    write_rows(project / "data" / "ceval-tiny" / "val.jsonl", rows)
    outs = {}
    for jobs in ("1", "2"):
        proc = cli(config, "--model", "model.py", "--data-dir", "data", "-o", f"out{jobs}",
                   "--jobs", jobs, cwd=project)
        assert proc.returncode == 0, proc.stderr
        outs[jobs] = {p.relative_to(project / f"out{jobs}").as_posix(): p.read_bytes()
                      for p in sorted((project / f"out{jobs}").rglob("*")) if p.is_file()}
    assert outs["1"] == outs["2"]
    assert len(outs["2"]) == 2  # the joined file and the manifest: no part file is left
    data = next(v for k, v in outs["2"].items() if k.endswith(".jsonl"))
    assert data.count(b"\n") == 4_100 * (1 if config == "mmlu_gen.py" else 2)


def test_a_malformed_line_deep_in_a_large_file_names_file_and_line(project: Path) -> None:
    rows = [json.dumps(mmlu_row(i)) for i in range(300)]
    rows[250] = '{"input": "broken",'
    (project / "data" / "mmlu-tiny" / "test.jsonl").write_text("\n".join(rows) + "\n", "utf-8")
    proc = cli("mmlu_gen.py", "--model", "model.py", "--data-dir", "data", "-o", "out",
               cwd=project)
    assert proc.returncode == 1
    assert proc.stderr.startswith("compile-prompts: error: ")
    assert "row 250: data/mmlu-tiny/test.jsonl: line 251: malformed JSON" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (project / "out").exists()


def test_jsonl_rows_are_read_when_used(tmp_path: Path) -> None:
    file = tmp_path / "d.jsonl"
    file.write_bytes(b'\xef\xbb\xbf{"q": 1}\n\n{"q": "\\u00e9"}\n  \n{"q": 3}\n{oops\n')
    rows = JsonlRows(file)  # the first row is parsed now; the last line only when read
    assert len(rows) == 4
    assert rows[1] == {"q": "é"} and rows[-2] == {"q": 3}
    assert list(rows.iter_range(1, 3)) == [{"q": "é"}, {"q": 3}]
    with pytest.raises(DataError, match=r"d.jsonl: line 6: malformed JSON"):
        list(rows)
    with pytest.raises(DataError, match=r"d.jsonl: line 6: malformed JSON"):
        rows[3]


def test_streamed_rows_are_normalised_and_ranged_like_inline_rows(tmp_path: Path) -> None:
    file = tmp_path / "d.jsonl"
    raw = [{"q": i, "a": str(i)} if i % 3 else {"a": "x", "q": i, "extra": 1} for i in range(9)]
    file.write_text("".join(json.dumps(r) + "\n" for r in raw), encoding="utf-8")
    for test_range in (None, "[2:8:2]", "[3:]", 4):
        reader = ReaderConfig(("q",), "a", test_range=test_range)
        inline = prepare_rows("d", reader, rows=raw)
        streamed = prepare_rows("d", reader, rows=JsonlRows(file))
        assert list(streamed.test) == list(inline.test)
        assert [streamed.test[i] for i in range(len(streamed.test))] == list(inline.test)
        assert list(iter_rows(streamed.test, 1, 3)) == list(inline.test)[1:3]


LINE = st.sampled_from([b'{"a": 1}', b'{"a": "x y"}', b"", b"  ", b"\r", b" \t", b'{"a": 2}\r',
                        b'\xef\xbb\xbf{"a": 3}', b"\xef\xbb\xbf"])


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(LINE, max_size=12), newline_at_end=st.booleans(),
       chunk=st.sampled_from([1, 3, 8, 64, 1 << 24]))
def test_the_line_index_finds_each_non_blank_line(tmp_path_factory, lines, newline_at_end,
                                                  chunk):
    """Indexing in chunks finds what splitting the file at each newline finds: where each
    non-blank line starts (after a leading BOM) and ends (with its newline)."""
    from prompt_compiler.data import sources

    data = b"\n".join(lines) + (b"\n" if newline_at_end and lines else b"")
    want_starts, want_ends, blank, pos = [], [], False, 0
    for n, line in enumerate(data.split(b"\n")[:-1] if data.endswith(b"\n") else
                             data.split(b"\n") if data else []):
        start = 3 if n == 0 and line.startswith(b"\xef\xbb\xbf") else 0
        end = min(pos + len(line) + 1, len(data))
        if line[start:].strip():
            want_starts.append(pos + start)
            want_ends.append(end)
        else:
            blank = True
        pos = end
    file = tmp_path_factory.mktemp("index") / "rows.jsonl"
    file.write_bytes(data)
    saved, sources._CHUNK = sources._CHUNK, chunk
    try:
        rows = JsonlRows(file)
    except DataError:  # the first row is not an object: the same file fails either way
        return
    finally:
        sources._CHUNK = saved
    assert (list(rows._starts), list(rows._ends), rows._blank_lines) == (
        want_starts, want_ends, blank)


def uneven_row(i: int) -> dict[str, str]:
    """Rows of very different lengths; some hold braces (compat re-fills them), some are long
    enough to pass max_seq_len=60 words (examples dropped, or still over the limit)."""
    words = " ".join(f"w{k}" for k in range((i * 37) % 90))
    return {"input": f"q{i} {words}" + (" {B}" if i % 11 == 0 else ""), "A": f"a{i}",
            "B": "é" * (i % 5), "target": "AB"[i % 2]}


@pytest.mark.parametrize("config", ["mmlu_gen.py", "ceval_ppl.py"])
def test_jobs_2_and_3_agree_with_jobs_1_on_uneven_rows(project: Path, config: str) -> None:
    (project / "model.py").write_text(MODEL.replace("max_seq_len=2048", "max_seq_len=60"),
                                      encoding="utf-8")
    rows = [json.dumps(uneven_row(i), ensure_ascii=False) for i in range(6_500)]
    rows[3000] += "\n   "  # a blank line inside a range
    text = "\n".join(rows) + "\n"
    (project / "data" / "mmlu-tiny" / "test.jsonl").write_text(text, "utf-8")
    (project / "data" / "ceval-tiny" / "val.jsonl").write_text(text, "utf-8")
    for mode in ("default", "compat"):
        outs = {}
        for jobs in ("1", "2", "3") if mode == "default" else ("1", "2"):
            out = project / f"out{jobs}"
            proc = cli(config, "--model", "model.py", "--data-dir", "data", "-o", str(out),
                       "--jobs", jobs, "--mode", mode, cwd=project)
            assert proc.returncode == 0, proc.stderr
            manifest = json.loads((out / "manifest.json").read_text("utf-8"))
            data = next(out.rglob("*.jsonl")).read_bytes()
            outs[jobs] = (data, manifest["outputs"], sorted(p.name for p in out.rglob("*")))
        assert all(out == outs["1"] for out in outs.values())
        entry = next(iter(outs["1"][1].values()))
        assert entry["over_limit"] > 0  # rows still over the limit are counted in every part
        assert entry["records"] == 6_500 * (1 if config == "mmlu_gen.py" else 2)


def test_a_malformed_line_in_a_later_range_fails_as_with_one_job(project: Path) -> None:
    rows = [json.dumps(mmlu_row(i)) for i in range(6_000)]
    rows[5_000] = '{"input": "broken",'
    (project / "data" / "mmlu-tiny" / "test.jsonl").write_text("\n".join(rows) + "\n", "utf-8")
    errors = set()
    for jobs in ("1", "2"):
        proc = cli("mmlu_gen.py", "--model", "model.py", "--data-dir", "data", "-o", "out",
                   "--jobs", jobs, cwd=project)
        assert proc.returncode == 1
        errors.add(proc.stderr)
        assert not (project / "out").exists()
        assert not [p for p in project.iterdir() if "compile-prompts" in p.name]
    assert len(errors) == 1
    assert "row 5000: data/mmlu-tiny/test.jsonl: line 5001: malformed JSON" in errors.pop()
