"""Retrievers: which training rows become each test row's in-context examples.

Each retriever returns, for every test row, a list of training-row ids. They mirror
OpenCompass's retrievers, including its separator defaults (``ice_separator`` and
``ice_eos_token`` are ``'\\n'`` except for :class:`ZeroRetriever`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from ..data.reader import ReaderConfig
from ..errors import ConfigError, RetrievalError, UnsupportedError
from ..policy import Policy

__all__ = [
    "BM25Retriever",
    "BlockIndex",
    "FixKRetriever",
    "RandomRetriever",
    "Repeated",
    "Retriever",
    "SlidingWindowRetriever",
    "XiezhiRetriever",
    "ZeroRetriever",
    "default_retrievers",
    "stateless_sample",
]

Row = Mapping[str, Any]


class Retriever(Protocol):
    """Chooses in-context example ids for every test row."""

    ice_separator: str
    ice_eos_token: str

    def retrieve(
        self, train: Sequence[Row], test: Sequence[Row], reader: ReaderConfig, policy: Policy
    ) -> Sequence[list[int]]: ...


class BlockRetriever(Protocol):
    """A retriever whose ids for a test row depend on that row and the training rows alone,
    so any block of test rows is retrieved on its own (a Ray task, a batch of a Ray dataset)."""

    block_local: ClassVar[bool]
    """True (a subclass that retrieves for the test split as a whole says False)."""

    def block_state(self, train: Sequence[Row], reader: ReaderConfig, policy: Policy) -> Any:
        """What retrieving for a block needs from the training rows (checked once here; it
        pickles: engines send it to their workers)."""
        ...

    def retrieve_block(self, state: Any, rows: Sequence[Row], first: int,
                       reader: ReaderConfig, policy: Policy) -> Sequence[list[int]]:
        """The ids of ``rows``, the test rows ``first`` to ``first + len(rows) - 1``: what
        :meth:`Retriever.retrieve` gives those rows of the whole test split."""
        ...


@dataclass(frozen=True, slots=True)
class BlockIndex:
    """A retriever with its :meth:`BlockRetriever.block_state`: the example ids of any block
    of test rows. Built once per job; it pickles."""

    retriever: Any
    state: Any

    @staticmethod
    def of(retriever: Any, train: Sequence[Row], reader: ReaderConfig,
           policy: Policy) -> BlockIndex | None:
        """The block index of ``retriever``, or None where it retrieves for the whole test
        split only (a row's ids depend on the rows before it)."""
        if not getattr(retriever, "block_local", False):
            return None
        return BlockIndex(retriever, retriever.block_state(train, reader, policy))

    @property
    def reads_rows(self) -> bool:
        """Whether the test rows' values matter (not for fixed or no examples)."""
        return not isinstance(self.retriever, (ZeroRetriever, FixKRetriever))

    def ids(self, rows: Sequence[Row], first: int, reader: ReaderConfig,
            policy: Policy) -> Sequence[list[int]]:
        """The example ids of ``rows``, the test rows ``first`` to ``first + len(rows) - 1``
        (indexed from 0)."""
        found: Sequence[list[int]] = self.retriever.retrieve_block(self.state, rows, first,
                                                                   reader, policy)
        return found


class Repeated(Sequence[list[int]]):
    """The same ids for each of ``n`` test rows, without holding ``n`` lists: each access
    gives a fresh list (a caller may change it without touching other rows)."""

    def __init__(self, ids: Sequence[int], n: int) -> None:
        self.ids, self.n = tuple(ids), n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [list(self.ids) for _ in range(*index.indices(self.n))]
        if not -self.n <= index < self.n:
            raise IndexError("row index out of range")
        return list(self.ids)

    def __iter__(self) -> Iterator[list[int]]:
        for _ in range(self.n):
            yield list(self.ids)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(other) == self.n and all(list(o) == list(self.ids) for o in other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class ZeroRetriever:
    """No examples (zero-shot)."""

    ice_separator: str = ""
    ice_eos_token: str = ""
    block_local: ClassVar[bool] = True

    def retrieve(self, train: Sequence[Row], test: Sequence[Row], reader: ReaderConfig,
                 policy: Policy) -> Sequence[list[int]]:
        return Repeated((), len(test))

    def block_state(self, train: Sequence[Row], reader: ReaderConfig, policy: Policy) -> Any:
        return None

    def retrieve_block(self, state: Any, rows: Sequence[Row], first: int,
                       reader: ReaderConfig, policy: Policy) -> Sequence[list[int]]:
        return self.retrieve((), rows, reader, policy)


@dataclass(frozen=True, slots=True)
class FixKRetriever:
    """The same fixed ids (order kept, repeats allowed) for every test row."""

    fix_id_list: tuple[int, ...] = ()
    ice_separator: str = "\n"
    ice_eos_token: str = "\n"
    block_local: ClassVar[bool] = True
    ice_num: int = 1  # accepted for compatibility; OpenCompass ignores it too

    def retrieve(self, train: Sequence[Row], test: Sequence[Row], reader: ReaderConfig,
                 policy: Policy) -> Sequence[list[int]]:
        for pos, i in enumerate(self.fix_id_list):
            if not 0 <= i < len(train):
                raise RetrievalError(
                    f"fix_id_list[{pos}] = {i} is out of range: the training split has "
                    f"{len(train)} rows (ids 0..{len(train) - 1})",
                    key_path=f"infer_cfg.retriever.fix_id_list[{pos}]",
                    reference=("AssertionError", f"Index {i} is out of range of {len(train)}"),
                )
        return Repeated(self.fix_id_list, len(test))

    def block_state(self, train: Sequence[Row], reader: ReaderConfig, policy: Policy) -> Any:
        self.retrieve(train, [], reader, policy)  # checks the ids once
        return None

    def retrieve_block(self, state: Any, rows: Sequence[Row], first: int,
                       reader: ReaderConfig, policy: Policy) -> Sequence[list[int]]:
        return Repeated(self.fix_id_list, len(rows))


@dataclass(frozen=True, slots=True)
class RandomRetriever:
    """``ice_num`` distinct random ids per row, drawn in row order from one seeded stream.

    The draws equal OpenCompass's (NumPy's legacy ``RandomState`` seeded once), so the
    ids of a row depend on its position in the test split, not on which rows are compiled.
    """

    ice_num: int = 1
    seed: int = 43
    ice_separator: str = "\n"
    ice_eos_token: str = "\n"
    block_local: ClassVar[bool] = True
    stateless: bool = False
    """Draw each row's ids from (seed, row id) alone (see :func:`stateless_sample`)."""

    def retrieve(self, train: Sequence[Row], test: Sequence[Row], reader: ReaderConfig,
                 policy: Policy) -> list[list[int]]:
        if self.ice_num > len(train):
            raise RetrievalError(
                f"ice_num={self.ice_num} examples cannot be drawn without replacement from "
                f"{len(train)} training rows", key_path="infer_cfg.retriever.ice_num",
                reference=("ValueError", "Cannot take a larger sample than population when "
                           "'replace=False'"),
            )
        if self.stateless:
            return [stateless_sample(self.seed, row_id(row, pos), len(train), self.ice_num)
                    for pos, row in enumerate(test)]
        import numpy as np  # only this retriever needs NumPy's RandomState

        rng = np.random.RandomState(self.seed)
        return [[int(i) for i in rng.choice(len(train), self.ice_num, replace=False)]
                for _ in test]

    def block_state(self, train: Sequence[Row], reader: ReaderConfig, policy: Policy) -> Any:
        """The training split's size (stateless draws only)."""
        if not self.stateless:
            raise UnsupportedError(
                "RandomRetriever draws each row's examples from one stream in row order, "
                "so a row's examples depend on the rows before it",
                key_path="infer_cfg.retriever",
                hint="set stateless=True: each row's examples then depend on its id alone")
        self.retrieve(train, [], reader, policy)  # checks ice_num once
        return len(train)

    def retrieve_block(self, state: Any, rows: Sequence[Row], first: int,
                       reader: ReaderConfig, policy: Policy) -> Sequence[list[int]]:
        return [stateless_sample(self.seed, row_id(row, first + k), state, self.ice_num)
                for k, row in enumerate(rows)]


def row_id(row: Row, position: int) -> int:
    """A test row's stable id: its index in its split (``idx``), else its position."""
    idx = row.get("idx")
    return idx if isinstance(idx, int) and not isinstance(idx, bool) else position


def _uniform(seed: int, row: int, draw: int, bound: int) -> int:
    """An integer in ``[0, bound)`` from (seed, row, draw) alone: SHA-256 of the three,
    rejection-sampled so every value is equally likely. The same on every machine."""
    limit = (1 << 64) - (1 << 64) % bound
    attempt = 0
    while True:
        digest = hashlib.sha256(f"{seed}:{row}:{draw}:{attempt}".encode()).digest()
        value = int.from_bytes(digest[:8], "big")
        if value < limit:
            return value % bound
        attempt += 1


def stateless_sample(seed: int, row: int, population: int, k: int) -> list[int]:
    """``k`` distinct ids out of ``range(population)`` for test row ``row``.

    A partial Fisher-Yates shuffle over a sparse swap table: O(k) time and memory,
    uniform over ordered samples, and a function of ``(seed, row)`` only, so a row's
    examples never depend on which other rows are compiled.
    """
    swapped: dict[int, int] = {}
    out = []
    for j in range(k):
        t = j + _uniform(seed, row, j, population - j)
        out.append(swapped.get(t, t))
        swapped[t] = swapped.get(j, j)
    return out


@dataclass(frozen=True, slots=True)
class SlidingWindowRetriever:
    """The ``k`` rows before each test row, wrapping around to the end of the pool."""

    k: int = 1
    ice_separator: str = "\n"
    ice_eos_token: str = "\n"
    ice_num: int = 1

    def retrieve(self, train: Sequence[Row], test: Sequence[Row], reader: ReaderConfig,
                 policy: Policy) -> Sequence[list[int]]:
        # Ids outside the pool (k past twice its size, or test rows past it) are OpenCompass's
        # IndexError when the example is built (assemble/base.py), not here.
        return _Windows(len(train), self.k, len(test))


class _Windows(Sequence[list[int]]):
    """The ids of each test row for :class:`SlidingWindowRetriever`, made when a row asks:
    ``k`` ids a row (up to 2**31 - 1) are not all held at once. A row whose first id lies
    more than the pool's size before its start (an id no wrap reaches) gets that id alone:
    building the example fails on it, as OpenCompass's does on the first id of the row."""

    def __init__(self, n: int, k: int, rows: int) -> None:
        self.n, self.k, self.rows = n, k, rows

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.rows))]
        i = range(self.rows)[index]
        n, k = self.n, self.k
        if i >= k:
            return list(range(i - k, i))
        first = n - (k - i)
        if first < -n:
            return [first]
        return list(range(first, n)) + list(range(i))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Windows):
            return (self.n, self.k, self.rows) == (other.n, other.k, other.rows)
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class BM25Retriever:
    """The ``ice_num`` training rows with the highest BM25 score against the test row."""

    ice_num: int = 1
    ice_separator: str = "\n"
    ice_eos_token: str = "\n"
    block_local: ClassVar[bool] = True

    def retrieve(self, train: Sequence[Row], test: Sequence[Row], reader: ReaderConfig,
                 policy: Policy) -> list[list[int]]:
        return self.retrieve_block(self.block_state(train, reader, policy), test, 0, reader,
                                   policy)

    def block_state(self, train: Sequence[Row], reader: ReaderConfig, policy: Policy) -> Any:
        """The BM25 index of the training rows' input fields."""
        from .bm25 import BM25Index, input_field_text

        return BM25Index([input_field_text(r, reader.input_columns) for r in train])

    def retrieve_block(self, state: Any, rows: Sequence[Row], first: int,
                       reader: ReaderConfig, policy: Policy) -> list[list[int]]:
        from .bm25 import input_field_text

        cols = reader.input_columns
        stable = policy.fixes("D17")
        return [state.rank(input_field_text(r, cols), self.ice_num, stable_ties=stable)
                for r in rows]


