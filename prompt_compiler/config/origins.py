"""Where each dataset and model dict of a Python config was defined, recorded while it loads.

An eval config rarely defines its datasets and models itself: it imports them from base
configs (``with read_base():`` or ``_base_``), often through a collection file. The loaders
(ours and mmengine's) note every base config's top-level lists as that base finishes loading,
so the deepest file comes first (:attr:`~.python.load.PythonConfig.bases`); once the config
has loaded, :func:`defined_at` reads them in one pass: the dicts of those lists by ``abbr``,
with their key path in that file. An error or warning about an entry then
names the file and key path that define it, followed by the eval config that imports it
(``configs/datasets/beta.py (imported by configs/eval_b.py): ..., at beta_datasets[0].x``),
without running any config a second time.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..errors import PromptCompilerError

__all__ = ["BaseRecorder", "Origin", "defined_at", "is_under", "named_at", "relocate"]


@dataclass(frozen=True, slots=True)
class Origin:
    """The base config that defines an entry, and where in it."""

    file: str
    """The file, relative to the working folder when below it."""
    key_path: str
    """The entry's place in that file, e.g. ``gsm8k_datasets[0]``."""

    def importer(self, config_path: str) -> str:
        """How an error names the entry's file: this one, then the config importing it."""
        return f"{self.file} (imported by {config_path})"


class BaseRecorder:
    """The entries of every base config loaded for one config, deepest file first."""

    __slots__ = ("_found",)

    def __init__(self) -> None:
        self._found: dict[str, Origin] = {}

    def base(self, filename: str, variables: Mapping[Any, Any]) -> None:
        """Note the dicts with an ``abbr`` in ``variables``' top-level lists (a base config
        that finished loading; the first file to define an abbr keeps it)."""
        shown: str | None = None
        for name, value in dict.items(variables) if isinstance(variables, dict) else ():
            if not isinstance(name, str) or name.startswith("_") or \
                    not isinstance(value, (list, tuple)):
                continue
            for index, entry in enumerate(value):
                abbr = dict.get(entry, "abbr") if isinstance(entry, dict) else None
                if isinstance(abbr, str) and abbr not in self._found:
                    shown = shown or _shown(filename)
                    self._found[abbr] = Origin(shown, f"{name}[{index}]")

    def clear(self) -> None:
        """Forget what was noted (a load that is started again by another loader)."""
        self._found.clear()

    def origins(self, config_file: Path) -> dict[str, Origin]:
        """abbr -> where it is defined, for the entries not defined by ``config_file``
        itself."""
        own = _shown(str(config_file))
        return {abbr: o for abbr, o in self._found.items() if o.file != own}


def defined_at(bases: Iterable[tuple[str, Mapping[Any, Any]]],
               config_file: Path) -> dict[str, Origin]:
    """abbr -> where it is defined, for the entries of ``bases`` (each base config's file
    and variables, deepest first) not defined by ``config_file`` itself."""
    recorder = BaseRecorder()
    for filename, variables in bases:
        recorder.base(filename, variables)
    return recorder.origins(config_file)


def relocate(err: PromptCompilerError, origin: Origin | None, config_path: str,
             key_path: str) -> PromptCompilerError:
    """``err``, when it names the entry at ``key_path`` of ``config_path``, named at its
    origin instead: that file (imported by ``config_path``) and the key path in it."""
    if origin is None or err.config_path != config_path:
        return err
    err.config_path = origin.importer(config_path)
    if err.key_path and is_under(err.key_path, key_path):
        err.key_path = origin.key_path + err.key_path[len(key_path):]
    return err


def named_at(entry: Any) -> tuple[str, str]:
    """How a finding about a dataset or model config (``config_path``, ``key_path``,
    ``origin``) names its file and key path: where it is defined, imported by the config."""
    origin: Origin | None = getattr(entry, "origin", None)
    if origin is None:
        return entry.config_path, entry.key_path
    return origin.importer(entry.config_path), origin.key_path


def is_under(key_path: str, entry: str) -> bool:
    """Whether ``key_path`` is ``entry`` or a key path inside it."""
    return key_path == entry or key_path.startswith((f"{entry}.", f"{entry}["))


def _shown(filename: str) -> str:
    path = Path(os.path.realpath(filename))
    rel = os.path.relpath(path)
    return path.as_posix() if rel.startswith("..") else Path(rel).as_posix()
