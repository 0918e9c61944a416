"""Shared fixtures: where the reference corpus (../shared) lives, if it is present."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

settings.register_profile("ci", max_examples=200, deadline=None)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile("ci")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ``../shared`` folder beside the clone; skips when absent (as in a user's clone)."""
    if not (SHARED / "conformance").is_dir():
        pytest.skip("../shared/conformance is not beside this clone (reference corpus absent)")
    return SHARED


def run_conformance(suite: str, cases: Path, golden: Path, mode: str = "compat") -> tuple[int, str]:
    """Run tools/conformance.py exactly as a user would; returns (exit status, output)."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "conformance.py"), suite,
         "--cases", str(cases), "--golden", str(golden), "--mode", mode],
        capture_output=True, text=True, cwd=REPO, timeout=600,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(autouse=True)
def _no_models_built() -> None:
    """Each test starts with no model built, as a new process does (``build_model`` keeps the
    models it built; a test that patches what building reads must see it read)."""
    from prompt_compiler.model import spec

    spec._BUILT.clear()
