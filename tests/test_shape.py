"""The public surface after the redesign (issue 19): what a user imports and calls.

Token counters registered for the process are named in config files; ``Record.prompt_sha256``
is the records' hash; ``pc.compile`` takes the CLI's options; a config without a retriever
compiles as ZeroRetriever in files and in the library alike; the "needs a template" check
reads the same everywhere; the prompt styles are exported from ``prompt_compiler`` and the
module paths that moved still import, with a DeprecationWarning.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from _cli import run_cli

import prompt_compiler as pc

REPO = Path(__file__).resolve().parents[1]

CHARS = f"chars-{uuid.uuid4().hex[:8]}"
"""A counter registered once for this test process: one token per character."""
pc.register_token_counter(CHARS, len)

FIXK_DATASET = """\
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import FixKRetriever
from opencompass.openicl.icl_inferencer import GenInferencer

datasets = [dict(
    abbr='eq',
    reader_cfg=dict(input_columns=['q'], output_column='a'),
    infer_cfg=dict(
        ice_template=dict(type=PromptTemplate, template='{q}={a}'),
        prompt_template=dict(type=PromptTemplate, template='</E>{q}=', ice_token='</E>'),
        retriever=dict(type=FixKRetriever, fix_id_list=[0, 1]),
        inferencer=dict(type=GenInferencer),
    ),
    splits=dict(train=[dict(q='aa', a='1'), dict(q='bb', a='2')],
                test=[dict(q='c', a='3'), dict(q='dddddddd', a='4')]),
)]
"""


def _model_yaml(tokenizer: str) -> str:
    return ("models:\n  - abbr: m\n    type: HuggingFaceCausalLM\n    path: x\n"
            f"    tokenizer: {tokenizer}\n    max_seq_len: 15\n")


def test_a_registered_counter_is_named_in_a_config_file(tmp_path: Path) -> None:
    (tmp_path / "eq.py").write_text(FIXK_DATASET, encoding="utf-8")
    (tmp_path / "m.yaml").write_text(_model_yaml(CHARS), encoding="utf-8")
    suite = pc.load([tmp_path / "eq.py", tmp_path / "m.yaml"])
    recs = list(pc.compile(suite))
    # Examples are joined by "\n" after each: 'aa=1\nbb=2\n' (10 characters).
    # Row 0: 'aa=1\nbb=2\nc=' is 12 characters, within 15: both examples stay.
    # Row 1: 'aa=1\nbb=2\ndddddddd=' is 19; without the last example it is 14.
    assert [(r.index, r.prompt, r.ice_ids, r.token_len) for r in recs] == [
        (0, "aa=1\nbb=2\nc=", (0, 1), 12),
        (1, "aa=1\ndddddddd=", (0,), 14),
    ]
    assert recs[1].token_len_full == 19
    out = tmp_path / "out"
    pc.compile_to_dir(suite, out)
    line = json.loads((out / "m" / "eq.jsonl").read_text(encoding="utf-8").splitlines()[1])
    assert (line["dropped_ice_ids"], line["token_len_before"], line["token_len_after"]) \
        == ([1], 19, 14)


def test_an_unregistered_counter_name_is_refused(tmp_path: Path) -> None:
    """Refused when the model is used (an invalid model a --models glob leaves out does not
    stop a run, so the error comes with the first pair of that model)."""
    (tmp_path / "eq.py").write_text(FIXK_DATASET, encoding="utf-8")
    (tmp_path / "m.yaml").write_text(_model_yaml("no-such-counter-xyz"), encoding="utf-8")
    suite = pc.load([tmp_path / "eq.py", tmp_path / "m.yaml"])
    # a ConfigError; without tiktoken an UnsupportedError (the name could be a tiktoken one)
    with pytest.raises((pc.ConfigError, pc.UnsupportedError)) as info:
        list(pc.compile(suite))
    assert "models[0].tokenizer" in str(info.value)
    assert CHARS in str(info.value)  # the registered counters are listed


def test_a_counter_name_is_taken_once() -> None:
    with pytest.raises(pc.RegistryError):
        pc.register_token_counter(CHARS, len)
    compiler = pc.Compiler()
    with pytest.raises(pc.RegistryError):
        compiler.register_token_counter("whitespace", len)
    assert CHARS in compiler.token_counters


def test_record_prompt_sha256_is_the_files_hash(tmp_path: Path) -> None:
    suite = pc.load(REPO / "configs")
    out = tmp_path / "out"
    manifest = pc.compile_to_dir(suite, out, limit=2)
    written = [json.loads(line) for name in manifest["outputs"]
               for line in (out / name).read_text(encoding="utf-8").splitlines()]
    recs = list(pc.compile(suite, limit=2))
    assert len(recs) == len(written) > 0
    assert any(isinstance(r.prompt, list) for r in recs)  # message lists too
    by_key = {(w["model"], w["dataset"], w["index"], w.get("label"), w.get("turn")):
              w["prompt_sha256"] for w in written}
    assert len(by_key) == len(written)
    assert [r.prompt_sha256 for r in recs] == [
        by_key[(r.model, r.dataset, r.index, r.label, r.turn)] for r in recs]
    # by hand: the sha256 of a string prompt is that of its UTF-8 bytes
    import hashlib

    text = next(r for r in recs if isinstance(r.prompt, str))
    assert text.prompt_sha256 == hashlib.sha256(text.prompt.encode("utf-8")).hexdigest()


def test_compile_takes_the_cli_options(tmp_path: Path) -> None:
    proc = run_cli(REPO / "configs", "-o", tmp_path / "out", "--spans", "--fewshot", "inline",
                   "--limit", "2", "--only", "arith*", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    from prompt_compiler.emit.records import record_json

    suite = pc.load(REPO / "configs")
    recs = list(pc.compile(suite, spans=True, fewshot="inline", limit=2, only="arith*"))
    lines = [json.loads(line) for f in sorted((tmp_path / "out").rglob("*.jsonl"))
             for line in f.read_text(encoding="utf-8").splitlines()]
    got = sorted((json.loads(json.dumps(record_json(r))) for r in recs),
                 key=lambda o: (o["model"], o["index"]))
    assert got == sorted(lines, key=lambda o: (o["model"], o["index"]))
    assert all(o["spans"] for o in got)
    # inline few-shot: the examples are text in the first user turn, one user message
    chat = [o for o in got if isinstance(o["prompt"], list)]
    assert chat and all([m["role"] for m in o["prompt"]] == ["user"] for o in chat)


NO_RETRIEVER = """\
datasets:
  - abbr: caps
    reader_cfg: {input_columns: [country], output_column: capital}
    infer_cfg:
      prompt_template: {type: PromptTemplate, template: "Capital of {country}?"}
      inferencer: {type: GenInferencer}
    splits:
      train: [{country: Peru, capital: Lima}]
      test: [{country: Chad, capital: "N'Djamena"}]
