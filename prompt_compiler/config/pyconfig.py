"""Python configs: run by our loader (:mod:`.python_loader`), else by mmengine's ``Config``.

mmengine picks its mode from the file. OpenCompass configs (``with read_base():`` plus
``from opencompass... import`` lines) load in its *lazy-import* mode: base configs named in
``read_base()`` are parsed recursively (relative imports resolve against the file's folder,
``opencompass.configs.*`` against the folder given as the package root) and every other
import becomes a lazy object that is never built here. Configs using ``_base_ = [...]``
load in the classic mode, where ``from opencompass... import X`` really runs and the shim
answers with placeholder classes. :mod:`.python_loader` reproduces the lazy-import mode and
the classic mode without ``_base_`` without importing mmengine (a quarter of a second of
start-up); whatever it declines, mmengine loads as before. Either way the result is turned
into plain data in which every referenced class or function is a
:class:`~prompt_compiler.config.records.TypeRef`.
"""

from __future__ import annotations

import ast
import gc
import sys
import types
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, PromptCompilerError
from ..values import MAX_DEPTH
from . import python_loader
from .mm_values import LazyAttr, LazyObject, NeedsMmengine
from .oc_configs import ENV_VAR
from .opencompass_shim import is_placeholder, opencompass_shim, placeholder_name
from .records import TypeRef

