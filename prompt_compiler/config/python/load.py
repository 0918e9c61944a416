"""Python configs: run by our loader (:mod:`.mmengine_mode`), else by mmengine's ``Config``.

mmengine picks its mode from the file. OpenCompass configs (``with read_base():`` plus
``from opencompass... import`` lines) load in its *lazy-import* mode: base configs named in
``read_base()`` are parsed recursively (relative imports resolve against the file's folder,
``opencompass.configs.*`` against the folder given as the package root) and every other
import becomes a lazy object that is never built here. Configs using ``_base_ = [...]``
load in the classic mode, where ``from opencompass... import X`` really runs and the shim
answers with placeholder classes. :mod:`.mmengine_mode` reproduces the lazy-import mode and
the classic mode without ``_base_`` without importing mmengine (a quarter of a second of
start-up); whatever it declines, mmengine loads as before. Either way the result is turned
into plain data in which every referenced class or function is a
:class:`~prompt_compiler.config.records.TypeRef`.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import hashlib
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError, LimitError, PromptCompilerError
from ...safety import limits
from ...safety.values import MAX_DEPTH
from ..oc_configs import ENV_VAR
from ..records import Unsupported
from . import mmengine_mode
from .budget import Guard
from .check import check, compile_config, parse_file
from .mm_values import NeedsMmengine, settings, to_plain
from .mmengine_mode import Bases, noted
from .shim import opencompass_shim
from .stand_ins import run

if TYPE_CHECKING:
    from ..origins import BaseRecorder

__all__ = [
    "ENVIRONMENT_KEY", "PythonConfig", "Unsupported", "find_package_root", "load_python_config",
    "load_variables", "read_python_config", "to_plain",
]


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


ENVIRONMENT_KEY = "<environment>"
"""The key of :func:`load_python_config`'s result holding the environment variables the
config read (no variable of a config can have this name)."""

@dataclass(frozen=True, slots=True)
class PythonConfig:
    """A Python config, read: what the config stage goes on with."""

    settings: dict[str, Any]
    """Its top-level variables as plain data (see :func:`load_python_config`)."""
    environment: tuple[tuple[str, str | None], ...]
    """The environment variables it read, sorted, each with the sha256 of its value
    (``None``: unset)."""
    bases: tuple[tuple[str, dict[str, Any]], ...]
    """Each base config it loaded, deepest first (for
    :func:`~prompt_compiler.config.origins.defined_at`)."""


def read_python_config(path: Path, display: str,
                       package_root: Path | None = None) -> PythonConfig:
    """Execute a Python config (as :func:`load_python_config`): its settings, the environment
    variables it read (hashed) and its base configs' variables.

    Raises:
        ConfigError: The file cannot be read, does not parse, or raises while executing.
    """
    top, environment, bases = _read(path, display, package_root)
    return PythonConfig(top, tuple(
        (name, None if value is None else
         hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest())
        for name, value in sorted(environment.items())), tuple(bases))


def load_python_config(
    path: Path, display: str, package_root: Path | None = None,
    recorder: BaseRecorder | None = None,
) -> dict[str, Any]:
    """Execute a Python config and return its top-level variables as plain data, with the
    environment variables it read under :data:`ENVIRONMENT_KEY` (when it read any).

    Args:
        path: The config file.
        display: How to name the file in errors.
        package_root: See :func:`find_package_root`; found automatically when None.
        recorder: Receives the variables of each base config loaded, deepest first.

    Raises:
        ConfigError: The file cannot be read, does not parse, or raises while executing.
    """
    top, environment, bases = _read(path, display, package_root)
    if environment:
        top[ENVIRONMENT_KEY] = environment
    for filename, variables in bases:
        if recorder is not None:
            recorder.base(filename, variables)
    return top


def _read(path: Path, display: str, package_root: Path | None
          ) -> tuple[dict[str, Any], dict[str, str | None], Bases]:
    """The config's settings, the environment variables it read, its bases."""
    root = package_root if package_root is not None else find_package_root(path)
    environment: dict[str, str | None] = {}
    bases: Bases = []
    variables, imported = load_variables(path, display, root, environment=environment,
                                          bases=bases)
    return settings(variables, imported), environment, bases


