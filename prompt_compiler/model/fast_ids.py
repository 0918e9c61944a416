"""Token ids of many prompts that share a fixed beginning, without encoding it again.

A 5-shot job's prompts all open with the same in-context block; only the text after it
changes. :class:`PrefixIds` encodes such a shared beginning once and, for every prompt that
starts with it, encodes only the rest -- but only at a boundary where the ids are provably
those of encoding the whole text (byte-level BPE merges never cross a pre-token boundary,
but a pre-token can cross any boundary). The boundary must be:

* right after a ``"\\n"`` and before a character that is not whitespace; and
* in a tokenizer whose pipeline is one of the whitelisted ones below: no normalizer (or NFC,
  which never composes across a newline), added tokens none of which contains a newline or
  strips the whitespace on its left (so none spans or absorbs the boundary), and a
  pre-tokenizer whose every pattern alternative that can take a newline ends at the end of
  its whitespace/newline run, with ``\\s*[\\r\\n]+`` tried before ``\\s+(?!\\S)``: Llama 3's,
  Qwen 2's and DeepSeek V3's. Then a pre-token ends at the boundary in the whole text, the
  text before it pre-tokenizes as it does alone (its final newline run is always taken by
  ``\\s*[\\r\\n]+``, whatever follows), and the text after it as it does alone (no
  pattern looks behind).

Any other tokenizer, or a prompt without such a boundary in its shared beginning, is encoded
whole.

The text after the shared beginning is encoded piece by piece where that is provably the
same (Llama 3's and Qwen 2's patterns): a text of printable ASCII, tabs and newlines, with no
added token in it (added tokens are split out before pre-tokenizing, so a text without any
is one segment), is split with the same pattern written for ASCII (``\\p{L}`` is
``[A-Za-z]``, ``\\p{N}`` ``[0-9]``, ``\\s`` ``[ \\t\\n\\r]`` there; NFC changes no ASCII),
and each piece's ids are those of encoding the piece alone, cached; a piece is only cached
after the tokenizer's own pre-tokenizer has kept it whole, else the text is encoded whole.

``tests/test_fast_ids.py`` checks the equality on generated texts (Hypothesis).
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from itertools import chain
from typing import Any

__all__ = ["PrefixIds", "reusable"]

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
          r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
         r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
DEEPSEEK3 = (r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
             "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"
             "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+")
SAFE_SPLITS = ((LLAMA3,), (QWEN2,), DEEPSEEK3)
"""Pattern sequences (each a ``Split``, ``Isolated``, then ``ByteLevel`` without its own
regex) whose boundaries after a newline are proven above."""

ASCII_PATTERNS = {
    LLAMA3: r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]{1,3}"
            r"| ?[^\sA-Za-z0-9]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    QWEN2: r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]"
           r"| ?[^\sA-Za-z0-9]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}
"""The same patterns for texts of printable ASCII, tabs and newlines (``re.ASCII``)."""
_NOT_PLAIN = re.compile(r"[^\t\n\r -~]")
_PIECES = 1 << 16
"""Cached pieces per tokenizer (then the cache starts over)."""

MIN_PREFIX = 64
"""Shared beginnings shorter than this (characters) are not worth a cache entry."""


def _splits(pre: Any) -> tuple[str, ...] | None:
    """The Split patterns of a ``Sequence[Split..., ByteLevel(use_regex=False)]``."""
    if not isinstance(pre, dict) or pre.get("type") != "Sequence":
        return None
    steps = pre.get("pretokenizers") or []
    if not steps or steps[-1].get("type") != "ByteLevel" or steps[-1].get("use_regex"):
        return None
    out = []
    for step in steps[:-1]:
        pattern = step.get("pattern") or {}
        if (step.get("type") != "Split" or step.get("behavior") != "Isolated"
                or step.get("invert") or "Regex" not in pattern):
            return None
        out.append(str(pattern["Regex"]))
    return tuple(out)


def reusable(spec: dict[str, Any]) -> bool:
    """True when a ``tokenizer.json`` (parsed) is one whose newline boundaries are proven."""
    normalizer = spec.get("normalizer")
    if normalizer is not None and normalizer.get("type") != "NFC" and not (
            normalizer.get("type") == "Sequence" and not normalizer.get("normalizers")):
        return False
    if (spec.get("model") or {}).get("type") != "BPE":
        return False
    for token in spec.get("added_tokens") or []:
        if token.get("lstrip") or "\n" in token.get("content", "") or "\r" in token.get(
                "content", ""):
            return False
    return _splits(spec.get("pre_tokenizer")) in SAFE_SPLITS


class PrefixIds:
    """``encode(text)`` without special tokens, reusing the ids of shared beginnings.

    Args:
        backend: A ``tokenizers.Tokenizer``.
        spec: Its ``tokenizer.json``, parsed (decides whether reuse is proven; else every
            text is encoded whole).
    """

    def __init__(self, backend: Any, spec: dict[str, Any] | None) -> None:
        self.backend = backend
        self.enabled = spec is not None and reusable(spec)
        self.prefixes: OrderedDict[str, list[int]] = OrderedDict()
        self.last = ""
        self.pattern: re.Pattern[str] | None = None
        self.pieces: dict[str, tuple[int, ...]] = {}
        self.added: tuple[str, ...] = ()
        if self.enabled and spec is not None:
            splits = _splits(spec.get("pre_tokenizer"))
            ascii_pattern = ASCII_PATTERNS.get(splits[0]) if splits and len(splits) == 1 \
                else None
            if ascii_pattern is not None:
                self.pattern = re.compile(ascii_pattern, re.ASCII)
                # an added token starts with one of these: a text holding none has none
                self.added = tuple(sorted({t["content"][:2] for t in spec.get("added_tokens")
                                           or [] if t.get("content")}))

    @classmethod
    def of_backend(cls, backend: Any) -> PrefixIds:
        """For a loaded ``tokenizers.Tokenizer``: its pipeline read from its components
        (as ``tokenizer.json`` writes them), not by parsing the whole file again."""
        try:
            normalizer = backend.normalizer
            spec: dict[str, Any] | None = {
                "normalizer": json.loads(normalizer.__getstate__()) if normalizer else None,
                "pre_tokenizer": json.loads(backend.pre_tokenizer.__getstate__())
                if backend.pre_tokenizer else None,
                "model": {"type": type(backend.model).__name__},
                "added_tokens": [{"content": t.content, "lstrip": t.lstrip}
                                 for t in backend.get_added_tokens_decoder().values()]}
        except (AttributeError, TypeError, ValueError):
            spec = None
        return cls(backend, spec)

    @classmethod
    def of_file(cls, backend: Any, file: str) -> PrefixIds:
        try:
            with open(file, encoding="utf-8") as fh:
                spec = json.load(fh)
        except (OSError, ValueError):
            spec = None
        return cls(backend, spec if isinstance(spec, dict) else None)

    def _whole(self, text: str) -> list[int]:
        pattern = self.pattern
        if (pattern is not None and text.isascii() and not _NOT_PLAIN.search(text)
                and not any(a in text for a in self.added)):
            found = self._pieces(pattern.findall(text))
            if found is not None:
                return found
        ids: list[int] = self.backend.encode(text, add_special_tokens=False).ids
        return ids

    def _pieces(self, pieces: list[str]) -> list[int] | None:
        cache = self.pieces
        known = list(map(cache.get, pieces))
        if None in known:
            if len(cache) > _PIECES:
                cache.clear()
            pre = self.backend.pre_tokenizer
            for i, piece in enumerate(pieces):
                if known[i] is None:
                    split = pre.pre_tokenize_str(piece)
                    if len(split) != 1 or split[0][1] != (0, len(piece)):
                        return None  # not one pre-token alone: encode the text whole
                    known[i] = cache[piece] = tuple(
                        self.backend.encode(piece, add_special_tokens=False).ids)
        return list(chain.from_iterable(known))  # type: ignore[arg-type]

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` (no special tokens added), equal to encoding it whole."""
        prefix, ids, rest = self.encode_parts(text)
        return ids + rest if prefix else rest

    def encode_parts(self, text: str) -> tuple[str, list[int], list[int]]:
        """``(prefix, its ids, the rest's ids)``: the ids of ``text`` are the two id lists
        joined; ``prefix`` is ``""`` (and its ids empty) where no shared beginning is reused.
        The prefix's id list is shared between calls: do not change it."""
        if not self.enabled:
            return "", [], self._whole(text)
        for prefix, ids in self.prefixes.items():
            n = len(prefix)
            if text.startswith(prefix) and len(text) > n and not text[n].isspace():
                return prefix, ids, self._whole(text[n:])
        last, self.last = self.last, text
        cut = _boundary(text, _common(last, text))
        if cut < MIN_PREFIX:
            return "", [], self._whole(text)
        prefix = text[:cut]
        ids = self.prefixes[prefix] = self._whole(prefix)
        self.prefixes.move_to_end(prefix, last=False)
        while len(self.prefixes) > 8:
            self.prefixes.popitem()
        return prefix, ids, self._whole(text[cut:])


def _common(a: str, b: str) -> int:
    """Length of the common beginning of ``a`` and ``b`` (binary search on slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _boundary(text: str, limit: int) -> int:
    """The last position ``<= limit`` right after a newline and before a non-space (0: none)."""
    end = limit
    for _ in range(64):
        i = text.rfind("\n", 0, end)
        if i < 0:
            return 0
        if i + 1 <= limit and i + 1 < len(text) and not text[i + 1].isspace():
            return i + 1
        end = i
    return 0
