"""The ``compile-prompts`` command line, run on the shipped examples in ``configs/``.

Most tests call :func:`prompt_compiler.cli.main` in-process; one runs the installed entry
point in a subprocess.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _cli import EXAMPLE_INPUTS

from prompt_compiler.cli import main
from prompt_compiler.model.meta_library import list_model_templates

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"

DATASETS = {  # abbr -> mode of its records
    "arith-gen-3shot": "gen",
    "sentiment-ppl": "ppl",
    "capitals-gen-0shot": "gen",
    "dialogue-chat": "chat",
}
MODELS = {  # abbr -> type of the compiled prompt
    "internlm2-chat-7b-turbomind": str,
    "tinychat-1b-hf": str,
    "gpt-4o-mini": list,
    "qwen2.5-7b-instruct-hf": list,
}
BASE_KEYS = {"dataset", "model", "mode", "index", "row", "ice_ids", "prompt", "prompt_sha256",
             "max_out_len", "stop", "stop_token_ids", "gold"}

# Two datasets; the second declares an input column its rows lack, so compiling it fails
# after the first has been compiled.
FAILING_SUITE = """\
datasets:
  - abbr: good
    reader_cfg: {input_columns: [q], output_column: a}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "Q: {q}\\nA:"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
    rows: [{q: one, a: "1"}, {q: two, a: "2"}]
  - abbr: bad
    reader_cfg: {input_columns: [question], output_column: a}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "Q: {question}\\nA:"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
    rows: [{q: one, a: "1"}, {q: two, a: "2"}]
models:
  - {abbr: m1, meta_template: chatml}
  - {abbr: m2, meta_template: openai-api}
"""


# --- helpers ----------------------------------------------------------------------------


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones included), by relative path."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def jsonl_files(folder: Path) -> dict[str, bytes]:
    return {k: v for k, v in snapshot(folder).items() if k.endswith(".jsonl")}


def read_jsonl(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


def canonical_sha(prompt: object) -> str:
    text = prompt if isinstance(prompt, str) else json.dumps(
        prompt, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("compile-prompts: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(REPO)
    return REPO


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``compile-prompts configs/ -o OUT`` from the repository root (the README command)."""
    out = tmp_path_factory.mktemp("examples") / "out"
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        assert main(["configs/", "-o", str(out)]) == 0
    finally:
        os.chdir(cwd)
    return out


@pytest.fixture
def failing_suite(tmp_path: Path) -> Path:
    path = tmp_path / "failing.yaml"
    path.write_text(FAILING_SUITE, encoding="utf-8")
    return path


# --- the examples -------------------------------------------------------------------------


def test_examples_compile_every_pair(compiled: Path) -> None:
    expected = {f"{m}/{d}.jsonl" for m in MODELS for d in DATASETS}
    assert set(snapshot(compiled)) == expected | {"manifest.json"}
    manifest = json.loads((compiled / "manifest.json").read_text(encoding="utf-8"))
    assert set(manifest["outputs"]) == expected
    assert manifest["mode"] == "default"
    # the configs, the bases eval_demo.py pulls in, the data files, the named model template
    assert [i["path"] for i in manifest["inputs"]] == EXAMPLE_INPUTS


def test_records_have_exactly_the_documented_keys(compiled: Path) -> None:
    for name, data in jsonl_files(compiled).items():
        model, dataset = name[:-len(".jsonl")].split("/")
        records = read_jsonl(data)
        assert records, name
        for rec in records:
            mode = DATASETS[dataset]
            keys = BASE_KEYS | ({"label"} if mode == "ppl" else set()) | (
                {"turn"} if mode == "chat" else set())
            assert set(rec) == keys, (name, rec)
            assert list(rec)[:5] == ["dataset", "model", "mode", "index", "row"]
            assert list(rec)[-4:] == ["max_out_len", "stop", "stop_token_ids", "gold"]
            assert (rec["dataset"], rec["model"], rec["mode"]) == (dataset, model, mode)
            assert isinstance(rec["prompt"], MODELS[model]), (name, rec["prompt"])
            assert rec["prompt_sha256"] == canonical_sha(rec["prompt"])


