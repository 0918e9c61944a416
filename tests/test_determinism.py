"""The same inputs give byte-identical OUT whatever the run's environment (issue 20).

The example suite (``configs/``) is compiled once as the reference, then again with one
thing changed each time: the hash seed, ``--jobs``, the working directory (and so how
the configs are named), the time zone and the locale; every file of OUT must be equal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run(args: list[str], cwd: Path, **extra: str) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PROMPT_COMPILER", "PYTHONHASHSEED", "TZ", "LC_", "LANG"))}
    done = subprocess.run([sys.executable, "-m", "prompt_compiler", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env={**env, **extra})
    assert done.returncode == 0, done.stderr


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("reference") / "out"
    run(["configs/", "-o", str(out)], REPO, PYTHONHASHSEED="0", TZ="UTC", LC_ALL="C.UTF-8")
    found = files(out)
    assert len(found) > 5
    return found


@pytest.mark.parametrize("change", [
    {"PYTHONHASHSEED": "12345"},
    {"jobs": "2", "PYTHONHASHSEED": "random"},
    {"cwd": "elsewhere", "TZ": "Pacific/Chatham"},
    {"LC_ALL": "C", "PYTHONUTF8": "0", "TZ": "America/St_Johns", "jobs": "3"},
], ids=["hash-seed", "jobs-2", "cwd-tz", "c-locale-tz-jobs-3"])
def test_the_same_inputs_give_the_same_bytes(tmp_path: Path, reference: dict[str, bytes],
                                             change: dict[str, str]) -> None:
    env = {"PYTHONHASHSEED": "0", "TZ": "UTC", "LC_ALL": "C.UTF-8", **change}
    jobs, where = env.pop("jobs", "1"), env.pop("cwd", None)
    if where:  # the configs named by an absolute path, OUT by a relative one
        (tmp_path / where).mkdir()
        run([str(REPO / "configs"), "-o", "../out", "--jobs", jobs], tmp_path / where, **env)
    else:
        run(["configs/", "-o", str(tmp_path / "out"), "--jobs", jobs], REPO, **env)
    assert files(tmp_path / "out") == reference
