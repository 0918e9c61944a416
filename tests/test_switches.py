"""The system_role, fewshot and stateless-shots switches, end to end: config files on disk
(Python and YAML) compiled by the CLI in a subprocess. Expected prompts are written by hand.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent / "data" / "switches"

CHATML_FULL = ("<|im_start|>system\nBe brief.<|im_end|>\n"
               "<|im_start|>user\nQ: 1+1<|im_end|>\n<|im_start|>assistant\nA: 2<|im_end|>\n"
               "<|im_start|>user\nQ: 3+3<|im_end|>\n<|im_start|>assistant\n")
CHATML_NO_SYSTEM = ("<|im_start|>user\nQ: 1+1<|im_end|>\n<|im_start|>assistant\nA: 2<|im_end|>\n"
                    "<|im_start|>user\nQ: 3+3<|im_end|>\n<|im_start|>assistant\n")


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def prompts(out: Path, dataset: str = "qa") -> dict[str, Any]:
    """model abbr -> the prompt of its only record."""
    found = {}
    for file in sorted(out.glob(f"*/{dataset}.jsonl")):
        (line,) = file.read_text(encoding="utf-8").splitlines()
        rec = json.loads(line)
        found[rec["model"]] = rec["prompt"]
    return found


@pytest.fixture
def work(tmp_path: Path) -> Path:
    for name in ("system.yaml", "inline.py"):
        shutil.copy(DATA / name, tmp_path / name)
    return tmp_path


# --- system_role --------------------------------------------------------------------------


def test_system_role_each_value_from_yaml(work: Path) -> None:
    proc = cli("system.yaml", "-o", "out", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ("compile-prompts: warning: model 'dropped': system message dropped "
                           "(system_role: drop)\n")
    got = prompts(work / "out")
    assert got["plain"] == CHATML_FULL  # chatml declares SYSTEM: native already
    assert got["native"] == CHATML_FULL
    assert got["merged"] == ("<|im_start|>user\nBe brief.\n\nQ: 1+1<|im_end|>\n"
                             "<|im_start|>assistant\nA: 2<|im_end|>\n"
                             "<|im_start|>user\nQ: 3+3<|im_end|>\n<|im_start|>assistant\n")
    assert got["dropped"] == CHATML_NO_SYSTEM
    # OpenCompass's default chat meta template: SYSTEM is a HUMAN slot (merged with '\n', and
    # its empty slot in every round adds '\n' to each user message).
    assert got["hf"] == [{"role": "user", "content": "Be brief.\nQ: 1+1\n"},
                         {"role": "assistant", "content": "A: 2"},
                         {"role": "user", "content": "Q: 3+3\n"}]
    assert got["hf-native"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Q: 1+1"},
                                {"role": "assistant", "content": "A: 2"},
                                {"role": "user", "content": "Q: 3+3"}]
    assert got["hf-merged"] == [{"role": "user", "content": "Be brief.\n\nQ: 1+1\n"},
                                {"role": "assistant", "content": "A: 2"},
                                {"role": "user", "content": "Q: 3+3\n"}]


def test_system_role_error_and_impossible_native(work: Path) -> None:
    text = (work / "system.yaml").read_text(encoding="utf-8")
    models = text.index("models:")
    (work / "err.yaml").write_text(
        text[:models] + "models:\n  - {abbr: strict, meta_template: chatml, system_role: error}\n")
    proc = cli("err.yaml", "--check", cwd=work)
    assert proc.returncode == 1
    assert proc.stderr.startswith("compile-prompts: error: err.yaml: dataset 'qa', model 'strict'")
    assert ("the prompt has a system message and model 'strict' has system_role: error"
            in proc.stderr)
    (work / "gemma.yaml").write_text(
        text[:models] + "models:\n  - {abbr: g, meta_template: gemma, system_role: native}\n")
    proc = cli("gemma.yaml", "--check", cwd=work)
    assert proc.returncode == 1
    assert ("system_role: native, but the meta template declares no SYSTEM role "
            "(roles: HUMAN, BOT)") in proc.stderr
    (work / "typo.yaml").write_text(
        text[:models] + "models:\n  - {abbr: t, meta_template: chatml, system_role: nativ}\n")
    proc = cli("typo.yaml", "--check", cwd=work)
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1
    assert "models[0].system_role" in proc.stderr
    assert "system_role must be one of native, merge, drop, error, got 'nativ'" in proc.stderr


# --- fewshot ------------------------------------------------------------------------------


def test_fewshot_key_in_a_python_config(work: Path) -> None:
    proc = cli("inline.py", "-o", "out", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert prompts(work / "out") == {"merged": (
        "<|im_start|>user\nBe brief.\n\nQ: 1+1\nA: 2\n\nQ: 2+2\nA: 4\n\nQ: 3+3<|im_end|>\n"
        "<|im_start|>assistant\n")}


def test_fewshot_flag_overrides_the_config(work: Path) -> None:
    proc = cli("system.yaml", "--fewshot", "inline", "-o", "out", cwd=work)
    assert proc.returncode == 0, proc.stderr
    got = prompts(work / "out")
    assert got["plain"] == ("<|im_start|>system\nBe brief.<|im_end|>\n"
                            "<|im_start|>user\nQ: 1+1\nA: 2\n\nQ: 3+3<|im_end|>\n"
                            "<|im_start|>assistant\n")
    assert got["hf-native"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Q: 1+1\nA: 2\n\nQ: 3+3"}]
    # The flag wins over the dataset key: inline.py says inline, the flag says multiturn.
    proc = cli("inline.py", "--fewshot", "multiturn", "-o", "out2", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert prompts(work / "out2") == {"merged": (
        "<|im_start|>user\nBe brief.\n\nQ: 1+1<|im_end|>\n<|im_start|>assistant\nA: 2<|im_end|>\n"
        "<|im_start|>user\nQ: 2+2<|im_end|>\n<|im_start|>assistant\nA: 4<|im_end|>\n"
        "<|im_start|>user\nQ: 3+3<|im_end|>\n<|im_start|>assistant\n")}


def test_fewshot_multiturn_rejects_text_examples_and_bad_values(tmp_path: Path) -> None:
    (tmp_path / "text.yaml").write_text("""\
