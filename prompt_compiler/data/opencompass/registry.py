"""The native readers: one per OpenCompass loader class, looked up by the class's name.

A reader is a function of the files it reads (already resolved, in the order its
:attr:`NativeReader.files` lists them) and the keyword arguments the class's ``load`` takes
(its signature mirrors ``load``'s, so a config giving a keyword ``load`` would reject is
rejected the same way). It returns the rows as ``load`` does: one list (a ``Dataset``: the
same rows serve every split) or ``{split: rows}`` (a ``DatasetDict``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConfigError, DataError
from ..rows import Row

__all__ = ["NativeReader", "NotNative", "Splits"]

Splits = list[Row] | dict[str, list[Row]]


class NotNative(Exception):  # noqa: N818 (a signal, not an error)
    """Raised by a reader for arguments or data it does not reproduce exactly (the message
    says what); the rows then come from OpenCompass's own loader."""


@dataclass(frozen=True, slots=True)
class NativeReader:
    """How one OpenCompass loader class reads its files."""

    name: str
    """The OpenCompass class, e.g. ``MMLUDataset``."""
    read: Callable[..., Splits]
    """``read(files, **load_kwargs)`` -> the rows ``load`` returns."""
    files: tuple[str, ...] | Callable[[str, Mapping[str, Any]], list[str]] = ("",)
    """The files read, relative to the resolved ``path`` (``""``: the path itself);
    ``{name}``-style fields are ``load``'s arguments. A function of the resolved path and
    the arguments names them when they depend on more than a field (a choice, a folder's
    listing)."""
    local_mode: bool | None = False
    """``get_data_path``'s ``local_mode``: fixed, or None for ``load``'s own argument."""
    refuse: Callable[[Mapping[str, Any]], str | None] | None = None
    """Why ``load``'s arguments are ones this reader does not cover (they go to
    OpenCompass's own loader), or None; no function: it covers every call."""
    data_path: bool = True
    """``load`` resolves its path with ``get_data_path``; False: it reads the path as given,
    relative to the working folder (``CIBenchDataset``)."""
    path_key: str = "path"
    """The argument ``get_data_path`` resolves (``HFDataset``: ``data_files``)."""
    text_only: bool = False
    """Every value is a string from a CSV file's fixed columns (no value to check)."""
    appended: bool = False
    """The files are the resolved path's text followed by each entry of :attr:`files`
    (``path + filename``), not files under it."""

    def arguments(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """``load``'s arguments from the config's ``kwargs``, defaults filled in.

        Raises:
            ConfigError: ``load`` would reject them (missing or unexpected argument).
            NotNative: The reader does not cover these arguments.
        """
        signature = inspect.signature(self.read)
        try:
            bound = signature.bind([], **kwargs)
        except TypeError as exc:
            raise ConfigError(f"{self.name}.load(): {exc}") from None
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        arguments.pop(next(iter(signature.parameters)))
        extra = next((p.name for p in signature.parameters.values()
                      if p.kind is inspect.Parameter.VAR_KEYWORD), None)
        if extra is not None:
            arguments.update(arguments.pop(extra, {}))
        why = self.refuse(arguments) if self.refuse is not None else None
        if why is not None:
            raise NotNative(f"{self.name}: {why}")
        return arguments

    def data_files(self, root: str, arguments: Mapping[str, Any]) -> list[Path]:
        """The files read under ``root`` (the resolved ``path``, spelt as OpenCompass
        spells it)."""
        if callable(self.files):
            names = self.files(root, arguments)
        else:
            names = self._formatted(self.files, arguments)
        if self.appended:
            return [Path(root + name) for name in names]
        return [Path(root, name) if name else Path(root) for name in names]

    def _formatted(self, files: tuple[str, ...], arguments: Mapping[str, Any]) -> list[str]:
        try:
            return [f.format(**arguments) for f in files]
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(f"{self.name}: cannot name its files from the arguments "
                              f"({exc})") from None

    def load(self, root: str, arguments: Mapping[str, Any]) -> Splits:
        """The rows, read from the files under ``root``.

        Raises:
            DataError: A file is missing or malformed (file and line named).
        """
        files = self.data_files(root, arguments)
        for file in files:
            if not file.is_file():
                raise DataError(f"{file}: no such file ({self.name} reads it; OpenCompass "
                                "fails there too)")
        return self.read(files, **arguments)
