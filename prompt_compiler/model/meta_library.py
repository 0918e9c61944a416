r"""The model meta template library: one YAML (or JSON) file per model family.

A *model template* file wraps an OpenCompass-style ``meta_template`` (``round``,
``reserved_roles``, ``begin``, ``end``, ``eos_token_id``) with a name, aliases, the
renderer that consumes it by default and, optionally, LazyLLM-style ``prompter`` token
slots. The files shipped with the project live in ``prompt_compiler/meta_templates``
(package data, so every install method has them); more
folders can be added through the ``PROMPT_COMPILER_META_TEMPLATES`` environment variable
(``os.pathsep``-separated) or by building a :class:`MetaTemplateLibrary` directly::

    >>> from prompt_compiler.model.meta_library import load_model_template
    >>> tpl = load_model_template("llama3_instruct")        # case, '_' and '-' do not matter
    >>> tpl.name, tpl.renderer
    ('llama-3-instruct', 'lm')
    >>> tpl.meta_template["round"][0]["begin"]
    '<|start_header_id|>user<|end_header_id|>\n\n'

Every file is validated when it is loaded; a malformed one raises
:class:`~prompt_compiler.errors.MetaTemplateError` naming the file and the key path
(``meta_template.round[1].begin``), a file that is not plain YAML/JSON raises
:class:`~prompt_compiler.errors.ConfigError`, and an unknown name raises
:class:`~prompt_compiler.errors.RegistryError` with close matches and the available names.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

from ..errors import ConfigError, LimitError, MetaTemplateError, RegistryError
from ..safety.yaml_loader import load_yaml
from .classes import RENDERERS, Renderer

if TYPE_CHECKING:
    import yaml

__all__ = [
    "ENV_VAR",
    "ModelTemplate",
    "MetaTemplateLibrary",
    "Renderer",
    "builtin_template_dirs",
    "default_library",
    "list_model_templates",
    "load_model_template",
    "load_template_file",
    "normalize_name",
    "parse_model_template",
]

ENV_VAR = "PROMPT_COMPILER_META_TEMPLATES"
"""Environment variable listing extra template folders (``os.pathsep``-separated)."""

TEMPLATE_SUFFIXES = (".yaml", ".yml", ".json")

_API_ROLES = ("HUMAN", "BOT", "SYSTEM")
_TOP_KEYS = ("name", "description", "renderer", "aliases", "meta_template", "prompter",
             "default_system", "source")
_META_KEYS = ("round", "reserved_roles", "begin", "end", "eos_token_id")
_ROLE_KEYS = ("role", "begin", "end", "generate", "api_role")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SOURCE_RE = re.compile(r"^#\s*Source:\s*(.*)$")


def normalize_name(name: str) -> str:
    """The lookup key of a name: case-folded, ``_`` treated as ``-``, outer blanks removed."""
    return name.strip().casefold().replace("_", "-")


# --------------------------------------------------------------------------- value object


def _freeze(value: Any) -> Any:
    # Dicts become read-only views and lists become tuples, so a shared template
    # cannot be changed by a renderer that happens to mutate what it is given.
    if isinstance(value, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


@dataclass(frozen=True, slots=True, repr=False)
class ModelTemplate:
    """One model family's meta template, as loaded from a library file."""

    name: str
    """Canonical name, e.g. ``llama-3-instruct``."""
    description: str
    """One line saying which models the template is for."""
    renderer: Renderer
    """The renderer that consumes the template by default."""
    meta_template: Mapping[str, Any] = field(hash=False)
    """The OpenCompass ``meta_template``, deeply read-only (lists are tuples)."""
    aliases: tuple[str, ...] = ()
    """Other names the template is found under."""
    prompter: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    """LazyLLM-style special-token slots (``sos``, ``soh``, ``soa``, ``eos`` ...), read-only."""
    default_system: str | None = None
    """The system text the family's own chat template injects when none is given."""
    source: str = ""
    """Where the format comes from (model card, tokenizer_config.json, paper)."""
    path: Path | None = None
    """The file the template was loaded from, if any."""

    def meta_template_dict(self) -> dict[str, Any]:
        """A fresh, mutable plain-``dict`` copy of :attr:`meta_template` (lists as lists)."""
        return cast(dict[str, Any], _thaw(self.meta_template))

    def model_spec(self) -> dict[str, Any]:
        """The spec of a model that is this template alone (``--model NAME``)."""
        spec = {"name": self.name, "parser": self.renderer,
                "meta_template": self.meta_template_dict()}
        if self.default_system is not None:
            spec["default_system"] = self.default_system
        return spec

    def prompter_dict(self) -> dict[str, Any]:
        """A fresh, mutable plain-``dict`` copy of :attr:`prompter`."""
        return cast(dict[str, Any], _thaw(self.prompter))

    def role_names(self) -> tuple[str, ...]:
        """Role names declared by ``round`` then ``reserved_roles``, in order."""
        items = [*self.meta_template["round"], *self.meta_template.get("reserved_roles", ())]
        return tuple(item["role"] for item in items if isinstance(item, Mapping))

    def __repr__(self) -> str:
        """Name, renderer and file; the token strings would swamp a repr."""
        where = f", path={str(self.path)!r}" if self.path is not None else ""
        return f"ModelTemplate(name={self.name!r}, renderer={self.renderer!r}{where})"