datasets:
  - abbr: text
    fewshot: multiturn
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      ice_template: {type: PromptTemplate, template: "{q} {a}\\n"}
      prompt_template: {type: PromptTemplate, template: "</E>{q}", ice_token: "</E>"}
      retriever: {type: FixKRetriever, fix_id_list: [0]}
      inferencer: {type: GenInferencer}
    rows: [{q: x, a: y}]
models: [{abbr: m, meta_template: chatml}]
""")
    proc = cli("text.yaml", "--check", cwd=tmp_path)
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1
    assert "fewshot: multiturn needs a role-based ice_template" in proc.stderr
    assert "infer_cfg.ice_template" in proc.stderr
    proc = cli("text.yaml", "--check", "--fewshot", "sideways", cwd=tmp_path)
    assert proc.returncode == 2 and "invalid choice: 'sideways'" in proc.stderr
    # inline on text examples changes nothing: they are inline already.
    proc = cli("text.yaml", "--fewshot", "inline", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads((tmp_path / "out" / "m" / "text.jsonl").read_text())
    assert rec["prompt"] == "x y\n\nx"


# --- stateless random shots ---------------------------------------------------------------

STATELESS = """\
datasets:
  - abbr: {abbr}
    type: JsonlDataset
    data_files: {{train: train.jsonl, test: test.jsonl}}
    reader_cfg: {{input_columns: [q], output_column: a{test_range}}}
    infer_cfg:
      ice_template: {{type: PromptTemplate, template: "{{q}}={{a}}\\n"}}
      prompt_template: {{type: PromptTemplate, template: "</E>{{q}}=", ice_token: "</E>"}}
      retriever: {{type: RandomRetriever, ice_num: 3, seed: 7{stateless}}}
      inferencer: {{type: GenInferencer}}
