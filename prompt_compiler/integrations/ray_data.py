"""Prompt building as a Ray Data stage (extra ``ray``): rows in, the CLI's records out.

::

    import ray
    from prompt_compiler.ray import compile_dataset

    rows = ray.data.read_parquet("s3://bucket/mmlu/test/")       # one column per field, + idx
    records = compile_dataset(rows, dataset="configs/mmlu_gen.py", model="llama-3-instruct")
    records.write_parquet("s3://bucket/prompts/")

Every output row is one record with the fields and values the CLI writes for the same test
row (``dataset``, ``mode``, ``index``, ``label`` for ppl, ``ice_ids``, ``prompt``,
``prompt_sha256``, ``gold``, and ``over_limit`` and the token counts when ``max_seq_len``
dropped examples), plus ``sampling_params`` (filled from the record, :func:`sampling_params`)
and ``tokenized_prompt`` when asked for, which is what ``ray.data.llm``'s vLLM stage reads
(see docs/ray.md). Two columns are shaped for that stage: the model's abbr is
``model_abbr`` (the stage reads ``model`` as a LoRA adapter's name), and a prompt of chat
messages is in ``messages`` (the stage takes a text ``prompt`` only; Ray's chat-template
stage reads ``messages``), ``prompt`` then null.

A row's id (its index in the test split, the record's ``index``) is its ``idx`` column
(``id_column``): Ray Data does not number rows, and an id keeps records, and the examples
a stateless retriever draws, the same however the rows are split into blocks.

The job (templates, model, retriever, the training split) is built once by the caller and
travels once through the object store; each worker of the ``map_batches`` stage builds
its plans once and reuses them for every batch. Retrievers: ZeroRetriever, FixKRetriever,
RandomRetriever with ``stateless=True``, BM25Retriever (the index is built once, by the
caller) and, with the ``embed`` extra, TopkRetriever (the training rows are embedded once).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..emit.requests import sampling_params
from ..errors import ConfigError, DataError, PromptCompilerError, UnsupportedError
from ..retrieve.basic import BlockIndex
from ..run.engines.ray import Offset, block_ids, block_index, require_ray

__all__ = ["compile_dataset", "require_ray", "sampling_params"]

RECORD_FIELDS = ("dataset", "model", "mode", "index", "row", "label", "turn", "ice_ids",
                 "dropped_ice_ids", "token_len_before", "token_len_after", "over_limit",
                 "prompt", "prompt_sha256", "input_ids", "mask_length", "max_out_len", "stop",
                 "stop_token_ids", "gold")
"""Every field a gen or ppl record can have, in the CLI's order (absent ones are null)."""

COLUMNS = {"model": "model_abbr"}
"""Record fields whose column has another name: Ray Data LLM's vLLM stage reads a ``model``
column as the name of a LoRA adapter to apply."""


# -- the job, built once by the caller ------------------------------------------------


def _pair(dataset: Any, model: Any, abbr: str | None, model_abbr: str | None = None) -> Any:
    """The :class:`~prompt_compiler.run.suite.Pair` of a dataset (config file or spec dict) and
    a model (template name, config file or spec dict); ``abbr`` and ``model_abbr`` pick one
    of a file's several datasets and models."""
    from ..config import DatasetConfig, ModelConfig
    from ..run.suite import Pair, load, model_from_name

    options: dict[str, Any] = {}
    if isinstance(dataset, DatasetConfig):
        ds_cfg = dataset
    elif isinstance(dataset, Mapping):
        spec = dict(dataset)
        ds_cfg = DatasetConfig(str(spec.get("abbr") or "dataset"),
                               str(Path.cwd() / "<dict>"), "dataset", spec)
    else:
        suite = load([dataset])
        found = [d for d in suite.datasets if abbr is None or d.abbr == abbr]
        if len(found) != 1:
            names = ", ".join(d.abbr for d in suite.datasets) or "none"
            raise ConfigError(
                f"{'no dataset named ' + repr(abbr) if abbr and not found else 'several datasets'}"
                f" in this config (datasets: {names})", config_path=str(dataset),
                hint="pass abbr=NAME" if not found or len(found) > 1 else None)
        ds_cfg = found[0]
        options = {k: v for cfg in suite.configs for k, v in cfg.options.items()}
    if isinstance(model, ModelConfig):
        model_cfg = model
    elif isinstance(model, Mapping):
        spec = dict(model)
        model_cfg = ModelConfig(str(spec.get("abbr") or spec.get("name") or "model"),
                                str(Path.cwd() / "<dict>"), "model", spec)
    else:
        models = model_from_name(str(model))
        picked = [m for m in models if model_abbr is None or m.abbr == model_abbr]
        if len(picked) != 1:
            names = ", ".join(repr(m.abbr) for m in models)
            raise ConfigError(
                f"no model named {model_abbr!r} in this config (models: {names})" if model_abbr
                else f"this config defines {len(models)} models ({names}); pick one",
                config_path=str(model), hint="pass model_abbr=NAME")
        model_cfg = picked[0]
    return Pair(ds_cfg, model_cfg, options)


