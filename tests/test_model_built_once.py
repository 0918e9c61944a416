"""A model dict is built into a :class:`Model` once per process: the one its config's load
builds is the one every pair's compile and the manifest use (``build_model`` keeps it)."""

from __future__ import annotations

import collections
import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

import prompt_compiler as pc
from prompt_compiler.errors import PromptCompilerError
from prompt_compiler.model import spec
from prompt_compiler.model.spec import Model, build_model

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """``Model.from_dict`` calls, by the model's name."""
    counted: collections.Counter[str] = collections.Counter()
    original = Model.from_dict.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Model], cfg: Any, **kwargs: Any) -> Model:
        counted[str(cfg.get("abbr") or cfg.get("name"))] += 1
        return original(cls, cfg, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(Model, "from_dict", classmethod(counting))
    return counted


def test_a_suite_builds_each_model_once(builds: collections.Counter[str],
                                        tmp_path: Path) -> None:
    """configs/ (4 models x 4 datasets) written whole: before, 5 builds a model (its load,
    then one per pair), 9 with --check."""
    suite = pc.load(str(REPO / "configs"))
    abbrs = [m.abbr for m in suite.models]
    assert len(abbrs) >= 2 and dict(builds) == {abbr: 1 for abbr in abbrs}  # (the load's)
    pc.compile_to_dir(suite, str(tmp_path / "out"))
    assert dict(builds) == {abbr: 1 for abbr in abbrs}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        [*abbrs, "manifest.json"])


def test_the_manifest_reads_the_model_built_at_load(builds: collections.Counter[str],
                                                    tmp_path: Path) -> None:
    """A model with ``chat_template_kwargs`` (which the manifest lists) and a chat template
    file: built once, for its load, its pair and the manifest."""
    (tmp_path / "chat.jinja").write_text(
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
        "{% if think %}<think>{% endif %}", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(textwrap.dedent("""\
        datasets:
          - abbr: d
            reader_cfg: {input_columns: [q], output_column: a}
            rows: [{q: "2+2?", a: "4"}, {q: "3+3?", a: "6"}]
            infer_cfg:
              prompt_template:
                {type: PromptTemplate, template: {round: [{role: HUMAN, prompt: "{q}"}]}}
              retriever: {type: ZeroRetriever}
              inferencer: {type: GenInferencer}
        models:
          - abbr: chat
            renderer: hf_chat
            chat_template: chat.jinja
            chat_template_kwargs: {think: true}
        """), encoding="utf-8")
    out = tmp_path / "out"
    pc.compile_to_dir(pc.load(str(tmp_path / "suite.yaml")), str(out))
    assert builds == {"chat": 1}
    lines = (out / "chat" / "d.jsonl").read_text(encoding="utf-8").splitlines()
    prompt = json.loads(lines[0])["prompt"]  # (the kwargs reached the template)
    assert prompt.startswith("<user>2+2?") and prompt.endswith("<think>")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["models"]["chat"]["chat_template_kwargs"] == {"think": True}


def test_a_compilers_own_counter_wins_over_a_model_built_before() -> None:
    cfg = {"name": "m", "tokenizer": "mine"}
    first, second = pc.Compiler(), pc.Compiler()
    first.register_token_counter("mine", lambda text: 1)
    second.register_token_counter("mine", lambda text: 2)
    assert first.model(cfg).count_tokens("a b") == 1
    assert second.model(cfg).count_tokens("a b") == 2
    assert first.model(cfg) is first.model(dict(cfg))  # (the same content: built once)


def test_a_counter_registered_after_a_build_is_seen() -> None:
    compiler = pc.Compiler()
    cfg = {"name": "m", "tokenizer": "late-counter"}
    with pytest.raises(PromptCompilerError, match="late-counter"):
        compiler.model(cfg)
    pc.register_token_counter("late-counter", lambda text: 7)
    try:
        assert compiler.model(cfg).count_tokens("a") == 7
    finally:
        from prompt_compiler.model import tokenize

        del tokenize._REGISTERED["late-counter"]


def test_an_edited_chat_template_file_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja"
    path.write_text("{% for m in messages %}[{{ m.content }}]{% endfor %}", encoding="utf-8")
    cfg = {"name": "m", "renderer": "hf_chat", "chat_template": str(path)}
    before = build_model(cfg)
    assert build_model(cfg) is before
    path.write_text("{% for m in messages %}({{ m.content }}){% endfor %}", encoding="utf-8")
    after = build_model(cfg)
    assert after is not before
    assert after.chat_template.render([{"role": "user", "content": "x"}]) == "(x)"


def test_a_relative_chat_template_is_read_from_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in (("a", "[{{ messages[0].content }}]"), ("b", "({{ messages[0].content }})")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "t.jinja").write_text(text, encoding="utf-8")
        os.utime(tmp_path / name / "t.jinja", ns=(10**18, 10**18))  # (the same size and time)
    cfg = {"name": "m", "renderer": "hf_chat", "chat_template": "t.jinja"}
    rendered = []
    for name in ("a", "b"):
        monkeypatch.chdir(tmp_path / name)
        template = build_model(cfg).chat_template
        rendered.append(template.render([{"role": "user", "content": "x"}]))
    assert rendered == ["[x]", "(x)"]


def test_values_that_compare_equal_are_different_models() -> None:
    """``1`` and ``True``, a list and a tuple, dict key order: each its own model."""
    assert build_model({"name": "m", "max_seq_len": 1}).max_seq_len == 1
    with pytest.raises(PromptCompilerError, match="'max_seq_len' must be an integer"):
        build_model({"name": "m", "max_seq_len": 1.0})
    assert spec._frozen({"a": 1, "b": 2}) != spec._frozen({"b": 2, "a": 1})
    assert spec._frozen([1]) != spec._frozen((1,)) != spec._frozen([True])


def test_the_kept_model_holds_none_of_the_callers_values() -> None:
    meta = {"round": [{"role": "HUMAN", "begin": "<u>", "end": "</u>"},
                      {"role": "BOT", "begin": "<b>", "generate": True}]}
    cfg = {"name": "m", "renderer": "lm", "meta_template": meta}
    built = build_model(cfg)
    meta["round"][0]["begin"] = "<changed>"  # the caller's dict, changed after the build
    assert built.meta_raw is not None and built.meta_raw["round"][0]["begin"] == "<u>"
    assert build_model(cfg).meta_raw["round"][0]["begin"] == "<changed>"  # (new content)


def test_at_most_64_models_are_kept() -> None:
    for i in range(70):
        build_model({"name": f"m{i}"})
    assert len(spec._BUILT._models) == 64


def test_a_child_forked_while_the_kept_models_are_locked_can_build() -> None:
    """(A worker forked while another thread of its parent held the lock would wait forever.)"""
    import subprocess
    import sys

    code = textwrap.dedent("""\
        import os, signal
        from prompt_compiler.model import spec
        spec._BUILT._lock.acquire()  # as a thread of the parent would at the fork
        pid = os.fork()
        if pid == 0:
            signal.alarm(20)  # (a child that waits is ended, its status says so)
            spec.build_model({"name": "m"})
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr
