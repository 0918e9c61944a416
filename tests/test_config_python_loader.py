"""Our Python config loader (prompt_compiler/config/python/mmengine_mode.py) against mmengine's.

Each config is written to disk and loaded three ways: as the CLI does (our loader, mmengine
where it declines), by our loader alone, and by mmengine alone. The expected settings are
written by hand; mmengine (a dependency) is the reference they are checked against too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from prompt_compiler.config.python.load import (
    find_package_root,
    load_python_config,
    load_variables,
)
from prompt_compiler.config.python.mm_values import settings
from prompt_compiler.config.python.mmengine_mode import NeedsMmengine
from prompt_compiler.config.python.shim import opencompass_shim
from prompt_compiler.config.records import TypeRef
from prompt_compiler.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import pyconfig_sameness  # noqa: E402


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _load(path: Path, loader: str) -> dict[str, Any]:
    root = find_package_root(path)
    with opencompass_shim(root):
        return settings(*load_variables(path, str(path), root, loader=loader))


def _all_ways(path: Path, expected: dict[str, Any]) -> None:
    """The CLI's loader, ours alone and mmengine alone all give ``expected``."""
    assert load_python_config(path, str(path)) == expected
    assert _load(path, "own") == expected
    assert _load(path, "mmengine") == expected


def test_values_from_a_base_config_behave_as_mmengine_hands_them_over(tmp_path: Path) -> None:
    _write(tmp_path, {
        "base.py": """
            cfg = dict(a=dict(x=1, y=2), items=[1, 2], name='base')
            _hidden = 'kept in the base, importable'
        """,
        "top.py": """
            from mmengine.config import read_base
            with read_base():
                from .base import cfg, _hidden
            cfg.update(dict(a=dict(y=3)))      # nested dicts merge
            copied = cfg.copy()
            copied['items'].append(3)           # lists are re-built on copy
            popped = cfg.pop('missing')         # None, not KeyError
            via_attr = cfg.a.x                  # attribute access reads keys
            cfg.name = 'renamed'                # ... and sets them
            listed = [k for k, v in cfg.items()]
            hidden = _hidden
        """,
    })
    _all_ways(tmp_path / "top.py", {
        "cfg": {"a": {"x": 1, "y": 3}, "items": [1, 2], "name": "renamed"},
        "copied": {"a": {"x": 1, "y": 3}, "items": [1, 2, 3], "name": "base"},
        "popped": None,
        "via_attr": 1,
        "listed": ["a", "items", "name"],
        "hidden": "kept in the base, importable",
    })


def test_imports_become_class_references_and_are_not_settings(tmp_path: Path) -> None:
    _write(tmp_path, {"gen.py": """
        from opencompass.openicl.icl_retriever import ZeroRetriever as Zero
        from opencompass.openicl.icl_inferencer import GenInferencer
        import opencompass.models

        infer = dict(retriever=dict(type=Zero), inferencer=dict(type=GenInferencer))
        model = dict(type=opencompass.models.HuggingFaceCausalLM)
        names = [str(Zero), str(opencompass.models.HuggingFaceCausalLM)]
    """})
    # (Whether ``from copy import deepcopy`` is a real import depends on where Python is
    # installed: mmengine counts only modules below the interpreter's prefix as standard.)
    zero = TypeRef("opencompass.openicl.icl_retriever.ZeroRetriever")
    infer = {"retriever": {"type": zero},
             "inferencer": {"type": TypeRef("opencompass.openicl.icl_inferencer.GenInferencer")}}
    _all_ways(tmp_path / "gen.py", {
        "infer": infer,
        "model": {"type": TypeRef("opencompass.models.HuggingFaceCausalLM")},
        "names": ["ZeroRetriever", "HuggingFaceCausalLM"],
    })