# --------------------------------------------------------------------------- validation


class _Checker:
    """Validates one file's data; every error names the file and the key path."""

    def __init__(self, path: str | None) -> None:
        self.path = path

    def fail(self, key_path: str, message: str, hint: str | None = None) -> MetaTemplateError:
        return MetaTemplateError(message, config_path=self.path, key_path=key_path or None,
                                 hint=hint)

    def mapping(self, value: Any, key_path: str, what: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(key_path, f"expected {what} (a mapping), got {_kind(value)}")
        for key in value:
            if not isinstance(key, str):
                raise self.fail(key_path, f"keys must be strings, got {key!r}")
        return value

    def known_keys(self, value: Mapping[str, Any], allowed: Sequence[str], key_path: str) -> None:
        for key in value:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"did you mean {close[0]!r}?" if close else None
                raise self.fail(_join(key_path, key),
                                f"unknown key {key!r}; expected one of {', '.join(allowed)}",
                                hint)

    def string(self, value: Any, key_path: str, *, nonempty: bool = False) -> str:
        if not isinstance(value, str):
            raise self.fail(key_path, f"expected a string, got {_kind(value)}")
        if nonempty and not value.strip():
            raise self.fail(key_path, "expected a non-empty string")
        return value

    def role(self, value: Any, key_path: str, renderer: str) -> Mapping[str, Any]:
        role = self.mapping(value, key_path, "a role dict")
        self.known_keys(role, _ROLE_KEYS, key_path)
        if "role" not in role:
            raise self.fail(key_path, "a role dict needs a 'role' key (e.g. HUMAN, BOT, SYSTEM)")
        self.string(role["role"], _join(key_path, "role"), nonempty=True)
        for key in ("begin", "end"):
            if key in role:
                self.string(role[key], _join(key_path, key))
        if "generate" in role and not isinstance(role["generate"], bool):
            raise self.fail(_join(key_path, "generate"),
                            f"expected true or false, got {_kind(role['generate'])}")
        if "api_role" in role:
            api_role = self.string(role["api_role"], _join(key_path, "api_role"))
            if api_role not in _API_ROLES:
                raise self.fail(_join(key_path, "api_role"),
                                f"expected one of {', '.join(_API_ROLES)}, got {api_role!r}")
        elif renderer != "lm":
            raise self.fail(key_path,
                            f"role {role['role']!r} has no 'api_role', which the "
                            f"{renderer!r} renderer needs")
        return role

    def meta_template(self, value: Any, renderer: str) -> None:
        meta = self.mapping(value, "meta_template", "the meta template")
        self.known_keys(meta, _META_KEYS, "meta_template")
        if "round" not in meta:
            raise self.fail("meta_template", "a meta template needs a 'round' list")
        rounds = meta["round"]
        if not isinstance(rounds, list) or not rounds:
            raise self.fail("meta_template.round",
                            f"expected a non-empty list of role dicts, got {_kind(rounds)}")
        seen: dict[str, str] = {}
        generating: list[str] = []
        for i, item in enumerate(rounds):
            key_path = f"meta_template.round[{i}]"
            if isinstance(item, str):
                if renderer != "lm":
                    raise self.fail(key_path, f"a bare string cannot be sent to the "
                                              f"{renderer!r} renderer; only role dicts")
                continue
            role = self.role(item, key_path, renderer)
            self._unique(role["role"], key_path, seen)
            if role.get("generate") is True:
                generating.append(key_path)
        if len(generating) > 1:
            raise self.fail(generating[1], "at most one role in 'round' may have "
                                           f"generate: true (already at {generating[0]})")
        reserved = meta.get("reserved_roles", [])
        if not isinstance(reserved, list):
            raise self.fail("meta_template.reserved_roles",
                            f"expected a list of role dicts, got {_kind(reserved)}")
        for i, item in enumerate(reserved):
            key_path = f"meta_template.reserved_roles[{i}]"
            role = self.role(item, key_path, renderer)
            self._unique(role["role"], key_path, seen)
        for key in ("begin", "end"):
            if key in meta:
                self.string(meta[key], f"meta_template.{key}")
        if "eos_token_id" in meta:
            eos = meta["eos_token_id"]
            ids = eos if isinstance(eos, list) and eos else [eos]
            if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in ids):
                raise self.fail("meta_template.eos_token_id",
                                f"expected a token id or a non-empty list of token ids, "
                                f"got {eos!r}")

    def _unique(self, role: str, key_path: str, seen: dict[str, str]) -> None:
        if role in seen:
            raise self.fail(_join(key_path, "role"),
                            f"role {role!r} is declared twice (first at {seen[role]})")
        seen[role] = key_path

    def prompter(self, value: Any) -> None:
        slots = self.mapping(value, "prompter", "prompter token slots")
        for key, item in slots.items():
            key_path = _join("prompter", key)
            if isinstance(item, list):
                for i, word in enumerate(item):
                    self.string(word, f"{key_path}[{i}]")
            else:
                self.string(item, key_path)


