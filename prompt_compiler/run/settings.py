"""How every pair of a run is compiled: :class:`CompileSettings`, the one carrier of run options.

The CLI builds it once from its flags; the library builds it from keyword options
(:meth:`CompileSettings.of`); every engine hands the same object to its workers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compiler import Compiler

__all__ = ["CompileSettings"]


@dataclass(frozen=True, slots=True)
class CompileSettings:
    """How every pair of a run is compiled: the CLI's options, once (it is picklable, so a
    worker process or a Ray task gets the same settings)."""

    data_dir: Path | None = None
    """Rows at ``DIR/<abbr>/<split>.jsonl`` (``--data-dir``)."""
    mode: str = "default"
    """``default`` or ``opencompass`` (``--mode compat``)."""
    spans: bool = False
    """Records carry their span provenance (``--spans``)."""
    strict: bool = False
    """Warnings are errors (``--strict``)."""
    jobs: int = 1
    """Processes (``--jobs``), or the CPUs of a local Ray instance."""
    limit: int | None = None
    """The first N test rows of each dataset (``--limit``; in the pairs' options)."""
    fewshot: str | None = None
    """``multiturn`` or ``inline`` for every dataset (``--fewshot``; in the pairs' options)."""
    tokenize: bool = False
    """Records carry ``input_ids`` (``--tokenize``; on every model)."""
    tokenizer: str | None = None
    """Every model's ``tokenizer`` (``--tokenizer``, for the models given by ``--model``)."""
    shard_rows: int | None = None
    """Each pair's records as ``part-NNNNN`` files of this many (``--shard-rows``;
    :mod:`prompt_compiler.emit.shards`); None: one file per pair."""
    opencompass_python: Path | None = None
    """The interpreter that runs OpenCompass's own loader for a class with no native reader
    (``--opencompass-python``; None: the ``PROMPT_COMPILER_OPENCOMPASS_PYTHON`` variable)."""
    no_rows: bool = False
    """Stand-in rows made from each ``reader_cfg`` where rows would be read (``--check
    --no-rows``; :mod:`prompt_compiler.data.standin`)."""
    only: tuple[str, ...] = ()
    """Compile only the datasets whose abbr matches one of these globs (``--only``)."""
    models: tuple[str, ...] = ()
    """Compile only the models whose abbr matches one of these globs (``--models``)."""
    format: str = "records"
    """What is written per pair: ``records``, ``vllm``, ``openai-batch`` or ``parquet``
    (``--format``; :mod:`prompt_compiler.emit.formats`)."""
    batch_lines: int | None = None
    """``openai-batch``: lines per file (default: the Batch API's 50,000)."""
    batch_bytes: int | None = None
    """``openai-batch``: bytes per file (default: the Batch API's 200 MB)."""
    engine: str = "local"
    """``local`` or ``ray`` (``--engine``; :mod:`prompt_compiler.run.engines`)."""
    ray_address: str | None = None
    """With ``engine="ray"``: the cluster to join (``--ray-address``); None: a local one."""
    replace_foreign: bool = False
    """Replace OUT even when this tool did not write it (``--overwrite-foreign``)."""

    def __post_init__(self) -> None:
        if self.data_dir is not None and not isinstance(self.data_dir, Path):
            object.__setattr__(self, "data_dir", Path(self.data_dir))
        if self.opencompass_python is not None and not isinstance(self.opencompass_python, Path):
            object.__setattr__(self, "opencompass_python", Path(self.opencompass_python))
        for key in ("only", "models"):  # one glob or several
            value = getattr(self, key)
            object.__setattr__(self, key, (value,) if isinstance(value, str) else tuple(value))

    @classmethod
    def of(cls, settings: CompileSettings | None, options: Mapping[str, Any]) -> CompileSettings:
        """``settings``, or one built from keyword ``options`` (its field names).

        Raises:
            TypeError: Both given, or an option that is no field.
        """
        if settings is None:
            return cls(**options)
        if options:
            raise TypeError(f"give settings or keyword options, not both (got {sorted(options)})")
        return settings

    def compiler(self) -> Compiler:
        """A compiler in this mode."""
        return Compiler(mode=self.mode)