"""


def test_no_retriever_is_an_error_in_files_and_library(tmp_path: Path) -> None:
    """OpenCompass's task reads infer_cfg['retriever']: a missing one is never guessed."""
    (tmp_path / "caps.yaml").write_text(NO_RETRIEVER, encoding="utf-8")
    proc = run_cli("caps.yaml", "--model", "echo", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "caps.yaml" in proc.stderr and "infer_cfg.retriever" in proc.stderr
    assert "infer_cfg has no 'retriever'" in proc.stderr
    assert not (tmp_path / "out").exists()
    dataset = {"abbr": "caps", "reader_cfg": {"input_columns": ["country"],
                                              "output_column": "capital"},
               "infer_cfg": {"prompt_template": {"type": "PromptTemplate",
                                                 "template": "Capital of {country}?"},
                             "inferencer": {"type": "GenInferencer"}},
               "rows": [{"country": "Chad", "capital": "N'Djamena"}]}
    with pytest.raises(pc.ConfigError, match="infer_cfg has no 'retriever'"):
        pc.Compiler().compile(dataset, {"abbr": "echo"})


def test_no_retriever_beside_an_ice_template_is_an_error_in_files_and_library(
        tmp_path: Path) -> None:
    ice = ('      ice_template: {type: PromptTemplate, template: "{country}: {capital}"}\n'
           '      prompt_template: {type: PromptTemplate, template: "</E>Capital of '
           '{country}?", ice_token: "</E>"}\n')
    text = NO_RETRIEVER.replace('      prompt_template: {type: PromptTemplate, template: '
                                '"Capital of {country}?"}\n', ice)
    (tmp_path / "caps.yaml").write_text(text, encoding="utf-8")
    proc = run_cli("caps.yaml", "--model", "echo", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "caps.yaml" in proc.stderr and "datasets[0].infer_cfg.retriever" in proc.stderr
    assert not (tmp_path / "out").exists()
    dataset = {"abbr": "caps", "reader_cfg": {"input_columns": ["country"],
                                              "output_column": "capital"},
               "infer_cfg": {"ice_template": {"type": "PromptTemplate",
                                              "template": "{country}: {capital}"},
                             "prompt_template": {"type": "PromptTemplate", "ice_token": "</E>",
                                                 "template": "</E>Capital of {country}?"},
                             "inferencer": {"type": "GenInferencer"}},
               "rows": [{"country": "Chad", "capital": "N'Djamena"}]}
    with pytest.raises(pc.ConfigError, match="infer_cfg has no 'retriever'") as info:
        pc.Compiler().compile(dataset, {"abbr": "echo"})
    assert info.value.key_path == "infer_cfg.retriever"


def test_the_template_check_reads_the_same_from_files_and_library(tmp_path: Path) -> None:
    text = NO_RETRIEVER.replace('      prompt_template: {type: PromptTemplate, template: '
                                '"Capital of {country}?"}\n', "")
    (tmp_path / "caps.yaml").write_text(text, encoding="utf-8")
    proc = run_cli("caps.yaml", "--model", "echo", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 1
    assert "datasets[0].infer_cfg" in proc.stderr
    assert "infer_cfg needs a prompt_template or an ice_template" in proc.stderr
    dataset = {"abbr": "caps", "reader_cfg": {"input_columns": ["country"]},
               "infer_cfg": {"inferencer": {"type": "GenInferencer"}},
               "rows": [{"country": "Chad"}]}
    with pytest.raises(pc.ConfigError, match="infer_cfg needs a prompt_template or an "
                                             "ice_template"):
        pc.Compiler().compile(dataset, {"abbr": "echo"})


def test_prompt_styles_are_exported() -> None:
    from prompt_compiler.api_formats import FormatRegistry, MessageFormat, Msg, format_messages
    from prompt_compiler.prompters import AlpacaPrompter, ChatPrompter, InstructionPrompter
    from prompt_compiler.render.chat_template import ChatTemplate
    from prompt_compiler.template.jinja_prompt import JinjaPrompt

    assert (pc.ChatTemplate, pc.JinjaPrompt, pc.AlpacaPrompter, pc.ChatPrompter,
            pc.InstructionPrompter, pc.Msg, pc.format_messages, pc.FormatRegistry,
            pc.MessageFormat) == (ChatTemplate, JinjaPrompt, AlpacaPrompter, ChatPrompter,
                                  InstructionPrompter, Msg, format_messages, FormatRegistry,
                                  MessageFormat)
    for name in pc.__all__:
        assert getattr(pc, name) is not None, name
    assert pc.__version__ == "0.1.0"
    prompt = pc.ChatPrompter("Be brief.").generate_prompt("1+1?", history=[["2+2?", "4"]])
    assert prompt == "You are an AI-Agent developed by LazyLLM.Be brief.\n\n\n\n2+2?4\n\n1+1?\n\n"


@pytest.mark.parametrize(("statement", "new"), [
    ("from prompt_compiler.chat_template import ChatTemplate", "render.chat_template"),
    ("from prompt_compiler.jinja_prompt import JinjaPrompt", "template.jinja_prompt"),
    ("import prompt_compiler.tokenize as m; m.load_tokenizer", "model.tokenize"),
    ("from prompt_compiler.model import Model", "model.spec.Model"),
    ("from prompt_compiler.emit import record_json", "emit.records.record_json"),
    ("from prompt_compiler.inspection.report_html import report", "inspection.viewer"),
    ("from prompt_compiler.planlines import Lines", "plan.lines"),
    ("from prompt_compiler.config.pyconfig import to_plain", "config.python.load"),
    ("from prompt_compiler.config.python_loader import load", "config.python.mmengine_mode"),
    ("from prompt_compiler.config.opencompass_shim import opencompass_shim",
     "config.python.shim"),
    ("from prompt_compiler.config.pyguard import Guard", "config.python.check and "
     "prompt_compiler.config.python.stand_ins and prompt_compiler.config.python.budget"),
    ("from prompt_compiler.sandbox import PromptSandbox", "safety.jinja_sandbox"),
    ("from prompt_compiler.parallel import PoolEngine", "run.engines.pool"),
    ("from prompt_compiler.suite import load", "run.suite"),
    ("from prompt_compiler.template.fill import RowValues", "promptlist.fill"),
    ("from prompt_compiler.inspection.spans import add_spans", "assemble.spans"),
])
def test_moved_paths_import_with_a_deprecation_warning(statement: str, new: str) -> None:
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "import prompt_compiler\n" + statement.replace("; ", "\n"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert proc.returncode == 1
    assert f"moved to prompt_compiler.{new}" in proc.stderr
    assert 'File "<string>", line 3' in proc.stderr  # the warning names the user's line
    ok = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c",
                         statement.replace("; ", "\n")], capture_output=True, text=True,
                        cwd=REPO, timeout=60)
    assert ok.returncode == 0, ok.stderr


def test_the_ray_stage_keeps_its_public_path_without_a_warning() -> None:
    """prompt_compiler.ray is documented (docs/ray.md): it stays, with no DeprecationWarning."""
    code = ("import warnings; warnings.simplefilter('error')\n"
            "from prompt_compiler.ray import compile_dataset, require_ray, sampling_params\n"
            "from prompt_compiler.integrations import ray_data\n"
            "assert compile_dataset is ray_data.compile_dataset\n"
            "assert sampling_params is ray_data.sampling_params\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_a_pair_compiles_alone_as_an_engine_task(tmp_path: Path) -> None:
    """compile_range: the picklable task another engine runs gives the file's bytes."""
    import pickle

    from prompt_compiler.run.pairs import compile_range, prepare

    suite = pc.load(REPO / "configs")
    out = tmp_path / "out"
    pc.compile_to_dir(suite, out, only="arith*")
    settings = pc.CompileSettings(mode="default")
    pair = next(p for p in suite.pairs("arith*") if p.model.abbr == "tinychat-1b-hf")
    task = pickle.loads(pickle.dumps((compile_range, pair, settings)))
    data, counts = task[0](*task[1:])
    expected = (out / "tinychat-1b-hf" / "arith-gen-3shot.jsonl").read_bytes()
    assert data == expected and counts.count == expected.count(b"\n") == 5
    # a row range from the job prepared once: the file's lines of those rows
    job, kind, _, prepared = prepare(pair, settings)
    assert (kind, len(job.rows.test)) == ("gen", 5) and prepared is not None
    part, counts = compile_range(pair, settings, range(1, 3), prepared)
    assert part == b"".join(expected.splitlines(keepends=True)[1:3]) and counts.count == 2


def test_one_dataset_rows_class_per_name() -> None:
    from prompt_compiler.data import reader, sources

    assert sources.LoadedRows.__name__ == "LoadedRows"
    assert reader.DatasetRows((), ()).test == ()
    with pytest.warns(DeprecationWarning, match="now LoadedRows"):
        assert sources.DatasetRows is sources.LoadedRows


def _package_imports(folder: Path) -> set[str]:
    """The ``prompt_compiler`` modules a folder's files import (relative imports resolved),
    at module level and at call time alike."""
    import ast

    found: set[str] = set()
    for path in folder.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        package = parts[:-1]  # a module's package; an __init__.py's is its own folder
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join((*base, *(node.module.split(".") if node.module else ())))
                names = [target] if node.module else [f"{target}.{a.name}" for a in node.names]
                found.update(names)
    return found


@pytest.mark.parametrize(("folder", "allowed"), [
    ("safety", ("prompt_compiler.safety", "prompt_compiler.errors")),
    ("promptlist", ("prompt_compiler.promptlist", "prompt_compiler.safety",
                    "prompt_compiler.errors", "prompt_compiler.policy")),
])
def test_the_ground_floor_imports_nothing_above_it(folder: str, allowed: tuple[str, ...]) -> None:
    """docs/architecture.md's floors: the ground floor's folders import only the ground."""
    imports = _package_imports(REPO / "prompt_compiler" / folder)
    assert imports, folder
    above = sorted(m for m in imports
                   if not any(m == a or m.startswith(a + ".") for a in allowed))
    assert above == []


def test_the_floors_table_names_every_root_module_and_folder() -> None:
    """Every module and folder at the package's root has its floor in docs/architecture.md."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    floors = text.split("## The floors", 1)[1].split("## Where each rule lives", 1)[0]
    root = REPO / "prompt_compiler"
    entries = [p.name + "/" if p.is_dir() else p.name for p in root.iterdir()
               if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"]
    missing = [e for e in entries
               if e not in ("__main__.py", "_moved.py", "_version.py") and f"`{e}`" not in floors
               and not any(f"`{e}" in cell for cell in floors.split("|"))]
    assert missing == []