# -- construction from config -------------------------------------------------------

# NumPy's legacy RandomState takes 32-bit seeds (as in OpenCompass); counts are list sizes.
_INT_MAX = {"seed": 2**32 - 1, "ice_num": 2**31 - 1, "k": 2**31 - 1}
_COMMON = {"ice_separator", "ice_eos_token", "ice_num", "index_split", "test_split"}


def _builder(cls: Any, accepted: set[str], required: tuple[str, ...] = ()) -> Callable[..., Any]:
    def build(params: Mapping[str, Any], where: str) -> Retriever:
        unknown = sorted(set(params) - accepted - _COMMON)
        if unknown:
            raise ConfigError(
                f"{cls.__name__} does not take {', '.join(map(repr, unknown))}; it accepts "
                f"{', '.join(sorted(accepted | _COMMON))}", key_path=where,
            )
        for name in required:
            if name not in params:
                raise ConfigError(f"{cls.__name__} needs {name!r}", key_path=where)
        kwargs = {k: v for k, v in params.items() if k in accepted or k in _COMMON}
        for k in ("index_split", "test_split"):
            kwargs.pop(k, None)
        if cls is ZeroRetriever:
            kwargs.pop("ice_num", None)
            kwargs.pop("ice_separator", None)
        if "fix_id_list" in kwargs:
            ids = kwargs["fix_id_list"]
            if not isinstance(ids, (list, tuple)) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in ids
            ):
                raise ConfigError(f"fix_id_list must be a list of ints, got {ids!r}",
                                  key_path=f"{where}.fix_id_list")
            kwargs["fix_id_list"] = tuple(ids)
        for k in ("ice_separator", "ice_eos_token"):
            if k in kwargs and not isinstance(kwargs[k], str):
                raise ConfigError(f"{k} must be a str, got {kwargs[k]!r}", key_path=f"{where}.{k}")
        if "stateless" in kwargs and not isinstance(kwargs["stateless"], bool):
            raise ConfigError(f"stateless must be true or false, got {kwargs['stateless']!r}",
                              key_path=f"{where}.stateless")
        for k in ("ice_num", "k", "seed"):
            if k in kwargs and (not isinstance(kwargs[k], int) or isinstance(kwargs[k], bool)):
                raise ConfigError(f"{k} must be an int, got {kwargs[k]!r}", key_path=f"{where}.{k}")
            if k in kwargs and not 0 <= kwargs[k] <= _INT_MAX[k]:
                raise ConfigError(f"{k} must be between 0 and {_INT_MAX[k]:,}, got {kwargs[k]:,}",
                                  key_path=f"{where}.{k}")
        return cls(**kwargs)  # type: ignore[no-any-return]

    return build


