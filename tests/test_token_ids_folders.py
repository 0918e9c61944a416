"""Tokenizer folders as transformers 5 builds them (``prompt_compiler/model/hf_classes.py``),
against what ``AutoTokenizer.from_pretrained`` and OpenCompass's ``get_token_len`` gave on the
same folders (``tools/oc_token_ids_reference.py``: ``folder_cases`` of
``tests/data/oc_token_ids/expected.json``; the folders in ``tests/token_ids_cases.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests import token_ids_cases as cases
from tests._cli import run_cli

pytest.importorskip("tokenizers")

EXPECTED = json.loads(cases.EXPECTED.read_text(encoding="utf-8"))["folder_cases"]
BY_NAME = {c.name: c for c in cases.FOLDER_CASES}


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return cases.folder_case_dirs(tmp_path_factory.mktemp("folders"))


def _folder(folders: dict[str, str], name: str) -> str:
    if name not in folders:
        pytest.skip(f"vocabulary {BY_NAME[name].vocab!r} not present (tests/token_ids_cases.py)")
    return folders[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_folder_encodes_as_transformers(folders: dict[str, str], name: str) -> None:
    from prompt_compiler.model.tokenize import load_tokenizer

    tok: Any = load_tokenizer(_folder(folders, name), tokenizer_kwargs=BY_NAME[name].kwargs)
    # the named BOS/EOS (a class's defaults where the config names none): chat templates'
    # bos_token, the stop token and stop id of generation settings
    assert tok.special.get("bos_token") == EXPECTED[name]["bos_token"]
    assert tok.special.get("eos_token") == EXPECTED[name]["eos_token"]
    assert tok.eos_id == EXPECTED[name]["eos_token_id"]
    for row in EXPECTED[name]["texts"]:
        text = row["text"]
        assert tok.encode(text) == row["ids"], text
        assert tok.encode(text, special_tokens=False) == row["ids_no_special"], text
        assert tok.count(text) == row["opencompass_token_len"], text


def test_reference_covers_every_folder_case() -> None:
    assert sorted(EXPECTED) == sorted(BY_NAME)
    # what the cases are about, read in the recording (transformers' own class choice)
    assert EXPECTED["mistral_published"]["class"] == "LlamaTokenizer"
    assert EXPECTED["mistral_model_type_phi3"]["class"] == "TokenizersBackend"
    assert EXPECTED["llama3_neox_class"]["class"] == "GPTNeoXTokenizer"


def test_mistral_leading_space_by_hand(folders: dict[str, str]) -> None:
    """transformers 5 rebuilds a LlamaTokenizer's pre-tokenizer: a leading space is the
    ``▁`` of the first word, not a token of its own (the file's normalizer doubled it)."""
    from prompt_compiler.model.tokenize import load_tokenizer

    tok: Any = load_tokenizer(_folder(folders, "mistral_legacy_absent"))
    assert tok.encode(" Hello") == [1, 22557]  # <s> ▁Hello
    assert tok.encode("Hello") == [1, 22557]
    tok_eos: Any = load_tokenizer(_folder(folders, "mistral_legacy_absent"),
                                  tokenizer_kwargs={"add_eos_token": True})
    # tokenizer_kwargs={"add_eos_token": True} rewrites the post-processor from the two
    # flags given, add_bos_token defaulting to False there: ▁Hello </s>, no <s>
    assert tok_eos.encode("Hello") == [22557, 2]


DATASET = {
    "abbr": "hello",
    "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
    "infer_cfg": {"prompt_template": {"type": "PromptTemplate", "template": "{q}"},
                  "retriever": {"type": "ZeroRetriever"},
                  "inferencer": {"type": "GenInferencer"}},
    "splits": {"train": [], "test": [{"q": " Hello", "a": "x"}, {"q": "a <s> b</s>c", "a": "x"}]},
}


@pytest.mark.parametrize("fmt", ["py", "yaml"])
def test_cli_mistral_ids_and_tokenizer_kwargs(folders: dict[str, str], tmp_path: Path,
                                              fmt: str) -> None:
    """A Mistral tokenizer folder end to end: config files in Python and YAML,
    ``compile-prompts --tokenize --mode compat``; ids as HuggingFaceBaseModel feeds them
    (``tokenizer(text)``), written here by hand from the recording."""
    folder = _folder(folders, "mistral_legacy_absent")
    models = [{"abbr": "mistral", "type": "HuggingFaceBaseModel", "tokenizer": folder},
              {"abbr": "mistral-eos", "type": "HuggingFaceBaseModel", "tokenizer": folder,
               "tokenizer_kwargs": {"add_eos_token": True, "padding_side": "left"}}]
    if fmt == "py":
        (tmp_path / "suite.py").write_text(f"datasets = [{DATASET!r}]\nmodels = {models!r}\n",
                                           encoding="utf-8")
    else:
        (tmp_path / "suite.yaml").write_text(json.dumps({"datasets": [DATASET],
                                                         "models": models}), encoding="utf-8")
    proc = run_cli(f"suite.{fmt}", "--tokenize", "--mode", "compat", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ids = {m: [json.loads(line)["input_ids"] for line in
               (tmp_path / "out" / m / "hello.jsonl").read_text("utf-8").splitlines()]
           for m in ("mistral", "mistral-eos")}
    # " Hello": <s> ▁Hello; "a <s> b</s>c": <s> ▁a ▁ <s> ▁b </s> c (legacy false: only the
    # first piece gets a ▁, so "c" after </s> is 28717, not ▁c 277)
    assert ids["mistral"] == [[1, 22557], [1, 264, 28705, 1, 287, 2, 28717]]
    # tokenizer_kwargs add_eos_token (add_bos_token not given): </s> added, <s> no longer
    assert ids["mistral-eos"] == [[22557, 2], [264, 28705, 1, 287, 2, 28717, 2]]
    expected = EXPECTED["mistral_legacy_absent"]["texts"]
    assert [r["ids"] for r in expected if r["text"] in (" Hello", "a <s> b</s>c")] \
        == ids["mistral"]


def test_tokenizer_kwargs_only_where_the_class_takes_them(folders: dict[str, str]) -> None:
    """HuggingFaceBaseModel hands tokenizer_kwargs to AutoTokenizer; OpenCompass's VLLM class
    takes none (a config with them is refused in compat mode, ignored in default mode)."""
    import prompt_compiler as pc

    folder = _folder(folders, "mistral_legacy_absent")
    kwargs = {"add_eos_token": True}
    hf = pc.Compiler().model({"abbr": "a", "type": "HuggingFaceBaseModel", "tokenizer": folder,
                              "tokenizer_kwargs": kwargs})
    vllm = pc.Compiler().model({"abbr": "b", "type": "VLLM", "tokenizer": folder,
                                "tokenizer_kwargs": kwargs})
    assert hf.count_tokens("Hello") == 2  # ▁Hello </s>
    assert vllm.count_tokens("Hello") == 2  # <s> ▁Hello
    assert vllm.count_tokens.encode("Hello") == [1, 22557]


def test_cli_sentencepiece_only_folder_is_one_clear_error(tmp_path: Path) -> None:
    """A folder with only a sentencepiece model (no tokenizer.json): one line naming the
    folder, what it holds and what to do; never ids from something else."""
    folder = tmp_path / "spm-only"
    folder.mkdir()
    (folder / "tokenizer.model").write_bytes(b"\x0a\x05hello")  # never read
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>"}), encoding="utf-8")
    models = [{"abbr": "spm", "type": "HuggingFaceBaseModel", "tokenizer": str(folder)}]
    (tmp_path / "suite.yaml").write_text(json.dumps({"datasets": [DATASET], "models": models}),
                                         encoding="utf-8")
    proc = run_cli("suite.yaml", "--tokenize", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert str(folder) in lines[0] and "tokenizer.model" in lines[0]
    assert "no tokenizer.json" in lines[0] and "save_pretrained" in lines[0]
    assert not (tmp_path / "out").exists()
