"""Python configs are data: no code of theirs runs outside the rules, and loading is bounded.

Each case is a ``.py`` config on disk run through the CLI as a subprocess under a memory cap
(``RLIMIT_AS``). A payload that tries to run code, read a file outside the config's folder or
import a module must end with exit 1 and one ``compile-prompts: error:`` line naming the file
and line, and the file it would create must not appear; a config that loops forever or
builds a huge value stops at its limit within seconds. The configs OpenCompass users write
(``open`` of a prompt file beside the config, ``os.path``, ``os.environ.get``, ``math``,
``eval`` of a name, ``globals()``/``locals()``) keep loading. Expected texts are written here
by hand.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

CAP = 400 << 20
SECONDS = 8.0
MARK = "PWNED"

DATASET = """
datasets = [dict(abbr='d', reader_cfg=dict(input_columns=['question'], output_column='answer'),
                 infer_cfg=dict(prompt_template=dict(type='PromptTemplate', template=X),
                                retriever=dict(type='ZeroRetriever'),
                                inferencer=dict(type='GenInferencer')),
                 rows=[dict(question='q', answer='a')])]
models = [dict(abbr='m', parser='lm', meta_template=None)]
"""


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def run(folder: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PROMPT_COMPILER_")}
    environ.update(env)
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "prompt_compiler", *args], cwd=folder,
                          capture_output=True, text=True, timeout=120, preexec_fn=_cap,
                          env=environ)
    return proc, time.monotonic() - began


def one_error(folder: Path, *args: str, **env: str) -> str:
    proc, took = run(folder, *args, **env)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("compile-prompts: error: "), proc.stderr
    assert took < SECONDS, (took, lines[0])
    assert not (folder / MARK).exists() and not (folder / "out").exists()
    return lines[0]


def config(folder: Path, code: str, name: str = "c.py") -> None:
    (folder / name).write_text(code + "\n" + DATASET, encoding="utf-8")


RULES = ("a Python config is read as data, not run as a program (hint: configs may assign "
         "values, loop, call functions they define and the builtins of docs/configs.md, and "
         "import opencompass.* and base configs)")
TOUCH = f"'touch {MARK}'"
PAYLOADS = {
    "dunder-import": (f"__import__('os').system({TOUCH})\nX = 'q'",
                      f"line 1: the name __import__; {RULES}"),
    "exec": (f"exec(\"open('{MARK}', 'w')\")\nX = 'q'",
             f"line 1: the builtin exec() (not available in a config); {RULES}"),
    "class-bases": ("X = str(().__class__.__bases__[0].__subclasses__())",
                    f"line 1: the attribute .__subclasses__; {RULES}"),
    "getattr-dunder": ("X = str(getattr((), '__class__'))",
                       "line 1: the attribute .__class__ (not available in a config)"),
    "generator-frame": (f"g = (i for i in [1])\ng.gi_frame.f_builtins['open']('{MARK}', 'w')\n"
                        "X = 'q'", f"line 2: the attribute .f_builtins; {RULES}"),
    "catch-everything": ("try:\n    X = 'q'\nexcept BaseException:\n    pass",
                         f"line 3: the builtin BaseException() (not available in a config); "
                         f"{RULES}"),
    "import-os-system": (f"import os\nos.system({TOUCH})\nX = 'q'",
                         "AttributeError while loading the config (line 2): os.system is not "
                         "available in a config (it offers environ, getenv, linesep, path, "
                         "sep)"),
    "os-path-os": (f"import os.path as osp\nosp.os.system({TOUCH})\nX = 'q'",
                   "AttributeError while loading the config (line 2): os.path.os is not "
                   "available in a config (it offers basename, dirname, extsep, isabs, join, "
                   "normpath, sep, split, splitext)"),
    "import-in-function": (f"def f():\n    import os\n    os.system({TOUCH})\nf()\nX = 'q'",
                           "AttributeError while loading the config (line 3): os.system is "
                           "not available in a config"),
    "sys-modules": ("import sys\nX = str(sys.modules['os'])",
                    "AttributeError while loading the config (line 2): sys.modules is not "
                    "available in a config (it offers maxsize)"),
    "import-posix": (f"from posix import system\nsystem({TOUCH})\nX = 'q'",
                     "line 1: import posix: a config may import opencompass.*, mmengine.config's "
                    "read_base, base configs (inside `with read_base():`) and copy, "
                    "functools, itertools, math, os, os.path, sys, typing (in part)"),
    "open-for-writing": (f"open('{MARK}', 'w').write('x')\nX = 'q'",
                         "line 1: open(..., 'w'): a config may only read files"),
    "globals-builtins": (f"globals()['__builtins__']['open']('{MARK}', 'w')\nX = 'q'",
                         "KeyError while loading the config (line 1): '__builtins__'"),
    "format-attribute": ("def f():\n    pass\nX = '{0.__globals__}'.format(f)",
                         "line 3: the placeholder {0.__globals__} reaches into a value (an "
                         "attribute or index); placeholders may only name a value"),
    "eval-escape": ("X = eval(\"().__class__\")",
                    f"line 1: the attribute .__class__; {RULES}"),
    "lazy-import-build": ("from opencompass.models import HuggingFaceCausalLM\n"
                          "from yaml import unsafe_load\nload = unsafe_load.build()\n"
                          f"load(\"!!python/object/apply:os.system ['touch {MARK}']\")\n"
                          "X = 'q'", "line 3: the attribute .build (not available in a config)"),
    "lazy-object-build": ("from opencompass.models import HuggingFaceCausalLM\n"
                          "yaml = getattr(LazyObject('yaml'), 'build')()\nX = 'q'",
                          "line 2: the attribute .build (not available in a config)"),
    "namespace-internals": ("g = globals()._namespace\ng['__builtins__']['__pc_tick'] = len\n"
                            "X = 'q'", "line 1: the attribute ._namespace (not available"),
    "range-internals": ("Y = sum(range(10**12)._range)\nX = 'q'",
                        "line 1: the attribute ._range (not available in a config)"),
    "stand-in-internals": ("import os\nos._names['system'] = 1\nX = 'q'",
                           "line 2: the attribute ._names (not available in a config)"),
    "classic-mode-import": (f"_base_ = []\nimport os\nos.system({TOUCH})\nX = 'q'",
                            "os.system is not available in a config"),
}


@pytest.mark.parametrize("code, words", list(PAYLOADS.values()), ids=list(PAYLOADS))
def test_a_config_cannot_run_code(tmp_path: Path, code: str, words: str) -> None:
    config(tmp_path, code)
    line = one_error(tmp_path, "c.py", "-o", "out")
    assert line.startswith("compile-prompts: error: c.py: "), line
    assert words in line, line


def test_a_config_reads_no_file_outside_its_folder(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("the secret\n", encoding="utf-8")
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "link.txt").symlink_to(tmp_path / "secret.txt")
    for path in ("../secret.txt", "link.txt", str(tmp_path / "secret.txt")):
        config(tmp_path / "suite", f"import os\nX = open(os.path.join(os.path.dirname(__file__), "
                                   f"{path!r})).read()\nfrom opencompass.models import HF")
        line = one_error(tmp_path / "suite", "c.py", "-o", "out")
        assert "a config may only read files in or below its own folder" in line, line
        assert "the secret" not in line


def test_base_configs_come_from_the_configs_tree_and_cycles_are_named(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.py").write_text("X = 'stolen {question}'\n", encoding="utf-8")
    suite = tmp_path / "suite"
    suite.mkdir()
    config(suite, "from mmengine.config import read_base\nwith read_base():\n"
                  "    from ..elsewhere import X")
    line = one_error(suite, "c.py", "-o", "out")
    assert "elsewhere.py lies outside the config's folders" in line, line
    config(suite, f"_base_ = [{str(tmp_path / 'elsewhere.py')!r}]")
    line = one_error(suite, "c.py", "-o", "out")
    assert "elsewhere.py lies outside the config's folders" in line, line
    (suite / "a.py").write_text("from mmengine.config import read_base\nwith read_base():\n"
                                "    from .b import y\nX = '{question}'\n", encoding="utf-8")
    (suite / "b.py").write_text("from mmengine.config import read_base\nwith read_base():\n"
                                "    from .a import X\ny = 1\n", encoding="utf-8")
    config(suite, "from mmengine.config import read_base\nwith read_base():\n"
                  "    from .a import X")
    line = one_error(suite, "c.py", "-o", "out")
    assert line == ("compile-prompts: error: c.py: base configs import each other in a cycle: "
                    "a.py -> b.py -> a.py"), line
    (suite / "x.py").write_text("_base_ = ['y.py']\nx = 1\n", encoding="utf-8")
    (suite / "y.py").write_text("_base_ = ['x.py']\ny = 1\n", encoding="utf-8")
    config(suite, "_base_ = ['x.py']\nX = '{question}'")
    line = one_error(suite, "c.py", "-o", "out")
    assert line == ("compile-prompts: error: c.py: base configs name each other in a cycle: "
                    "x.py -> y.py -> x.py"), line
    (suite / "link.py").symlink_to(tmp_path / "elsewhere.py")  # a link out of the tree
    config(suite, "from mmengine.config import read_base\nwith read_base():\n"
                  "    from .link import X")
    line = one_error(suite, "c.py", "-o", "out")
    assert f"the base config {suite / 'link.py'} lies outside the config's folders" in line


BOUNDS = {
    "power-tower": ("X = str(10**10**10)", "line 1: 10 ** 10000000000 would give an integer "
                    "of more than 4,300 digits (a config value cannot be that long)"),
    "pow-builtin": ("X = str(pow(10, 10**10))", "line 1: 10 ** 10000000000 would give an "
                    "integer of more than 4,300 digits"),
    "shift": ("X = str(1 << 10**10)", "line 1: 1 << 10000000000 would give an integer"),
    "squaring-loop": ("x = 10**100\nfor _ in range(40):\n    x = x * x\nX = 'q'",
                      "line 3: the product would give an integer of more than 4,300 digits"),
    "augmented-squaring": ("x = 10**100\nfor _ in range(40):\n    x *= x\nX = 'q'",
                           "line 3: the product would give an integer"),
    "repeat-string": ("X = 'a' * 10**10", "line 1: repeating a value would build "
                      "10,000,000,000 characters or items; the limit is 16,000,000 "
                      "(PROMPT_COMPILER_MAX_PROMPT_CHARS raises it)"),
    "endless-loop": ("while True: pass\nX = 'q'", "line 1: the config ran more than "
                     "100,000 steps (loop turns, comprehension items and function calls) while "
                     "loading; the limit is 100,000 steps (PROMPT_COMPILER_MAX_CONFIG_STEPS "
                     "raises it)"),
    "huge-generator": ("Y = sum(1 for i in range(10**9))\nX = 'q'",
                       "the config ran more than 100,000 steps"),
    "sum-of-a-huge-range": ("Y = sum(range(10**12))\nX = 'q'",
                            "the config ran more than 100,000 steps"),
    "sorted-by-sum": ("rs = [range(10**6)] * 10**6\nY = max(rs, key=sum)\nX = 'q'",
                      "the config ran more than 100,000 steps"),
    "doubling-string": ("s = 'ab'\nfor _ in range(60):\n    s = s + s\nX = 'q'",
                        "c.py: the config needs more memory than it may take while it loads; "
                        "the limit is 100,000,000 bytes (PROMPT_COMPILER_MAX_CONFIG_BYTES "
                        "raises it)"),
}


def test_a_source_python_cannot_parse_or_too_big_to_read_is_one_line(tmp_path: Path) -> None:
    config(tmp_path, "X = '{question}'\nY = " + "+".join(["1"] * 200_000))
    line = one_error(tmp_path, "c.py", "-o", "out")
    assert line == ("compile-prompts: error: c.py: the config is nested too deeply for "
                    "Python's parser (RecursionError)"), line
    config(tmp_path, "X = '{question}'\nY = [" + "1," * 600_000 + "]")  # 1.2 MB
    line = one_error(tmp_path, "c.py", "-o", "out")
    assert line.startswith("compile-prompts: error: c.py: 1,200,"), line
    assert line.endswith(" characters of Python; the limit is 1,048,576 bytes "
                         "(PROMPT_COMPILER_MAX_CONFIG_SOURCE_BYTES raises it) (hint: a config "
                         "is a page of settings: put rows in a data file (path:))"), line
    (tmp_path / "big.py").write_text("x = [" + "1," * 600_000 + "]\n", encoding="utf-8")
    config(tmp_path, "_base_ = ['big.py']\nX = '{question}'")  # mmengine reads the base
    line = one_error(tmp_path, "c.py", "-o", "out")
    assert "big.py: 1,200,007 bytes of Python; the limit is 1,048,576 bytes" in line, line


@pytest.mark.parametrize("code, words", list(BOUNDS.values()), ids=list(BOUNDS))
def test_a_config_that_explodes_stops_at_its_limit(tmp_path: Path, code: str,
                                                   words: str) -> None:
    config(tmp_path, code)
    line = one_error(tmp_path, "c.py", "-o", "out", PROMPT_COMPILER_MAX_CONFIG_STEPS="100_000",
                     PROMPT_COMPILER_MAX_CONFIG_BYTES="100_000_000")
    assert line.startswith("compile-prompts: error: c.py: "), line
    assert words in line, line


def test_what_opencompass_configs_do_still_loads(tmp_path: Path) -> None:
    (tmp_path / "lib_prompt").mkdir()
    (tmp_path / "lib_prompt" / "task.txt").write_text("Think first.\n", encoding="utf-8")
    code = """\
