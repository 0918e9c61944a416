"""Chat templates are bounded like prompt templates (issue 25.4), through the CLI.

A chat template given inline in a YAML or Python config, or as a ``.jinja`` file, that builds a
huge value (``center(10**9)``, a ``%`` width, a string repeated 10**9 times, an integer power
too long to print) is one ``compile-prompts: error:`` line naming the template and the limit,
in under 5 s and 300 MB of memory (the child's peak RSS, reported by a small launcher; no cap
is set, so a build that does happen shows in the figure). An unsafe attribute (``__globals__``) is an
error too, as README says, where transformers' sandbox prints nothing. Expected wording is
written by hand.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

RSS_LIMIT_KB = 300 * 1024
SECONDS = 5.0

DATASET = """\
datasets:
  - abbr: evil
    reader_cfg: {input_columns: [question], output_column: answer}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "{question}"}
      retriever: {type: ZeroRetriever}
      inferencer: {type: GenInferencer}
    rows: [{question: q, answer: a}]
"""

PROMPT_LIMIT = ("the limit is 16,000,000 characters (PROMPT_COMPILER_MAX_PROMPT_CHARS "
                "raises it)")
INT_LIMIT = ("a template's integers may have 14,000 bits (about 4,200 digits: Python turns at "
             "most 4,300 digits into text)")

# name: (template, words of the error)
HUGE = {
    "center-method": ("{% for m in messages %}{{ m.content.center(10**9) }}{% endfor %}",
                      "center(1000000000) would build 1,000,000,000 characters; " + PROMPT_LIMIT),
    "center-filter": ("{{ 'x'|center(1000000000) }}",
                      "center() would build 1,000,000,000 characters; " + PROMPT_LIMIT),
    "percent-width": ("{{ '%1000000000s' % 'a' }}",
                      "a % format width would build 1,000,000,000 characters; " + PROMPT_LIMIT),
    "repeat": ("{{ 'ab' * 1000000000 }}",
               "'*' would build 2,000,000,000 characters; " + PROMPT_LIMIT),
    "power-printed": ("{{ 10 ** 5000 }}",
                      "'**' would build an integer of about 16,610 bits; " + INT_LIMIT),
    "product-printed": ("{% set x = 2 ** 9000 %}{{ x * x }}",
                        "'*' would build an integer of about 18,002 bits; " + INT_LIMIT),
    "unsafe-attribute": ("{{ raise_exception.__globals__ }}",
                         "SecurityError: access to attribute '__globals__' of 'function' "
                         "object is unsafe."),
}


def _write(folder: Path, where: str, template: str) -> str:
    """The config (and template file) for ``where``; the name the error must give."""
    folder.mkdir()
    (folder / "qa.yaml").write_text(DATASET, encoding="utf-8")
    if where == "yaml":
        (folder / "models.yaml").write_text(
            "models: [{abbr: m, parser: hf_chat, chat_template: "
            + json.dumps(template) + "}]\n", encoding="utf-8")
        return "models.yaml"
    if where == "py":
        (folder / "models.py").write_text(
            f"models = [dict(abbr='m', parser='hf_chat', chat_template={template!r})]\n",
            encoding="utf-8")
        return "models.py"
    (folder / "chat.jinja").write_text(template, encoding="utf-8")
    (folder / "models.yaml").write_text(
        "models: [{abbr: m, parser: hf_chat, chat_template: chat.jinja}]\n", encoding="utf-8")
    return "chat.jinja"


# The CLI is started by a small launcher that reports its child's peak RSS: a child forked
# straight from this test process (hundreds of MB once other tests loaded tokenizers and
# torch) would count the parent's pages in its ru_maxrss before it execs.
_LAUNCHER = """
import resource, subprocess, sys
status = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(status)
"""


def run_measured(*args: str, cwd: Path) -> tuple[int, str, float, int]:
    """The CLI in ``cwd``: (exit status, stderr, seconds, peak RSS in KiB)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PROMPT_COMPILER_")}
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _LAUNCHER, sys.executable, "-m",
                           "prompt_compiler", *args], cwd=cwd, capture_output=True, text=True,
                          env=environ, timeout=120)
    return proc.returncode, proc.stderr, time.monotonic() - began, int(proc.stdout.split()[-1])


