"""Where ``from opencompass.configs.<x> import y`` finds its files, OpenCompass never imported.

OpenCompass 0.5.x ships its dataset, model and summarizer configs inside the package
(``opencompass/configs/``), and its examples pull them in with
``with read_base(): from opencompass.configs.datasets.gsm8k.gsm8k_gen import gsm8k_datasets``.
Such an import resolves to a *configs folder* (the one holding ``datasets/``, ``models/``,
``summarizers/``), looked for in this order:

1. the folder given explicitly: ``--opencompass-configs DIR`` on the command line,
   ``load(..., opencompass_configs=DIR)`` in the library;
2. the folder in the environment variable ``PROMPT_COMPILER_OPENCOMPASS_CONFIGS``;
3. the ``configs/`` folder of an installed ``opencompass`` distribution, found through its
   files on disk (the import system's path finder and the distribution's metadata; the
   package is never imported, and a namespace package is fine);
4. for configs lying in a checkout or a copy of that tree: the nearest folder named
   ``configs`` above the config file (the old rule, kept so such trees still load).

Files found through 1-3 are named in the manifest from a stable root,
``opencompass:configs/datasets/gsm8k/gsm8k_gen.py``, so two machines with the configs in
different places write the same manifest.

mmengine resolves such an import as ``<dirname of opencompass's origin>/configs/...``; the
import shim gives it a *package root* whose ``configs`` is the configs folder: the folder's
parent when it is named ``configs``, else a private temporary folder holding a symbolic link
named ``configs`` to it (removed when the process ends).
"""

from __future__ import annotations

import atexit
import importlib.machinery
import os
import shutil
import tempfile
import threading
from pathlib import Path

from ..errors import ConfigError

__all__ = [
    "ENV_VAR",
    "MANIFEST_PREFIX",
    "configs_folder",
    "installed_configs",
    "manifest_name",
    "package_root",
]

ENV_VAR = "PROMPT_COMPILER_OPENCOMPASS_CONFIGS"
MANIFEST_PREFIX = "opencompass:configs/"
_SUBFOLDERS = ("datasets", "models", "summarizers")

_LOCK = threading.Lock()
_links: dict[Path, Path] = {}
_known: set[str] = set()  # real paths of configs folders found through 1-3 (manifest names)


def configs_folder(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The configs folder ``opencompass.configs`` stands for (steps 1-3 above), or None.

    Raises:
        ConfigError: A folder given explicitly (or by the environment variable) is missing
            or holds none of ``datasets/``, ``models/``, ``summarizers/``.
    """
    found: Path | None
    if explicit is not None:
        found = _checked(Path(explicit), "--opencompass-configs / opencompass_configs=")
    elif os.environ.get(ENV_VAR):
        found = _checked(Path(os.environ[ENV_VAR]), ENV_VAR)
    else:
        found = installed_configs()
    if found is not None:
        with _LOCK:
            _known.add(os.path.realpath(found))
    return found


def _checked(folder: Path, source: str) -> Path:
    if not folder.is_dir():
        raise ConfigError(f"the OpenCompass configs folder {folder} (from {source}) does not "
                          "exist", hint="give the folder that holds datasets/ and models/, "
                          "e.g. .../site-packages/opencompass/configs")
    if any((folder / "configs" / sub).is_dir() for sub in _SUBFOLDERS):
        return folder / "configs"  # the opencompass package folder itself: its configs/
    if not any((folder / sub).is_dir() for sub in _SUBFOLDERS):
        raise ConfigError(
            f"the OpenCompass configs folder {folder} (from {source}) holds none of "
            f"{', '.join(s + '/' for s in _SUBFOLDERS)}",
            hint="give the folder that holds datasets/ and models/, "
            "e.g. .../site-packages/opencompass/configs")
    return folder


def installed_configs() -> Path | None:
    """``configs/`` of an installed ``opencompass``, found on disk without importing it."""
    spec = importlib.machinery.PathFinder.find_spec("opencompass")  # no import, no shim
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        try:
            dist = distribution("opencompass")
            places.append(str(dist.locate_file("opencompass")))
        except PackageNotFoundError:
            pass
    except ImportError:  # pragma: no cover - importlib.metadata is stdlib
        pass
    for place in places:
        folder = Path(place) / "configs"
        if any((folder / sub).is_dir() for sub in _SUBFOLDERS):
            return folder
    return None


def package_root(configs: Path) -> Path:
    """A folder whose ``configs`` is ``configs`` (what mmengine joins ``configs/...`` to)."""
    if configs.name == "configs":
        return configs.parent
    real = Path(os.path.realpath(configs))
    with _LOCK:
        root = _links.get(real)
        if root is None or not (root / "configs").exists():
            root = Path(tempfile.mkdtemp(prefix="pc-opencompass-"))
            os.symlink(real, root / "configs", target_is_directory=True)
            if not _links:
                atexit.register(_remove_links)
            _links[real] = root
        return root


def _remove_links() -> None:
    with _LOCK:
        for root in _links.values():
            shutil.rmtree(root, ignore_errors=True)  # removes the link, never its target
        _links.clear()


def manifest_name(real_path: str) -> str | None:
    """``opencompass:configs/<rel>`` for a file inside a configs folder found by steps 1-3."""
    with _LOCK:
        known = sorted(_known, key=len, reverse=True)
    for folder in known:
        if real_path.startswith(folder + os.sep):
            return MANIFEST_PREFIX + Path(os.path.relpath(real_path, folder)).as_posix()
    return None
