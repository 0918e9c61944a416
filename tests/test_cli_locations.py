"""``-o`` and ``--data-dir`` given as ``s3://`` URIs without a bucket: one error line, and no
local folder named ``s3:`` (``Path("s3://")`` reads ``s3:``, ``Path("s3:///x")`` reads
``s3:/x``: the URI is checked as typed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._cli import run_cli

SUITE = """\
datasets:
  - abbr: qa
    path: rows.jsonl
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "Q: {q}"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
models:
  - {abbr: m, renderer: lm, meta_template: null}
"""


@pytest.mark.parametrize(("command", "flag", "value"), [
    ((), "-o", "s3://"), ((), "-o", "s3:///x"), ((), "-o", "s3:"), ((), "--data-dir", "s3://"),
    (("lint",), "--data-dir", "s3:///rows")])
def test_an_s3_uri_without_a_bucket(tmp_path: Path, command: tuple[str, ...], flag: str,
                                    value: str) -> None:
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "rows.jsonl").write_text('{"q": "1", "a": "2"}\n', encoding="utf-8")
    shards = () if command else ("--shard-rows", "2")  # an s3:// output is sharded
    run = run_cli(*command, "s.yaml", flag, value, *shards, cwd=tmp_path)
    name = "compile-prompts lint" if command else "compile-prompts"
    option = "-o/--out" if flag == "-o" else flag
    assert run.returncode == 2
    assert run.stderr.splitlines()[-1] == (
        f"{name}: error: argument {option}: {value}: an s3:// URI needs a bucket "
        "(s3://BUCKET/PREFIX)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl", "s.yaml"]