def _join(key_path: str, key: str) -> str:
    return f"{key_path}.{key}" if key_path else key


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    if isinstance(value, Mapping):
        return "a mapping"
    return type(value).__name__


# --------------------------------------------------------------------------- loading


def parse_model_template(data: Any, *, path: str | os.PathLike[str] | None = None,
                         source: str = "") -> ModelTemplate:
    """Validate one template file's data and build a :class:`ModelTemplate`.

    Args:
        data: The parsed file (a mapping with ``name``, ``meta_template`` ...).
        path: The file it came from, used in error messages.
        source: The source note (from the file's ``# Source:`` comment), unless
            ``data`` has a ``source`` key.

    Returns:
        The validated, read-only template.

    Raises:
        MetaTemplateError: The data does not have the expected shape.
    """
    where = os.fspath(path) if path is not None else None
    check = _Checker(where)
    top = check.mapping(data, "", "a model template file")
    check.known_keys(top, _TOP_KEYS, "")
    for key in ("name", "meta_template"):
        if key not in top:
            raise check.fail("", f"missing required key {key!r}")
    name = check.string(top["name"], "name", nonempty=True)
    if not _NAME_RE.match(name):
        raise check.fail("name", f"{name!r} is not a valid name; use letters, digits, "
                                 "'.', '_' and '-'")
    renderer = top.get("renderer", "lm")
    if renderer not in RENDERERS:
        raise check.fail("renderer", f"expected one of {', '.join(RENDERERS)}, "
                                     f"got {renderer!r}")
    description = check.string(top.get("description", ""), "description")
    aliases = top.get("aliases", [])
    if not isinstance(aliases, list):
        raise check.fail("aliases", f"expected a list of names, got {_kind(aliases)}")
    for i, alias in enumerate(aliases):
        check.string(alias, f"aliases[{i}]", nonempty=True)
    check.meta_template(top["meta_template"], renderer)
    prompter = top.get("prompter", {})
    check.prompter(prompter)
    default_system = top.get("default_system")
    if default_system is not None:
        check.string(default_system, "default_system", nonempty=True)
        # The default system turn has to be *in* the template, or it would never be sent.
        if default_system not in top["meta_template"].get("begin", ""):
            raise check.fail("default_system", "the default system text must appear in "
                                               "meta_template.begin, which carries it")
    if "source" in top:
        source = check.string(top["source"], "source")
    return ModelTemplate(
        name=name,
        description=description,
        renderer=cast(Renderer, renderer),
        meta_template=_freeze(top["meta_template"]),
        aliases=tuple(aliases),
        prompter=_freeze(prompter),
        default_system=default_system,
        source=source,
        path=Path(path) if path is not None else None,
    )


