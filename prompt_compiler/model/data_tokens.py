"""Data is never a control token (default mode; model key ``data_special_tokens``).

A row value holding ``<|eot_id|>`` or ``<|im_end|>`` would end a turn inside the data if the
tokenizer turned it into its control id: prompt injection through the test set. In default
mode the text that came from data (row values, the in-context examples' values included) is
encoded with every added token's text as ordinary text -- as tiktoken's ``encode_ordinary``
and transformers' ``split_special_tokens=True`` encode it, and further: DeepSeek's
``<｜User｜>``, an added token not marked special, is split too -- while the templates' and
meta templates' own token text still becomes control ids. The prompt text is unchanged.

Which occurrence came from data is read from the record's span provenance
(:func:`prompt_compiler.assemble.spans.add_spans`: ``column`` spans); only records whose
data holds an added token's text pay for it (:meth:`DataTokens.holds`). The text is cut at
the control occurrences; each piece between them is encoded by the same pipeline with no
added tokens (:attr:`DataTokens.plain`), which is what the tokenizer does to a piece without
added tokens. A self-check compares the cut encoding, every occurrence taken as control,
with the tokenizer's own encoding of the whole text; a tokenizer on which they differ (added
tokens that strip their neighbours' whitespace) is refused rather than guessed.

``data_special_tokens: parse`` keeps the tokenizer's encoding (a suite that means its data's
control tokens); compat mode keeps OpenCompass 0.5.4's (defect D23).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..errors import ConfigError, PromptCompilerWarning, UnsupportedError

__all__ = ["MODES", "DataTokens", "Unsplit", "UnsplitWarning", "check_mode", "for_model",
           "strings", "unsplit"]

MODES = ("split", "parse")
"""The values of the model key ``data_special_tokens`` (``split``: the default)."""


def check_mode(value: Any, *, where: str, model: str) -> str:
    """The model key's value, checked."""
    if value is None:
        return "split"
    if value not in MODES:
        raise ConfigError(f"data_special_tokens must be 'split' or 'parse', got {value!r:.80}",
                          key_path=f"{where}.data_special_tokens", model=model,
                          hint="split (the default) encodes special-token text in row values "
                               "as ordinary text; parse lets it become control tokens")
    return str(value)


_NESTED = (Mapping, list, tuple)


