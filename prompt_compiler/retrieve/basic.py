"""Retrievers: which training rows become each test row's in-context examples.

Each retriever returns, for every test row, a list of training-row ids. They mirror
OpenCompass's retrievers, including its separator defaults (``ice_separator`` and
``ice_eos_token`` are ``'\\n'`` except for :class:`ZeroRetriever`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..data.reader import ReaderConfig
from ..errors import ConfigError, RetrievalError, UnsupportedError
from ..policy import Policy

__all__ = [
    "BM25Retriever",
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

    def retrieve(self, train: Sequence[Row], test: Sequence[Row], reader: ReaderConfig,
                 policy: Policy) -> Sequence[list[int]]:
        return Repeated((), len(test))


@dataclass(frozen=True, slots=True)
class FixKRetriever:
    """The same fixed ids (order kept, repeats allowed) for every test row."""

    fix_id_list: tuple[int, ...] = ()
    ice_separator: str = "\n"
    ice_eos_token: str = "\n"
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
                 policy: Policy) -> list[list[int]]:
        # Ids outside the pool (k past twice its size, or test rows past it) are OpenCompass's
        # IndexError when the example is built (assemble/base.py), not here.
        n, k = len(train), self.k
        out = []
        for i in range(len(test)):
            if i < k:
                out.append(list(range(n - (k - i), n)) + list(range(i)))
            else:
                out.append(list(range(i - k, i)))
        return out


@dataclass(frozen=True, slots=True)
class BM25Retriever:
    """The ``ice_num`` training rows with the highest BM25 score against the test row."""

    ice_num: int = 1
    ice_separator: str = "\n"
    ice_eos_token: str = "\n"

    def retrieve(self, train: Sequence[Row], test: Sequence[Row], reader: ReaderConfig,
                 policy: Policy) -> list[list[int]]:
        from .bm25 import BM25Index, input_field_text

        cols = reader.input_columns
        index = BM25Index([input_field_text(r, cols) for r in train])
        stable = policy.fixes("D17")
        return [index.rank(input_field_text(r, cols), self.ice_num, stable_ties=stable)
                for r in test]


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