def _mdl(params: Mapping[str, Any], where: str) -> Retriever:
    raise UnsupportedError(
        "MDLRetriever scores candidate example sets with the evaluated model itself (its "
        "perplexity on each candidate prompt), so its choice depends on the model's outputs "
        "and cannot be compiled without running the model",
        key_path=where, hint="use TopkRetriever for the embedding candidates MDL starts from, "
        "or precompute the ids and use FixKRetriever")


@dataclass(frozen=True, slots=True)
class XiezhiRetriever:
    """Xiezhi's label retriever (``opencompass.datasets.XiezhiRetriever``).

    Rows carry ``labels`` (most specific first); for each test row, the training rows of
    its labels are collected label by label until ``ice_num`` are gathered, in that order.
    """

    ice_num: int = 1
    ice_separator: str = "\n"
    ice_eos_token: str = "\n"

    def retrieve(self, train: Sequence[Row], test: Sequence[Row], reader: ReaderConfig,
                 policy: Policy) -> list[list[int]]:
        by_label: dict[Any, list[int]] = {}
        for i, row in enumerate(train):
            for label in _labels(row, "training", i):
                by_label.setdefault(label, []).append(i)
        out = []
        for r, row in enumerate(test):
            ids: list[int] = []
            for label in _labels(row, "test", r):
                if len(ids) >= self.ice_num:
                    break
                if label not in by_label:
                    raise RetrievalError(
                        f"test row {r} has the label {label!r}, which no training row has",
                        key_path="infer_cfg.retriever", row=r, reference=("KeyError", repr(label)))
                ids += by_label[label]
            out.append(ids[:self.ice_num])
        return out