models: [{{abbr: base, type: HuggingFaceBaseModel}}]
"""


def _write_stateless(folder: Path, n_test: int, *, test_range: str = "",
                     stateless: bool = True, abbr: str = "shots") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "train.jsonl").open("w") as fh:
        for i in range(50):
            fh.write(json.dumps({"q": f"t{i}", "a": str(i)}) + "\n")
    with (folder / "test.jsonl").open("w") as fh:
        for i in range(n_test):
            fh.write(json.dumps({"q": f"x{i}", "a": "?"}) + "\n")
    rng = f", test_range: '{test_range}'" if test_range else ""
    flag = ", stateless: true" if stateless else ""
    (folder / "suite.yaml").write_text(STATELESS.format(abbr=abbr, test_range=rng, stateless=flag))


def _shots(out: Path, abbr: str = "shots") -> list[list[int]]:
    lines = (out / "base" / f"{abbr}.jsonl").read_text().splitlines()
    return [json.loads(line)["ice_ids"] for line in lines]


def test_stateless_shots_do_not_depend_on_which_rows_are_compiled(tmp_path: Path) -> None:
    _write_stateless(tmp_path / "small", 10)
    _write_stateless(tmp_path / "big", 10_000)
    _write_stateless(tmp_path / "shard", 10_000, test_range="[5:15]")
    for name in ("small", "big", "shard"):
        proc = cli("suite.yaml", "-o", "out", cwd=tmp_path / name)
        assert proc.returncode == 0, proc.stderr
    small = _shots(tmp_path / "small" / "out")
    big = _shots(tmp_path / "big" / "out")
    shard = _shots(tmp_path / "shard" / "out")
    assert len(small) == 10 and len(big) == 10_000 and len(shard) == 10
    assert big[:10] == small
    assert shard == big[5:15]  # rows keep their ids inside a shard
    for ids in big[:200]:
        assert len(set(ids)) == 3 and all(0 <= i < 50 for i in ids)
    assert len({tuple(ids) for ids in big[:200]}) > 150  # rows draw independently


def test_stateless_with_jobs_and_only(tmp_path: Path) -> None:
    _write_stateless(tmp_path / "a", 40)
    text = (tmp_path / "a" / "suite.yaml").read_text()
    second = text.split("models:")[0].replace("datasets:\n", "").replace("abbr: shots",
                                                                          "abbr: other")
    (tmp_path / "a" / "suite.yaml").write_text(text.replace("models:", second + "models:"))
    proc = cli("suite.yaml", "-o", "all", "--jobs", "2", cwd=tmp_path / "a")
    assert proc.returncode == 0, proc.stderr
    proc = cli("suite.yaml", "-o", "one", "--only", "other", cwd=tmp_path / "a")
    assert proc.returncode == 0, proc.stderr
    together = _shots(tmp_path / "a" / "all")
    assert _shots(tmp_path / "a" / "all", "other") == together  # same seed, same row ids
    assert _shots(tmp_path / "a" / "one", "other") == together


def test_without_stateless_the_draws_follow_opencompass_stream(tmp_path: Path) -> None:
    # OpenCompass draws one stream in row order: a shard's first row gets the stream's
    # first draw, so sharding changes a row's examples. That is what stateless fixes.
    _write_stateless(tmp_path / "full", 20, stateless=False)
    _write_stateless(tmp_path / "shard", 20, stateless=False, test_range="[5:15]")
    for name in ("full", "shard"):
        assert cli("suite.yaml", "-o", "out", cwd=tmp_path / name).returncode == 0
    full, shard = _shots(tmp_path / "full" / "out"), _shots(tmp_path / "shard" / "out")
    assert shard == full[:10] and shard != full[5:15]


def test_system_role_in_chat_mode(tmp_path: Path) -> None:
    shutil.copy(DATA / "chat.yaml", tmp_path / "chat.yaml")
    proc = cli("chat.yaml", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = prompts(tmp_path / "out", "talk")
    assert got == {
        "merged": "<|im_start|>user\nBe brief.\n\nHi<|im_end|>\n<|im_start|>assistant\n",
        "hf-native": [{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": "Hi"}],
        "hf": [{"role": "user", "content": "Be brief.\nHi"}],  # OpenCompass: SYSTEM as HUMAN
    }
