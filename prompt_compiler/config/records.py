"""The value objects the config stage hands to the compiler."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..errors import PromptCompilerError
    from .origins import Origin

__all__ = ["CUSTOM_KEY", "DERIVED_ABBR_KEY", "DatasetConfig", "ModelConfig", "SuiteConfig",
           "TypeRef", "Unsupported"]

DERIVED_ABBR_KEY = "abbr_from_path"
"""Spec key set when the abbr was derived from ``path``/``name``: OpenCompass then names
outputs by the derived abbr, but its rows' ``subdivision`` stays ``"dataset"``."""
CUSTOM_KEY = "custom_dataset"
"""Spec key set on a path-only custom dataset (completed from its data file's first row)."""


@dataclass(frozen=True, slots=True)
class TypeRef:
    """A class or function a Python config referred to, by name (never imported).

    Placeholders from the ``opencompass`` shim, mmengine lazy imports, and real classes or
    functions all become a ``TypeRef`` before normalization reduces them to strings.
    """

    qualified_name: str
    """Dotted name, e.g. ``opencompass.openicl.icl_retriever.FixKRetriever``."""

    @property
    def name(self) -> str:
        """The last component: the class name, e.g. ``FixKRetriever``."""
        return self.qualified_name.rsplit(".", 1)[-1]


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A value of a Python config that is not plain data (kept so that an error can name it
    if it matters)."""

    type_name: str


@dataclass(frozen=True, slots=True)
class DatasetConfig:
    """One dataset entry of a config, normalized to the conformance case format."""

    abbr: str
    """The dataset abbr (``"dataset"`` when a JSON compile job leaves it out)."""
    config_path: str
    """The config file it was read from."""
    key_path: str
    """Where in that file, e.g. ``datasets[2]`` or ``gsm8k_datasets[0]``."""
    spec: dict[str, Any]
    """The case-format ``dataset`` dict (``abbr``, ``reader_cfg``, ``infer_cfg``, and
    ``rows``/``splits`` when inline), plus ``type`` (the loader or reader name as a
    string), ``path``/``data_files`` and any other keys of the entry except ``eval_cfg``.
    Plain data, deep-copied; label dicts may have int keys."""
    notes: tuple[PromptCompilerError, ...] = ()
    """What a user should hear about its keys (a likely misspelling, a key OpenCompass
    refuses): warnings when a pair is compiled (errors with ``--strict``; those with a
    ``reference`` are errors in compat mode). See :mod:`.known_keys`."""
    opencompass_root: Path | None = None
    """The folder ``opencompass`` stood for while its Python config loaded (as
    :attr:`SuiteConfig.opencompass_root`), recorded when it loads: where its base configs
    and OpenCompass's own files (OlympiadBench's prompt text) are read; None when none was
    found or the config is not Python."""
    origin: Origin | None = None
    """The base config (and key path in it) that defines the entry, when not
    ``config_path`` itself: recorded when the config loads, named by its errors."""


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """One model entry of a config, normalized to the conformance case format."""

    abbr: str
    """The model abbr (the case format's ``name``)."""
    config_path: str
    """The config file it was read from."""
    key_path: str
    """Where in that file, e.g. ``models[0]``."""
    spec: dict[str, Any]
    """The case-format ``model`` dict: ``name``, ``source``, ``parser`` (the renderer,
    ``lm``/``api``/``hf_chat``, under the case format's name for it), ``meta_template``
    (dict or None), ``max_seq_len``, ``batch_size``; plus
    ``type``, ``max_out_len``, ``min_out_len`` and the keys ``chat_template`` (text, or an
    absolute path), ``template_kwargs``, ``api_format``, ``prompter``, ``tokenizer``,
    ``system_role`` when the config sets them."""
    files: tuple[str, ...] = ()
    """Files that shape this model's prompts: a meta template or chat template file."""
    notes: tuple[PromptCompilerError, ...] = ()
    """As :attr:`DatasetConfig.notes`, for the model's keys."""
    error: PromptCompilerError | None = None
    """Why the model config is invalid (its ``spec`` then holds only ``name``): raised when
    the model is paired, so a model that ``--models`` leaves out does not stop a run."""
    origin: Origin | None = None
    """As :attr:`DatasetConfig.origin`."""

    def model_dict(self) -> dict[str, Any]:
        """The dict its :class:`~prompt_compiler.model.spec.Model` is built from (``spec``
        with ``abbr``): the same dict at load and at compile, so the model its load built is
        the one compiled (:func:`~prompt_compiler.model.spec.build_model` keeps it)."""
        return {**self.spec, "abbr": self.abbr}


@dataclass(frozen=True, slots=True)
class SuiteConfig:
    """Everything one config file defines."""

    path: Path
    """The config file."""
    datasets: tuple[DatasetConfig, ...]
    """Its datasets, in definition order."""
    models: tuple[ModelConfig, ...]
    """Its models, in definition order."""
    options: dict[str, Any] = field(default_factory=dict)
    """Compile options of a JSON compile job (e.g. ``normalizing_str``); else empty."""
    job_id: str | None = None
    """The ``id`` of a JSON compile job; else None."""
    opencompass_root: Path | None = None
    """The folder ``opencompass`` stood for while a Python config loaded (the parent of the
    configs folder ``opencompass.configs`` resolved to); None when none was found."""
    combinations: tuple[tuple[tuple[DatasetConfig, ...], tuple[ModelConfig, ...]], ...] = ()
    """OpenCompass's ``model_dataset_combinations``: ``(datasets, models)`` per entry; when
    set, these pairs are the ones compiled (``datasets``/``models`` then only name them)."""
    environment: tuple[tuple[str, str | None], ...] = ()
    """The environment variables a Python config read (``os.environ``, ``os.getenv``): each
    name with the sha256 of its value (``None``: unset), sorted by name; the values are not
    kept (they may be secrets)."""
