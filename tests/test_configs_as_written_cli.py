"""OpenCompass configs as written (issue 24, point 4), each through the CLI as a subprocess;
expected output written by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._cli import run_cli

CUSTOM = """\
datasets = [dict(abbr='d', path='cust.jsonl'READER)]
models = [dict(abbr='m', renderer='lm')]
"""


@pytest.mark.parametrize("reader", ["", ", reader_cfg='q'", ", reader_cfg=['q']"])
def test_custom_dataset_reader_cfg_not_a_mapping(tmp_path: Path, reader: str) -> None:
    """A path-only (custom) dataset: OpenCompass builds its reader from the file's first row
    and ignores a ``reader_cfg`` key; a string or a list there compiled to an internal error
    (AttributeError in the pair's warnings)."""
    (tmp_path / "cust.jsonl").write_text('{"question": "q1", "answer": "a"}\n',
                                         encoding="utf-8")
    (tmp_path / "eval_c.py").write_text(CUSTOM.replace("READER", reader), encoding="utf-8")
    proc = run_cli("eval_c.py", "-o", "out", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    (line,) = (tmp_path / "out" / "m" / "d.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert (record["prompt"], record["gold"]) == ("q1", "a")