def test_manifest_hashes_and_counts_match_the_files(compiled: Path) -> None:
    manifest = json.loads((compiled / "manifest.json").read_text(encoding="utf-8"))
    for name, entry in manifest["outputs"].items():
        data = (compiled / name).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest(), name
        assert entry["records"] == len(data.decode("utf-8").splitlines()), name
        assert f"{entry['model']}/{entry['dataset']}.jsonl" == name
    for item in manifest["inputs"]:
        assert item["sha256"] == hashlib.sha256((REPO / item["path"]).read_bytes()).hexdigest()


def test_example_shapes(compiled: Path) -> None:
    model = "internlm2-chat-7b-turbomind"
    arith = read_jsonl((compiled / model / "arith-gen-3shot.jsonl").read_bytes())
    assert len(arith) == 5 and all(r["ice_ids"] == [0, 1, 2] for r in arith)
    # the three train examples precede the test question; generation starts the BOT turn
    first = arith[0]["prompt"]
    assert first.index("Tom has 3 apples") < first.index("Lena reads 10 pages")
    assert first.endswith("<|im_start|>assistant\n")

    sentiment = read_jsonl((compiled / model / "sentiment-ppl.jsonl").read_bytes())
    assert [(r["index"], r["label"]) for r in sentiment[:4]] == [(0, lab) for lab in "ABCD"]
    assert len(sentiment) == 6 * 4

    capitals = read_jsonl((compiled / model / "capitals-gen-0shot.jsonl").read_bytes())
    question = "What is the capital of France? Reply with the city name only.\n"
    assert capitals[0]["prompt"] == question
    assert capitals[0]["gold"] == "Paris"
    # OpenCompass's OpenAI class sends a plain string prompt as one user message
    api = read_jsonl((compiled / "gpt-4o-mini" / "capitals-gen-0shot.jsonl").read_bytes())
    assert api[0]["prompt"] == [{"role": "user", "content": question}]

    chat = read_jsonl((compiled / "gpt-4o-mini" / "dialogue-chat.jsonl").read_bytes())
    assert [(r["index"], r["turn"]) for r in chat[:4]] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert len(chat) == 3 + 2 * 4  # every_with_gt: one record per assistant turn

    hf_chat = read_jsonl((compiled / "qwen2.5-7b-instruct-hf" / "dialogue-chat.jsonl").read_bytes())
    assert hf_chat[1]["prompt"] == [
        {"role": "user", "content": "Hi! Can you suggest a name for a grey cat?"},
        {"role": "assistant", "content": "How about Smokey Whiskerton?"},
        {"role": "user", "content": "Something shorter, please."},
    ]


def test_summary_line(in_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["configs/", "-o", str(tmp_path / "o")], capsys)
    assert code == 0 and err == ""
    where = tmp_path / "o"
    assert out == f"16 dataset x model pairs, 184 prompts (default mode), written to {where}/\n"