def _prepare(pair: Any, mode: str, data_dir: Any, limit_check: bool = True) -> dict[str, Any]:
    """What every worker needs: the job with its training rows in memory, and the shots."""
    from ..compiler import Compiler
    from ..data.reader import DatasetRows
    from ..data.sources import attach_rows
    from ..plan import plannable
    from ..run.pairs import locate

    try:
        dataset = attach_rows(pair.dataset, Path(data_dir) if data_dir is not None else None)
        job, kind, params = Compiler(mode=mode).job(
            dataset.spec, pair.model.model_dict(), pair.options, lean=True,
            opencompass_root=pair.dataset.opencompass_root)
        if kind not in ("gen", "ppl") or params.get("multiround") or (
                kind == "ppl" and job.options.get("normalizing_str") is not None):
            raise UnsupportedError(
                f"a {kind} job is not supported on Ray (gen and ppl jobs are)",
                key_path="infer_cfg.inferencer")
        train = tuple(dict(r) for r in job.rows.train)
        test = job.rows.test
        first = test[0] if len(test) else (train[0] if train else {})
        subdivision = first.get("subdivision", job.abbr) if isinstance(first, Mapping) else ""
        columns = [c for c in first if c not in ("subdivision", "idx")] if first else []
        job.rows = DatasetRows(train, ())
        shots = block_index(job, train)
    except PromptCompilerError as err:
        raise locate(pair, err) from None
    return {"job": job, "kind": kind, "params": params, "shots": shots,
            "subdivision": subdivision, "columns": columns, "mode": mode,
            "planned": plannable(job, kind, params)}


# -- the map_batches stage ------------------------------------------------------------


class CompileBatches:
    """The ``map_batches`` callable class: built once per worker (the job from the object
    store, the plans on first use), then called with each batch of rows."""

    def __init__(self, prepared: Any, id_column: str, tokenize: bool,
                 sampling_params: Mapping[str, Any] | None, total: int | None) -> None:
        ray = require_ray()
        if isinstance(prepared, ray.ObjectRef):
            prepared = ray.get(prepared)
        self.job, self.kind = prepared["job"], prepared["kind"]
        self.shots: BlockIndex = prepared["shots"]
        self.subdivision = prepared["subdivision"]
        self.id_column, self.sampling_params = id_column, sampling_params
        self.total = total
        self.params, self.mode = prepared["params"], prepared["mode"]
        self.planned = prepared["planned"]
        self.lines: Any = None
        self.tokenize = tokenize

    def __call__(self, batch: Any) -> dict[str, list[Any]]:
        import orjson

        from ..data.reader import DatasetRows, RowView

        rows = batch.to_pylist() if hasattr(batch, "to_pylist") else _rows_of(batch)
        out: list[bytes] = []
        for base, run in _runs(rows, self.id_column):
            columns = list(run[0])
            test = RowView(Offset(run, base), columns, self.subdivision, "rows")
            job = self.job
            job.rows = DatasetRows(job.rows.train, test)
            ids = block_ids(job, self.shots, test[base:], base)
            span = range(base, base + len(run))
            try:
                out.extend(self._lines(ids, span))
            except PromptCompilerError as err:
                raise err.located(dataset=job.abbr, model=job.model.abbr, row=job.row) from None
        records = [orjson.loads(line) for line in b"".join(out).splitlines()]
        cols: dict[str, list[Any]] = {COLUMNS.get(f, f): [r.get(f) for r in records]
                                      for f in RECORD_FIELDS}
        # The stage takes a text prompt only: a record's chat messages go to their own column
        # (what Ray's chat-template stage reads), in every batch, so the schema is one.
        prompts = cols["prompt"]
        cols["prompt"] = [p if isinstance(p, str) else None for p in prompts]
        cols["messages"] = [p if isinstance(p, list) else None for p in prompts]
        cols["sampling_params"] = [sampling_params(r, self.sampling_params, every_key=True)
                                   for r in records]
        if self.tokenize:
            cols["tokenized_prompt"] = cols["input_ids"]
        return cols


    def _lines(self, ids: Sequence[Any], span: range) -> Iterator[bytes]:
        """The record lines of test rows ``span``, whose example ids are ``ids``."""
        if self.planned:  # the CLI's fast path; plans and shapes built once, kept across batches
            if self.lines is None:
                from ..plan import Lines

                self.lines = Lines(self.job, self.kind, self.params, ids, rows=span)
                yield from self.lines
            else:
                yield from self.lines.over(ids, span)
            return
        from ..compiler import Compiler
        from ..emit.records import record_bytes, record_json

        job = self.job
        own = job.retriever
        job.retriever = _Given(own, ids)
        try:
            for rec in Compiler(mode=self.mode).job_records(job, self.kind, self.params,
                                                            lean=True, rows=span):
                yield record_bytes(record_json(rec))
        finally:
            job.retriever = own