def test_a_config_without_imports_keeps_standard_library_names(tmp_path: Path) -> None:
    # mmengine's classic mode: no __file__, imported values kept, functions and modules not.
    # (``sys`` is built in; whether ``math`` counts as standard library depends on where
    # Python is installed, so it is not used here.)
    _write(tmp_path, {"plain.py": """
        import sys
        from sys import maxsize
        def double(x):
            return 2 * x
        datasets = [dict(abbr='a', n=double(2))]
        big = maxsize > 2 ** 31
        has_file = '__file__' in globals()
    """})
    _all_ways(tmp_path / "plain.py", {
        "maxsize": sys.maxsize, "datasets": [{"abbr": "a", "n": 4}], "big": True,
        "has_file": False})


def test_star_imports_and_the_order_of_variables(tmp_path: Path) -> None:
    _write(tmp_path, {
        "configs/datasets/b.py": "b_datasets = [dict(abbr='b')]\nshared = 'from b'\n",
        "configs/datasets/a.py": "a_datasets = [dict(abbr='a')]\n",
        "configs/eval.py": """
            from mmengine.config import read_base
            zeta = 'set before the bases'
            with read_base():
                from opencompass.configs.datasets.b import *
                from .datasets.a import a_datasets
            shared = 'overridden'
            datasets = sum([v for k, v in locals().items() if k.endswith('_datasets')], [])
        """,
    })
    settings = load_python_config(tmp_path / "configs/eval.py", "eval.py")
    assert list(settings) == ["b_datasets", "shared", "a_datasets", "zeta", "datasets"]
    assert settings["datasets"] == [{"abbr": "b"}, {"abbr": "a"}]
    assert settings["shared"] == "overridden"
    _all_ways(tmp_path / "configs/eval.py", settings)


def test_base_file_dunder_file_is_spelled_as_mmengine_spells_it(tmp_path: Path) -> None:
    # (bases come from the config's folder tree: here the folder named configs above it)
    _write(tmp_path, {
        "configs/sub/base.py": "where = __file__\n",
        "configs/top/top.py": """
            from mmengine.config import read_base
            with read_base():
                from ..sub.base import where
            here = __file__
        """,
    })
    top = (tmp_path / "configs/top/top.py").resolve()
    _all_ways(tmp_path / "configs/top/top.py", {
        "where": os.path.join(str(top.parent), "..", "sub/base.py"), "here": str(top)})


@pytest.mark.parametrize("files, why", [
    ({"base.py": "x = 1\n", "top.py": "_base_ = ['base.py']\ny = 2\n"}, "_base_"),
    ({"top.py": "work_dir = './{{ fileBasenameNoExtension }}'\n"}, "substitution"),
    ({"top.py": "def f():\n    import yaml\n    return yaml\nx = [1]\n"}, "inside a function"),
])
def test_what_our_loader_declines_mmengine_loads(tmp_path: Path, files: dict[str, str],
                                                 why: str) -> None:
    _write(tmp_path, files)
    top = tmp_path / "top.py"
    with pytest.raises(NeedsMmengine, match=why):
        _load(top, "own")
    assert load_python_config(top, "top.py") == _load(top, "mmengine")


def test_errors_are_reported_as_mmengine_reports_them(tmp_path: Path) -> None:
    _write(tmp_path, {"bad.py": """
        from opencompass.openicl.icl_retriever import ZeroRetriever
        x = 1
        y = ZeroRetriever()
    """})
    with pytest.raises(ConfigError) as err:
        load_python_config(tmp_path / "bad.py", "bad.py")
    assert str(err.value) == (
        "bad.py: calls `ZeroRetriever(...)` (line 4), a name imported outside `with "
        "read_base():`: OpenCompass loads configs in mmengine's lazy-import mode, where such "
        "names cannot be called while the config loads (OpenCompass 0.5.4 stops on this config "
        "too) (hint: copy or build the values without calling an import (e.g. `dict(d)`, "
        "`[dict(x) for x in xs]`, or the config dict's own `.deepcopy()`))")


