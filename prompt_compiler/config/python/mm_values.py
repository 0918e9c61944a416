"""The values mmengine hands a Python config while it runs, modelled without mmengine.

* :class:`ConfigDict`: a dict imported from a base config (attribute access, a merging
  ``update``, ``pop`` returning ``None`` for a missing key, lists re-built when stored);
* :class:`LazyObject` / :class:`LazyAttr`: a name imported from a module that is never
  imported (``from opencompass.models import X``), referred to by its dotted name;
* :class:`NeedsMmengine`: raised where a config does something not modelled here, so that
  :mod:`.mmengine_mode`'s caller loads it with mmengine instead;
* :func:`settings` / :func:`to_plain`: a loaded config's values (these, mmengine's own, the
  shim's placeholders) as plain data, every class reference a
  :class:`~prompt_compiler.config.records.TypeRef`.

Class names, ``str()`` forms and error messages are mmengine's, so that config code which
prints or inspects them sees what it would see under mmengine.
"""

from __future__ import annotations

import copy
import sys
import types
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from ..records import TypeRef, Unsupported
from .shim import is_placeholder, placeholder_name

__all__ = ["ConfigDict", "LazyAttr", "LazyObject", "NeedsMmengine", "settings", "to_config_dict",
           "to_plain"]


class NeedsMmengine(BaseException):  # noqa: N818 - a signal, not an error
    """This config (or something it does) is outside what this loader models.

    A ``BaseException`` so that a config's own ``except Exception:`` cannot swallow it.
    """


# --------------------------------------------------------------------------- lazy objects


class LazyObject:
    """A name imported from a module that is never imported (``from x.y import Z``).

    Behaves as mmengine's class of the same name while a config runs: attribute access
    gives a :class:`LazyAttr`, calling it raises ``RuntimeError``, ``str()`` is the name.
    """

    def __init__(self, module: str | list[str], imported: str | None = None,
                 location: str | None = None) -> None:
        self._module: str | list[str] = module
        self._imported = imported
        self.location = location

    @property
    def module(self) -> str:
        """The module imported from (the top package for gathered ``import a.b`` lines)."""
        if isinstance(self._module, str):
            return self._module
        return self._module[0].split(".")[0]

    def qualified_name(self) -> str:
        """``module.Name`` (or the module alone), as the config's class reference."""
        return f"{self.module}.{self._imported}" if self._imported else self.module

    def build(self) -> Any:
        """Would import the object for real: left to mmengine."""
        raise NeedsMmengine("LazyObject.build")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError()

    def __deepcopy__(self, memo: dict[int, Any]) -> LazyObject:
        return LazyObject(self._module, self._imported, self.location)

    def __getattr__(self, name: str) -> LazyAttr:
        location = None if self.location is None else self.location.split(", line")[0]
        return LazyAttr(name, self, location)

    def __str__(self) -> str:
        return self._imported if self._imported is not None else self.module

    __repr__ = __str__

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__ = state


class LazyAttr:
    """An attribute of a :class:`LazyObject` (``datasets.GSM8KDataset``), never resolved."""

    def __init__(self, name: str, source: LazyObject | LazyAttr,
                 location: str | None = None) -> None:
        self.name = name
        self.source = source
        self._module: str
        if isinstance(source, LazyAttr):
            self._module = f"{source._module}.{source.name}"
        elif not isinstance(source._module, str):
            self._module = str(source)
        elif source._imported is None:
            self._module = source._module
        else:
            self._module = f"{source._module}.{source}"
        self.location = location

    @property
    def module(self) -> str:
        """The dotted path of the object this is an attribute of."""
        return self._module

    def qualified_name(self) -> str:
        """``module.name``, as the config's class reference."""
        return f"{self._module}.{self.name}"

    def build(self) -> Any:
        """Would import the object for real: left to mmengine."""
        raise NeedsMmengine("LazyAttr.build")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError()

    def __getattr__(self, name: str) -> LazyAttr:
        return LazyAttr(name, self)

    def __deepcopy__(self, memo: dict[int, Any]) -> LazyAttr:
        return LazyAttr(self.name, self.source)

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__ = state


def _read_base() -> Iterator[None]:  # pragma: no cover - never entered: the block is removed
    yield


# ``from mmengine.config import read_base`` binds this stand-in (named as mmengine's), read
# through the ``LazyObject`` global so that the config sees no extra name.
_read_base.__module__ = "mmengine.config.config"
_read_base.__name__ = _read_base.__qualname__ = "read_base"
setattr(LazyObject, "_read_base", staticmethod(_read_base))  # noqa: B010


# --------------------------------------------------------------------------- ConfigDict

# Every attribute name of mmengine's ConfigDict class: setting one as an attribute is an
# error there ("read-only"), and reading one gives the method, not a key.
_CONFIGDICT_ATTRS = frozenset(dir(dict)) | {
    "__add__", "__copy__", "__deepcopy__", "__dict__", "__getattr__", "__getnewargs__",
    "__getstate__", "__ior__", "__missing__", "__module__", "__or__", "__reduce_ex__",
    "__ror__", "__setstate__", "__weakref__", "_hook", "_to_lazy_dict", "build_lazy",
    "deepcopy", "freeze", "lazy", "merge", "to_dict", "unfreeze",
}
# ... of which these are not modelled here: a config that uses one goes to mmengine.
_UNMODELLED = frozenset({
    "_to_lazy_dict", "build_lazy", "freeze", "lazy", "merge", "to_dict", "unfreeze",
    "__getnewargs__", "__getstate__", "__setstate__", "fromkeys",
})


