"""docs/system_role.md lists the effective default of every built-in template correctly."""

from __future__ import annotations

import re
from pathlib import Path

from prompt_compiler.model.meta_library import list_model_templates
from prompt_compiler.model.spec import Model
from prompt_compiler.model.system_role import system_handling

DOC = Path(__file__).resolve().parents[1] / "docs" / "system_role.md"


def documented() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8").split("## The effective default", 1)[1]
    out = {}
    row = r"^\| ([a-z0-9.,\- ]+) \| (native|merged|dropped) \|"
    for names, value in re.findall(row, text, re.M):
        for name in names.split(","):
            out[name.strip()] = value
    return out


def test_every_builtin_template_is_documented_with_its_default() -> None:
    doc = documented()
    actual = {}
    for tpl in list_model_templates():
        model = Model.from_dict({"abbr": tpl.name, "parser": tpl.renderer,
                                 "meta_template": tpl.meta_template_dict()})
        actual[tpl.name] = system_handling(model)
    assert doc == actual
