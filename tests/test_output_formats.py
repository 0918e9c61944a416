"""Output formats are one registry (issue 27): ``--format`` reads its choices and help from it,
and a format added to it is written by every path -- one file per pair, or ``--shard-rows``
shards -- from the records, record by record. Expected files written by hand."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import prompt_compiler as pc
from prompt_compiler.emit import formats
from prompt_compiler.emit.formats import OUTPUT_FORMATS, FormatPlan, LineFormat, OutputFormats
from tests._cli import run_cli

SUITE = """\
datasets:
  - abbr: qa
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "Q: {q}\\nA:"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer, max_out_len: 8}
    splits:
      train: []
      test: [{q: "1+1?", a: "2"}, {q: "2+2?", a: "4"}, {q: "3+3?", a: "6"}]
models:
  - {abbr: base, type: HuggingFaceCausalLM, path: org/base}
"""


class PromptsOnly(LineFormat):
    """A format a user might add: the prompt text and id, nothing else."""

    name, suffix, shard_suffix = "prompts", ".prompts.jsonl", ".prompts.jsonl"
    summary = "prompt texts (.prompts.jsonl)"

    def line(self, rid: str, obj: Mapping[str, Any], plan: FormatPlan) -> dict[str, Any]:
        return {"id": rid, "text": obj["prompt"]}


def test_the_cli_choices_and_help_are_the_registry(tmp_path: Path) -> None:
    proc = run_cli("--help", cwd=tmp_path)
    assert proc.returncode == 0
    assert "--format {records,vllm,openai-batch,parquet}" in proc.stdout
    help_text = " ".join(proc.stdout.split())
    assert ("what to write per dataset x model: the JSONL records (default), vLLM offline "
            "inputs (.vllm.jsonl), OpenAI Batch API request files (.batch-NNNNN.jsonl) or a "
            "Parquet table (.parquet; extra 'parquet')") in help_text
    bad = run_cli("x.yaml", "--format", "vlm", cwd=tmp_path)
    assert bad.returncode == 2 and "invalid choice: 'vlm'" in bad.stderr


def test_an_unknown_format_in_the_library_says_what_is_expected(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SUITE)
    suite = pc.load(tmp_path / "s.yaml")
    with pytest.raises(pc.ConfigError) as err:
        pc.compile_to_dir(suite, tmp_path / "out", format="parket")
    assert str(err.value) == ("at --format: unknown format 'parket' (did you mean 'parquet'?); "
                              "expected one of records, vllm, openai-batch, parquet")
    assert not (tmp_path / "out").exists()


def test_a_registered_format_is_written_whole_and_as_shards(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    registry = OutputFormats(*OUTPUT_FORMATS, PromptsOnly())
    monkeypatch.setattr(formats, "OUTPUT_FORMATS", registry)
    from prompt_compiler.emit import shards

    monkeypatch.setattr(shards, "OUTPUT_FORMATS", registry)
    (tmp_path / "s.yaml").write_text(SUITE)
    suite = pc.load(tmp_path / "s.yaml")
    lines = [b'{"id": "base/qa/0", "text": "Q: 1+1?\\nA:"}\n',
             b'{"id": "base/qa/1", "text": "Q: 2+2?\\nA:"}\n',
             b'{"id": "base/qa/2", "text": "Q: 3+3?\\nA:"}\n']

    manifest = pc.compile_to_dir(suite, tmp_path / "whole", format="prompts")
    assert (tmp_path / "whole/base/qa.prompts.jsonl").read_bytes() == b"".join(lines)
    assert not (tmp_path / "whole/base/qa.jsonl").exists()
    entry = manifest["outputs"]["base/qa.prompts.jsonl"]
    assert (entry["format"], entry["records"]) == ("prompts", 3)

    manifest = pc.compile_to_dir(suite, tmp_path / "sharded", format="prompts", shard_rows=2)
    folder = tmp_path / "sharded/base/qa"
    assert sorted(p.name for p in folder.iterdir()) == ["part-00000.prompts.jsonl",
                                                        "part-00001.prompts.jsonl"]
    assert (folder / "part-00000.prompts.jsonl").read_bytes() == lines[0] + lines[1]
    assert (folder / "part-00001.prompts.jsonl").read_bytes() == lines[2]
    entry = manifest["outputs"]["base/qa"]
    assert [s["records"] for s in entry["shards"]] == [2, 1]


def test_a_taken_format_name_is_refused() -> None:
    with pytest.raises(pc.RegistryError, match="an output format named 'vllm' is already"):
        OutputFormats(*OUTPUT_FORMATS, type("Again", (LineFormat,), {"name": "vllm"})())


def test_the_old_names_of_the_request_and_parquet_functions_warn() -> None:
    from prompt_compiler.emit import requests

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert formats.vllm_line is requests.vllm_line
    assert [str(w.message) for w in caught] == [
        "prompt_compiler.emit.formats.vllm_line is now prompt_compiler.emit.requests.vllm_line"]
    assert all(issubclass(w.category, DeprecationWarning) for w in caught)
    with pytest.raises(AttributeError):
        formats.no_such_name  # noqa: B018


def test_the_records_are_read_once_per_pair(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A pair's records file becomes its format in one pass (Parquet included: its column
    types come from a spool of what that pass read)."""
    pytest.importorskip("pyarrow")
    reads: list[str] = []
    real = formats._read_records

    def counted(path: Path) -> Any:
        reads.append(path.name)
        return real(path)

    monkeypatch.setattr(formats, "_read_records", counted)
    (tmp_path / "s.yaml").write_text(SUITE)
    suite = pc.load(tmp_path / "s.yaml")
    for fmt in ("vllm", "openai-batch", "parquet"):
        reads.clear()
        pc.compile_to_dir(suite, tmp_path / fmt, format=fmt)
        assert reads == ["qa.jsonl"], fmt
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "parquet/base/qa.parquet")
    assert table.column("prompt").to_pylist() == ["Q: 1+1?\nA:", "Q: 2+2?\nA:", "Q: 3+3?\nA:"]
    assert table.column("gold").to_pylist() == ["2", "4", "6"]
