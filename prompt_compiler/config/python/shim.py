"""A temporary stand-in for the ``opencompass`` package.

OpenCompass configs import their building blocks::

    from opencompass.openicl.icl_prompt_template import PromptTemplate
    from opencompass.datasets import GSM8KDataset, gsm8k_postprocess
    from opencompass.models import HuggingFaceCausalLM

OpenCompass is not installed (and must not be needed), so while a config file is loaded
:func:`opencompass_shim` puts a meta-path finder in front of ``sys.meta_path`` that serves
*any* ``opencompass.*`` module. Every attribute of such a module is a :class:`Placeholder`
class that only remembers its qualified name; attributes of placeholders are placeholders
too (``from opencompass import datasets; datasets.GSM8KDataset`` works). The finder and
every module it created are removed again when the context exits, even on error, and any
``opencompass`` modules that were imported before are put back.

What a model class name selects (its renderer, ...) is in :mod:`prompt_compiler.model.classes`.
"""

from __future__ import annotations

import importlib.machinery
import sys
import threading
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

if TYPE_CHECKING:
    import importlib.abc

__all__ = ["Placeholder", "is_placeholder", "opencompass_shim", "placeholder_name"]

SHIM_PACKAGE = "opencompass"

_MOVED = {"Renderer", "RENDERERS", "renderer_for_model_class"}


def __getattr__(name: str) -> Any:
    """The model-class names that lived here before :mod:`prompt_compiler.model.classes`."""
    if name in _MOVED:
        import warnings

        from ...model import classes

        warnings.warn(f"prompt_compiler.config.opencompass_shim.{name} moved to "
                      "prompt_compiler.model.classes: import it from there", DeprecationWarning,
                      stacklevel=2)
        return getattr(classes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _PlaceholderMeta(type):
    """Metaclass: attributes of a placeholder class are placeholder classes."""

    qualified_name: str

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        child = _make_placeholder(f"{cls.qualified_name}.{name}")
        type.__setattr__(cls, name, child)  # cache: the same name is the same object
        return child

    def __repr__(cls) -> str:
        return f"<opencompass placeholder {cls.qualified_name}>"


class Placeholder(metaclass=_PlaceholderMeta):
    """Base of the inert classes the shim hands out; instances keep their arguments."""

    qualified_name: ClassVar[str] = SHIM_PACKAGE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs


def _make_placeholder(qualified_name: str) -> type[Placeholder]:
    module, _, name = qualified_name.rpartition(".")
    namespace = {"__module__": module, "__qualname__": name, "qualified_name": qualified_name}
    return cast(type[Placeholder], _PlaceholderMeta(name, (Placeholder,), namespace))


def is_placeholder(value: object) -> bool:
    """Whether ``value`` is a placeholder class (or an instance of one)."""
    return (isinstance(value, type) and issubclass(value, Placeholder)) or isinstance(
        value, Placeholder
    )


def placeholder_name(value: object) -> str:
    """The qualified name a placeholder class (or instance) stands for."""
    if not is_placeholder(value):
        raise TypeError(f"not a placeholder: {value!r}")
    cls = cast(_PlaceholderMeta, value if isinstance(value, type) else type(value))
    return cls.qualified_name


class _ShimModule(types.ModuleType):
    """An ``opencompass.*`` module whose every public attribute is a placeholder."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        child = _make_placeholder(f"{self.__name__}.{name}")
        setattr(self, name, child)
        return child


class _ShimFinder:
    """Finds and creates ``opencompass`` and all its submodules as :class:`_ShimModule`."""

    def __init__(self, package_root: Path | None) -> None:
        self.package_root = package_root

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != SHIM_PACKAGE and not fullname.startswith(SHIM_PACKAGE + "."):
            return None
        loader = cast("importlib.abc.Loader", self)  # a loader by duck typing (no importlib.abc)
        spec = importlib.machinery.ModuleSpec(fullname, loader, is_package=True)
        if fullname == SHIM_PACKAGE and self.package_root is not None:
            # mmengine resolves ``with read_base(): from opencompass.configs.x import y``
            # against dirname(origin); the file itself is never read.
            spec.origin = str(self.package_root / "__init__.py")
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _ShimModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


# sys.meta_path and sys.modules are process-global: one load at a time holds the shim.
_LOCK = threading.RLock()
_active: list[_ShimFinder] = []


def _is_shim_name(name: str) -> bool:
    return name == SHIM_PACKAGE or name.startswith(SHIM_PACKAGE + ".")


@contextmanager
def opencompass_shim(package_root: Path | None = None) -> Iterator[None]:
    """Serve placeholder ``opencompass.*`` modules for the duration of the block.

    Re-entrant: a nested use (a config loading another) keeps the outer shim.

    Args:
        package_root: The folder standing in for the installed ``opencompass`` package,
            i.e. the parent of a ``configs/`` tree; lets ``from opencompass.configs...``
            base imports resolve. ``None`` leaves them unresolvable.
    """
    with _LOCK:
        if _active:
            yield
            return
        finder = _ShimFinder(package_root)
        saved = {name: mod for name, mod in sys.modules.items() if _is_shim_name(name)}
        for name in saved:
            del sys.modules[name]
        sys.meta_path.insert(0, finder)
        _active.append(finder)
        try:
            yield
        finally:
            _active.pop()
            sys.meta_path[:] = [f for f in sys.meta_path if f is not finder]
            for name in [n for n in sys.modules if _is_shim_name(n)]:
                del sys.modules[name]
            sys.modules.update(saved)
