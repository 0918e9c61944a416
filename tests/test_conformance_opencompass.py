"""The OpenCompass reference corpus, through the conformance runner, in both modes.

compat (``--mode compat``) must reproduce ``golden/`` (OpenCompass 0.5.4 as published);
the default mode must reproduce ``golden_default/`` (the listed defects fixed).
"""

from __future__ import annotations

import pytest
from conftest import run_conformance


@pytest.mark.parametrize(("mode", "golden"), [("compat", "golden"), ("default", "golden_default")])
def test_opencompass_conformance(shared_dir, mode, golden):
    suite = shared_dir / "conformance" / "opencompass"
    code, output = run_conformance("opencompass", suite / "cases", suite / golden, mode)
    lines = output.strip().splitlines()
    assert lines, "the conformance runner printed nothing"
    assert code == 0, output[-4000:]
    assert lines[-1].endswith("0 failed"), output[-4000:]