@pytest.mark.parametrize("where", ["yaml", "py", "jinja-file"])
@pytest.mark.parametrize("case", sorted(HUGE))
def test_a_chat_template_building_a_huge_value_is_one_bounded_line(
        tmp_path: Path, where: str, case: str) -> None:
    template, words = HUGE[case]
    cfg = tmp_path / "cfg"
    named = _write(cfg, where, template)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    models = "models.py" if where == "py" else "models.yaml"
    status, err, took, rss = run_measured(str(cfg / "qa.yaml"), str(cfg / models), "-o", "out",
                                          cwd=elsewhere)
    assert status == 1, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("compile-prompts: error: "), err
    line = lines[0]
    assert f"{cfg / named}: " in line, line  # the file holding the template
    assert "model 'm', row 0, at models[0].chat_template: the chat template failed" in line, line
    assert words in line, line
    assert "internal error" not in line, line
    assert took < SECONDS, (took, line)
    assert rss < RSS_LIMIT_KB, (rss, line)
    assert not (elsewhere / "out").exists()


def test_a_long_integer_within_the_bound_still_prints(tmp_path: Path) -> None:
    """2**13000 (3,914 digits) is printable, so it renders: the bound refuses only what Python
    cannot turn into text."""
    cfg = tmp_path / "cfg"
    _write(cfg, "yaml", "{{ (2 ** 13000) | string | length }} {{ 7 - 10 }} {{ 2 ** -1 }}")
    status, err, _, _ = run_measured("qa.yaml", "models.yaml", "-o", "out", cwd=cfg)
    assert status == 0, err
    record = json.loads((cfg / "out" / "m" / "evil.jsonl").read_text(encoding="utf-8"))
    assert record["prompt"] == "3914 -3 0.5"


def _beside(out: Path) -> list[str]:
    return sorted(n for n in os.listdir(out.parent) if n.startswith(f".{out.name}."))


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_whatever_an_early_sigint_leaves_the_next_run_removes(tmp_path: Path) -> None:
    """SIGINT from 10 ms after the start on: each run ends by itself (0), with the stop line
    (130), or, before the interpreter reaches the package, by Python's own handling; what any
    of them leaves beside OUT (a lock file, a staging folder) the next run removes, and that
    run's output is complete. (tests/test_outdir.py kills a run holding both for certain.)"""
    cfg = tmp_path / "cfg"
    _write(cfg, "yaml", "{% for m in messages %}{{ m.content }}{% endfor %}")
    out = cfg / "out"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PROMPT_COMPILER_")}
    for delay in (0.01, 0.03, 0.06, 0.1, 0.2, 0.35, 0.5):
        proc = subprocess.Popen([sys.executable, "-m", "prompt_compiler", "qa.yaml",
                                 "models.yaml", "-o", "out"], cwd=cfg, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, env=environ)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode in (0, 130, 1, -signal.SIGINT), (delay, proc.returncode, err)
        if proc.returncode == 130:
            assert err == "compile-prompts: stopped by SIGINT\n", (delay, err)
        after = subprocess.run([sys.executable, "-m", "prompt_compiler", "qa.yaml",
                                "models.yaml", "-o", "out"], cwd=cfg, capture_output=True,
                               text=True, timeout=120, env=environ)
        assert after.returncode == 0, (delay, after.stderr)
        assert _beside(out) == [], (delay, proc.returncode, err)
        record = json.loads((out / "m" / "evil.jsonl").read_text(encoding="utf-8"))
        assert record["prompt"] == "q"