def strings(value: Any) -> Iterator[str]:
    """Every string in a row value (lists and dicts walked)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from strings(v)


def for_model(model: Any, policy: Any) -> DataTokens | None:
    """The splitter of a model's records, or None where data's token text is encoded as the
    tokenizer does: compat mode (D23), ``data_special_tokens: parse``, an API model, or no
    Hugging Face tokenizer (see :func:`unsplit`)."""
    from .tokenize import HFTokenizer

    tokenizer = model.count_tokens
    if (not policy.fixes("D23") or model.data_special_tokens != "split"
            or model.renderer == "api" or not isinstance(tokenizer, HFTokenizer)):
        return None
    found = getattr(tokenizer, "_data_tokens", None)
    if found is None:
        found = DataTokens(tokenizer)
        object.__setattr__(tokenizer, "_data_tokens", found)
    return found if found.pattern is not None else None


class DataTokens:
    """The added tokens of one Hugging Face tokenizer, and the encoding that splits those
    that came from data.

    Args:
        tokenizer: A :class:`~prompt_compiler.model.tokenize.HFTokenizer`.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        decoder = tokenizer.backend.get_added_tokens_decoder()
        self.ids = {t.content: i for i, t in decoder.items() if t.content}
        names = sorted(self.ids, key=lambda t: (-len(t), t))  # leftmost, then longest
        self.pattern = re.compile("|".join(map(re.escape, names))) if names else None
        self.starts = tuple(sorted({t[:1] for t in names}))
        self._plain: Any = None

    @property
    def plain(self) -> Any:
        """The tokenizer's pipeline without added tokens (built on first use)."""
        if self._plain is None:
            from tokenizers import Tokenizer

            spec = json.loads(self.tokenizer.backend.to_str())
            spec["added_tokens"] = []
            self._plain = Tokenizer.from_str(json.dumps(spec))
        return self._plain

    def holds(self, values: Sequence[Any]) -> bool:
        """Whether any string in ``values`` holds an added token's text."""
        pattern = self.pattern
        if pattern is None:
            return False
        starts = self.starts
        for value in values:
            for text in strings(value):
                if any(s in text for s in starts) and pattern.search(text):
                    return True
        return False

    def row_holds(self, row: Any) -> bool:
        """Whether a row's values hold an added token's text."""
        if isinstance(row, Mapping):
            return self.holds(list(row.values()))
        return self.holds([row])

    def encode(self, text: str, data: Sequence[tuple[int, int]]) -> list[int]:
        """The ids of ``text`` without special tokens added, the added-token occurrences that
        overlap a ``data`` range (``(start, end)`` character offsets) as ordinary text."""
        pattern = self.pattern
        if pattern is None:
            return list(self.tokenizer.encode(text, special_tokens=False))
        found = [(m.start(), m.end(), self.ids[m.group()]) for m in pattern.finditer(text)]
        whole = self._cut(text, found)
        if whole != list(self.tokenizer.encode(text, special_tokens=False)):
            raise UnsupportedError(
                f"cannot encode row values' special-token text as ordinary text with the "
                f"tokenizer {self.tokenizer.name}: its added tokens do not cut the text as "
                "plain separators (they strip whitespace, or are normalized)",
                hint="set the model's data_special_tokens: parse to encode the text as the "
                     "tokenizer does")
        control = [f for f in found if not any(a < f[1] and f[0] < b for a, b in data)]
        if len(control) == len(found):
            return whole
        return self._cut(text, control)

    def _cut(self, text: str, control: Sequence[tuple[int, int, int]]) -> list[int]:
        plain = self.plain
        ids: list[int] = []
        pos = 0
        for start, end, tid in control:
            if start > pos:
                ids += plain.encode(text[pos:start], add_special_tokens=False).ids
            ids.append(tid)
            pos = end
        if pos < len(text):
            ids += plain.encode(text[pos:], add_special_tokens=False).ids
        return ids


class UnsplitWarning(PromptCompilerWarning):
    """A row value holds a special token no tokenizer of the model can split (lint reports
    it as ``special-token-in-data`` instead)."""

    once_per_pair = True
    """Raised once per job, at the first such row: a pair compiled in pieces raises the first
    piece's (:mod:`prompt_compiler.run.engines.relay`)."""


class Unsplit:
    """Warns once per job that a row value holds one of the model's special tokens (read off
    its templates) which no tokenizer can split: an engine fed the text makes it a control
    token."""

    def __init__(self, model: Any, pattern: re.Pattern[str]) -> None:
        self.model, self.pattern = model, pattern
        self.warned = False

    def check(self, row: Any, index: int) -> None:
        if self.warned:
            return
        values = row.values() if isinstance(row, Mapping) else (row,)
        # one search over the row's strings; no special token holds a NUL, so none spans two
        m = self.pattern.search("\0".join([
            v if type(v) is str else "\0".join(strings(v)) if isinstance(v, _NESTED) else ""
            for v in values]))
        if m is not None:
            import warnings

            self.warned = True
            note = ConfigError(
                f"a row value holds {m.group()!r}, a special token of this model, and the "
                "model has no Hugging Face tokenizer to encode it as ordinary text: an "
                "engine fed the prompt text reads it as a control token (D23)",
                key_path="model.tokenizer", model=self.model.abbr, row=index,
                hint="give the model its tokenizer (then such records carry their ids), "
                     "or remove the token from the data")
            warnings.warn(UnsplitWarning(str(note)), stacklevel=2)


def unsplit(model: Any, policy: Any) -> Unsplit | None:
    """The warning of a default-mode model without a Hugging Face tokenizer whose templates
    have special tokens (None where there is nothing to warn of)."""
    from .tokenize import HFTokenizer

    if (not policy.fixes("D23") or model.data_special_tokens != "split"
            or model.renderer == "api" or isinstance(model.count_tokens, HFTokenizer)):
        return None
    from .special_tokens import model_special_tokens

    tokens = model_special_tokens(model.meta_raw if isinstance(model.meta_raw, Mapping)
                                  else None, model.chat_template)
    if not tokens:
        return None
    return Unsplit(model, re.compile("|".join(map(re.escape, tokens))))