def test_repository_configs_load_the_same_both_ways() -> None:
    files = [str(p) for folder in ("configs", "tests/data") for p in sorted(
        (ROOT / folder).rglob("*.py")) if p.name != "__init__.py"]
    outcomes = {file: pyconfig_sameness.compare(file)[1:] for file in files}
    assert len(files) >= 20
    assert not {f: o for f, o in outcomes.items() if o[0] == "DIFFERENT"}
    assert sum(o[0] == "same" for o in outcomes.values()) >= 18


def _corpus() -> Path:
    given = os.environ.get("PC_OPENCOMPASS_CONFIGS")
    candidates = [Path(given)] if given else []
    candidates.append(Path(sys.prefix).parent.parent / "oc-venv/lib/python3.11/site-packages"
                      / "opencompass/configs")
    candidates.append(Path("/work/oc-venv/lib/python3.11/site-packages/opencompass/configs"))
    for candidate in candidates:
        if (candidate / "datasets").is_dir():
            return candidate
    pytest.skip("no extracted OpenCompass configs (set PC_OPENCOMPASS_CONFIGS=.../configs); "
                "the whole corpus is a tool run: tools/pyconfig_sameness.py")


def test_a_sample_of_opencompass_configs_load_the_same_both_ways() -> None:
    import random

    files = sorted(str(p) for p in (_corpus() / "datasets").rglob("*.py")
                   if p.name != "__init__.py")
    sample = random.Random(10).sample(files, 40)
    outcomes = [pyconfig_sameness.compare(file) for file in sample]
    assert [o for o in outcomes if o[1] == "DIFFERENT"] == []
    assert sum(o[1] == "same" for o in outcomes) >= 35


def test_the_cli_imports_no_heavy_module_on_the_common_path(tmp_path: Path) -> None:
    _write(tmp_path, {
        "configs/datasets/qa.py": """
            from mmengine.config import read_base
            from opencompass.openicl.icl_prompt_template import PromptTemplate
            from opencompass.openicl.icl_retriever import FixKRetriever
            from opencompass.openicl.icl_inferencer import GenInferencer
            qa_datasets = [dict(
                abbr='qa',
                reader_cfg=dict(input_columns=['q'], output_column='a', train_split='train'),
                infer_cfg=dict(
                    ice_template=dict(type=PromptTemplate, template='Q: {q}\\nA: {a}\\n'),
                    prompt_template=dict(type=PromptTemplate, template='</E>Q: {q}\\nA:',
                                         ice_token='</E>'),
                    retriever=dict(type=FixKRetriever, fix_id_list=[0]),
                    inferencer=dict(type=GenInferencer)),
            )]
        """,
        "configs/models/m.py": """
            from opencompass.models import HuggingFaceCausalLM
            models = [dict(type=HuggingFaceCausalLM, abbr='m', max_seq_len=2048,
                           meta_template=dict(round=[
                               dict(role='HUMAN', begin='<U>', end='\\n'),
                               dict(role='BOT', begin='<B>', end='\\n', generate=True)]))]
        """,
        "data/qa/train.jsonl": '{"q": "1+1", "a": "2"}\n',
        "data/qa/test.jsonl": '{"q": "2+2", "a": "4"}\n',
    })
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "prompt_compiler", "configs/datasets/qa.py",
         "--model", "configs/models/m.py", "--data-dir", "data", "-o", "out"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = (tmp_path / "out/m/qa.jsonl").read_text(encoding="utf-8")
    # A str template takes no meta template; FixK joins the example with '\n' and ends it
    # with '\n' (ice_eos_token).
    assert '"prompt": "Q: 1+1\\nA: 2\\n\\nQ: 2+2\\nA:"' in record
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0]
                for line in proc.stderr.splitlines() if line.startswith("import time:")}
    heavy = {"mmengine", "numpy", "yaml", "jinja2", "rich", "multiprocessing", "addict"}
    assert imported & heavy == set()