def _source_comment(text: str) -> str:
    # "# Source: ..." in the leading comment block; more-indented comment lines continue it.
    lines: list[str] = []
    for line in text.splitlines():
        if not line.startswith("#"):
            if line.strip():
                break
            continue
        match = _SOURCE_RE.match(line)
        if match and not lines:
            lines.append(match.group(1).strip())
        elif lines and re.match(r"^#\s{2,}\S", line):
            lines.append(line[1:].strip())
        elif lines:
            break
    return " ".join(lines)


def load_template_file(path: str | os.PathLike[str]) -> ModelTemplate:
    """Read and validate one ``.yaml``/``.yml``/``.json`` model template file.

    Raises:
        ConfigError: The file cannot be read or is not plain YAML/JSON (e.g. it uses a
            ``!!python/object`` tag; files are read with ``yaml.safe_load``).
        MetaTemplateError: The content does not have the expected shape.
    """
    file = Path(path)
    where = os.fspath(file)
    if file.suffix.lower() not in TEMPLATE_SUFFIXES:
        raise ConfigError(f"not a model template file: expected a {'/'.join(TEMPLATE_SUFFIXES)}"
                          " file", config_path=where)
    if file.exists() and not file.is_file():  # a FIFO or device: reading would never end
        raise ConfigError("a model template file must be a regular file", config_path=where)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read model template file: {exc}", config_path=where) from exc
    if file.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: "
                              f"{exc.msg}", config_path=where) from exc
    else:
        import yaml  # imported only when a YAML template is read

        try:
            data = load_yaml(text)
        except LimitError as exc:
            raise exc.located(config_path=where) from None
        except yaml.constructor.ConstructorError as exc:
            raise ConfigError(
                f"not plain YAML{_yaml_where(exc)}: {exc.problem}",
                config_path=where,
                hint="model template files are read with yaml.safe_load; tags such as "
                     "!!python/object are not allowed",
            ) from exc
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc)
            raise ConfigError(f"invalid YAML{_yaml_where(exc)}: {problem}",
                              config_path=where) from exc
    return parse_model_template(data, path=file, source=_source_comment(text))


