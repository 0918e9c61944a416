"""What every inferencer kind shares: the job, in-context examples, prompt dispatch."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from ..data.reader import DatasetRows, ReaderConfig, RowView
from ..errors import (
    ConfigError,
    DataError,
    MissingTokenError,
    PromptCompilerError,
    RetrievalError,
    TemplateError,
)
from ..model.generation import GenerationSettings
from ..model.spec import Model
from ..policy import Policy
from ..promptlist import PromptList, prompt_sha256
from ..retrieve.basic import Retriever
from ..template.prompt_template import Ice, PromptTemplate, require_template
from ..template.raw_template import RawPromptTemplate

__all__ = ["SPANS_UNKNOWN", "Job", "Record", "Template", "fit_examples", "kept_count", "row_id"]

_T = TypeVar("_T")

Template = PromptTemplate | RawPromptTemplate


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


SPANS_UNKNOWN: Any = _Unknown()
"""``Record.spans`` when provenance could not be established (written as ``null``)."""


def row_id(rows: Sequence[Any], index: int) -> int:
    """The split position of ``rows[index]`` (what the reader wrote into its ``idx``)."""
    if isinstance(rows, RowView):
        return int(rows.positions[index])
    found = rows[index].get("idx", index)
    return found if type(found) is int else index


def _raw_labels(which: str) -> ConfigError:
    """OpenCompass reads PPL labels from a template's ``template`` dict, which a
    RawPromptTemplate does not have."""
    return ConfigError(
        f"PPL labels are read from the {which}'s label dict, and a RawPromptTemplate has none",
        key_path=f"infer_cfg.{which}", hint="give the inferencer its labels: labels=[...]",
        reference=("AttributeError", "'RawPromptTemplate' object has no attribute 'template'"))


@dataclass(frozen=True, slots=True)
class Record:
    """One compiled prompt: exactly what the model receives, and where it came from.

    Attributes:
        dataset: Dataset abbr.
        model: Model abbr.
        mode: ``gen``, ``ppl``, ``clp`` or ``chat``.
        index: Test-row index within the (ranged) test split.
        prompt: Exactly what the model receives: a str (LM models, chat templates), or the
            request messages (chat-template models without a template, API models).
        rendered: OpenCompass's parser output (LM string or its API message form), the
            form OpenCompass's own records hold.
        intermediate: The template stage's output (PromptList, str or messages).
        gold: The test row's output-column value (``None`` without an output column).
        ice_ids: In-context example ids used (after ``max_seq_len`` truncation).
        retrieved_ids: Ids the retriever chose (before truncation).
        label: The PPL label this prompt scores (``None`` otherwise).
        turn: The generation call within a chat row (``None`` otherwise).
        token_len: Tokens of ``prompt`` by the model's counter.
        token_len_full: Tokens of the prompt built with every retrieved example, before
            ``max_seq_len`` dropped any (``None`` when nothing was counted).
        over_limit: The prompt is still longer than ``max_seq_len`` with every example
            dropped that could be.
        chat_messages: OpenAI messages for chat-template models.
        extra: Mode-specific fields (normalizing split, chat history, ...).
        row: The row's id in the dataset's test split (its position before ``test_range``),
            the same under ``test_range``, ``--limit``, ``--only`` and ``--jobs``.
        max_out_len: Tokens the engine may generate (``None``: not set, or a scoring mode).
        stop: Stop strings (:mod:`prompt_compiler.model.generation`).
        stop_token_ids: Stop token ids (:mod:`prompt_compiler.model.generation`).
        input_ids: The token ids the model is fed (only with ``tokenize``; see
            :mod:`prompt_compiler.model.token_ids`).
        mask_length: PPL, CLP and LL records with ``input_ids``: the first ``mask_length``
            ids are context, not scored (OpenCompass's ``get_ppl(..., mask_length)``).
    """

    dataset: str
    model: str
    mode: str
    index: int
    prompt: Any
    intermediate: Any = None
    ice_ids: tuple[int, ...] = ()
    retrieved_ids: tuple[int, ...] = ()
    label: Any = None
    turn: int | None = None
    token_len: int | None = None
    chat_messages: Any = None
    model_input: Any = None
    """Set when the model receives something else again: a chat template's text or an
    API format's request (see :meth:`Model.deliver`)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    token_len_full: int | None = None
    over_limit: bool = False
    spans: Any = None
    """Span provenance when asked for (:mod:`prompt_compiler.assemble.spans`); ``None``
    otherwise."""
    rendered: Any = None
    gold: Any = None
    row: int | None = None
    max_out_len: int | None = None
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    input_ids: tuple[int, ...] | None = None
    mask_length: int | None = None

    @property
    def prompt_sha256(self) -> str:
        """The hash of :attr:`prompt`: the records' ``prompt_sha256`` (a string's UTF-8 text,
        a message list's compact JSON; :func:`prompt_compiler.promptlist.prompt_sha256`).

        Raises:
            DataError: The prompt has no UTF-8 form (a lone surrogate).
        """
        return prompt_sha256(self.prompt)


@dataclass
class Job:
    """One dataset x model compile: templates, rows, retriever, model and policy."""

    abbr: str
    reader: ReaderConfig
    rows: DatasetRows
    ice_template: Template | None
    prompt_template: Template | None
    retriever: Retriever
    model: Model
    policy: Policy
    options: Mapping[str, Any] = field(default_factory=dict)
    row: int | None = None
    """The test row being compiled (named by errors)."""
    token_lens: bool = True
    """Count every prompt's tokens (``Record.token_len``) even without ``max_seq_len``.
    The library's records carry the count; the CLI, which never writes it, turns this off so
    that tokens are only counted where a limit needs them."""
    _ice_cache: dict[int, Any] = field(default_factory=dict)
    _token_cache: dict[str, int] = field(default_factory=dict)
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    """The generation settings every record of the job carries."""

    def settle(self, rec: Record) -> Record:
        """``rec`` with its row id and the job's generation settings."""
        settings = self.settings
        return replace(rec, row=self.row_id(rec.index), max_out_len=settings.max_out_len,
                       stop=settings.stop, stop_token_ids=settings.stop_token_ids)

    def row_id(self, index: int) -> int:
        """The id of test row ``index`` in the dataset's test split (before ``test_range``)."""
        return row_id(self.rows.test, index)

    # -- in-context examples --------------------------------------------------

    def ice_example(self, i: int) -> Any:
        """Training row ``i`` rendered by the ice template (cached: rows repeat across tests)."""
        try:
            return self._ice_cache[i]
        except KeyError:
            pass
        tp = self.ice_template
        assert tp is not None
        n = len(self.rows.train)
        if not -n <= i < n:  # e.g. SlidingWindowRetriever's k past the pool, or more test rows
            raise RetrievalError(
                f"in-context example id {i} is outside the {n}-row training split",
                key_path="infer_cfg.retriever",
                hint="SlidingWindowRetriever takes the k rows before each test row (wrapping "
                     "once to the end of the pool): k and the test rows must fit the pool",
                reference=("IndexError", f"Invalid key: {i} is out of bounds for size {n}"))
        row = self.rows.train[i]
        label = None
        col = self.reader.output_column
        if col is None:
            # OpenCompass reads every example's answer (row[output_column]) before filling
            # the ice template, so examples without an output column fail there.
            raise DataError("in-context examples need reader_cfg.output_column (each example's "
                            "answer is read from it)", key_path="reader_cfg.output_column",
                            hint="set output_column, or use ZeroRetriever",
                            reference=("KeyError", "None"))
        if tp.kind == "labels":
            label = row.get(col)
        try:
            item = tp.ice_item(row, label, self.policy)
        except PromptCompilerError as err:
            err.message += f" (in-context example: training row {i})"
            raise err.located(key_path="infer_cfg.ice_template") from None
        self._ice_cache[i] = item
        return item

    def build_ice(self, ids: Sequence[int]) -> Ice:
        """The in-context block for ``ids``, joined as OpenCompass's retriever joins it."""
        tp = self.ice_template
        if tp is None:
            if ids:
                raise RetrievalError(
                    "the retriever chose in-context examples but infer_cfg has no ice_template",
                    key_path="infer_cfg", hint="add an ice_template or use ZeroRetriever",
                    reference=("AssertionError", "You have not specified ice_template while "
                               "retrieving examples from train set! Please either specify "
                               "ice_template or use `ZeroRetriever`."))
            return self.retriever.ice_eos_token
        if isinstance(tp, RawPromptTemplate):
            out: list[Any] = []
            for i in ids:
                out.extend(self.ice_example(i))
            return out
        if tp.kind == "meta":
            sep, eos = "", ""
        else:
            sep, eos = self.retriever.ice_separator, self.retriever.ice_eos_token
        examples = [self.ice_example(i) for i in ids]
        if examples and isinstance(examples[0], PromptList):
            items: list[Any] = []
            for ex in examples:
                items.extend(ex.items if isinstance(ex, PromptList) else (ex,))
                if sep:
                    items.append(sep)
            items.append(eos)
            return PromptList(tuple(items))
        if any(not isinstance(e, str) for e in examples):
            raise TemplateError("in-context examples mix str and section templates",
                                key_path="infer_cfg.ice_template",
                                reference=("TypeError", "sequence item: expected str instance"))
        return sep.join(examples) + eos

    # -- prompt dispatch ----------------------------------------------------------

    def _main_template(self) -> tuple[Template, str]:
        ice, prompt = self.ice_template, self.prompt_template
        require_template(ice is not None, prompt is not None)
        if prompt is not None and ice is not None:
            if prompt.ice_token is None:
                raise MissingTokenError(
                    "prompt_template needs an ice_token when an ice_template is given",
                    key_path="infer_cfg.prompt_template.ice_token",
                    reference=("NotImplementedError",
                               "ice_token of prompt_template is not provided"))
            return prompt, "infer_cfg.prompt_template"
        if ice is not None:
            if ice.ice_token is None:
                raise MissingTokenError(
                    "without a prompt_template the ice_template also builds the prompt, so it "
                    "needs an ice_token", key_path="infer_cfg.ice_template.ice_token",
                    reference=("NotImplementedError", "ice_token of ice_template is not provided"))
            return ice, "infer_cfg.ice_template"
        assert prompt is not None
        return prompt, "infer_cfg.prompt_template"

    def gen_prompt(self, index: int, ice: Ice, replace_token: str = "") -> Any:
        tp, path = self._main_template()
        try:
            prompt = tp.gen_item(self.rows.test[index], ice, self.policy,
                                 output_column=self.reader.output_column,
                                 replace_token=replace_token)
        except PromptCompilerError as err:
            raise err.located(key_path=path) from None
        return self._shaped(prompt)

    def _shaped(self, prompt: Any) -> Any:
        """The few-shot style applied (``fewshot: inline`` folds examples into the user turn)."""
        if self.options.get("fewshot") == "inline":
            from .fewshot import inline_examples

            return inline_examples(prompt)
        return prompt

    def label_prompt(self, index: int, ice: Ice, label: Any, remain_sep: bool = False) -> Any:
        tp, path = self._main_template()
        try:
            prompt = tp.label_item(self.rows.test[index], ice, label, self.policy,
                                   remain_sep=remain_sep)
        except PromptCompilerError as err:
            raise err.located(key_path=path) from None
        return self._shaped(prompt)

    def labels(self) -> list[Any]:
        """PPL labels: the template dict's keys, else the data's distinct answers."""
        prompt, ice = self.prompt_template, self.ice_template
        if isinstance(prompt, RawPromptTemplate):
            raise _raw_labels("prompt_template")
        if isinstance(prompt, PromptTemplate) and not isinstance(prompt.template, str):
            return prompt.labels
        if isinstance(ice, RawPromptTemplate) and ice.ice_token is not None:
            raise _raw_labels("ice_template")
        if (isinstance(ice, PromptTemplate) and ice.ice_token is not None
                and not isinstance(ice.template, str)):
            return ice.labels
        col = self.reader.output_column
        if col is None:
            raise DataError("PPL labels come from the output column, but reader_cfg has none",
                            key_path="reader_cfg.output_column",
                            hint="give a label-dict template or an output_column")
        try:  # one streaming pass; the set gets its values in the same order as set(list)
            distinct: dict[Any, None] = {}
            as_set: set[Any] = set()
            for row in self.rows.test:
                value = row.get(col)
                distinct[value] = None
                as_set.add(value)
        except TypeError:
            raise DataError(f"PPL labels in column {col!r} must be hashable values",
                            key_path="reader_cfg.output_column") from None
        if not self.policy.fixes("D6") and not any(isinstance(v, (str, bytes)) for v in distinct):
            # OpenCompass orders labels by set iteration; for numbers that order is
            # deterministic, so reproduce it. For strings it depends on PYTHONHASHSEED,
            # which no process can reproduce: first appearance keeps output stable.
            return list(as_set)
        return list(distinct)

    @property
    def counts_tokens(self) -> bool:
        """True when prompts are counted: a ``max_seq_len`` is set, or :attr:`token_lens`."""
        return self.token_lens or self.model.max_seq_len is not None

    def token_len(self, rendered: Any) -> int:
        """Tokens of a rendered prompt, counted once per distinct text."""
        if not isinstance(rendered, str):
            return self.model.token_len(rendered)
        cache = self._token_cache
        n = cache.get(rendered)
        if n is None:
            if len(cache) >= 4096:  # texts rarely repeat beyond one row's rebuilds
                cache.clear()
            n = cache[rendered] = self.model.token_len(rendered)
        return n

    def gold(self, index: int) -> Any:
        """The output-column value of test row ``index`` (``None`` without one)."""
        col = self.reader.output_column
        return None if col is None else self.rows.test[index].get(col)

    def final(self, rendered: Any, mode: str) -> dict[str, Any]:
        """The Record fields that say what the model receives (see :meth:`Model.inputs`)."""
        prompt, chat, delivered = self.model.inputs(rendered, mode, self.policy)
        return {"prompt": prompt, "rendered": rendered, "chat_messages": chat,
                "model_input": delivered}


_ONE_BY_ONE = 8
"""Examples dropped one at a time before :func:`kept_count` switches to a binary search."""


def kept_count(total: int, over: Callable[[int], bool]) -> int:
    """How many leading examples OpenCompass's loop keeps: "while examples remain and the
    prompt is over ``max_seq_len``, drop the last one" (``over(total)`` is known to be true).

    The first :data:`_ONE_BY_ONE` drops are tried one at a time, as the loop does; past them the
    kept count is binary-searched, since a prompt's length grows with its examples: a loop
    that rebuilt the prompt after each drop took O(n²) (14 s and 1.2 GB for 6,000 examples
    and ``max_seq_len: 1``), this takes O(n log n).
    """
    kept = total
    for _ in range(_ONE_BY_ONE):
        kept -= 1
        if kept <= 0 or not over(kept):
            return max(kept, 0)
    low, high = 0, kept  # over(high) holds; low is 0 or fits
    while high - low > 1:
        middle = (low + high) // 2
        if over(middle):
            high = middle
        else:
            low = middle
    return low


def fit_examples(ids: Sequence[int], build: Callable[[list[int]], _T],
                 over: Callable[[_T], bool]) -> tuple[int, _T]:
    """(kept count, what ``build`` made of the kept examples), for ``ids`` whose full prompt
    is over ``max_seq_len`` (``over(build(ids))`` holds); see :func:`kept_count`."""
    tried: dict[int, _T] = {}

    def attempt(kept: int) -> _T:
        if kept not in tried:
            tried[kept] = build(list(ids[:kept]))
        return tried[kept]

    kept = kept_count(len(ids), lambda k: over(attempt(k)))
    return kept, attempt(kept)