__all__ = [
    "Unsupported", "find_package_root", "load_python_config", "load_variables", "to_plain",
]


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A value that is not plain data (kept so that an error can name it if it matters)."""

    type_name: str


def find_package_root(config_file: Path) -> Path | None:
    """The folder that stands in for the installed ``opencompass`` package.

    That is the parent of the nearest enclosing folder named ``configs`` (OpenCompass keeps
    its configs in ``opencompass/configs/``), so ``from opencompass.configs.datasets.x
    import y`` finds ``<root>/configs/datasets/x.py``.
    """
    for folder in config_file.resolve().parents:
        if folder.name == "configs":
            return folder.parent
    return None


def load_python_config(
    path: Path, display: str, package_root: Path | None = None
) -> dict[str, Any]:
    """Execute a Python config and return its top-level variables as plain data.

    Args:
        path: The config file.
        display: How to name the file in errors.
        package_root: See :func:`find_package_root`; found automatically when None.

    Raises:
        ConfigError: The file cannot be read, does not parse, or raises while executing.
    """
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the config: {exc}", config_path=display) from exc
    try:
        tree = ast.parse(source, filename=display)
    except SyntaxError as exc:
        raise ConfigError(
            f"invalid Python syntax at line {exc.lineno}: {exc.msg}", config_path=display
        ) from exc
    root = package_root if package_root is not None else find_package_root(path)
    with opencompass_shim(root):
        variables, imported = load_variables(path, display, root, tree)
        return _settings(variables, imported)


def load_variables(
    path: Path, display: str, root: Path | None, tree: ast.Module | None = None,
    *, loader: str = "auto",
) -> tuple[dict[Any, Any], frozenset[str]]:
    """A config's variables and imported names, run by our loader or else by mmengine.

    Call with the ``opencompass`` shim active. ``loader`` is ``"auto"`` (ours, mmengine
    where ours declines), ``"own"`` (ours only: :class:`NeedsMmengine` where it declines)
    or ``"mmengine"`` (tools/pyconfig_sameness.py compares the two).
    """
    if loader != "mmengine":
        try:
            loaded = python_loader.load(str(path.resolve()), tree)
            return loaded.variables, loaded.imported
        except NeedsMmengine:
            if loader == "own":
                raise
    from mmengine.config import Config  # type: ignore[import-untyped,unused-ignore]

    cfg = _fromfile(Config, path, display, root)
    raw = object.__getattribute__(cfg, "_cfg_dict")
    return dict(dict.items(raw)), frozenset(getattr(cfg, "_imported_names", set()))


def _settings(variables: dict[Any, Any], imported: frozenset[str]) -> dict[str, Any]:
    """The top-level settings: imported names, ``_private`` names, classes, functions and
    modules left out; the rest as plain data."""
    top: dict[str, Any] = {}
    for key, value in variables.items():
        if key in imported or key.startswith("_"):
            continue
        plain = to_plain(value)
        if isinstance(plain, (TypeRef, Unsupported)):
            continue  # imported classes/functions/modules at top level are not settings
        top[str(key)] = plain
    return top


def _fromfile(config_cls: Any, path: Path, display: str, root: Path | None) -> Any:
    """``Config.fromfile``, with any failure turned into a ConfigError."""
    error: ConfigError | None = None
    with warnings.catch_warnings():
        # When the config raises, mmengine leaves a temporary file open; it is closed (with
        # a ResourceWarning) once the traceback is released, which happens in this block.
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            return config_cls.fromfile(str(path.resolve()), format_python_code=False)
        except PromptCompilerError:
            raise
        except Exception as exc:  # anything the config code or mmengine raises
            error = _wrap(exc, path, display, root)
        gc.collect()
    raise error


def to_plain(value: Any) -> Any:
    """Turn loaded config values into dicts, lists, scalars and :class:`TypeRef`.

    Dicts keep their keys (int label keys included) and order; tuples become lists. Nothing
    is imported or built: mmengine lazy objects are read by name.
    """
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, dict):
        return {key: to_plain(item) for key, item in dict.items(value)}
    if isinstance(value, (list, tuple)):
        return [to_plain(item) for item in value]
    if isinstance(value, (LazyObject, LazyAttr)):
        return TypeRef(value.qualified_name())
    lazy = sys.modules.get("mmengine.config.lazy")  # mmengine's, when it loaded the config
    if lazy is not None and isinstance(value, lazy.LazyAttr):
        return TypeRef(f"{value.module}.{value.name}")
    if lazy is not None and isinstance(value, lazy.LazyObject):
        state = vars(value)
        module, imported = state["_module"], state["_imported"]
        if not isinstance(module, str):
            module = str(module[0]).split(".")[0]
        return TypeRef(f"{module}.{imported}" if imported else module)
    if is_placeholder(value):
        return TypeRef(placeholder_name(value))
    if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
        return TypeRef(f"{value.__module__}.{value.__qualname__}")
    if isinstance(value, types.ModuleType):
        return TypeRef(value.__name__)
    return Unsupported(type(value).__name__)


def _wrap(exc: Exception, path: Path, display: str, root: Path | None) -> ConfigError:
    """A ConfigError naming the config file and the config line that raised, if any."""
    where = _config_frame(exc, path)
    text = str(exc).strip()
    if isinstance(exc, RecursionError):  # e.g. a value nested thousands of levels deep
        text = f"{text} (values nested more than {MAX_DEPTH} levels deep are not supported)"
    message = f"{type(exc).__name__} while loading the config"
    if where:
        message += f" ({where})"
    if text:
        message += f": {text}"
    hint = None
    if root is None and "opencompass" in text and "install" in text:
        message = ("`from opencompass.configs... import`"
                   f"{f' ({where})' if where else ''} needs OpenCompass's configs folder, "
                   "and none was found")
        hint = (f"give --opencompass-configs DIR (load(..., opencompass_configs=DIR)), set "
                f"{ENV_VAR}=DIR, or `pip install --no-deps opencompass`; DIR is the folder "
                "holding datasets/ and models/")
    return ConfigError(message, config_path=display, hint=hint)


def _config_frame(exc: BaseException, path: Path) -> str:
    """``line N`` (or ``other.py, line N``) of the innermost config-file frame."""
    import sysconfig
    import traceback

    library_dirs = [Path(__file__).resolve().parents[1]]
    library_dirs += [Path(p).resolve() for k, p in sysconfig.get_paths().items() if "lib" in k]
    try:
        import mmengine  # type: ignore[import-untyped,unused-ignore]

        library_dirs.append(Path(mmengine.__file__).resolve().parent)
    except ImportError:  # pragma: no cover - mmengine is a dependency
        pass
    found = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        filename = frame.filename
        if filename.startswith("<") or not filename.endswith(".py"):
            continue
        file = Path(filename).resolve()
        if any(file.is_relative_to(d) for d in library_dirs) or "importlib" in file.parts:
            continue
        if file == path.resolve():
            found = f"line {frame.lineno}"
        else:
            found = f"{filename}, line {frame.lineno}"
    return found
