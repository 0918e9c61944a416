"""What the CLI prints for errors no layer below turned into a PromptCompilerError."""

from __future__ import annotations

from pathlib import Path

import pytest

from prompt_compiler.cli import main, one_line
from prompt_compiler.run import suite


def test_one_line_folds_pyyaml_style_messages() -> None:
    text = ('while parsing a block mapping\n  in "c.yaml", line 1, column 1\n'
            "expected <block end>, but found '-'\n  in \"c.yaml\", line 3, column 3\n")
    assert one_line(text) == ('while parsing a block mapping in "c.yaml", line 1, column 1; '
                              "expected <block end>, but found '-' in \"c.yaml\", line 3, column 3")
    assert one_line("a\r\nb\n\n\nc") == "a; b; c"


def _broken(exc: BaseException) -> object:
    def load(*args: object, **kwargs: object) -> object:
        raise exc
    return load


@pytest.mark.parametrize(("exc", "line"), [
    (PermissionError(13, "Permission denied", "/srv/x"),
     "compile-prompts: error: /srv/x: Permission denied\n"),
    (RuntimeError("boom\nsecond line"),
     "compile-prompts: error: internal error, please report it: RuntimeError: boom; second line\n"),
])
def test_anything_else_is_one_line_not_a_traceback(
        exc: BaseException, line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(suite, "load", _broken(exc))
    monkeypatch.delenv("PROMPT_COMPILER_TRACEBACK", raising=False)
    assert main([str(tmp_path / "c.yaml"), "--check"]) == 1
    assert capsys.readouterr().err == line


def test_the_traceback_on_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(suite, "load", _broken(RuntimeError("boom")))
    monkeypatch.setenv("PROMPT_COMPILER_TRACEBACK", "1")
    with pytest.raises(RuntimeError, match="boom"):
        main([str(tmp_path / "c.yaml"), "--check"])
