"""Output files are UTF-8 whatever the locale; printing falls back to escapes (issue 20).

Every case runs ``python -m prompt_compiler`` under ``LC_ALL=C`` with Python's UTF-8 mode
off and ``PYTHONIOENCODING`` unset (an ASCII-only locale, as in a bare container), on a
suite whose data, abbrs, folder and config names are not ASCII. The expected record line
and printed lines are written by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX locales")

CONFIG = """\
datasets:
  - abbr: dé
    reader_cfg: {input_columns: [question], output_column: answer}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "Q: {question}\\nA:"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
    path: données/rows.jsonl
models:
  - {abbr: mé, renderer: lm, meta_template: null}
"""
PROMPT = "Q: café 中文 😀\nA:"
RECORD = ('{"dataset": "dé", "model": "mé", "mode": "gen", "index": 0, "row": 0, "ice_ids": [], '
          f'"prompt": "Q: café 中文 😀\\nA:", "prompt_sha256": '
          f'"{hashlib.sha256(PROMPT.encode()).hexdigest()}", "max_out_len": null, "stop": [], '
          '"stop_token_ids": [], "gold": "é"}\n')


def c_locale(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING", "PYTHONUTF8",
                                "PROMPT_COMPILER"))}
    return {**env, "LC_ALL": "C", "PYTHONUTF8": "0", **extra}


def cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *args], cwd=cwd,
                          capture_output=True, timeout=60, env=env)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "données").mkdir()
    (tmp_path / "données" / "rows.jsonl").write_bytes(
        '{"question": "café 中文 😀", "answer": "é"}\n'.encode())
    (tmp_path / "réglages.yaml").write_bytes(CONFIG.encode())
    return tmp_path


def test_a_run_over_non_ascii_data_writes_the_same_utf8_bytes_in_the_c_locale(
        suite: Path) -> None:
    run = cli("réglages.yaml", "-o", "sortie", cwd=suite, env=c_locale())
    assert run.returncode == 0, run.stderr
    assert run.stderr == b""
    out = suite / "sortie"
    assert sorted(os.listdir(os.fsencode(out))) == [b"manifest.json", "mé".encode()]
    assert (out / "mé" / "dé.jsonl").read_bytes() == RECORD.encode()
    manifest = json.loads((out / "manifest.json").read_bytes())
    assert [i["path"] for i in manifest["inputs"]] == ["données/rows.jsonl", "réglages.yaml"]
    assert list(manifest["outputs"]) == ["mé/dé.jsonl"]
    utf8 = cli("réglages.yaml", "-o", "sortie-utf8", cwd=suite,
               env=c_locale(LC_ALL="C.UTF-8", PYTHONUTF8="1"))
    assert utf8.returncode == 0, utf8.stderr
    for name in ("manifest.json", "mé/dé.jsonl"):
        assert (out / name).read_bytes() == (suite / "sortie-utf8" / name).read_bytes()
    again = cli("réglages.yaml", "-o", "sortie", cwd=suite, env=c_locale())  # it is ours
    assert again.returncode == 0, again.stderr


SHOWN = (b"=== d\\xe9 x m\\xe9 (r\\xe9glages.yaml)\n"
         b"--- [gen] row 0 ice_ids=[]\n"
         b"Q: caf\\xe9 \\u4e2d\\u6587 \\U0001f600\\u21b5\nA:\\u2403\n")


@pytest.mark.parametrize("where", ["LC_ALL=C", "PYTHONIOENCODING=ascii"])
def test_show_prints_backslash_escapes_on_a_stream_that_cannot_encode(
        suite: Path, where: str) -> None:
    env = c_locale() if where == "LC_ALL=C" else c_locale(
        LC_ALL="C.UTF-8", PYTHONUTF8="1", PYTHONIOENCODING="ascii")
    run = cli("réglages.yaml", "--show", "1", cwd=suite, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout == SHOWN and run.stderr == b""


def test_other_printing_commands_never_fail_on_an_ascii_stream(suite: Path) -> None:
    env = c_locale()
    assert cli("réglages.yaml", "-o", "a", cwd=suite, env=env).returncode == 0
    js = cli("réglages.yaml", "-o", "b", "--json", cwd=suite, env=env)
    assert js.returncode == 0, js.stderr
    assert json.loads(js.stdout) == json.loads((suite / "b" / "manifest.json").read_bytes())
    assert js.stdout.isascii()
    assert b'"m\\u00e9/d\\u00e9.jsonl"' in js.stdout
    diff = cli("diff", "a", "b", cwd=suite, env=env)
    assert diff.returncode == 0, diff.stderr
    assert diff.stdout.startswith(b"d\\xe9 x m\\xe9: 1 same, 0 changed")
    assert json.loads(cli("diff", "a", "b", "--json", cwd=suite, env=env).stdout)
    lint = cli("lint", "réglages.yaml", cwd=suite, env=env)
    assert (lint.returncode, lint.stdout, lint.stderr) == (0, b"0 findings\n", b"")
    models = cli("models", cwd=suite, env=env)
    assert models.returncode == 0 and models.stderr == b"" and models.stdout.isascii()
    assert json.loads(cli("models", "--json", cwd=suite, env=env).stdout)
    bad = cli("réglages.yaml", "-o", "c", "--only", "zé", cwd=suite, env=env)
    assert bad.returncode == 1 and bad.stderr.count(b"\n") == 1 and b"Traceback" not in bad.stderr
