"""How users run suites: eval-config pairing, CLI conventions, warnings, provenance and the
library's ``pc.load``/``pc.compile`` — each from config files on disk, through the CLI in a
subprocess (or the public library), with expected values written by hand."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import prompt_compiler as pc

THREE_ROWS = "[dict(q='one', a='1'), dict(q='two', a='2'), dict(q='three', a='3')]"


def dataset_py(name: str, abbr: str, template: str = "Q: {q}\\nA:", rows: str = THREE_ROWS
               ) -> str:
    return (f"{name} = [dict(abbr='{abbr}', reader_cfg=dict(input_columns=['q'], "
            "output_column='a'),\n"
            "    infer_cfg=dict(prompt_template=dict(type='PromptTemplate', "
            f"template='{template}'),\n"
            "        retriever=dict(type='ZeroRetriever'),\n"
            "        inferencer=dict(type='GenInferencer')),\n"
            f"    rows={rows})]\n")


def eval_py(dataset_imports: list[tuple[str, str]], models: list[str]) -> str:
    lines = ["from mmengine.config import read_base", "with read_base():"]
    lines += [f"    from .datasets.{mod} import {var}" for mod, var in dataset_imports]
    lines.append(f"datasets = [{', '.join('*' + var for _, var in dataset_imports)}]")
    lines.append("models = [" + ", ".join(
        f"dict(abbr='{m}', meta_template='chatml')" for m in models) + "]")
    return "\n".join(lines) + "\n"


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    """Two eval configs sharing a dataset, plus a dataset-only and a model-only file."""
    root = tmp_path / "suite"
    (root / "configs" / "datasets").mkdir(parents=True)
    (root / "configs" / "datasets" / "alpha.py").write_text(dataset_py("alpha", "alpha"))
    (root / "configs" / "datasets" / "beta.py").write_text(dataset_py("beta", "beta"))
    (root / "configs" / "eval_a.py").write_text(
        eval_py([("alpha", "alpha"), ("beta", "beta")], ["ma"]))
    (root / "configs" / "eval_b.py").write_text(eval_py([("beta", "beta")], ["mb"]))
    (root / "extra").mkdir()
    (root / "extra" / "gamma.yaml").write_text(
        "datasets:\n  - abbr: gamma\n    reader_cfg: {input_columns: [q], output_column: a}\n"
        "    infer_cfg:\n      prompt_template: {type: PromptTemplate, template: 'G: {q}'}\n"
        "      retriever: {type: ZeroRetriever}\n      inferencer: {type: GenInferencer}\n"
        "    rows: [{q: x, a: y}]\n")
    (root / "extra" / "mc.yaml").write_text("models:\n  - {abbr: mc, meta_template: chatml}\n")
    return root


def cli(*args: object, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prompt_compiler", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1", **env})


def outputs(out: Path) -> set[str]:
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    return set(manifest["outputs"])


# --- pairing ---------------------------------------------------------------------------


def test_each_eval_config_compiles_its_own_pairs(tree: Path) -> None:
    proc = cli("configs/eval_a.py", "configs/eval_b.py", "-o", "out", cwd=tree)
    assert proc.returncode == 0, proc.stderr
    # alpha never meets mb: eval_b does not name it; beta x both models once each
    assert outputs(tree / "out") == {"ma/alpha.jsonl", "ma/beta.jsonl", "mb/beta.jsonl"}


def test_a_folder_of_eval_configs_is_the_union_of_their_pairs(tree: Path) -> None:
    proc = cli("configs/", "-o", "out", cwd=tree)
    assert proc.returncode == 0, proc.stderr
    assert outputs(tree / "out") == {"ma/alpha.jsonl", "ma/beta.jsonl", "mb/beta.jsonl"}
    assert proc.stdout.startswith("3 dataset x model pairs, 9 prompts")


def test_dataset_only_and_model_only_files_pair_with_each_other(tree: Path) -> None:
    proc = cli("configs/eval_b.py", "extra/gamma.yaml", "extra/mc.yaml", "-o", "out", cwd=tree)
    assert proc.returncode == 0, proc.stderr
    assert outputs(tree / "out") == {"mb/beta.jsonl", "mc/gamma.jsonl"}


def test_model_replaces_eval_models_and_pairs_free_datasets(tree: Path) -> None:
    proc = cli("configs/eval_b.py", "extra/gamma.yaml", "--model", "llama-3-instruct",
               "-o", "out", cwd=tree)
    assert proc.returncode == 0, proc.stderr
    assert outputs(tree / "out") == {"llama-3-instruct/beta.jsonl",
                                     "llama-3-instruct/gamma.jsonl"}


def test_a_free_dataset_without_model_files_joins_the_eval_models(tree: Path) -> None:
    proc = cli("configs/eval_b.py", "extra/gamma.yaml", "-o", "out", cwd=tree)
    assert proc.returncode == 0, proc.stderr
    assert outputs(tree / "out") == {"mb/beta.jsonl", "mb/gamma.jsonl"}


def test_models_glob_picks_some_of_the_suites_models(tree: Path) -> None:
    proc = cli("configs/", "--models", "mb", "-o", "out", cwd=tree)
    assert proc.returncode == 0, proc.stderr
    assert outputs(tree / "out") == {"mb/beta.jsonl"}
    none = cli("configs/", "--models", "zz*", "--check", cwd=tree)
    assert none.returncode == 1
    assert none.stderr == ("compile-prompts: error: configs/: nothing to compile: no model "
                           "matches --models zz*\n")


def test_dataset_error_names_the_file_defining_it(tree: Path) -> None:
    (tree / "configs" / "datasets" / "beta.py").write_text(
        dataset_py("beta", "beta", rows="[dict(question='one', a='1')]"))
    proc = cli("configs/eval_b.py", "--check", cwd=tree)
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        "compile-prompts: error: configs/datasets/beta.py (imported by configs/eval_b.py): "
        "dataset 'beta'"), proc.stderr
    assert "input column 'q' is not in the rows" in proc.stderr


# --- CLI conventions ----------------------------------------------------------------------


def test_version(tree: Path) -> None:
    proc = cli("--version", cwd=tree)
    assert (proc.returncode, proc.stdout) == (0, f"compile-prompts {pc.__version__}\n")


def test_limit_takes_the_first_n_test_rows(tree: Path) -> None:
    proc = cli("configs/eval_a.py", "--limit", "2", "--only", "alpha", "-o", "out", cwd=tree)
    assert proc.returncode == 0, proc.stderr
    lines = (tree / "out" / "ma" / "alpha.jsonl").read_text(encoding="utf-8").splitlines()
    # a plain string template reaches an LM model as the text itself (no meta template)
    assert [json.loads(x)["prompt"] for x in lines] == ["Q: one\nA:", "Q: two\nA:"]
    manifest = json.loads((tree / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["arguments"] == {"only": ["alpha"], "limit": 2}


@pytest.mark.parametrize("extra", [[], ["--show", "1"], ["--check"], ["--show", "1", "--check"]])
def test_only_matching_nothing_is_one_error(tree: Path, extra: list[str]) -> None:
    proc = cli("configs/", "--only", "nope*", *extra, cwd=tree)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == ("compile-prompts: error: configs/: nothing to compile: no dataset "
                           "matches --only nope*\n")


def test_show_prints_the_jsonl_prompt_without_color(tree: Path) -> None:
    proc = cli("extra/gamma.yaml", "--model", "openai-api", "--show", "1", cwd=tree,
               NO_COLOR="1")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stdout
    # an OpenAI-compatible template: the request's user message, as in the JSONL
    assert "user" in proc.stdout and "G: x" in proc.stdout


def test_jobs_with_check_compiles_in_parallel(tree: Path) -> None:
    one = cli("configs/", "--check", "--json", cwd=tree)
    two = cli("configs/", "--check", "--json", "--jobs", "2", cwd=tree)
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    assert json.loads(one.stdout)["outputs"] == json.loads(two.stdout)["outputs"]


def test_no_progress_bar_in_a_pipe(tree: Path) -> None:
    proc = cli("configs/", "-o", "out", cwd=tree)
    assert proc.stderr == ""


# --- warnings --------------------------------------------------------------------------


def test_unknown_placeholder_warns_and_strict_fails(tree: Path) -> None:
    (tree / "configs" / "datasets" / "alpha.py").write_text(
        dataset_py("alpha", "alpha", template="Q: {qq}\\nA:"))
    warned = cli("configs/eval_a.py", "--only", "alpha", "-o", "out", cwd=tree)
    assert warned.returncode == 0, warned.stderr
    assert warned.stderr == (
        "compile-prompts: warning: configs/datasets/alpha.py (imported by configs/eval_a.py): "
        "dataset 'alpha', at alpha[0].infer_cfg.prompt_template.template: placeholder {qq} "
        "names no column, so it stays in the prompt verbatim; did you mean {q}?\n")
    strict = cli("configs/eval_a.py", "--only", "alpha", "-o", "out2", "--strict", cwd=tree)
    assert strict.returncode == 1
    assert "placeholder {qq} names no column" in strict.stderr
    assert not (tree / "out2").exists()


def test_empty_test_split_warns(tree: Path) -> None:
    (tree / "extra" / "gamma.yaml").write_text(
        (tree / "extra" / "gamma.yaml").read_text().replace("rows: [{q: x, a: y}]",
                                                            "splits: {train: [], test: []}"))
    proc = cli("extra/gamma.yaml", "extra/mc.yaml", "-o", "out", cwd=tree)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ("compile-prompts: warning: extra/gamma.yaml: dataset 'gamma', at "
                           "datasets[0].reader_cfg.test_split: the test split has no rows, so "
                           "nothing is compiled for this dataset\n")


# --- provenance ------------------------------------------------------------------------


def test_manifest_lists_every_input_with_its_hash(tree: Path, tmp_path: Path) -> None:
    (tree / "extra" / "data.jsonl").write_text('{"q": "from file", "a": "f"}\n')
    (tree / "extra" / "tpl.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    (tree / "extra" / "filed.yaml").write_text(
        (tree / "extra" / "gamma.yaml").read_text().replace("abbr: gamma", "abbr: filed")
        .replace("    rows: [{q: x, a: y}]\n", "    path: data.jsonl\n"))
    (tree / "extra" / "mc.yaml").write_text(
        "models:\n  - {abbr: mc, meta_template: chatml}\n"
        "  - {abbr: tc, parser: hf_chat, chat_template: tpl.jinja}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = cli(tree / "configs", tree / "extra", "-o", "out", cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((elsewhere / "out" / "manifest.json").read_text(encoding="utf-8"))
    paths = {i["path"]: i["sha256"] for i in manifest["inputs"]}
    assert sorted(paths) == [
        "configs/datasets/alpha.py", "configs/datasets/beta.py", "configs/eval_a.py",
        "configs/eval_b.py", "extra/data.jsonl", "extra/filed.yaml", "extra/gamma.yaml",
        "extra/mc.yaml", "extra/tpl.jinja", "prompt_compiler/meta_templates/chatml.yaml"]
    for rel, digest in paths.items():
        base = Path(pc.__file__).parent.parent if rel.startswith("prompt_compiler/") else tree
        assert hashlib.sha256((base / rel).read_bytes()).hexdigest() == digest, rel
    assert manifest["mode"] == "default" and manifest["version"] == pc.__version__


# --- library ----------------------------------------------------------------------------


def test_library_load_and_compile(tree: Path) -> None:
    suite = pc.load(str(tree / "configs"))
    assert [(p.dataset.abbr, p.model.abbr) for p in suite.pairs()] == [
        ("alpha", "ma"), ("beta", "ma"), ("beta", "mb")]
    records = list(pc.compile(suite, only="beta", limit=1))
    assert [(r.dataset, r.model, r.prompt, r.gold) for r in records] == [
        ("beta", "ma", "Q: one\nA:", "1"), ("beta", "mb", "Q: one\nA:", "1")]
    assert [r.dataset for r in pc.compile(pc.load([tree / "configs" / "eval_b.py"]),
                                          only=["b*", "x"])] == ["beta"] * 3
    manifest = pc.compile_to_dir(suite, str(tree / "lib_out"), only=["alpha"])
    assert set(manifest["outputs"]) == {"ma/alpha.jsonl"}
    assert (tree / "lib_out" / "ma" / "alpha.jsonl").is_file()


def test_show_displays_what_the_jsonl_holds(tree: Path) -> None:
    """--show, the JSONL and the library record agree (a chat-template model)."""
    from prompt_compiler.inspection.viewer import visible

    (tree / "extra" / "t.yaml").write_text(
        "models:\n  - abbr: tpl\n    parser: hf_chat\n"
        "    chat_template: \"{% for m in messages %}[{{ m.role }}] {{ m.content }}\\n"
        "{% endfor %}\"\n")
    proc = cli("extra/gamma.yaml", "extra/t.yaml", "--show", "1", "-o", "out", cwd=tree)
    assert proc.returncode == 0, proc.stderr
    (line,) = (tree / "out" / "tpl" / "gamma.jsonl").read_text(encoding="utf-8").splitlines()
    written = json.loads(line)["prompt"]
    assert written == "[user] G: x\n"
    shown = proc.stdout.split("--- [gen] row 0 ice_ids=[]\n", 1)[1].split("\n1 dataset x")[0]
    assert shown == visible(written, color=False)
    (rec,) = pc.compile(pc.load([tree / "extra" / "gamma.yaml", tree / "extra" / "t.yaml"]))
    assert rec.prompt == written


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_progress_bar_on_a_terminal(tree: Path) -> None:
    import pty

    main_fd, child_fd = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    proc = subprocess.run([sys.executable, "-m", "prompt_compiler", "configs/", "-o", "out"],
                          cwd=tree, stdout=subprocess.PIPE, stderr=child_fd, timeout=120,
                          env={**env, "TERM": "xterm"})
    os.close(child_fd)
    drawn = b""
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    os.close(main_fd)
    assert proc.returncode == 0
    text = drawn.decode("utf-8", "replace")
    assert "rows/s" in text and "3/3" in text  # count, rate (and time left) per pair