def _yaml_where(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return ""
    return f" at line {mark.line + 1}, column {mark.column + 1}"


# --------------------------------------------------------------------------- library


class MetaTemplateLibrary:
    """An immutable set of model templates, looked up by name or alias.

    Lookups ignore case and treat ``_`` as ``-`` (``Llama_3_Instruct`` finds
    ``llama-3-instruct``). Two templates whose names or aliases collide raise
    :class:`~prompt_compiler.errors.MetaTemplateError` at construction.

    Args:
        templates: The templates the library holds.
    """

    __slots__ = ("_by_key", "_templates")

    def __init__(self, templates: Iterable[ModelTemplate] = ()) -> None:
        """Index ``templates`` by normalized name and alias; collisions raise."""
        self._templates: dict[str, ModelTemplate] = {}
        self._by_key: dict[str, ModelTemplate] = {}
        for template in templates:
            self._add(template)

    @classmethod
    def from_folders(cls, *folders: str | os.PathLike[str]) -> MetaTemplateLibrary:
        """Load every ``.yaml``/``.yml``/``.json`` file of the given folders (not recursive).

        Raises:
            ConfigError: A folder does not exist, or a file is not plain YAML/JSON.
            MetaTemplateError: A file is malformed, or two files share a name or alias.
        """
        return cls(template for folder in folders for template in _load_folder(folder))

    def with_templates(self, *templates: ModelTemplate) -> MetaTemplateLibrary:
        """A new library holding this one's templates plus ``templates`` (collisions raise)."""
        return MetaTemplateLibrary([*self._templates.values(), *templates])

    def _add(self, template: ModelTemplate) -> None:
        for i, label in enumerate((template.name, *template.aliases)):
            key = normalize_name(label)
            other = self._by_key.get(key)
            if other is None or other is template:
                continue  # free, or the very same template object given twice
            key_path = "name" if i == 0 else f"aliases[{i - 1}]"
            where = f" in {other.path}" if other.path is not None else ""
            raise MetaTemplateError(
                f"{label!r} is already used by model template {other.name!r}{where}",
                config_path=os.fspath(template.path) if template.path else None,
                key_path=key_path,
                hint="names and aliases must be unique across all template folders "
                     "(compared ignoring case and '_' vs '-')",
            )
        self._templates[template.name] = template
        for label in (template.name, *template.aliases):
            self._by_key[normalize_name(label)] = template

    def get(self, name: str) -> ModelTemplate:
        """The template called ``name`` (a name or an alias).

        Raises:
            RegistryError: No template has that name; the message lists close matches
                and the hint lists every available name.
        """
        template = self._by_key.get(normalize_name(name))
        if template is not None:
            return template
        close = difflib.get_close_matches(normalize_name(name), list(self._by_key), n=3,
                                          cutoff=0.6)
        suggestions = list(dict.fromkeys(self._by_key[key].name for key in close))
        message = f"unknown model template {name!r}"
        if suggestions:
            message += f"; did you mean {' or '.join(repr(s) for s in suggestions)}?"
        available = ", ".join(self.names()) or "none"
        raise RegistryError(
            message,
            hint=f"available model templates: {available}; add folders with ${ENV_VAR} or "
                 "pass a path to a .yaml/.json file",
        )

    def __getitem__(self, name: str) -> ModelTemplate:
        """Same as :meth:`get`."""
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        """Whether ``name`` is a known name or alias (normalized like :meth:`get`)."""
        return isinstance(name, str) and normalize_name(name) in self._by_key

    def __iter__(self) -> Iterator[ModelTemplate]:
        """The templates, sorted by name."""
        return iter(sorted(self._templates.values(), key=lambda t: t.name))

    def __len__(self) -> int:
        """The number of templates (aliases not counted)."""
        return len(self._templates)

    def names(self) -> list[str]:
        """The canonical names, sorted (aliases not included)."""
        return sorted(self._templates)

    def __repr__(self) -> str:
        """The count and the names."""
        return f"MetaTemplateLibrary({len(self)} templates: {', '.join(self.names())})"


def _load_folder(folder: str | os.PathLike[str]) -> list[ModelTemplate]:
    path = Path(folder)
    if not path.is_dir():
        raise ConfigError("model template folder does not exist", config_path=os.fspath(path))
    files = sorted(p for p in path.iterdir()
                   if p.is_file() and p.suffix.lower() in TEMPLATE_SUFFIXES)
    return [load_template_file(file) for file in files]


def builtin_template_dirs() -> list[Path]:
    """The folder of the shipped templates: ``prompt_compiler/meta_templates`` (package data).

    Found relative to this module, so a wheel, ``pip install .``, an editable install and a
    source checkout all find it from any working directory.
    """
    folder = Path(__file__).resolve().parents[1] / "meta_templates"
    return [folder] if folder.is_dir() else []


def _env_dirs() -> list[Path]:
    value = os.environ.get(ENV_VAR, "")
    return [Path(part).expanduser() for part in value.split(os.pathsep) if part.strip()]


@functools.cache
def default_library() -> MetaTemplateLibrary:
    """The shipped templates plus the folders in ``$PROMPT_COMPILER_META_TEMPLATES``.

    Built on first use and cached; call ``default_library.cache_clear()`` after changing
    the environment variable.
    """
    return MetaTemplateLibrary.from_folders(*builtin_template_dirs(), *_env_dirs())


def _looks_like_path(value: str) -> bool:
    return (value.lower().endswith(TEMPLATE_SUFFIXES) or "/" in value or os.sep in value
            or (os.altsep is not None and os.altsep in value))


def load_model_template(name_or_path: str | os.PathLike[str], *,
                        library: MetaTemplateLibrary | None = None) -> ModelTemplate:
    """A model template by name/alias, or from a ``.yaml``/``.json`` file path.

    Args:
        name_or_path: A name or alias (``"llama-3-instruct"``) or a file path.
        library: Where names are looked up; :func:`default_library` when omitted.

    Raises:
        RegistryError: An unknown name.
        ConfigError: An unreadable or non-plain file.
        MetaTemplateError: A malformed file.
    """
    if isinstance(name_or_path, os.PathLike) or _looks_like_path(name_or_path):
        return load_template_file(name_or_path)
    return (library if library is not None else default_library()).get(name_or_path)


def list_model_templates(library: MetaTemplateLibrary | None = None) -> list[ModelTemplate]:
    """Every template of ``library`` (default: :func:`default_library`), sorted by name."""
    return list(library if library is not None else default_library())
