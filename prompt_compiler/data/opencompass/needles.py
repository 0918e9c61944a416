"""NeedleBench's single-needle haystacks (``NeedleBenchOriginDataset`` of
``opencompass.datasets.needlebench``).

For each haystack file the config lists (in the loader's fixed order of file names, not the
config's), ``num_repeats_per_file`` rows: the file's lines shuffled again with seed ``counter``
(the shuffles accumulate), a needle of the config's language drawn with the same seed, the
lines' texts encoded with tiktoken (the encoding of ``tokenizer_model``, an OpenAI model name)
until ``length - length_buffer`` minus the needle's tokens are gathered, the needle's tokens
inserted at ``depth`` percent, the whole decoded back to text and put in the loader's prompt.
Python's ``random`` with an integer seed gives the same draws in every process, so the rows are
the ones OpenCompass builds.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import ConfigError, DataError, UnsupportedError
from ..rows import Row
from .files import json_lines
from .registry import NativeReader, Splits

__all__ = ["READERS"]

HAYSTACKS = (
    "en_un_asr.jsonl", "zh_all.jsonl", "PaulGrahamEssays.jsonl",
    "multi_needle_reasoning_en.json", "multi_needle_reasoning_zh.json",
    "zh_finance.jsonl", "zh_game.jsonl", "zh_general.jsonl",
    "zh_government.jsonl", "zh_movie.jsonl", "zh_tech.jsonl",
)
"""The haystack files the loader knows, in the order it reads them."""

_FORMAT_EN = "Please answer in the format"
_FORMAT_ZH = "请按照"
_THINK = {
    "English": (_FORMAT_EN, "Before answering, please consider what in the document is most "
                            f"relevant to this question. {_FORMAT_EN}", f"{_FORMAT_EN} '", 10),
    "Chinese": (_FORMAT_ZH, f"在回答之前，请思考文档中与此问题最相关的内容是什么。{_FORMAT_ZH}",
                f"{_FORMAT_ZH}'", 16),
}
"""Per language: the words before the answer format, what ``guide`` puts in their place, the
quote a base model's question loses, and how many characters its end loses."""

_ASSISTANT = {
    "English": ("You are an intelligent AI assistant skilled in answering user questions.\n"
                "Please keep your answers concise and clear. Do not talk about irrelevant "
                "topics or repeat your answers.\n", "The document given to you by the user is ",
                "Now, the question is: "),
    "Chinese": ("你是一个善于回答用户问题的智能AI助手\n"
                "请保持你的回答简洁清楚。不要说和下面文档中的无关的话，或重复你的回答\n",
                "用户现在给你的文档是", "现在请问："),
}
"""Per language: the loader's opening lines, the words before the document, before the
question."""


def _question(question: str, language: str, guide: bool) -> str:
    """The needle's question as the loader rewrites it (``guide``: a hint to think first;
    else also the answer format's quote and the end cut off, for a base model)."""
    marker, hint, quote, cut = _THINK[language]
    parts = question.split(marker)
    if len(parts) < 2:
        raise ValueError(f"its question lacks {marker!r}, which the loader splits it at")
    question = parts[0] + hint + parts[1]
    return question if guide else question.replace(quote, "")[:-cut]


def _prompt(context: str, question: str, language: str, position: str) -> str | list[str]:
    """The loader's prompt: opening lines, then document and question in ``position``'s order
    (a Chinese question first is a pair of texts there, a list in the rows)."""
    opening, document, asked = _ASSISTANT[language]
    if position == "End":
        return f"{opening}{document}{context}\n\n{asked}{question}"
    if language == "Chinese":
        return [f"{opening}{asked}{question}", f"{document}{context}\n\n"]
    return f"{opening}{asked}{question}{document}{context}\n\n"


