"""Pieces of prompt_compiler.emit.outdir that a subprocess cannot reach precisely."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from prompt_compiler.emit.outdir import OutputDir, _signals_held
from prompt_compiler.errors import OutputError


class Stop(BaseException):
    pass


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Stop(signum)


@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or os.name != "posix", reason="POSIX signals")
def test_a_signal_during_the_swap_takes_effect_after_it() -> None:
    old = signal.signal(signal.SIGTERM, _raise)
    steps = []
    try:
        with pytest.raises(Stop):
            with _signals_held():
                os.kill(os.getpid(), signal.SIGTERM)
                steps.append("first rename")
                steps.append("second rename")
        assert steps == ["first rename", "second rename"]
        assert signal.getsignal(signal.SIGTERM) is _raise
    finally:
        signal.signal(signal.SIGTERM, old)


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[OutputDir]:
    out = OutputDir(tmp_path / "out")
    yield out
    out.abort()


def test_library_use_builds_beside_and_swaps(tmp_path: Path, writer: OutputDir) -> None:
    with writer:
        assert writer.staging.parent == tmp_path and not (tmp_path / "out").exists()
        assert writer.write_lines("m/d.jsonl", [{"a": 1}, {"b": "é"}])[0] == 2
        writer.write_json("manifest.json", {"tool": "prompt_compiler", "outputs": {}})
        writer.commit()
    assert (tmp_path / "out" / "m" / "d.jsonl").read_bytes() == b'{"a": 1}\n{"b": "\xc3\xa9"}\n'
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_the_lock_is_exclusive_within_one_process_too(tmp_path: Path, writer: OutputDir) -> None:
    writer.open()
    with pytest.raises(OutputError, match=r"another compile-prompts run \(pid \d+\)"):
        OutputDir(tmp_path / "out").open()
    writer.abort()
    OutputDir(tmp_path / "out").open().abort()  # free again
    assert os.listdir(tmp_path) == []