def _labels(row: Row, split: str, i: int) -> list[Any]:
    labels = row.get("labels")
    if not isinstance(labels, (list, tuple)):
        raise RetrievalError(f"XiezhiRetriever needs a 'labels' list in every row; {split} row "
                             f"{i} has {labels!r}", key_path="infer_cfg.retriever")
    return list(labels)


def _embedding(name: str) -> Callable[[Mapping[str, Any], str], Retriever]:
    """A builder that imports retrieve.embed (and NumPy) only when a config uses ``name``."""

    def build(params: Mapping[str, Any], where: str) -> Retriever:
        from . import embed as embed_retrieve

        real: Callable[[Mapping[str, Any], str], Retriever] = embed_retrieve.builder(
            getattr(embed_retrieve, name))  # type: ignore[assignment]
        return real(params, where)

    return build


def default_retrievers() -> dict[str, Callable[[Mapping[str, Any], str], Retriever]]:
    """The built-in retriever builders, by OpenCompass class name."""
    return {
        "ZeroRetriever": _builder(ZeroRetriever, {"ice_eos_token"}),
        "FixKRetriever": _builder(FixKRetriever, {"fix_id_list"}, ("fix_id_list",)),
        "RandomRetriever": _builder(RandomRetriever, {"seed", "stateless"}),
        "SlidingWindowRetriever": _builder(SlidingWindowRetriever, {"k"}, ("k",)),
        "BM25Retriever": _builder(BM25Retriever, set()),
        "XiezhiRetriever": _builder(XiezhiRetriever, set()),
        # embedding retrievers: sentence-transformers is imported only when one runs
        **{n: _embedding(n) for n in ("TopkRetriever", "DPPRetriever", "VotekRetriever")},
        "MDLRetriever": _mdl,
    }