def _encoding(tokenizer_model: str) -> Any:
    try:
        import tiktoken.model
    except ImportError:
        from ..._version import install_hint

        raise UnsupportedError("NeedleBenchOriginDataset counts its haystack in tiktoken "
                               "tokens; the 'tiktoken' package is not installed",
                               hint=install_hint("tiktoken")) from None
    from ...model.tokenize import tiktoken_encoding

    try:
        name = tiktoken.model.encoding_name_for_model(tokenizer_model)
    except KeyError:
        raise ConfigError(f"NeedleBenchOriginDataset: tokenizer_model {tokenizer_model!r} is not "
                          "an OpenAI model name tiktoken knows (its loader calls "
                          "tiktoken.encoding_for_model)", key_path="tokenizer_model") from None
    return tiktoken_encoding(name, "tokenizer_model")


def _needle(file: Path, language: str, counter: int) -> Row:
    """The needle the loader draws for ``counter`` among the lines of ``language``."""
    needles = []
    for index, line in enumerate(json_lines(file), 1):
        if "language" not in line:
            raise DataError(f"{file}: line {index}: no 'language' key (the loader reads it)")
        if line["language"] == language:
            needles.append(line)
    if not needles:
        raise DataError(f"{file}: no needle of language {language!r} (OpenCompass's loader "
                        "fails there)")
    return random.Random(counter).choice(needles)


def _files(root: str, arguments: Mapping[str, Any]) -> list[str]:
    return [arguments["needle_file_name"],
            *(name for name in HAYSTACKS if name in arguments["file_list"])]


def _origin(files: list[Path], path: str, length: int, depth: int, tokenizer_model: str,
            file_list: list[str], num_repeats_per_file: int, length_buffer: int, guide: bool,
            language: str, needle_file_name: str, position: str = "End") -> Splits:
    """``NeedleBenchOriginDataset``: ``num_repeats_per_file`` rows (``prompt``, ``answer``)
    per haystack file."""
    if language not in _ASSISTANT and files[1:] and num_repeats_per_file > 0:
        raise ConfigError(f"NeedleBenchOriginDataset: language must be 'English' or 'Chinese', "
                          f"got {language!r} (OpenCompass's loader fails there)",
                          key_path="language")
    if position not in ("End", "Start") and files[1:] and num_repeats_per_file > 0:
        raise ConfigError(f"NeedleBenchOriginDataset: position must be 'End' or 'Start', got "
                          f"{position!r} (OpenCompass's loader raises ValueError)",
                          key_path="position")
    encoding = _encoding(tokenizer_model)
    needle_file, *haystacks = files
    rows: list[Row] = []
    for file in haystacks:
        lines = list(json_lines(file))
        tokens_of: dict[int, list[int]] = {}  # a line's tokens, by its place in the file
        order = list(range(len(lines)))
        for counter in range(num_repeats_per_file):
            random.Random(counter).shuffle(order)
            drawn = _needle(needle_file, language, counter)
            try:
                needle = "\n" + drawn["needle"] + "\n"
                question = _question(drawn["retrieval_question"], language, guide)
                keyword = drawn["arg2"]
                needle_tokens = encoding.encode(needle)
                answer = needle + "*" + keyword
            except (KeyError, TypeError, ValueError) as exc:
                raise DataError(f"{needle_file}: not a NeedleBench needle "
                                f"({type(exc).__name__}: {exc})") from None
            wanted = max(length - length_buffer - len(needle_tokens), 0)
            gathered: list[int] = []
            for index in order:
                if index not in tokens_of:
                    try:
                        tokens_of[index] = encoding.encode(lines[index]["text"])
                    except (KeyError, TypeError, ValueError) as exc:
                        raise DataError(f"{file}: line {index + 1}: not a haystack line "
                                        f"({type(exc).__name__}: {exc})") from None
                gathered.extend(tokens_of[index])
                if len(gathered) >= wanted:
                    break
            haystack = gathered[:wanted]
            at = int(len(haystack) * (depth / 100))
            context = encoding.decode(haystack[:at] + needle_tokens + haystack[at:])
            rows.append({"prompt": _prompt(context, question, language, position),
                         "answer": answer})
    return rows


READERS = (
    NativeReader("NeedleBenchOriginDataset", _origin, _files),
)