class ConfigDict(dict):  # type: ignore[type-arg]
    """A dict as mmengine hands base-config values to the config that imports them.

    Attribute access reads keys; storing a value turns a plain ``dict`` (or
    ``OrderedDict``) into a ConfigDict and re-builds lists and tuples; ``update`` merges
    nested dicts; ``pop`` returns ``None`` for a missing key; ``copy`` is shallow but
    re-builds lists; ``items``/``values`` return lists.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        for arg in args:
            if not arg:
                continue
            if isinstance(arg, ConfigDict):
                pairs: Any = dict.items(arg)
            elif isinstance(arg, dict):
                pairs = arg.items()
            elif isinstance(arg, tuple) and not isinstance(arg[0], tuple):
                pairs = [(arg[0], arg[1])]
            else:
                pairs = iter(arg)
            for key, value in pairs:
                self[key] = self._hook(value)
        for key, value in dict.items(kwargs):
            self[key] = self._hook(value)

    @classmethod
    def _hook(cls, item: Any) -> Any:
        if type(item) in (dict, OrderedDict):
            return cls(item)
        if isinstance(item, (list, tuple)):
            return type(item)(cls._hook(elem) for elem in item)
        return item

    def __missing__(self, name: Any) -> Any:
        raise KeyError(name)

    def __getattr__(self, name: str) -> Any:
        if name in _UNMODELLED:
            raise NeedsMmengine(f"ConfigDict.{name}")
        try:
            return self[name]
        except KeyError:
            raise AttributeError(
                f"'{self.__class__.__name__}' object has no attribute '{name}'") from None

    def __setattr__(self, name: str, value: Any) -> None:
        value = self._hook(value)
        if name in _CONFIGDICT_ATTRS:
            raise AttributeError(f"'Dict' object attribute '{name}' is read-only")
        self[name] = value

    def __delattr__(self, name: str) -> None:
        del self[name]

    def __setitem__(self, name: Any, value: Any) -> None:
        dict.__setitem__(self, name, self._hook(value))

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())

    def __copy__(self) -> ConfigDict:
        other = self.__class__()
        for key, value in dict.items(self):
            other[key] = value
        return other

    copy = __copy__

    def deepcopy(self) -> ConfigDict:
        """``copy.deepcopy(self)``."""
        return copy.deepcopy(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> ConfigDict:
        other = self.__class__()
        memo[id(self)] = other
        for key, value in dict.items(self):
            other[copy.deepcopy(key, memo)] = copy.deepcopy(value, memo)
        return other

    def get(self, key: Any, default: Any = None) -> Any:  # noqa: D102
        return dict.get(self, key, default)

    def pop(self, key: Any, default: Any = None) -> Any:  # noqa: D102
        return dict.pop(self, key, default)

    def values(self) -> list[Any]:  # type: ignore[override]  # noqa: D102
        return list(dict.values(self))

    def items(self) -> list[tuple[Any, Any]]:  # type: ignore[override]  # noqa: D102
        return list(dict.items(self))

    def update(self, *args: Any, **kwargs: Any) -> None:  # noqa: D102
        other: dict[Any, Any] = {}
        if args:
            if len(args) > 1:
                raise TypeError("update only accept one positional argument")
            for key, value in dict.items(args[0]):
                other[key] = value
        for key, value in dict(kwargs).items():
            other[key] = value
        for key, value in other.items():
            if key not in self or not isinstance(self[key], dict) or not isinstance(value, dict):
                self[key] = self._hook(value)
            else:
                self[key].update(value)

    def setdefault(self, key: Any, default: Any = None) -> Any:  # noqa: D102
        if key in self:
            return self[key]
        self[key] = default
        return default

    def __add__(self, other: Any) -> Any:
        if not self.keys():
            return other
        raise TypeError(f"unsupported operand type(s) for +: '{type(self).__name__}' and "
                        f"'{type(other).__name__}'")

    def __or__(self, other: Any) -> Any:  # mmengine returns an addict.Dict: not modelled
        raise NeedsMmengine("ConfigDict.__or__")

    def __ror__(self, other: Any) -> Any:
        raise NeedsMmengine("ConfigDict.__ror__")

    def __ior__(self, other: Any) -> ConfigDict:
        self.update(other)
        return self

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ConfigDict):
            return bool(_plain_equal(other) == _plain_equal(self))
        if isinstance(other, dict):
            return dict(dict.items(self)) == other
        return False

    __hash__ = None

    def __reduce_ex__(self, proto: Any) -> Any:
        return (self.__class__, (dict(dict.items(self)),), None, None, None, None)


def _plain_equal(value: Any) -> Any:
    """mmengine's ``to_dict()`` view used by ConfigDict equality (lazy objects as text)."""
    if isinstance(value, dict):
        return {k: _plain_equal(v) for k, v in dict.items(value)}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain_equal(v) for v in value)
    if isinstance(value, (LazyAttr, LazyObject)):
        return f"{value.module}.{value}"
    return value


def to_config_dict(value: Any) -> Any:
    """A config's globals as mmengine stores them: every dict a ConfigDict, sequences new."""
    if isinstance(value, dict):
        out = ConfigDict()
        for key, item in value.items():
            out[key] = to_config_dict(item)
        return out
    if isinstance(value, (tuple, list)):
        return type(value)(to_config_dict(item) for item in value)
    return value


# --------------------------------------------------------------------------- as plain data


def settings(variables: dict[Any, Any], imported: frozenset[str]) -> dict[str, Any]:
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
