"""Inputs that never end or explode: each stops with one clean line naming where and the limit.

Every case is a config file on disk run through the CLI as a subprocess under a memory cap
(``RLIMIT_AS``); the test checks the exit status, the one ``compile-prompts: error:`` line,
the time taken, and that nothing outside OUT changed. Big inputs are made here, at test time
(sparse files, FIFOs), never committed.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

CAP = 300 << 20  # bytes of address space a run may use
SECONDS = 5.0


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def run_capped(*args: object, cwd: Path, **env: str) -> tuple[subprocess.CompletedProcess[str],
                                                               float]:
    """The CLI in ``cwd`` under the memory cap; (process, seconds)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PROMPT_COMPILER_")}
    environ.update(env, PYTHONPATH=os.environ.get("PYTHONPATH", ""))
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "prompt_compiler", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120, preexec_fn=_cap,
                          env=environ)
    return proc, time.monotonic() - began


def state(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``folder`` but OUT: (size, mtime) — big sparse files are not read."""
    return {p.relative_to(folder).as_posix(): (p.lstat().st_size, p.lstat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if "out" not in p.relative_to(folder).parts}


def one_error(tmp_path: Path, config: str, *args: object, **env: str) -> str:
    """Run ``config`` -o out; assert a clean, bounded failure; return its one line."""
    before = state(tmp_path)
    proc, took = run_capped(config, "-o", "out", *args, cwd=tmp_path, **env)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("compile-prompts: error: "), proc.stderr
    assert took < SECONDS, (took, lines[0])
    assert state(tmp_path) == before
    assert not (tmp_path / "out").exists()
    return lines[0]


HEAD = ("datasets:\n  - abbr: d\n{where}    reader_cfg: {{input_columns: [question], "
        "output_column: answer}}\n    infer_cfg:\n"
        "      prompt_template: {{type: PromptTemplate, template: 'Q: {{question}}'}}\n"
        "      retriever: {{type: ZeroRetriever}}\n      inferencer: {{type: GenInferencer}}\n"
        "models: [{{abbr: m, parser: lm, meta_template: null}}]\n")


def suite_reading(path: str) -> str:
    """A YAML suite whose one dataset reads its rows from ``path``."""
    return HEAD.format(where=f"    path: {json.dumps(path)}\n")


# --- YAML alias bombs ----------------------------------------------------------------------------

LAUGHS = "".join(f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]\n"
                 for i in range(1, 10))
BOMB = "bombs:\n  l0: &l0 'lol'\n" + LAUGHS


@pytest.mark.parametrize("where", ["row", "ignored", "template_kwargs"])
def test_a_yaml_alias_bomb_is_refused_before_it_expands(tmp_path: Path, where: str) -> None:
    rows = "    rows: [{question: q, answer: a}]\n"
    if where == "row":
        rows = "    rows: [{question: *l9, answer: a}]\n"
    elif where == "ignored":
        rows += "    not_a_key_we_read: *l9\n"
    text = BOMB + HEAD.format(where=rows)
    if where == "template_kwargs":
        text = text.replace("models: [{abbr: m, parser: lm, meta_template: null}]",
                            "models: [{abbr: m, parser: lm, meta_template: null, "
                            "template_kwargs: {x: *l9}}]")
    (tmp_path / "bomb.yaml").write_text(text, encoding="utf-8")
    line = one_error(tmp_path, "bomb.yaml")
    assert line.startswith("compile-prompts: error: bomb.yaml: YAML aliases expand to ")
    assert line.endswith("more nodes than the file holds (an alias bomb?); the limit is 1,000,000 "
                         "(PROMPT_COMPILER_MAX_YAML_ALIAS_NODES raises it)")


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").write_text("x: &a [1, *a]\n" + HEAD.format(where="    rows: []\n"),
                                        encoding="utf-8")
    assert one_error(tmp_path, "loop.yaml") == (
        "compile-prompts: error: loop.yaml: line 1: a YAML alias refers to a node that contains "
        "it (a recursive structure cannot be a config value)")


def test_aliases_below_the_limit_load_and_the_variable_raises_it(tmp_path: Path) -> None:
    text = ("common: &q {question: shared, answer: a}\n"
            + HEAD.format(where="    rows: [*q, *q]\n"))
    (tmp_path / "ok.yaml").write_text(text, encoding="utf-8")
    proc, _ = run_capped("ok.yaml", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "m" / "d.jsonl").read_text(encoding="utf-8").count(
        '"prompt": "Q: shared"') == 2
    shutil.rmtree(tmp_path / "out")
    small = BOMB.replace("l9", "l4").split("  l5:")[0] + HEAD.format(
        where="    rows: [{question: q, answer: a}]\n    other: *l4\n")
    (tmp_path / "small.yaml").write_text(small, encoding="utf-8")  # expands to ~11,111 nodes
    assert "the limit is 1,000" in one_error(tmp_path, "small.yaml",
                                             PROMPT_COMPILER_MAX_YAML_ALIAS_NODES="1000")
    proc, _ = run_capped("small.yaml", "-o", "out2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


# --- data files ---------------------------------------------------------------------------------


def test_a_512_mb_line_with_limit_1_stops_at_the_line_limit(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(suite_reading("big.jsonl"), encoding="utf-8")
    with open(tmp_path / "big.jsonl", "wb") as fh:  # sparse: costs no disk
        fh.write(b'{"question": "q", "answer": "a"}\n{"question": "')
        fh.truncate(512 << 20)
    assert one_error(tmp_path, "s.yaml", "--limit", "1") == (
        "compile-prompts: error: s.yaml: dataset 'd', model 'm': big.jsonl: line 2 is too long; "
        "the limit is 67,108,864 bytes (PROMPT_COMPILER_MAX_LINE_BYTES raises it)")


def test_the_line_limit_is_raised_by_its_variable(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(suite_reading("rows.jsonl"), encoding="utf-8")
    (tmp_path / "rows.jsonl").write_text('{"question": "q", "answer": "a"}\n'
                                         '{"question": "' + "x" * 100 + '", "answer": "a"}\n',
                                         encoding="utf-8")
    assert "line 2 is too long; the limit is 64 bytes" in one_error(
        tmp_path, "s.yaml", PROMPT_COMPILER_MAX_LINE_BYTES="64")
    proc, _ = run_capped("s.yaml", "-o", "out", cwd=tmp_path, PROMPT_COMPILER_MAX_LINE_BYTES="200")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name", ["big.json", "big.csv"])
def test_a_data_file_read_whole_is_refused_unread_over_the_file_limit(tmp_path: Path,
                                                                      name: str) -> None:
    (tmp_path / "s.yaml").write_text(suite_reading(name), encoding="utf-8")
    with open(tmp_path / name, "wb") as fh:  # sparse: 2 GiB that cost no disk
        fh.truncate(2 << 30)
    assert one_error(tmp_path, "s.yaml") == (
        f"compile-prompts: error: s.yaml: dataset 'd', model 'm': {name}: 2,147,483,648 bytes, "
        f"read whole as a {name[3:]} file; the limit is 1,073,741,824 bytes "
        "(PROMPT_COMPILER_MAX_FILE_BYTES raises it) (hint: JSON Lines (.jsonl) and Parquet "
        "files stream at any size)")


def test_the_file_limit_is_raised_by_its_variable(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(suite_reading("rows.json"), encoding="utf-8")
    (tmp_path / "rows.json").write_text('[{"question": "q", "answer": "a"}]', encoding="utf-8")
    assert "rows.json: 34 bytes, read whole as a .json file; the limit is 16 bytes" in one_error(
        tmp_path, "s.yaml", PROMPT_COMPILER_MAX_FILE_BYTES="16")
    proc, _ = run_capped("s.yaml", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert '"prompt": "Q: q' in (tmp_path / "out" / "m" / "d.jsonl").read_text(encoding="utf-8")


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "a character device"),
                                            ("/dev/urandom", "a character device")])
def test_a_device_as_data_is_refused_unread(tmp_path: Path, path: str, kind: str) -> None:
    if not Path(path).exists():
        pytest.skip(f"no {path}")
    (tmp_path / "s.yaml").write_text(suite_reading(path), encoding="utf-8")
    assert one_error(tmp_path, "s.yaml") == (
        f"compile-prompts: error: s.yaml: dataset 'd', model 'm': {path}: is {kind}, not a "
        "regular file; rows are read from regular files")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_fifo_nobody_writes_is_refused_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "rows.jsonl")
    (tmp_path / "s.yaml").write_text(suite_reading("rows.jsonl"), encoding="utf-8")
    assert one_error(tmp_path, "s.yaml") == (
        "compile-prompts: error: s.yaml: dataset 'd', model 'm': rows.jsonl: is a named pipe, "
        "not a regular file; rows are read from regular files (hint: set "
        "PROMPT_COMPILER_READ_PIPES=1 to read rows from a named pipe)")


def test_a_folder_where_a_file_is_expected_is_refused(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").mkdir()
    (tmp_path / "s.yaml").write_text(
        suite_reading("rows.jsonl").replace("    path:", "    type: jsonl\n    path:"),
        encoding="utf-8")
    assert one_error(tmp_path, "s.yaml") == (
        "compile-prompts: error: s.yaml: dataset 'd', model 'm': rows.jsonl: is a folder, not a "
        "regular file; rows are read from regular files")


def test_a_csv_of_100000_columns_stops_at_the_column_limit(tmp_path: Path) -> None:
    header = ",".join(f"c{i}" for i in range(100_000)) + ",question,answer\n"
    (tmp_path / "wide.csv").write_text(header + "x," * 100_000 + "q,a\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text(suite_reading("wide.csv"), encoding="utf-8")
    assert one_error(tmp_path, "s.yaml") == (
        "compile-prompts: error: s.yaml: dataset 'd', model 'm': wide.csv: line 1 (the header): "
        "100,002 columns; the limit is 10,000 (PROMPT_COMPILER_MAX_COLUMNS raises it)")


def test_a_json_row_of_100000_keys_stops_at_the_column_limit(tmp_path: Path) -> None:
    row = {**{f"c{i}": 1 for i in range(100_000)}, "question": "q", "answer": "a"}
    ok = json.dumps({"question": "q", "answer": "a"})
    (tmp_path / "wide.jsonl").write_text(ok + "\n" + json.dumps(row) + "\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text(suite_reading("wide.jsonl"), encoding="utf-8")
    assert one_error(tmp_path, "s.yaml") == (
        "compile-prompts: error: s.yaml: dataset 'd', model 'm', row 1: wide.jsonl: line 2 "
        "(row 1): 100,002 columns; the limit is 10,000 (PROMPT_COMPILER_MAX_COLUMNS raises it)")


def test_a_bad_limit_variable_is_one_clean_error(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(HEAD.format(where="    rows: [{question: q, answer: a}]\n"),
                                     encoding="utf-8")
    assert one_error(tmp_path, "s.yaml", PROMPT_COMPILER_MAX_COLUMNS="lots") == (
        "compile-prompts: error: environment variable PROMPT_COMPILER_MAX_COLUMNS='lots': "
        "expected a positive integer")


# --- custom datasets: bot_prompt ------------------------------------------------------------------

CUSTOM = ("datasets = [dict(path='mcq.jsonl', data_type='mcq', infer_method='ppl', "
          "bot_prompt={bot!r})]\n"
          "models = [dict(abbr='m', type='HuggingFaceCausalLM', path='x', meta_template=None)]\n")


@pytest.mark.parametrize("mode", ["default", "compat"])
@pytest.mark.parametrize(("bot", "message"), [
    ("Answer: {nope}", "the placeholder {nope} names no value; a ppl bot_prompt is filled with "
     "{answer} (the output column) only (hint: write a literal brace as {{ or }})"),
    ("Answer: {answer.__class__.__mro__}", "the placeholder {answer.__class__.__mro__} reaches "
     "into a value (an attribute or index); placeholders may only name a value"),
    ("Answer: {answer[0]}", "the placeholder {answer[0]} reaches into a value (an attribute or "
     "index); placeholders may only name a value"),
    ("Answer: {answer:>999999999}", "the format spec '>999999999' asks for 999999999 characters; "
     "the limit is 16,000,000 (PROMPT_COMPILER_MAX_PROMPT_CHARS raises it)"),
])
def test_a_custom_bot_prompt_names_values_only(tmp_path: Path, mode: str, bot: str,
                                               message: str) -> None:
    (tmp_path / "mcq.jsonl").write_text('{"question": "q", "A": "a", "B": "b", "answer": "A"}\n',
                                        encoding="utf-8")
    (tmp_path / "custom.py").write_text(CUSTOM.format(bot=bot), encoding="utf-8")
    assert one_error(tmp_path, "custom.py", "--mode", mode) == (
        "compile-prompts: error: custom.py: dataset 'mcq', model 'm', at "
        f"datasets[0].bot_prompt: {message}")


# --- no catastrophic backtracking on user data ------------------------------------------------

ADVERSARIAL = {
    "period-spaces-b": "a." + " " * 120_000 + "b",
    "period-tabs-b": "a." + "\t" * 120_000 + "b",
    "period-closers-b": "a." + ")" * 120_000 + "b",
    "period-closers-spaces-b": "a." + ") " * 60_000 + "b",
    "quote-spaces-b": "a.\"" + " " * 120_000 + "b",
    "spaces-then-period": "a" + " " * 120_000 + ".",
    "commas": "," * 120_000,
    "apostrophes": "a. " + "'" * 120_000,
    "dashes": "a. b" + "-" * 120_000,
    "periods": ". " * 60_000,
    "initials": "A. " * 40_000,
    "sentences": "".join(f"{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}. " for i in range(30_000)),
}


@pytest.mark.parametrize("text", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_bm25_tokenising_is_linear_on_adversarial_text(text: str) -> None:
    from prompt_compiler.retrieve.bm25 import word_tokenize

    began = time.monotonic()
    word_tokenize(text)
    assert time.monotonic() - began < 2.0


def test_the_final_period_rule_splits_as_before() -> None:
    """Hand-written tokens of the sentence-final rule (NLTK's Treebank conventions)."""
    from prompt_compiler.retrieve.bm25 import treebank_tokenize

    assert treebank_tokenize("It works.") == ["It", "works", "."]
    assert treebank_tokenize('He said "go.") ') == ["He", "said", "``", "go", ".", "''", ")"]
    assert treebank_tokenize("Wait...") == ["Wait", "..."]
    assert treebank_tokenize("a." + " " * 50 + "b") == ["a.", "b"]
    assert treebank_tokenize("end. \t\n") == ["end", "."]


def test_a_bm25_row_of_120_kb_compiles_in_seconds(tmp_path: Path) -> None:
    value = "a." + " " * 120_000 + "b"
    rows = [{"question": value, "answer": "x"}, {"question": "a b", "answer": "y"}]
    suite = {"datasets": [{"abbr": "d", "reader_cfg": {"input_columns": ["question"],
                                                       "output_column": "answer"},
                           "infer_cfg": {
                               "ice_template": {"type": "PromptTemplate",
                                                "template": "</E>{question}={answer}",
                                                "ice_token": "</E>"},
                               "retriever": {"type": "BM25Retriever", "ice_num": 1},
                               "inferencer": {"type": "GenInferencer"}},
                           "splits": {"train": rows, "test": [{"question": value,
                                                               "answer": "z"}]}}],
             "models": [{"abbr": "m", "parser": "lm", "meta_template": None}]}
    (tmp_path / "s.json").write_text(json.dumps(suite), encoding="utf-8")
    proc, took = run_capped("s.json", "-o", "out", "--mode", "compat", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert took < SECONDS
    record = json.loads((tmp_path / "out" / "m" / "d.jsonl").read_text(encoding="utf-8"))
    assert len(record["ice_ids"]) == 1 and value in record["prompt"]


def test_an_error_quoting_40000_spaces_is_one_line_at_once(tmp_path: Path) -> None:
    role = " " * 40_000 + "x"
    meta = {"round": [{"role": "HUMAN", "begin": "<u>", "end": "\n"},
                      {"role": "BOT", "begin": "<b>", "generate": True}]}
    suite = {"datasets": [{"abbr": "d", "reader_cfg": {"input_columns": ["question"],
                                                       "output_column": "answer"},
                           "infer_cfg": {"prompt_template": {"type": "PromptTemplate",
                                                             "template": {"round": [
                                                                 {"role": role,
                                                                  "prompt": "{question}"}]}},
                                         "retriever": {"type": "ZeroRetriever"},
                                         "inferencer": {"type": "GenInferencer"}},
                           "rows": [{"question": "q", "answer": "a"}]}],
             "models": [{"abbr": "m", "parser": "lm", "meta_template": meta}]}
    (tmp_path / "s.json").write_text(json.dumps(suite), encoding="utf-8")
    line = one_error(tmp_path, "s.json")
    assert line.startswith("compile-prompts: error: s.json: ") and "x" in line


def test_one_line_folds_messages_as_before() -> None:
    from prompt_compiler.cli import one_line

    assert one_line("bad YAML\n  in line 3\n\nsee  \n docs") == "bad YAML in line 3; see docs"
    assert one_line("a \t\r\n\tb\r\rc") == "a b; c"
    began = time.monotonic()
    assert one_line("x" + " " * 40_000 + "y\n" + " " * 40_000) == "x" + " " * 40_000 + "y"
    assert time.monotonic() - began < 2.0


def test_a_range_slice_of_spaces_is_refused_at_once(tmp_path: Path) -> None:
    text = HEAD.format(where="    rows: [{question: q, answer: a}]\n").replace(
        "output_column: answer}", "output_column: answer, test_range: '[" + " " * 40_000 + "x]'}")
    (tmp_path / "s.yaml").write_text(text, encoding="utf-8")
    line = one_error(tmp_path, "s.yaml")
    assert "a range string must be a slice like '[0:10]'" in line


# --- sandboxed templates: sizes checked before allocation, reproducible text -------------------

LIMIT_TAIL = "the limit is 16,000,000 characters (PROMPT_COMPILER_MAX_PROMPT_CHARS raises it)"
NS = "{% set ns = namespace(s='aaaaaaaaaa', l=[1]) %}"
BUILDERS = {
    "center": ("{{ question|center(10**9) }}", "center() would build 1,000,000,000 characters"),
    "ljust": ("{{ question.ljust(10**9) }}", "ljust(1000000000) would build"),
    "zfill": ("{{ question.zfill(10**9) }}", "zfill(1000000000) would build"),
    "percent-width": ("{{ '%0999999999d' % 1 }}", "a % format width would build 999,999,999"),
    "format-width": ("{{ '{:>999999999}'.format(question) }}",
                     "the format spec '>999999999' asks for 999999999 characters"),
    "format-filter": ("{{ '%999999999s'|format(question) }}", "a % format width would build"),
    "replace": ("{{ (question * 1000000).replace('q', 'x' * 40) }}",
                "replace() would build 40,000,000 characters"),
    "expandtabs": ("{{ ('\\t' * 100000).expandtabs(1000) }}", "expandtabs() would build"),
    "tojson-indent": ("{{ [[[[1]]]]|tojson(indent=100000000) }}",
                      "tojson(indent=100000000) would build"),
    "indent": ("{{ ('a\\n' * 100000)|indent(1000) }}", "indent() would build"),
    "tilde-loop": (NS + "{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                   "'~' would build 20,971,520 characters"),
    "plus-loop": (NS + "{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
                  "'+' would build 20,971,520 characters"),
    "join-loop": (NS + "{% for i in range(40) %}{% set ns.s = [ns.s, ns.s]|join %}{% endfor %}",
                  "join() would build 20,971,520 characters"),
    "list-plus-loop": (NS + "{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
                       "'+' would build 1,048,576 items; the limit is 1,000,000 items"),
    "output-loop": ("{% for i in range(100000) %}{% for j in range(1000) %}" + "a" * 1000
                    + "{% endfor %}{% endfor %}", "the template's output would build"),
    "captured-block": ("{% set x %}{% for i in range(100000) %}{% for j in range(1000) %}"
                       + "a" * 1000 + "{% endfor %}{% endfor %}{% endset %}{{ x|length }}",
                       "a captured block would build"),
}


def _jinja_dataset(template: str) -> str:
    quoted = template.replace("\\", "\\\\").replace('"', '\\"')
    return ("datasets:\n  - abbr: evil\n"
            "    reader_cfg: {input_columns: [question], output_column: answer}\n"
            "    infer_cfg:\n"
            "      prompt_template: {type: PromptTemplate, engine: jinja2, "
            f'template: "{quoted}"}}\n'
            "      retriever: {type: ZeroRetriever}\n      inferencer: {type: GenInferencer}\n"
            "    rows: [{question: q, answer: a}]\n"
            "models: [{abbr: m, parser: lm, meta_template: null}]\n")


@pytest.mark.parametrize(("template", "words"), list(BUILDERS.values()), ids=list(BUILDERS))
def test_a_template_building_a_huge_value_stops_before_allocating(
        tmp_path: Path, template: str, words: str) -> None:
    (tmp_path / "t.yaml").write_text(_jinja_dataset(template), encoding="utf-8")
    line = one_error(tmp_path, "t.yaml")
    assert line.startswith("compile-prompts: error: t.yaml: dataset 'evil'"), line
    assert words in line, line
    assert "PROMPT_COMPILER_MAX_PROMPT_CHARS" in line, line


def test_the_prompt_size_limit_is_raised_by_its_variable(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(_jinja_dataset("{{ question|center(100) }}"),
                                     encoding="utf-8")
    assert "center() would build 100 characters; the limit is 50 characters" in one_error(
        tmp_path, "t.yaml", PROMPT_COMPILER_MAX_PROMPT_CHARS="50")
    proc, _ = run_capped("t.yaml", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "out" / "m" / "evil.jsonl").read_text(encoding="utf-8"))
    assert record["prompt"] == " " * 49 + "q" + " " * 50


ADDRESSES = {
    "string-filter": "{{ cycler(1)|string }}",
    "tilde": "{{ cycler(1) ~ '' }}",
    "percent": "{{ '%s' % cycler(1) }}",
    "format-filter": "{{ '%s'|format(joiner()) }}",
    "str-format": "{{ '{}'.format(cycler(1)) }}",
    "join": "{{ [cycler(1)]|join }}",
    "pprint": "{{ cycler(1)|pprint }}",
    "method": "{{ question.upper }}",
}


@pytest.mark.parametrize("template", list(ADDRESSES.values()), ids=list(ADDRESSES))
def test_no_memory_address_reaches_a_prompt(tmp_path: Path, template: str) -> None:
    (tmp_path / "t.yaml").write_text(_jinja_dataset(template), encoding="utf-8")
    line = one_error(tmp_path, "t.yaml")
    assert "whose text shows a memory address and changes from run to run" in line, line


@pytest.mark.parametrize(("template", "words"), [
    ("{{ '{0.__class__.__mro__}'.format(question) }}", "the placeholder {0.__class__.__mro__}"),
    ("{{ '{0[0]}'.format(question) }}", "the placeholder {0[0]} reaches into a value"),
    ("{{ [1, 2]|random }}", "the random filter gives different output on every run"),
])
def test_format_fields_name_values_only_and_nothing_is_random(
        tmp_path: Path, template: str, words: str) -> None:
    (tmp_path / "t.yaml").write_text(_jinja_dataset(template), encoding="utf-8")
    assert words in one_error(tmp_path, "t.yaml")


def test_a_chat_template_is_bounded_too(tmp_path: Path) -> None:
    chat = "{% for m in messages %}{{ m['content']|center(10**9) }}{% endfor %}"
    text = (_jinja_dataset("{{ question }}").replace(
        "models: [{abbr: m, parser: lm, meta_template: null}]",
        f"models: [{{abbr: m, parser: hf_chat, chat_template: {json.dumps(chat)}}}]"))
    (tmp_path / "t.yaml").write_text(text, encoding="utf-8")
    line = one_error(tmp_path, "t.yaml")
    assert "center() would build 1,000,000,000 characters; " + LIMIT_TAIL in line, line


# --- growth in compat mode, the final prompt, max_seq_len over thousands of examples -----------


def _fixk_suite(examples: int, max_seq_len: int) -> dict[str, object]:
    train = [{"question": f"q{i}", "answer": f"a{i}"} for i in range(examples)]
    return {"datasets": [{
        "abbr": "d", "reader_cfg": {"input_columns": ["question"], "output_column": "answer"},
        "infer_cfg": {
            "ice_template": {"type": "PromptTemplate", "template": "Q: {question} A: {answer}\n"},
            "prompt_template": {"type": "PromptTemplate", "template": "</E>Q: {question} A:",
                                "ice_token": "</E>"},
            "retriever": {"type": "FixKRetriever", "fix_id_list": list(range(examples))},
            "inferencer": {"type": "GenInferencer"}},
        "splits": {"train": train, "test": [{"question": "x", "answer": "y"}]}}],
        "models": [{"abbr": "m", "parser": "lm", "meta_template": None,
                    "max_seq_len": max_seq_len}]}


@pytest.mark.parametrize("mode", ["default", "compat"])
def test_max_seq_len_1_over_6000_examples_is_quick(tmp_path: Path, mode: str) -> None:
    (tmp_path / "s.json").write_text(json.dumps(_fixk_suite(6000, 1)), encoding="utf-8")
    proc, took = run_capped("s.json", "-o", "out", "--mode", mode, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert took < SECONDS
    record = json.loads((tmp_path / "out" / "m" / "d.jsonl").read_text(encoding="utf-8"))
    # OpenCompass joins examples with ice_separator "\n" and ends them with ice_eos_token "\n"
    assert (record["prompt"], record["ice_ids"], record["over_limit"]) == ("\nQ: x A:", [], True)
    assert record["dropped_ice_ids"] == list(range(6000))


@pytest.mark.parametrize("mode", ["default", "compat"])
def test_max_seq_len_keeps_the_examples_that_fit(tmp_path: Path, mode: str) -> None:
    # whitespace tokens: 4 per example ("Q: qi A: ai"), 3 for "Q: x A:"; 10 examples fit 43
    (tmp_path / "s.json").write_text(json.dumps(_fixk_suite(40, 43)), encoding="utf-8")
    proc, _ = run_capped("s.json", "-o", "out", "--mode", mode, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "out" / "m" / "d.jsonl").read_text(encoding="utf-8"))
    assert record["ice_ids"] == list(range(10))
    examples = "\n".join(f"Q: q{i} A: a{i}\n" for i in range(10))
    assert record["prompt"] == examples + "\nQ: x A:"
    assert (record["token_len_before"], record["token_len_after"]) == (163, 43)


def test_compat_refill_stops_as_it_grows(tmp_path: Path) -> None:
    row = {"question": "{c1}" * 20, **{f"c{i}": f"{{c{i + 1}}}" * 20 for i in range(1, 8)},
           "c8": "x", "answer": "a"}  # 752 bytes of JSON; re-filled it would be 20^8 characters
    suite = {"datasets": [{"abbr": "d", "reader_cfg": {"input_columns": list(row)[:-1],
                                                       "output_column": "answer"},
                           "infer_cfg": {"prompt_template": {"type": "PromptTemplate",
                                                             "template": "Q: {question}"},
                                         "retriever": {"type": "ZeroRetriever"},
                                         "inferencer": {"type": "GenInferencer"}},
                           "rows": [row]}],
             "models": [{"abbr": "m", "parser": "lm", "meta_template": None}]}
    (tmp_path / "s.json").write_text(json.dumps(suite), encoding="utf-8")
    assert one_error(tmp_path, "s.json", "--mode", "compat") == (
        "compile-prompts: error: s.json: dataset 'd', model 'm', row 0, at "
        "datasets[0].infer_cfg.prompt_template: filling {c5} again inside inserted values "
        "(OpenCompass's re-fill, defect D1) would build 256,000,003 characters; " + LIMIT_TAIL
        + " (hint: --mode default fills each placeholder once)")
    proc, _ = run_capped("s.json", "-o", "out", "--mode", "default", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "out" / "m" / "d.jsonl").read_text(encoding="utf-8"))
    assert record["prompt"] == "Q: " + "{c1}" * 20


def test_a_prompt_over_the_limit_is_refused_naming_the_row(tmp_path: Path) -> None:
    text = HEAD.format(where="    rows: [{question: q, answer: a}, {question: "
                       + "long" * 30 + ", answer: a}]\n")
    (tmp_path / "s.yaml").write_text(text, encoding="utf-8")
    assert one_error(tmp_path, "s.yaml", PROMPT_COMPILER_MAX_PROMPT_CHARS="100") == (
        "compile-prompts: error: s.yaml: dataset 'd', model 'm', row 1: the prompt has 123 "
        "characters; the limit is 100 characters (PROMPT_COMPILER_MAX_PROMPT_CHARS raises it)")


# --- the two internal errors, and nesting in Python configs --------------------------------------


def test_a_4400_digit_integer_label_key_in_json_is_clean(tmp_path: Path) -> None:
    ppl = {"prompt_template": {"type": "PromptTemplate",
                               "template": {"__items__": [[0, "A {question}"]]}},
           "retriever": {"type": "ZeroRetriever"}, "inferencer": {"type": "PPLInferencer"}}
    text = json.dumps({"datasets": [{"abbr": "d", "reader_cfg": {"input_columns": ["question"],
                                                                 "output_column": "answer"},
                                     "infer_cfg": ppl,
                                     "rows": [{"question": "q", "answer": "a"}]}],
                       "models": [{"abbr": "m", "parser": "lm", "meta_template": None}]})
    (tmp_path / "s.json").write_text(text.replace("[[0,", "[[" + "9" * 4400 + ","),
                                     encoding="utf-8")
    assert one_error(tmp_path, "s.json") == (
        "compile-prompts: error: s.json: an integer of more than 4,300 digits (Python does not "
        "read longer integers; write it as a string)")


def test_a_python_config_nested_5000_deep_names_the_limit(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text(
        "x = 1\nfor _ in range(5000):\n    x = [x]\n"
        "datasets = [dict(abbr='d', rows=[dict(question='q', answer='a')], extra=x)]\n",
        encoding="utf-8")
    line = one_error(tmp_path, "deep.py")
    assert line.startswith("compile-prompts: error: deep.py: RecursionError while loading the "
                           "config"), line
    assert line.endswith("(values nested more than 100 levels deep are not supported)"), line


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_fifo_as_a_model_template_file_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "meta.yaml")
    text = HEAD.format(where="    rows: [{question: q, answer: a}]\n").replace(
        "meta_template: null", "meta_template: meta.yaml")
    (tmp_path / "s.yaml").write_text(text, encoding="utf-8")
    assert one_error(tmp_path, "s.yaml") == (
        "compile-prompts: error: meta.yaml: model 'm', at models[0].meta_template: a model "
        "template file must be a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_read_by_choice_keeps_the_line_limit(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "rows.jsonl")
    (tmp_path / "s.yaml").write_text(suite_reading("rows.jsonl"), encoding="utf-8")
    data = '{"question": "q", "answer": "a"}\n{"question": "' + "x" * 200 + '"}\n'
    writer = subprocess.Popen([sys.executable, "-c", "import sys; open(sys.argv[1], 'w')"
                               ".write(sys.argv[2])", str(tmp_path / "rows.jsonl"), data])
    try:  # (writing a FIFO changes its mtime: not checked here)
        proc, took = run_capped("s.yaml", "-o", "out", cwd=tmp_path,
                                PROMPT_COMPILER_READ_PIPES="1",
                                PROMPT_COMPILER_MAX_LINE_BYTES="100")
    finally:
        writer.kill()
        writer.wait()
    assert proc.returncode == 1 and took < SECONDS and not (tmp_path / "out").exists()
    assert proc.stderr == ("compile-prompts: error: s.yaml: dataset 'd', model 'm': rows.jsonl: "
                           "line 2 "
                           "is too long; the limit is 100 bytes (PROMPT_COMPILER_MAX_LINE_BYTES "
                           "raises it)\n")


# --- the work of one render in all: loop turns and characters built ---------------------------

TOTALS = {
    "nested-loops": ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
                     "{% endfor %}", "this render's loops ran more than 1,000,000 turns in all; "
                     "the limit is 1,000,000 turns (PROMPT_COMPILER_MAX_TEMPLATE_STEPS raises "
                     "it)"),
    "many-big-values": ("{% for i in range(99999) %}{% set x = 'x' * 15000000 %}{% endfor %}",
                        "this render has built more than 256,000,000 characters in all; the "
                        "limit is 256,000,000 characters (PROMPT_COMPILER_MAX_TEMPLATE_CHARS "
                        "raises it)"),
    "many-big-blocks": ("{% set y = 'y' * 10000000 %}{% for i in range(99999) %}{% set x %}"
                        "{{ y }}{% endset %}{% endfor %}",
                        "this render has built more than 256,000,000 characters in all"),
}


@pytest.mark.parametrize(("template", "words"), list(TOTALS.values()), ids=list(TOTALS))
def test_a_template_is_bounded_in_all_not_only_value_by_value(tmp_path: Path, template: str,
                                                              words: str) -> None:
    (tmp_path / "t.yaml").write_text(_jinja_dataset(template), encoding="utf-8")
    line = one_error(tmp_path, "t.yaml")
    assert line.startswith("compile-prompts: error: t.yaml: dataset 'evil'"), line
    assert words in line, line


def test_a_chat_template_that_loops_stops_and_the_variable_raises_the_turns(
        tmp_path: Path) -> None:
    chat = ("{% for i in range(1000) %}{% for j in range(100) %}{% endfor %}{% endfor %}"
            "{% for m in messages %}{{ m['content'] }}{% endfor %}")
    text = (_jinja_dataset("{{ question }}").replace(
        "models: [{abbr: m, parser: lm, meta_template: null}]",
        f"models: [{{abbr: m, parser: hf_chat, chat_template: {json.dumps(chat)}}}]"))
    (tmp_path / "t.yaml").write_text(text, encoding="utf-8")
    line = one_error(tmp_path, "t.yaml", PROMPT_COMPILER_MAX_TEMPLATE_STEPS="50000")
    assert "this render's loops ran more than 50,000 turns in all" in line, line
    proc, _ = run_capped("t.yaml", "-o", "out", cwd=tmp_path)  # 100,101 turns: within 10^6
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "out" / "m" / "evil.jsonl").read_text(encoding="utf-8"))
    assert record["prompt"] == "q"


def test_a_parquet_file_of_20000_columns_stops_at_the_column_limit_unread(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({**{f"c{i}": [1] for i in range(20_000)}, "question": ["q"], "answer": ["a"]})
    pq.write_table(table, tmp_path / "wide.parquet")
    (tmp_path / "s.yaml").write_text(suite_reading("wide.parquet"), encoding="utf-8")
    before = state(tmp_path)  # (pyarrow maps more than CAP of address space: no cap here)
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "prompt_compiler", "s.yaml", "-o", "out",
                           "--limit", "1"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert time.monotonic() - began < SECONDS and proc.returncode == 1
    assert proc.stderr == (
        "compile-prompts: error: s.yaml: dataset 'd', model 'm': wide.parquet: 20,002 columns; "
        "the limit is 10,000 (PROMPT_COMPILER_MAX_COLUMNS raises it)\n")
    assert state(tmp_path) == before and not (tmp_path / "out").exists()


def test_parquet_under_a_memory_cap_is_one_line_of_ours(tmp_path: Path) -> None:
    """Under a 300 MB cap NumPy's OpenBLAS (loaded with pyarrow) could not reserve its
    per-core buffers and ended the process with its own line; the command now sets
    OPENBLAS_NUM_THREADS=1 (unless set). pyarrow itself may still fail there: one line."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"question": ["q"], "answer": ["a"]}), tmp_path / "r.parquet")
    (tmp_path / "s.yaml").write_text(suite_reading("r.parquet"), encoding="utf-8")
    proc, _ = run_capped("s.yaml", "-o", "out", cwd=tmp_path)
    if proc.returncode:
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith("compile-prompts: error: s.yaml: "), proc.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_fifo_or_device_given_as_a_config_says_what_it_is(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "s.yaml")
    assert one_error(tmp_path, "s.yaml") == (
        "compile-prompts: error: s.yaml: is a named pipe, not a regular file; a config is read "
        "from a regular file")
    if Path("/dev/zero").exists():
        assert one_error(tmp_path, "/dev/zero") == (
            "compile-prompts: error: /dev/zero: is a character device, not a regular file; a "
            "config is read from a regular file")
