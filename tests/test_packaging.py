"""A built wheel, installed into a fresh virtual environment, works from any folder.

The wheel is built from this checkout (``pip wheel --no-deps``), installed with ``--no-deps``
into a new venv that borrows the dependencies of the running interpreter through a ``.pth``
file (so no index is needed), then ``compile-prompts models`` and the README's main job run
from a temporary folder unrelated to the checkout.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p.stem for p in (REPO / "prompt_compiler" / "meta_templates").glob("*.yaml"))


def _can_build_offline() -> bool:
    """setuptools can make wheels without fetching anything (wheel installed, or >= 70.1)."""
    if importlib.util.find_spec("wheel") is not None:
        return True
    import setuptools

    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    return (major, minor) >= (70, 1)


def _run(argv: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"})


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a fresh venv holding only the built wheel."""
    root = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w",
             str(root / "dist")]
    if _can_build_offline():
        build.append("--no-build-isolation")
    proc = subprocess.run(build, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"cannot build a wheel here (no 'wheel' package and no index?): "
                    f"{proc.stderr.strip()[-300:]}")
    (wheel,) = (root / "dist").glob("compile_prompts-*.whl")
    with zipfile.ZipFile(wheel) as zf:  # the distribution name (issue 28), the import package
        (metadata,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        assert "\nName: compile-prompts\n" in zf.read(metadata).decode()
        assert "prompt_compiler/__init__.py" in zf.namelist()
    env = root / "env"
    venv.EnvBuilder(with_pip=False).create(env)
    bindir = env / ("Scripts" if sys.platform == "win32" else "bin")
    python = bindir / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip()
    # The dependencies come from the running environment's site folders; the project itself
    # only from the wheel (an editable install's finder is not activated by a .pth line).
    borrowed = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
                *site.getsitepackages()}
    Path(purelib, "_borrowed_deps.pth").write_text(
        "".join(f"{p}\n" for p in sorted(borrowed) if Path(p).is_dir()), encoding="utf-8")
    # Without PYTHONPATH: a checkout on it (its build's egg-info) would look installed already.
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "--no-deps", "--no-index", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=300, env=clean)
    assert proc.returncode == 0, proc.stderr
    return bindir


def test_wheel_ships_the_model_templates(installed: Path, tmp_path: Path) -> None:
    code = "import prompt_compiler, sys; sys.stdout.write(prompt_compiler.__file__)"
    where = _run([str(installed / "python"), "-c", code], tmp_path)
    assert where.returncode == 0, where.stderr
    assert str(REPO) not in where.stdout  # the installed copy, not this checkout
    listed = _run([str(installed / "compile-prompts"), "models", "--json"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    names = sorted(t["name"] for t in json.loads(listed.stdout))
    assert names == SHIPPED and len(names) >= 20
    table = _run([str(installed / "compile-prompts"), "models"], tmp_path)
    assert [line.split()[0] for line in table.stdout.splitlines()] == SHIPPED


def test_wheel_runs_the_readme_main_job(installed: Path, tmp_path: Path) -> None:
    work = tmp_path / "elsewhere"
    shutil.copytree(REPO / "configs", work / "configs")
    proc = _run([str(installed / "compile-prompts"), "configs/", "-o", "out/"], work)
    assert proc.returncode == 0, proc.stderr
    assert "dataset x model pairs" in proc.stdout and "written to out/" in proc.stdout
    record = json.loads((work / "out" / "internlm2-chat-7b-turbomind" / "arith-gen-3shot.jsonl")
                        .read_text(encoding="utf-8").splitlines()[0])
    # meta_template='internlm2-chat' was found in the installed package data
    assert record["prompt"].startswith(
        "<|im_start|>user\nProblem: Tom has 3 apples and buys 4 more. How many apples does he "
        "have?<|im_end|>\n<|im_start|>assistant\nAnswer: 7<|im_end|>\n")
    assert record["prompt"].endswith(
        "<|im_start|>user\nProblem: Lena reads 10 pages a day for 3 days. How many pages does "
        "she read?<|im_end|>\n<|im_start|>assistant\n")