def load_variables(
    path: Path, display: str, root: Path | None, tree: ast.Module | None = None,
    *, loader: str = "auto", environment: dict[str, str | None] | None = None,
    bases: Bases | None = None,
) -> tuple[dict[Any, Any], frozenset[str]]:
    """A config's variables and imported names, run by our loader or else by mmengine.

    Runs under the ``opencompass`` shim (:mod:`.shim`, for ``root``; an active one is kept)
    and the :class:`~.budget.Guard`. ``loader`` is ``"auto"`` (ours, mmengine
    where ours declines), ``"own"`` (ours only: :class:`NeedsMmengine` where it declines)
    or ``"mmengine"`` (tools/pyconfig_sameness.py compares the two). ``environment``
    receives the environment variables the config read (name -> value or ``None``),
    ``bases`` each base config loaded (:func:`~.mmengine_mode.noted`).
    """
    roots = _roots(path, root)
    with opencompass_shim(root), Guard(display) as guard:
        if environment is not None:
            guard.environment = environment
        if tree is None:
            tree = parse_file(path, display)
        check(tree, display)
        if loader != "mmengine":
            try:
                loaded = mmengine_mode.load(str(path.resolve()), tree, bases, roots)
                return loaded.variables, loaded.imported
            except NeedsMmengine:
                if loader == "own":
                    raise
                if bases is not None:
                    bases.clear()  # mmengine loads it again from the start
        from mmengine.config import Config  # type: ignore[import-untyped,unused-ignore]

        with mmengine_mode.stdlib_as_builtin():
            cfg = _fromfile(Config, path, display, root, bases, roots)
        raw = object.__getattribute__(cfg, "_cfg_dict")
        return dict(dict.items(raw)), frozenset(getattr(cfg, "_imported_names", set()))


def _roots(path: Path, root: Path | None) -> list[str]:
    """The folders base configs may come from: the config's own folder, the nearest folder
    above it named ``configs`` (OpenCompass's layout), the folder the command runs in (a
    project's eval configs import its dataset configs from sibling folders, run from the
    project's root as OpenCompass's run.py is) and the OpenCompass package root ``root``."""
    real = Path(os.path.realpath(path))
    found = [str(real.parent)]
    try:
        found.append(os.path.realpath(os.getcwd()))
    except OSError:  # the working folder was removed
        pass
    for folder in real.parents:
        if folder.name == "configs":
            found.append(str(folder))
            break
    places = [root] if root is not None else []  # (what the shim's opencompass stands for)
    for place in places:  # the package root, and its configs/ (often a link to the folder)
        found += [os.path.realpath(place), os.path.realpath(Path(place) / "configs")]
    return list(dict.fromkeys(found))


def _fromfile(config_cls: Any, path: Path, display: str, root: Path | None,
              bases: Bases | None = None, roots: list[str] | None = None) -> Any:
    """``Config.fromfile``, with any failure turned into a ConfigError."""
    error: ConfigError | None = None
    with warnings.catch_warnings():
        # When the config raises, mmengine leaves a temporary file open; it is closed (with
        # a ResourceWarning) once the traceback is released, which happens in this block.
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            with _guarded_mmengine(bases, roots or []):
                return config_cls.fromfile(str(path.resolve()), format_python_code=False,
                                           import_custom_modules=False,
                                           use_environment_variables=False)
        except (PromptCompilerError, MemoryError):
            raise
        except Exception as exc:  # anything the config code or mmengine raises
            error = _wrap(exc, path, display, root)
        gc.collect()
    raise error