def test_examples_do_not_depend_on_the_working_directory(
        compiled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run([str(CONFIGS), "-o", "elsewhere"], capsys)
    assert code == 0, err
    assert jsonl_files(tmp_path / "elsewhere") == jsonl_files(compiled)


# --- determinism --------------------------------------------------------------------------


def test_two_runs_are_byte_identical(in_repo: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["configs/", "-o", str(tmp_path / "a")], capsys)[0] == 0
    assert run(["configs/", "-o", str(tmp_path / "b")], capsys)[0] == 0
    assert snapshot(tmp_path / "a") == snapshot(tmp_path / "b")


def test_parallel_jobs_give_the_same_bytes(compiled: Path, in_repo: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["configs/", "-o", str(tmp_path / "p"), "--jobs", "2"], capsys)
    assert code == 0, err
    assert snapshot(tmp_path / "p") == snapshot(compiled)


# --- options ------------------------------------------------------------------------------


def test_check_writes_nothing(in_repo: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "never"
    code, out, err = run(["configs/", "--check", "-o", str(out_dir)], capsys)
    assert code == 0, err
    assert not out_dir.exists()
    assert out == "16 dataset x model pairs, 184 prompts (default mode), checked, nothing written\n"


def test_show_prints_n_prompts_per_pair_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run([str(CONFIGS), "--show", "2"], capsys)
    assert code == 0, err
    assert list(tmp_path.iterdir()) == []  # no ./out
    blocks = out.split("=== ")[1:]
    assert len(blocks) == len(DATASETS) * len(MODELS)
    for block in blocks:
        assert block.count("\n--- [") == 2, block
    assert "↵" in out
    assert "--- [ppl] row 0 label='A' ice_ids=[]" in out
    assert "--- [chat] row 0 turn=1 ice_ids=[]" in out
    assert "=== arith-gen-3shot x gpt-4o-mini (" in out


def test_show_with_out_also_writes(in_repo: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["configs/", "--show", "1", "--only", "capitals*", "-o", str(tmp_path)],
                       capsys)
    assert code == 0
    assert out.count("=== ") == len(MODELS)
    assert set(jsonl_files(tmp_path)) == {f"{m}/capitals-gen-0shot.jsonl" for m in MODELS}


def test_only_selects_datasets_by_glob(in_repo: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["configs/", "--only", "arith*", "--only", "dia*", "-o", str(tmp_path)],
                       capsys)
    assert code == 0, err
    assert set(jsonl_files(tmp_path)) == {
        f"{m}/{d}.jsonl" for m in MODELS for d in ("arith-gen-3shot", "dialogue-chat")}


def test_only_matching_nothing_is_a_user_error(in_repo: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["configs/", "--only", "nope*", "-o", str(tmp_path / "o")], capsys)
    assert code == 1 and out == ""
    assert "--only" in one_error_line(err)
    assert not (tmp_path / "o").exists()


def test_compat_mode_runs(in_repo: Path, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    # OpenCompass 0.5.4 cannot score the PPL dataset with the chat-template model (its
    # get_ppl raises NotImplementedError): compat mode stops there, as OpenCompass does
    code, out, err = run(["configs/", "--mode", "compat", "-o", str(tmp_path / "all")], capsys)
    assert code == 1 and out == ""
    assert one_error_line(err) == (
        "compile-prompts: error: configs/datasets/sentiment/sentiment_ppl.py (imported by "
        "configs/eval_demo.py): dataset 'sentiment-ppl', model 'qwen2.5-7b-instruct-hf', at "
        "sentiment_ppl[0].infer_cfg.inferencer.type: OpenCompass 0.5.4 cannot run PPLInferencer "
        "with a HuggingFacewithChatTemplate model: NotImplementedError: "
        "HuggingFacewithChatTemplate does not support ppl-based evaluation yet, try gen-based "
        "instead. (hint: the default mode compiles these prompts; OpenCompass scores them only "
        "with a class that has the method (e.g. HuggingFaceCausalLM))")
    code, out, err = run(["configs/", "--mode", "compat", "--models", "[!q]*",
                          "-o", str(tmp_path)], capsys)
    assert code == 0, err
    assert "(opencompass mode)" in out
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["mode"] == "opencompass"
    assert len(manifest["outputs"]) == len(DATASETS) * (len(MODELS) - 1)


def test_model_option_replaces_the_configs_models(in_repo: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["configs/", "--model", "llama-3-instruct", "--model", "openai-api",
                        "-o", str(tmp_path)], capsys)
    assert code == 0, err
    files = jsonl_files(tmp_path)
    assert {k.split("/")[0] for k in files} == {"llama-3-instruct", "openai-api"}
    rec = read_jsonl(files["llama-3-instruct/capitals-gen-0shot.jsonl"])[0]
    assert rec["model"] == "llama-3-instruct" and isinstance(rec["prompt"], str)
    rec = read_jsonl(files["llama-3-instruct/arith-gen-3shot.jsonl"])[0]
    assert "<|start_header_id|>user<|end_header_id|>\n\n" in rec["prompt"]
    assert isinstance(read_jsonl(files["openai-api/arith-gen-3shot.jsonl"])[0]["prompt"], list)


def test_unknown_model_name_is_a_user_error(in_repo: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["configs/", "--model", "no-such-model", "--check"], capsys)
    assert code == 1
    assert "no-such-model" in one_error_line(err)


def test_models_lists_the_library(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["models"], capsys)
    assert code == 0 and err == ""
    names = [line.split()[0] for line in out.splitlines()]
    assert names == [t.name for t in list_model_templates()]
    assert {"internlm2-chat", "openai-api", "hf-chat-default"} <= set(names)
    line = next(x for x in out.splitlines() if x.startswith("openai-api "))
    assert line.split()[1] == "api"


def test_json_prints_the_manifest(in_repo: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["configs/", "--json", "-o", str(tmp_path)], capsys)
    assert code == 0
    assert json.loads(out) == json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))


def test_json_with_check(in_repo: Path, compiled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["configs/", "--json", "--check"], capsys)
    assert code == 0
    printed = json.loads(out)
    written = json.loads((compiled / "manifest.json").read_text(encoding="utf-8"))
    assert printed["outputs"] == written["outputs"]


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    [],
    ["configs/", "--no-such-option"],
    ["configs/", "--mode", "fast"],
    ["configs/", "--jobs", "0"],
    ["configs/", "--show", "-1"],
    ["configs/", "--jobs", "two"],
])
def test_usage_errors_exit_2(argv: list[str], in_repo: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "usage: compile-prompts" in err and "Traceback" not in err


def test_missing_config_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.py"
    code, out, err = run([str(missing), "-o", str(tmp_path / "o")], capsys)
    assert code == 1 and out == ""
    assert str(missing) in one_error_line(err)
    assert not (tmp_path / "o").exists()


def test_broken_python_config_is_a_user_error(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("datasets = [dict(abbr='x',\n", encoding="utf-8")
    code, _, err = run([str(broken), "--check"], capsys)
    assert code == 1
    line = one_error_line(err)
    assert str(broken) in line and "line" in line


def test_bad_dataset_error_names_the_file(failing_suite: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([str(failing_suite), "--check"], capsys)
    assert code == 1 and out == ""
    line = one_error_line(err)
    assert str(failing_suite) in line and "'bad'" in line and "question" in line


def test_walk_keeps_a_model_imported_by_a_suite_once(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.py").write_text(
        "models = [dict(abbr='m', meta_template='chatml')]\n", encoding="utf-8")
    (tmp_path / "eval_x.py").write_text(
        "from mmengine.config import read_base\n"
        "with read_base():\n"
        "    from .models.m import models as m_models\n"
        "datasets = [dict(abbr='d', reader_cfg=dict(input_columns=['q'], output_column='a'),\n"
        "    infer_cfg=dict(prompt_template=dict(type='PromptTemplate', template='{q}'),\n"
        "        retriever=dict(type='ZeroRetriever'), inferencer=dict(type='GenInferencer')),\n"
        "    rows=[dict(q='x', a='y')])]\n"
        "models = [*m_models]\n", encoding="utf-8")
    code, _, err = run([str(tmp_path), "--check"], capsys)
    assert code == 0, err


# --- atomicity ----------------------------------------------------------------------------


def test_a_failing_run_leaves_no_files(failing_suite: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    code, _, err = run([str(failing_suite), "-o", str(out_dir)], capsys)
    assert code == 1
    one_error_line(err)
    assert not out_dir.exists() or snapshot(out_dir) == {}  # no partial, temp or manifest file


def test_a_failing_parallel_run_leaves_no_temp_files(failing_suite: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    code, _, _ = run([str(failing_suite), "-o", str(out_dir), "--jobs", "2"], capsys)
    assert code == 1
    assert not out_dir.exists() or snapshot(out_dir) == {}


def test_a_failing_run_does_not_create_the_output_folder(
        failing_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    assert run([str(failing_suite), "-o", str(out_dir)], capsys)[0] == 1
    assert not out_dir.exists()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_failing_run_keeps_the_previous_output(jobs: str, failing_suite: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    assert run([str(failing_suite), "--only", "good", "-o", str(out_dir)], capsys)[0] == 0
    before = snapshot(out_dir)
    assert set(before) == {"m1/good.jsonl", "m2/good.jsonl", "manifest.json"}
    code, _, err = run([str(failing_suite), "-o", str(out_dir), "--jobs", jobs], capsys)
    assert code == 1
    one_error_line(err)
    after = snapshot(out_dir)
    if jobs == "2":  # see test_a_failing_parallel_run_leaves_no_temp_files
        after = {k: v for k, v in after.items() if not k.rsplit("/", 1)[-1].startswith(".")}
    assert after == before


# --- the installed entry point ------------------------------------------------------------


def test_entry_point_subprocess(tmp_path: Path) -> None:
    exe = shutil.which("compile-prompts") or str(Path(sys.executable).with_name("compile-prompts"))
    if not Path(exe).exists():
        pytest.skip("the compile-prompts entry point is not installed")
    proc = subprocess.run([exe, "configs/", "-o", str(tmp_path / "out")], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("16 dataset x model pairs, 184 prompts (default mode)")
    assert proc.stderr == ""
    assert (tmp_path / "out" / "manifest.json").is_file()
    bad = subprocess.run([exe, str(tmp_path / "missing.yaml")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr.startswith("compile-prompts: error: ") and bad.stderr.count("\n") == 1