import os
from opencompass.openicl.icl_inferencer import GenInferencer
for _name in ['task']:
    with open(os.path.join(os.path.dirname(__file__), 'lib_prompt', f'{_name}.txt'), 'r') as f:
        hint = f.read().strip()
_tmp = [k for k in globals() if k.startswith('_tmp')]
for _t in _tmp:
    del globals()[_t]
name = os.environ.get('PC_SURELY_UNSET', 'default') + '-' + str(int(16 ** 0.5))
kind = eval('GenInferencer')
parts = sorted(['b', 'a'], key=len) + list(map(str, range(2)))
X = hint + ' {question} ' + name + ' ' + ''.join(parts) + ' ' + '{}'.format(2 ** 10)
print('loaded')
"""
    config(tmp_path, code)
    proc, _ = run(tmp_path, "c.py", "-o", "out")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and proc.stdout.startswith("1 dataset x model pair")  # print: no-op
    record = json.loads((tmp_path / "out" / "m" / "d.jsonl").read_text(encoding="utf-8"))
    assert record["prompt"] == "Think first. q default-4 ba01 1024"  # sorted by len is stable


def test_a_config_set_iterates_in_the_order_items_were_added(tmp_path: Path) -> None:
    """Python's sets of strings iterate in an order PYTHONHASHSEED changes (OpenCompass's
    calm config builds its dataset list from one); a config's sets keep insertion order."""
    code = ("names = {'delta', 'alpha', 'charlie', 'bravo'}\nnames.add('echo')\n"
            "names.discard('alpha')\nmore = {n.upper() for n in ['x', 'y', 'x']} | {'Z'}\n"
            "X = ' '.join(list(names) + list(more) + [str(set()), str({'q'})]) + ' {question}'")
    config(tmp_path, code)
    for seed in ("1", "2", "3"):
        proc, _ = run(tmp_path, "c.py", "-o", f"out{seed}", PYTHONHASHSEED=seed)
        assert proc.returncode == 0, proc.stderr
        record = json.loads((tmp_path / f"out{seed}" / "m" / "d.jsonl").read_text("utf-8"))
        assert record["prompt"] == "delta charlie bravo echo X Y Z set() {'q'} q"


def test_an_endless_loop_stops_at_the_default_limit(tmp_path: Path) -> None:
    config(tmp_path, "while True:\n    pass\nX = 'q'")
    line = one_error(tmp_path, "c.py", "-o", "out")
    assert line == ("compile-prompts: error: c.py: line 2: the config ran more than "
                    "10,000,000 steps (loop turns, comprehension items and function calls) "
                    "while loading; the limit is 10,000,000 steps "
                    "(PROMPT_COMPILER_MAX_CONFIG_STEPS raises it)"), line