class _Given:
    """A retriever that returns ids found already (the job's own separators kept)."""

    def __init__(self, own: Any, ids: Sequence[Any]) -> None:
        self.own, self.ids = own, ids
        self.ice_separator, self.ice_eos_token = own.ice_separator, own.ice_eos_token

    def __getattr__(self, name: str) -> Any:
        return getattr(self.own, name)

    def retrieve(self, *args: Any) -> Sequence[Any]:
        return self.ids


def _rows_of(batch: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of a column batch (``{column: values}``)."""
    names = list(batch)
    values = [list(batch[n]) for n in names]
    return [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]


def _runs(rows: Sequence[dict[str, Any]], id_column: str
          ) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """The rows as runs of consecutive ids: ``(first id, rows)``."""
    run: list[dict[str, Any]] = []
    base = last = 0
    for n, row in enumerate(rows):
        rid = row.get(id_column)
        if isinstance(rid, bool) or not isinstance(rid, int) or rid < 0:
            raise DataError(
                f"row {n} of a batch has {id_column}={rid!r}; each row needs its index in the "
                f"test split in the column {id_column!r} (a non-negative integer)",
                hint="add it before compiling, e.g. when writing the rows")
        if run and rid != last + 1:
            yield base, run
            run = []
        if not run:
            base = rid
        run.append(row)
        last = rid
    if run:
        yield base, run


def compile_dataset(ds: Any, *, dataset: Any, model: Any, mode: str = "default",
                    tokenize: bool = False, abbr: str | None = None,
                    model_abbr: str | None = None, id_column: str = "idx",
                    sampling_params: Mapping[str, Any] | None = None,
                    data_dir: str | Path | None = None, batch_size: int = 4096,
                    concurrency: int | tuple[int, int] | None = None,
                    num_cpus: float = 1) -> Any:
    """A ``ray.data.Dataset`` of records from a Dataset of test rows.

    Args:
        ds: The test rows, one column per field, with their index in the test split in
            ``id_column``.
        dataset: A dataset config file (``abbr`` picks one of several), a
            :class:`~prompt_compiler.config.DatasetConfig`, or a spec dict as in a YAML
            config. Its training split (from ``path``, ``data_files``, ``rows``/``splits`` or
            ``data_dir``) is read here, once.
        model: A meta template name, a model config file (``model_abbr`` picks one of
            several), a ModelConfig or a spec dict.
        mode: ``"default"`` or ``"compat"`` (as ``--mode``).
        tokenize: Records get ``input_ids`` (as ``--tokenize`` writes them: the model's
            ``tokenizer`` encodes the prompt, adding only the special tokens the model's
            tokenizer adds that the template did not write), and the same ids as
            ``tokenized_prompt``, the column vLLM's stage reads.
        sampling_params: Every record gets ``sampling_params`` (vLLM's generate stage
            needs one per row): filled from the record as ``--format vllm`` fills them
            (``max_tokens``, ``stop``, ``stop_token_ids``; ``max_tokens: 1`` and
            ``prompt_logprobs: 0`` for scoring records), with the same keys on every row and
            none null (``stop: []``); this dict's keys replace those one by one
            (:func:`prompt_compiler.emit.formats.sampling_params`).
        batch_size, num_cpus: Passed to ``map_batches``.
        concurrency: The stage's actor pool: a size, or ``(min, max)``; by default from 1
            up to the cluster's CPUs.

    Raises:
        UnsupportedError: A retriever or an inferencer this stage does not run.
    """
    from ..compiler import Compiler

    ray = require_ray("compile_dataset")
    pair = _pair(dataset, model, abbr, model_abbr)
    if tokenize:
        from ..run.suite import Suite, tokenized

        one = tokenized(Suite((), (pair.dataset,), (pair.model,)))
        pair = replace(pair, model=one.models[0])
    modes = {"default": "default", "compat": "opencompass", "opencompass": "opencompass"}
    prepared = _prepare(pair, modes.get(mode, mode), data_dir)
    Compiler(mode=modes.get(mode, mode))  # an unknown mode fails here, not on a worker
    ref = ray.put(prepared)
    kwargs: dict[str, Any] = {"batch_size": batch_size, "num_cpus": num_cpus,
                              "fn_constructor_args": (ref, id_column, tokenize,
                                                      sampling_params, None)}
    if isinstance(concurrency, tuple):
        low, high = concurrency
    elif concurrency is not None:
        low = high = concurrency
    else:
        low, high = 1, max(1, int(ray.cluster_resources().get("CPU", 1)))
    kwargs["compute"] = ray.data.ActorPoolStrategy(min_size=low, max_size=high)
    return ds.map_batches(CompileBatches, batch_format="pyarrow", **kwargs)