@contextlib.contextmanager
def _guarded_mmengine(bases: Bases | None = None,
                      roots: list[str] | None = None) -> Iterator[None]:
    """mmengine's ``Config`` compiles and runs config files through the guards (the same
    check, rewrite and builtins as our loader: :mod:`.check`) while it loads one;
    ``bases`` receives each file it loads (bases first)."""
    import mmengine.config.config as mm  # type: ignore[import-untyped,unused-ignore]

    def compile_(source: Any, filename: str, mode: str, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(source, ast.AST):
            source = ast.parse(source, filename, mode)
        return compile_config(source, filename, filename or "<config>", mode, roots or [])

    def eval_(code: Any, globals_: Any = None, locals_: Any = None) -> Any:
        return run(code, globals_ if globals_ is not None else {}, locals_)

    def exec_(code: Any, globals_: Any = None, locals_: Any = None) -> None:
        run(code, globals_ if globals_ is not None else {}, locals_)

    file2dict = mm.Config.__dict__["_file2dict"]
    stack: list[str] = []

    def file2dict_(filename: str, *args: Any, **kwargs: Any) -> Any:
        real = os.path.realpath(filename)
        if real in stack:  # `_base_` files naming each other: mmengine recursed until it broke
            cycle = [os.path.basename(f) for f in (*stack[stack.index(real):], real)]
            raise ConfigError(f"base configs name each other in a cycle: {' -> '.join(cycle)}")
        limit = limits.current().config_source_bytes
        with contextlib.suppress(OSError):
            if os.path.getsize(real) > limit:  # (read whole and parsed by mmengine)
                raise LimitError(f"{filename}: {os.path.getsize(real):,} bytes of Python; "
                                 + limits.describe("config_source_bytes", limit, "bytes"))
        stack.append(real)
        try:
            loaded = file2dict.__func__(filename, *args, **kwargs)
        finally:
            stack.pop()
        if bases is not None:
            bases.append((filename, noted(loaded[0])))
        return loaded

    lazy_import = mm.Config.__dict__["_parse_lazy_import"]

    def lazy_import_(filename: str, *args: Any, **kwargs: Any) -> Any:
        loaded = lazy_import.__func__(filename, *args, **kwargs)
        if bases is not None:
            bases.append((filename, noted(loaded[0])))
        return loaded

    saved = {name: mm.__dict__.get(name) for name in ("compile", "eval", "exec")}
    mm.compile, mm.eval, mm.exec = compile_, eval_, exec_
    mm.Config._file2dict = staticmethod(file2dict_)
    mm.Config._parse_lazy_import = staticmethod(lazy_import_)
    try:
        yield
    finally:
        mm.Config._file2dict = file2dict
        mm.Config._parse_lazy_import = lazy_import
        for name, value in saved.items():
            if value is None:
                mm.__dict__.pop(name, None)
            else:  # pragma: no cover - mmengine defines none of them itself
                mm.__dict__[name] = value


def _wrap(exc: Exception, path: Path, display: str, root: Path | None) -> ConfigError:
    """A ConfigError naming the config file and the config line that raised, if any."""
    where = _config_frame(exc, path)
    known = _known_failure(exc, path, where, root)
    if known is not None:
        message, hint = known
        return ConfigError(message, config_path=display, hint=hint)
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


_NOT_FOUND = re.compile(
    r"(?P<file>.+?) not found! It means that incorrect module is defined in "
    r"`with read_base\(\): = from (?P<module>\S+) import \.\.\.`", re.S)
_SAME_IN_OPENCOMPASS = "OpenCompass 0.5.4 stops on this config too"


def _known_failure(exc: Exception, path: Path, where: str,
                   root: Path | None) -> tuple[str, str | None] | None:
    """A one-line message (and hint) for the ways mmengine's lazy-import mode, which
    OpenCompass loads configs in, refuses a config; None for any other error."""
    at = f" ({where})" if where else ""
    found = _NOT_FOUND.match(str(exc)) if type(exc).__name__ == "ConfigParsingError" else None
    if found is not None:
        module, missing = found["module"], found["file"]
        line = _import_line(path, module, None)
        place = f" (line {line})" if line else ""
        if line is None and module.startswith("."):  # the import is in a base config
            importer = _relative_importer(missing, module)
            if importer is not None:
                place = f" ({importer[0]}, line {importer[1]})"
        message = (f"`with read_base(): from {module} import ...`{place}: there is no "
                   f"config file {missing}")
        hint = None
        configs = Path(os.path.realpath(root / "configs")) if root is not None else None
        if module.startswith("opencompass.configs.") and configs is not None:
            message = (f"`with read_base(): from {module} import ...`{place}: the "
                       "OpenCompass configs folder "
                       f"{configs} has no {Path(*module.split('.')[2:]).as_posix()}.py")
            hint = ("the config may be written for another OpenCompass version than the "
                    "configs folder's; give --opencompass-configs the configs/ of the "
                    "OpenCompass it was written for")
        return f"{message} ({_SAME_IN_OPENCOMPASS})", hint
    if isinstance(exc, RuntimeError) and not str(exc).strip():
        called = _lazy_call(exc)
        if called is not None:
            return (f"calls `{called}(...)`{at}, a name imported outside `with read_base():`: "
                    "OpenCompass loads configs in mmengine's lazy-import mode, where such "
                    f"names cannot be called while the config loads ({_SAME_IN_OPENCOMPASS})",
                    "copy or build the values without calling an import (e.g. `dict(d)`, "
                    "`[dict(x) for x in xs]`, or the config dict's own `.deepcopy()`)")
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        name = exc.args[0]
        line = _import_line(path, None, name)
        if line is not None:
            return (f"`with read_base(): from ... import {name}` (line {line}): that config "
                    f"defines no {name!r} ({_SAME_IN_OPENCOMPASS})", None)
    return None


def _lazy_call(exc: BaseException) -> str | None:
    """The name of the lazily imported object whose call raised ``exc`` (mmengine's
    ``LazyObject.__call__``), if that is what raised it."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or tb.tb_frame.f_code.co_name != "__call__":
        return None
    target = tb.tb_frame.f_locals.get("self")
    attrs: list[str] = []  # a call of an attribute (``torch.cuda.is_available()``): as written
    while True:
        # (its own fields only: a lazy object makes any other attribute a new lazy attribute)
        fields = getattr(target, "__dict__", None)
        if not isinstance(fields, dict) or not isinstance(fields.get("name"), str) or \
                "source" not in fields:
            break
        attrs.insert(0, fields["name"])
        target = fields["source"]
    fields = getattr(target, "__dict__", None)
    if not isinstance(fields, dict) or "_module" not in fields:
        return None
    return ".".join([str(target), *attrs])  # (a lazy object's str is its name as imported)


def _relative_importer(missing: str, module: str) -> tuple[str, int] | None:
    """The config file (and line) holding the relative base import ``module`` that
    resolved to the missing file ``missing``: a file of the folder it is relative to."""
    level = len(module) - len(module.lstrip("."))
    folder = Path(missing).parent
    for _ in range(len(module[level:].split(".")) - 1 + level - 1):
        folder = folder.parent
    if ".." in missing.split(os.sep):  # mmengine joins the folder and '..' unresolved
        folder = Path(missing.split(os.sep + "..")[0])
    try:
        candidates = sorted(folder.glob("*.py"))
    except OSError:
        return None
    for file in candidates:
        line = _import_line(file, module, None)
        if line is not None:
            return str(file), line
    return None


def _import_line(path: Path, module: str | None, name: str | None) -> int | None:
    """The line of ``from MODULE import ...`` (or of ``from ... import NAME``) inside the
    file's ``with read_base():`` block, if the file has one."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    for node in tree.body:
        if not isinstance(node, ast.With):
            continue
        for stmt in node.body:
            if not isinstance(stmt, ast.ImportFrom):
                continue
            spelled = "." * stmt.level + (stmt.module or "")
            if module is not None and spelled == module:
                return stmt.lineno
            if name is not None and any(a.name == name for a in stmt.names):
                return stmt.lineno
    return None


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
