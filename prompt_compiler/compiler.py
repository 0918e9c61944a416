"""The compiler: dataset config + rows + model -> records, through the pipeline stages.

A :class:`Compiler` owns its registries (retrievers, inferencer kinds, token
counters); registering a taken name raises. :meth:`Compiler.compile` validates a
dataset config (the OpenCompass ``infer_cfg``/``reader_cfg`` shape, with ``type``
given as a class name) and streams or collects the compiled records.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .assemble.base import Job, Record, Template
from .assemble.chat import chat_records
from .assemble.clp import clp_records
from .assemble.gen import gen_records
from .assemble.multiround import multiround_records
from .assemble.ppl import ppl_records, ppl_reference_failure, scored_reference_failure
from .assemble.scoring import ll_records, ppl_only_records, sw_ce_loss_records
from .config.custom import circular_rows, complete_custom_dataset
from .config.records import CUSTOM_KEY, DERIVED_ABBR_KEY
from .data.reader import DatasetRows, ReaderConfig, prepare_rows
from .errors import ConfigError, DataError, PromptCompilerError, RegistryError, UnsupportedError
from .model.generation import resolve as resolve_generation
from .model.spec import Model, build_model
from .model.tokenize import TokenCounter, token_counter, token_counters
from .plan.core import job_labels
from .plan.records import plan_records
from .policy import Policy
from .retrieve.basic import Retriever, default_retrievers
from .safety.values import find_problem, join_path
from .template.prompt_template import PromptTemplate, require_template
from .template.raw_template import RawPromptTemplate

__all__ = ["CompiledDataset", "Compiler", "IgnoredSettingWarning", "JobRun"]


class IgnoredSettingWarning(UserWarning):
    """A config key that OpenCompass accepts and ignores (e.g. an inferencer's ``temperature``)."""

INFERENCERS = {
    "GenInferencer": "gen", "PPLInferencer": "ppl", "CLPInferencer": "clp",
    "ChatInferencer": "chat", "SCInferencer": "sc", "PPLOnlyInferencer": "ppl_only",
    "InferencePPLOnlyInferencer": "inference_ppl_only", "LLInferencer": "ll",
    "SWCELossInferencer": "sw_ce_loss",
    # Prompts built in a loop with the model's replies: no prompt exists without a model.
    "AgentInferencer": "loop", "AttackInferencer": "loop", "ToTInferencer": "loop",
}
_GEN_KEYS = {"max_out_len", "min_out_len", "batch_size", "max_seq_len", "gen_field_replace_token",
             "stopping_criteria", "save_every", "generation_kwargs", "fix_id_list"}
_INFERENCER_KEYS = {
    "gen": _GEN_KEYS | {"multiround"},
    "sc": _GEN_KEYS | {"sc_size", "infer_type"},
    "ppl": {"max_out_len", "batch_size", "max_seq_len", "labels", "fix_id_list"},
    "ll": {"max_out_len", "batch_size", "max_seq_len", "labels", "fix_id_list"},
    "ppl_only": {"max_out_len", "batch_size", "max_seq_len", "save_every", "fix_id_list"},
    "inference_ppl_only": {"max_out_len", "batch_size", "max_seq_len", "save_every",
                           "fix_id_list"},
    "sw_ce_loss": {"max_out_len", "batch_size", "max_seq_len", "block_size", "stride"},
    "clp": {"max_out_len", "batch_size", "max_seq_len", "single_token", "fix_id_list"},
    "chat": {"max_out_len", "batch_size", "max_seq_len", "infer_mode", "save_every"},
    "loop": set(),
}
_MODEL_LOOP_WHY = {
    "AgentInferencer": "an agent framework builds each prompt from the model's previous "
                       "replies and tool results",
    "AttackInferencer": "the adversarial attack rewrites the prompt from the model's scores",
    "ToTInferencer": "each tree-of-thought step is prompted with thoughts the model generated",
}


def _template_arguments(kind: str, params: Mapping[str, Any], takes: tuple[str, ...],
                        ours: tuple[str, ...], where: str) -> None:
    """The keys of a template config, as OpenCompass 0.5.4's class takes them as arguments
    (its first parameter required): another key or a missing first one is its TypeError."""
    from .errors import TemplateTypeError

    unknown = [str(k) for k in params if k not in takes and k not in ours]
    if unknown:
        why = f"got an unexpected keyword argument '{unknown[0]}'"
    elif takes[0] not in params:
        why = f"missing 1 required positional argument: '{takes[0]}'"
    else:
        return
    import difflib

    close = difflib.get_close_matches(unknown[0], takes + ours, n=1) if unknown else []
    raise TemplateTypeError(
        f"{kind} takes {', '.join(takes + ours)}; "
        + (f"unexpected: {', '.join(unknown)}" if unknown else f"{takes[0]!r} is missing")
        + (f" (did you mean {close[0]!r}?)" if close else ""),
        key_path=where, reference=("TypeError", f"{kind}.__init__() {why}"))


def _check_shipped(model: Model, compat: bool) -> None:
    """Compat mode: a class OpenCompass 0.5.4 does not ship (one fork's ``QwenLM``) is the
    unknown class it is in OpenCompass's registry."""
    from .model.classes import find_class

    entry = find_class(model.model_class)
    if not compat or entry is None or entry.shipped:
        return
    raise RegistryError(
        f"unknown model class {entry.name!r}: OpenCompass 0.5.4 does not ship it (a class of "
        "one fork of OpenCompass)", model=model.abbr, key_path="model.type",
        hint="the default mode compiles its prompts as an lm model",
        reference=("KeyError", f"{entry.name} is not in the opencompass::model registry."))


def _check_scoring(model: Model, inferencer: str, compat: bool) -> None:
    """Compat mode: OpenCompass 0.5.4 cannot score with this model class, so it raises (its
    exception attached). The default mode compiles the prompts (docs/errors.md)."""
    from .config.known_keys import scoring_class, scoring_failure
    from .errors import ScoringMethodMissingError, ScoringNotImplementedError

    failure = scoring_failure(model.model_class, inferencer) if compat else None
    if failure is None:
        return
    cls = ScoringNotImplementedError if failure[0] == "NotImplementedError" \
        else ScoringMethodMissingError
    raise cls(f"OpenCompass 0.5.4 cannot run {inferencer} with a {model.model_class} model: "
              f"{failure[0]}: {failure[1]}", model=model.abbr,
              key_path="infer_cfg.inferencer.type",
              hint="the default mode compiles these prompts; OpenCompass scores them only with "
              f"a class that has the method (e.g. {scoring_class(inferencer)})",
              reference=failure)


def type_name(value: Any) -> str:
    """``'opencompass.openicl.PromptTemplate'`` or a class -> ``'PromptTemplate'``."""
    if isinstance(value, type):
        value = value.__name__
    return str(value).rsplit(".", 1)[-1]


PLUGIN_GROUP = "prompt_compiler.retrievers"


def _plugin(name: str) -> Callable[[Mapping[str, Any], str], Retriever] | None:
    """A retriever builder published by an installed package as ``pkg/name``.

    Packages declare ``[project.entry-points."prompt_compiler.retrievers"] name = "mod:builder"``;
    they are looked up only when a config names them, so an unused plugin is never imported.
    """
    if "/" not in name:
        return None
    from importlib.metadata import entry_points

    dist_name, _, short = name.partition("/")
    for ep in entry_points(group=PLUGIN_GROUP):
        owner = ep.dist.name if ep.dist is not None else ""
        if ep.name == short and owner.replace("_", "-") == dist_name.replace("_", "-"):
            builder: Callable[[Mapping[str, Any], str], Retriever] = ep.load()
            return builder
    return None


def _did_you_mean(name: str, options: Sequence[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, options, n=3)
    return f"did you mean {' or '.join(map(repr, close))}?" if close else ""


@dataclass(frozen=True, slots=True)
class CompiledDataset:
    """All records of one dataset x model, plus what the reference system would add."""

    dataset: str
    model: str
    kind: str
    """``gen``, ``ppl``, ``clp`` or ``chat``."""
    records: tuple[Record, ...]
    labels: tuple[Any, ...] | None = None
    retrieved: tuple[tuple[int, ...], ...] = ()
    reference_failure: tuple[str, str] | None = None
    """An error OpenCompass itself raises *after* building these prompts (PPL with API parsers)."""
    infer_mode: str | None = None


@dataclass(frozen=True, slots=True)
class JobRun:
    """What :meth:`Compiler.run` gives: the retrieved example ids of every test row, the ppl
    or ll labels (``None`` for other kinds) and the records, streamed."""

    retrieved: Sequence[Sequence[int]]
    labels: list[Any] | None
    records: Iterator[Record]


@dataclass
class Compiler:
    """Owns the registries and the compile policy.

    Args:
        mode: ``"default"`` (OpenCompass's listed defects fixed) or ``"opencompass"``.
    """

    mode: str = "default"
    retrievers: dict[str, Callable[[Mapping[str, Any], str], Retriever]] = field(
        default_factory=default_retrievers)
    token_counters: dict[str, TokenCounter] = field(default_factory=token_counters)
    """This compiler's counters: the process's (:func:`prompt_compiler.register_token_counter`,
    which config files can name) when it was made, and its own (:meth:`register_token_counter`)."""

    def __post_init__(self) -> None:
        self.policy = Policy.of(self.mode)

    def register_retriever(self, name: str,
                           builder: Callable[[Mapping[str, Any], str], Retriever]) -> None:
        """Add a retriever type; a taken name raises :class:`RegistryError`."""
        if name in self.retrievers:
            raise RegistryError(f"a retriever named {name!r} is already registered")
        self.retrievers[name] = builder

    def register_token_counter(self, name: str, counter: TokenCounter) -> None:
        """Add a token counter to this compiler only; a taken name raises
        :class:`RegistryError`. Config files loaded by :func:`prompt_compiler.load` can name
        the counters of :func:`prompt_compiler.register_token_counter` (every compiler's)."""
        if name in self.token_counters:
            raise RegistryError(f"a token counter named {name!r} is already registered")
        self.token_counters[name] = counter

    # -- building -------------------------------------------------------------

    def model(self, cfg: Mapping[str, Any] | Model, *, where: str = "model") -> Model:
        """A :class:`Model` from a model config (:func:`prompt_compiler.model.spec.build_model`
        with this compiler's counters)."""
        return build_model(cfg, where=where, counters=self._counters())

    def token_counter(self, name: Any, where: str = "model") -> TokenCounter:
        """A counter of this compiler or of the process by name, else a real tokenizer the
        name points to (:func:`prompt_compiler.model.tokenize.token_counter`)."""
        return token_counter(name, where, self._counters())

    def _counters(self) -> dict[str, TokenCounter]:
        # counters registered for the process after this compiler was made count too
        return {**token_counters(), **self.token_counters}

    @staticmethod
    def _template(cfg: Any, where: str, root: Path | None = None) -> Template:
        if isinstance(cfg, (PromptTemplate, RawPromptTemplate)):
            return cfg
        if not isinstance(cfg, Mapping):
            raise ConfigError(f"a template config must be a dict with a 'type', got {cfg!r}",
                              key_path=where)
        kind = type_name(cfg.get("type", "PromptTemplate"))
        params = {k: v for k, v in cfg.items() if k != "type"}
        if kind == "PromptTemplate":
            _template_arguments(kind, params, ("template", "ice_token", "sep_token"),
                                ("engine",), where)
            return PromptTemplate(params["template"], params.get("ice_token"),
                                  params.get("sep_token"),
                                  where=f"{where}.template", engine=params.get("engine", "format"))
        if kind == "RawPromptTemplate":
            _template_arguments(kind, params, ("messages", "format_variables", "ice_token"), (),
                                where)
            return RawPromptTemplate.build(params["messages"], params.get("format_variables", True),
                                           params.get("ice_token", "</E>"), where=where)
        if kind in ("OlympiadBenchTemplate", "OlympiadBenchRawTemplate"):
            if params:  # OpenCompass's classes take no arguments (TypeError there)
                raise ConfigError(f"{kind} takes no settings; unexpected: "
                                  f"{', '.join(sorted(map(str, params)))}", key_path=where,
                                  reference=("TypeError", "__init__() got an unexpected keyword "
                                             f"argument '{next(iter(params))}'"))
            from .template import olympiadbench as ob

            try:
                if kind == "OlympiadBenchTemplate":
                    return ob.OlympiadBenchTemplate(where=f"{where}.template", root=root)
                return ob.OlympiadBenchRawTemplate.create(where=where, root=root)
            except PromptCompilerError as err:
                err.key_path = f"{where}.type"
                raise
        names = ["PromptTemplate", "RawPromptTemplate", "OlympiadBenchTemplate",
                 "OlympiadBenchRawTemplate"]
        raise RegistryError(
            f"unknown template type {kind!r}; available: {', '.join(names)}",
            key_path=f"{where}.type", hint=_did_you_mean(kind, names))

    def job(self, dataset: Mapping[str, Any], model: Mapping[str, Any] | Model,
            options: Mapping[str, Any] | None = None, *, lean: bool = False,
            opencompass_root: Path | None = None) -> tuple[Job, str, dict[str, Any]]:
        """Validate a dataset config and build the compile job (templates parsed once).

        ``opencompass_root``: the folder ``opencompass`` stood for when the dataset's config
        loaded (:attr:`~prompt_compiler.config.DatasetConfig.opencompass_root`), where
        OpenCompass's own files are read (OlympiadBench's prompt text)."""
        _check_plain(dataset, model, options)
        abbr = str(dataset.get("abbr") or "dataset")
        try:
            if dataset.get(CUSTOM_KEY):
                dataset = _complete_custom(dataset)
            job, kind, params = self._job(abbr, dataset, model, options or {},
                                          opencompass_root)
            job.token_lens = not lean
            return job, kind, params
        except PromptCompilerError as err:
            raise err.located(dataset=abbr) from None

    def _job(self, abbr: str, dataset: Mapping[str, Any], model_cfg: Mapping[str, Any] | Model,
             options: Mapping[str, Any], root: Path | None = None
             ) -> tuple[Job, str, dict[str, Any]]:
        infer = dataset.get("infer_cfg")
        if not isinstance(infer, Mapping):
            raise ConfigError("infer_cfg is required and must be a dict", key_path="infer_cfg")
        reader = ReaderConfig.from_dict(dataset.get("reader_cfg"))
        model = self.model(model_cfg).with_dataset_keys(dataset)
        ice = self._template(infer["ice_template"], "infer_cfg.ice_template", root) \
            if "ice_template" in infer else None
        prompt = self._template(infer["prompt_template"], "infer_cfg.prompt_template", root) \
            if "prompt_template" in infer else None
        require_template(ice is not None, prompt is not None)
        if "retriever" not in infer:  # OpenCompass's task reads infer_cfg['retriever'] too
            raise ConfigError("infer_cfg has no 'retriever'", key_path="infer_cfg.retriever",
                              hint="add retriever=dict(type='ZeroRetriever') for no in-context "
                                   "examples")
        ret_cfg = infer["retriever"]
        if not isinstance(ret_cfg, Mapping):
            raise ConfigError("retriever must be a dict with a 'type'",
                              key_path="infer_cfg.retriever")
        raw_type = ret_cfg.get("type")
        ret_type = raw_type if isinstance(raw_type, str) and "/" in raw_type \
            else type_name(raw_type)
        if ret_type not in self.retrievers and (found := _plugin(ret_type)) is not None:
            self.retrievers[ret_type] = found
        if ret_type not in self.retrievers:
            raise RegistryError(
                f"unknown retriever {ret_type!r}; available: {', '.join(self.retrievers)}",
                key_path="infer_cfg.retriever.type",
                hint=_did_you_mean(ret_type, list(self.retrievers)))
        retriever = self.retrievers[ret_type](
            {k: v for k, v in ret_cfg.items() if k != "type"}, "infer_cfg.retriever")
        inf_cfg = infer.get("inferencer")
        if not isinstance(inf_cfg, Mapping):
            raise ConfigError("inferencer must be a dict with a 'type'",
                              key_path="infer_cfg.inferencer")
        inf_type = type_name(inf_cfg.get("type"))
        if inf_type not in INFERENCERS:
            raise RegistryError(
                f"unknown inferencer {inf_type!r}; available: {', '.join(INFERENCERS)}",
                key_path="infer_cfg.inferencer.type",
                hint=_did_you_mean(inf_type, list(INFERENCERS)))
        kind = INFERENCERS[inf_type]
        if kind == "loop":
            raise UnsupportedError(
                f"{inf_type} needs a model in the loop: {_MODEL_LOOP_WHY[inf_type]}, so there "
                "is no prompt to compile without running the model",
                key_path="infer_cfg.inferencer.type",
                hint="see docs/opencompass-corpus.md (model-in-the-loop inferencers)")
        _check_shipped(model, self.policy.name == "opencompass")
        _check_scoring(model, inf_type, self.policy.name == "opencompass")
        params = {k: v for k, v in inf_cfg.items() if k != "type"}
        unknown = set(params) - _INFERENCER_KEYS[kind]
        if unknown and self.policy.name != "opencompass":
            # OpenCompass's inferencers take **kwargs and ignore what they do not use
            # (temperature, do_sample, ...): accepted, with a warning in default mode.
            warnings.warn(IgnoredSettingWarning(
                f"dataset {abbr!r}: {inf_type} ignores {', '.join(sorted(map(str, unknown)))} "
                f"(as OpenCompass does); it uses {', '.join(sorted(_INFERENCER_KEYS[kind]))}"),
                stacklevel=4)
        # Without an abbr of its own, OpenCompass's dataset class labels rows "dataset".
        subdivision = "dataset" if dataset.get(DERIVED_ABBR_KEY) else abbr
        rows = prepare_rows(subdivision, reader, splits=dataset.get("splits"),
                            rows=dataset.get("rows"), where="dataset") \
            if ("splits" in dataset or "rows" in dataset) else None
        if rows is None:
            raise ConfigError("the dataset has no rows: give 'rows' or 'splits' (or load them "
                              "with prompt_compiler.data.sources first)", key_path="dataset")
        for col in reader.input_columns:
            if rows.test and col not in rows.test[0]:
                from .errors import MissingFieldError

                raise MissingFieldError(
                    f"input column {col!r} is not in the rows; columns: "
                    f"{', '.join(str(c) for c in rows.test[0] if c not in ('subdivision', 'idx'))}",
                    key_path="reader_cfg.input_columns", row=0)
        from .assemble.fewshot import check_fewshot, check_ice_template

        opts = dict(options)
        limit = opts.pop("limit", None)  # --limit N: the first N test rows
        if limit is not None:
            rows = DatasetRows(rows.train, rows.test[:limit])
        if opts.get("fewshot") is not None:  # the CLI's --fewshot wins over the dataset key
            opts["fewshot"] = check_fewshot(opts["fewshot"], where="--fewshot")
        else:
            opts["fewshot"] = check_fewshot(dataset.get("fewshot"), where="fewshot")
        check_ice_template(opts["fewshot"], ice)
        job = Job(abbr, reader, rows, ice, prompt, retriever, model, self.policy, opts)
        job.settings = resolve_generation(model, kind, params)
        return job, kind, params

    # -- compiling --------------------------------------------------------------

    def iter_records(self, dataset: Mapping[str, Any], model: Mapping[str, Any] | Model, *,
                     options: Mapping[str, Any] | None = None,
                     reply: Callable[[Any], str] | None = None,
                     lean: bool = False, rows: range | None = None) -> Iterator[Record]:
        """Stream the records of one dataset x model (see :meth:`compile`).

        ``lean=True`` (what the CLI writes) streams records built through a compiled
        :mod:`~prompt_compiler.plan` where one applies: the same prompts, ids and labels, but
        no ``intermediate``, and ``token_len`` only where ``max_seq_len`` needs the count.
        ``rows`` limits the records to those test rows (a dataset split across processes).
        Span provenance is added by the caller (:func:`prompt_compiler.assemble.spans.add_spans`
        on :meth:`run`'s output).
        """
        job, kind, params = self.job(dataset, model, options, lean=lean)
        yield from self.job_records(job, kind, params, reply=reply, lean=lean, rows=rows)

    def job_records(self, job: Job, kind: str, params: Mapping[str, Any], *,
                    reply: Callable[[Any], str] | None = None, lean: bool = False,
                    rows: range | None = None) -> Iterator[Record]:
        """The records of a job built by :meth:`job` (see :meth:`iter_records`)."""
        yield from self.run(job, kind, params, reply=reply, lean=lean, rows=rows).records

    def retrieve(self, job: Job) -> Sequence[Sequence[int]]:
        """The in-context example ids of every test row of ``job`` (errors name the dataset)."""
        try:
            return job.retriever.retrieve(job.rows.train, job.rows.test, job.reader, job.policy)
        except PromptCompilerError as err:
            raise err.located(dataset=job.abbr) from None

    def run(self, job: Job, kind: str, params: Mapping[str, Any], *,
            reply: Callable[[Any], str] | None = None, lean: bool = False,
            rows: range | None = None) -> JobRun:
        """Retrieve, then assemble and render the records of ``job`` (streamed, lazily)."""
        retrieved = self.retrieve(job)
        labels = job_labels(job, params) if kind in ("ppl", "ll") else None
        token = params.get("gen_field_replace_token", "")
        planned = plan_records(job, kind, params, retrieved, labels=labels, rows=rows) \
            if lean else None
        records: Iterable[Record]
        if planned is not None:  # lean gen and ppl records through plans (.plan)
            records = planned
        elif kind == "gen" and params.get("multiround"):
            records = multiround_records(job, retrieved, reply=reply,
                                         gen_field_replace_token=token)
        elif kind == "gen":
            records = gen_records(job, retrieved, gen_field_replace_token=token, rows=rows)
        elif kind == "sc":
            sc_size = params.get("sc_size", 1)
            records = (replace(r, extra={**r.extra, "samples": sc_size}) for r in
                       gen_records(job, retrieved, gen_field_replace_token=token, rows=rows))
        elif kind == "ll":
            assert labels is not None
            records = ll_records(job, ppl_records(job, retrieved, labels=labels, rows=rows))
        elif kind == "ppl":
            assert labels is not None
            records = ppl_records(job, retrieved, labels=labels,
                                  normalizing_str=job.options.get("normalizing_str"), rows=rows)
        elif kind in ("ppl_only", "inference_ppl_only"):
            records = ppl_only_records(job, retrieved, token_labels=kind != "ppl_only")
        elif kind == "sw_ce_loss":
            records = sw_ce_loss_records(job, params)
        elif kind == "clp":
            records = clp_records(job, retrieved, single_token=params.get("single_token", True))
        else:
            records = chat_records(job, infer_mode=params.get("infer_mode", "last"), reply=reply)
        if rows is not None and (kind in ("clp", "chat", "ppl_only", "inference_ppl_only",
                                          "sw_ce_loss") or params.get("multiround")):
            records = (r for r in records if r.index in rows)
        return JobRun(retrieved, labels,
                      _located(_settled(records, job, kind, params, labels), job))

    def compile(self, dataset: Mapping[str, Any], model: Mapping[str, Any] | Model, *,
                options: Mapping[str, Any] | None = None,
                reply: Callable[[Any], str] | None = None) -> CompiledDataset:
        """Compile every prompt of one dataset for one model.

        Args:
            dataset: A dataset config: ``abbr``, ``reader_cfg``, ``infer_cfg`` and the rows
                (``rows``, or ``splits`` by name).
            model: A model config (``abbr``, ``renderer`` (or ``parser``), ``meta_template``,
                ``max_seq_len``) or a :class:`Model`.
            options: ``{"normalizing_str": ...}`` for normalized PPL scoring.
            reply: Stands in for the model's answers in ChatInferencer ``every`` mode.
        """
        job, kind, params = self.job(dataset, model, options)
        run = self.run(job, kind, params, reply=reply)
        retrieved, labels, out = run.retrieved, run.labels, tuple(run.records)
        failure = None
        if kind == "ppl" and retrieved:
            # the first row's examples as the first label left them (after any truncation)
            first = list(out[0].ice_ids) if out else retrieved[0]
            failure = ppl_reference_failure(job, job.build_ice(first))
        elif kind in ("clp", "ll") and out:
            failure = scored_reference_failure(job, kind, out[0])
        return CompiledDataset(job.abbr, job.model.abbr, kind, out,
                               tuple(labels) if labels is not None else None,
                               tuple(tuple(r) for r in retrieved), failure,
                               params.get("infer_mode", "last") if kind == "chat" else None)


def _complete_custom(dataset: Mapping[str, Any]) -> dict[str, Any]:
    """A path-only custom dataset completed from its first row (rows rotated when circular)."""
    rows = dataset.get("rows")
    splits = dataset.get("splits")
    if rows is None and isinstance(splits, Mapping) and splits:
        rows = splits.get("test") or next(iter(splits.values()))
    if (not isinstance(rows, Sequence) or isinstance(rows, (str, bytes)) or not rows
            or not isinstance(rows[0], Mapping)):
        raise ConfigError("a path-only custom dataset is completed from the first row of its "
                          "data file, but it has no rows", key_path="path")
    entry = {k: v for k, v in dataset.items() if k not in (CUSTOM_KEY, "rows", "splits")}
    spec = complete_custom_dataset(entry, rows[0])
    if spec["type"] == "CircularCustomDataset":
        rows = circular_rows(list(rows), spec["option_keys"], spec["answer_key"])
    spec["rows"] = rows
    return spec


def _settled(records: Iterable[Record], job: Job, kind: str, params: Mapping[str, Any],
             labels: Sequence[Any] | None) -> Iterator[Record]:
    """Records with their row id, the job's generation settings and, with ``tokenize`` (or
    data holding special-token text, D23), their token ids."""
    # a call-time import: which text came from data is read from the record's spans
    from .assemble.spans import record_ids

    ids = record_ids(job, kind, params, labels)
    from .model.data_tokens import unsplit

    warn = unsplit(job.model, job.policy)
    for rec in records:
        if warn is not None and not warn.warned and type(rec.index) is int:
            warn.check(job.rows.test[rec.index], rec.index)
        rec = job.settle(rec)
        yield rec if ids is None else ids.add(rec)


def _located(records: Iterator[Record], job: Job) -> Iterator[Record]:
    """Attach dataset/model/row to any error raised while a row is compiled."""
    try:
        yield from records
    except PromptCompilerError as err:
        raise err.located(dataset=job.abbr, model=job.model.abbr, row=job.row) from None


def _check_plain(dataset: Any, model: Any, options: Any) -> None:
    """The library's door: dicts of plain values within the limits of
    :mod:`~prompt_compiler.safety.values`.

    Rows are checked one by one so that an error names its row (and split).
    """
    if not isinstance(dataset, Mapping):
        raise ConfigError(f"a dataset config must be a dict, got {type(dataset).__name__}")
    rows = {k: dataset[k] for k in ("rows", "splits") if k in dataset}
    for name, value in (("", {k: v for k, v in dataset.items() if k not in rows}),
                        ("model", model), ("options", options)):
        if isinstance(value, Model) or value is None:
            continue
        if name and not isinstance(value, Mapping):
            raise ConfigError(f"{name} must be a dict, got {type(value).__name__}", key_path=name)
        found = find_problem(value)
        if found is not None:
            raise ConfigError(found[1], key_path=join_path(name, found[0]) or None)
    splits = rows.get("splits")
    if "splits" in rows and not isinstance(splits, Mapping):
        raise DataError(f"'splits' must map split names to lists of rows, got "
                        f"{type(splits).__name__}", key_path="splits")
    named = list(splits.items()) if isinstance(splits, Mapping) else []
    if isinstance(rows.get("rows"), list):
        named.append((None, rows["rows"]))
    for split, items in named:
        for index, row in enumerate(items if isinstance(items, list) else ()):
            found = find_problem(row)
            if found is not None:
                where = f"split {split!r}, " if split is not None else ""
                column = found[0].removeprefix("[").replace("]", "", 1)
                raise DataError(f"{where}column {column}: {found[1]}", row=index)
