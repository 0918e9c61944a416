"""Module paths that moved, still importable for a while, with a ``DeprecationWarning``.

``import prompt_compiler.chat_template`` (the layout before the stage folders) gives a stand-in
module whose names are those of ``prompt_compiler.render.chat_template``; the warning names the
new path. Old modules that are now packages (``prompt_compiler.model`` was ``model.py``) hand
their old names on the same way (:func:`forward`). Each entry is listed in CHANGELOG.md.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

__all__ = ["MOVED", "PACKAGES", "SPLIT", "forward", "install"]

MOVED = {
    # flat modules before the stage folders
    "bm25": "retrieve.bm25",
    "chat_inputs": "render.chat_inputs",
    "chat_template": "render.chat_template",
    "check_template": "inspection.check_template",
    "diff": "inspection.diff",
    "embed_retrieve": "retrieve.embed",
    "fewshot": "assemble.fewshot",
    "fill": "promptlist.fill",
    "jinja_prompt": "template.jinja_prompt",
    "lint": "inspection.lint",
    "manifest": "emit.manifest",
    "meta_library": "model.meta_library",
    "outdir": "emit.outdir",
    "outnames": "emit.names",
    "outputs": "inspection.outputs",
    "placeholders": "template.placeholders",
    "planlines": "plan.lines",  # the plan stage as one package
    "report_html": "inspection.viewer",
    "inspection.report_html": "inspection.viewer",  # the view command in viewer.py
    "reader": "data.reader",
    "special_tokens": "model.special_tokens",
    "spans": "assemble.spans",
    "system_role": "model.system_role",
    "tokenize": "model.tokenize",
    "viewer": "inspection.viewer",
    # the Python config loader in its own folder
    "config.pyconfig": "config.python.load",
    "config.python_loader": "config.python.mmengine_mode",
    "config.mm_values": "config.python.mm_values",
    "config.opencompass_shim": "config.python.shim",  # only Python configs load under it
    # root modules grouped into folders (issue 27)
    "interrupts": "safety.interrupts",
    "limits": "safety.limits",
    "safe_format": "safety.format_guard",
    "sandbox": "safety.jinja_sandbox",
    "values": "safety.values",
    "yamlload": "safety.yaml_loader",
    "engines": "run.engines",
    "pairs": "run.pairs",
    "parallel": "run.engines.pool",
    "ray_engine": "run.engines.ray",
    "suite": "run.suite",
    "workers": "run.engines.workers",
    "inspection.spans": "assemble.spans",  # compiling asks which text came from data
    "template.fill": "promptlist.fill",  # the filling rules PromptList.format uses
}
"""Old module (under ``prompt_compiler.``) -> where it lives now."""

SPLIT = {
    "config.pyguard": ("config.python.check", "config.python.stand_ins",
                       "config.python.budget"),
}
"""Old modules split into several -> the modules holding their names (searched in order)."""

PACKAGES = {
    "data": "data.sources",
    "emit": "emit.records",
    "model": "model.spec",
    "retrieve": "retrieve.basic",
    "template": "template.prompt_template",
}
"""Old modules that are packages now -> the module holding their old names."""

_ROOT = "prompt_compiler."


def _warn(old: str, new: str) -> None:
    """A DeprecationWarning pointing at the user's import (``warnings`` skips the import
    machinery's own frames: 1 is this function, 2 its caller here, 3 the user's line)."""
    warnings.warn(f"{old} moved to {new}: import it from there (or from prompt_compiler); "
                  "the old path will be removed", DeprecationWarning, stacklevel=3)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old flat module names and makes stand-ins for them."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith(_ROOT) and (fullname[len(_ROOT):] in MOVED
                                           or fullname[len(_ROOT):] in SPLIT):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a plain module, filled by exec_module

    def exec_module(self, module: ModuleType) -> None:
        old = module.__name__
        news = [_ROOT + n for n in SPLIT.get(old[len(_ROOT):], ())] or [
            _ROOT + MOVED[old[len(_ROOT):]]]
        _warn(old, " and ".join(news))
        targets = [importlib.import_module(new) for new in news]
        module.__doc__ = f"Moved to {', '.join(f':mod:`{n}`' for n in news)} (deprecated path)."

        def __getattr__(name: str) -> Any:
            for target in targets:
                if hasattr(target, name):
                    return getattr(target, name)
            raise AttributeError(f"module {old!r} has no attribute {name!r}")

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        module.__dict__["__all__"] = [n for t in targets for n in getattr(t, "__all__", ())]


def forward(package: str) -> Callable[[str], Any]:
    """A package's ``__getattr__`` that hands on the names of the module it used to be."""
    old = _ROOT + package

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        new = _ROOT + PACKAGES[package]
        target = importlib.import_module(new)
        if not hasattr(target, name):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        _warn(f"{old}.{name}", f"{new}.{name}")
        value = getattr(target, name)
        setattr(sys.modules[old], name, value)  # warned once
        return value

    return __getattr__


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once): an old path is always the stand-in,
    even where another finder (an editable install of an older checkout) still has its file."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
