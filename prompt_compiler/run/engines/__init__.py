"""How a run's pairs are compiled into OUT: one interface, three engines, one table.

An :class:`Engine` compiles every pair of a run under one
:class:`~prompt_compiler.run.settings.CompileSettings` into the staging folder of OUT
(:class:`~prompt_compiler.emit.outdir.OutputDir`) and puts each pair's
manifest entry into ``outputs``; the suite (:func:`prompt_compiler.run.suite.compile_to_dir`)
does everything around it (the pairs, OUT as one unit, the formats, the manifest). Every
engine calls the same pair functions of :mod:`prompt_compiler.run.pairs`, so the bytes are
the same by construction; an engine decides only where the work runs:

========  ==========================================================================
``local`` this process, pair after pair (also the engine of ``--check``: nothing written)
``pool``  ``--jobs N``: N processes, a large pair in row ranges (:mod:`.pool`)
``ray``   ``--engine ray``: Ray tasks, a large pair's row blocks as Ray Data
          (:mod:`.ray`)
========  ==========================================================================

With ``shards`` (``--shard-rows``: each pair's plan by its ``out_name``) an engine writes each
pair as its shards, in whichever process compiles them, and the entry is the pair folder's
(:mod:`prompt_compiler.emit.shards`). A new engine is a class with :meth:`Engine.run` and a row in
:data:`ENGINES`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ...errors import ConfigError
from ..pairs import Counts, Pair, pair_lines
from ..settings import CompileSettings

if TYPE_CHECKING:
    from ...emit.outdir import OutputDir
    from ...emit.shards import ShardPlan

__all__ = ["ENGINES", "Engine", "LocalEngine", "engine_for"]


class Engine(Protocol):
    """Compiles a run's pairs into OUT's staging folder."""

    def run(self, pairs: Sequence[Pair], writer: OutputDir | None,
            outputs: dict[str, dict[str, Any]], settings: CompileSettings, *,
            shards: Mapping[str, ShardPlan] | None = None, progress: Any = None,
            digests: dict[str, str] | None = None) -> None:
        """Compile ``pairs`` and put each pair's manifest entry into ``outputs``.

        Args:
            pairs: The pairs, in manifest order.
            writer: OUT being built (its staging folder is where files go); ``None``:
                compile and check only (the entries still get their digests).
            outputs: Filled with each pair's entry, by its ``out_name`` (with ``shards``:
                by its pair folder).
            settings: The run's settings (the same object every worker gets).
            shards: Each pair's shard plan by ``out_name``, or ``None``: one file per pair.
            progress: Called as ``progress(i, total, pair)`` before each pair; it may also
                have ``rows(n)`` and ``row()`` (the rows of a pair compiled here).
            digests: Filled with the sha256 of input files (by real path) that the engine's
                workers read and hashed, so that the manifest does not read them again.
        """


class LocalEngine:
    """Every pair in this process, one after the other."""

    def run(self, pairs: Sequence[Pair], writer: OutputDir | None,
            outputs: dict[str, dict[str, Any]], settings: CompileSettings, *,
            shards: Mapping[str, ShardPlan] | None = None, progress: Any = None,
            digests: dict[str, str] | None = None) -> None:
        """See :meth:`Engine.run`."""
        if shards is not None and writer is not None:
            from ...emit.shards import pair_entry, pair_folder, write_shards

            sink = writer.sink()
        for i, pair in enumerate(pairs):
            if progress:
                progress(i, len(pairs), pair)
            counts = Counts()
            blocks = pair_lines(pair, settings, counts, progress=progress)
            if writer is None:
                digest = hashlib.sha256()
                for block in blocks:
                    digest.update(block)
                outputs[pair.out_name] = counts.entry(pair, digest.hexdigest())
            elif shards is None:
                outputs[pair.out_name] = counts.entry(
                    pair, writer.write_blocks(pair.out_name, blocks))
            else:
                plan = shards[pair.out_name]
                written = write_shards(sink, pair_folder(pair.out_name), blocks, plan)
                for shard in written:
                    writer.adopt(shard.name)
                outputs[pair_folder(pair.out_name)] = pair_entry(
                    pair.dataset.abbr, pair.model.abbr, written, plan)


def _pool() -> Engine:
    from .pool import PoolEngine

    return PoolEngine()


def _ray() -> Engine:
    from .ray import RayEngine

    return RayEngine()


ENGINES: Mapping[str, Callable[[], Engine]] = {"local": LocalEngine, "pool": _pool, "ray": _ray}
"""Engine name -> a new engine (the ``pool`` and ``ray`` modules are imported when chosen)."""


def engine_for(settings: CompileSettings, *, writing: bool = True) -> Engine:
    """The engine of a run: ``settings.engine`` (``local`` with ``jobs`` over 1 is ``pool``);
    a run that writes nothing compiles here (``local``)."""
    name = settings.engine if writing else "local"
    if name not in ENGINES or name == "pool":
        raise ConfigError(f"unknown engine {name!r}; expected local or ray", key_path="engine")
    if name == "local" and settings.jobs > 1 and writing:
        name = "pool"
    return ENGINES[name]()
