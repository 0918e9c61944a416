"""NeedleBench's single-needle haystacks (``NeedleBenchOriginDataset`` of
``opencompass.datasets.needlebench``).

For each haystack file the config lists (in the loader's fixed order of file names, not the
config's), ``num_repeats_per_file`` rows: the file's lines shuffled again with seed ``counter``
(the shuffles accumulate), a needle of the config's language drawn with the same seed, the
lines' texts encoded with tiktoken (the encoding of ``tokenizer_model``, an OpenAI model name)
until ``length - length_buffer`` minus the needle's tokens are gathered, the needle's tokens
inserted at ``depth`` percent, the whole decoded back to text and put in the loader's prompt.
Python's ``random`` with an integer seed gives the same draws in every process, so the rows are
the ones OpenCompass builds. The prompt and the question's rewrites are OpenCompass's own text:
they are read from its source (:mod:`.oc_text`); without an ``opencompass`` package on the import
path the rows come from OpenCompass's own loader.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ...errors import ConfigError, DataError, UnsupportedError
from ..rows import Row
from .files import json_lines
from .oc_text import package_file, source_tree
from .registry import NativeReader, NotNative, Splits

__all__ = ["READERS"]

HAYSTACKS = (
    "en_un_asr.jsonl", "zh_all.jsonl", "PaulGrahamEssays.jsonl",
    "multi_needle_reasoning_en.json", "multi_needle_reasoning_zh.json",
    "zh_finance.jsonl", "zh_game.jsonl", "zh_general.jsonl",
    "zh_government.jsonl", "zh_movie.jsonl", "zh_tech.jsonl",
)
"""The haystack files the loader knows, in the order it reads them."""

Text = str | list[str]


@dataclass(frozen=True, slots=True)
class _Rewrite:
    """How the loader rewrites a needle's question in one language: split at ``marker``, the
    first two parts joined by ``hint``; for a base model (no ``guide``) also ``quote``
    replaced by ``by`` and the last ``cut`` characters dropped."""

    marker: str
    hint: str
    quote: str
    by: str
    cut: int


@dataclass(frozen=True, slots=True)
class _Text:
    """The loader's own text, read from OpenCompass's source: the prompt per (language,
    position) and the question's rewrites per (language, guide)."""

    prompts: Mapping[tuple[str, str], ast.expr]
    rewrites: Mapping[tuple[str, bool], _Rewrite]

    def question(self, question: str, language: str, guide: bool) -> str:
        rewrite = self.rewrites[language, guide]
        parts = question.split(rewrite.marker)
        if len(parts) < 2:
            raise ValueError(f"its question lacks {rewrite.marker!r}, which the loader splits "
                             "it at")
        question = parts[0] + rewrite.hint + parts[1]
        return question if guide else question.replace(rewrite.quote, rewrite.by)[:-rewrite.cut]

    def prompt(self, context: str, question: str, language: str, position: str) -> Text:
        return _render(self.prompts[language, position],
                       {"context": context, "retrieval_question": question})


def _render(node: ast.expr, values: Mapping[str, str]) -> Text:
    """A prompt expression of the loader's source (literals, f-strings of ``values``, ``+``,
    and a tuple, which the rows hold as a list) filled with ``values``; never executed.

    Raises:
        NotNative: Another kind of expression.
    """
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(_render(part, values)) for part in node.values)
    if (isinstance(node, ast.FormattedValue) and isinstance(node.value, ast.Name)
            and node.value.id in values and node.conversion == -1 and node.format_spec is None):
        return values[node.value.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _render(node.left, values), _render(node.right, values)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    if isinstance(node, ast.Tuple):
        return [str(_render(item, values)) for item in node.elts]
    raise NotNative(f"{_SOURCE_TEXT}: a prompt written as {ast.unparse(node)[:40]!r}, not text "
                    "this project reads")


_SOURCE = ("datasets", "needlebench", "origin.py")
_SOURCE_TEXT = "opencompass/" + "/".join(_SOURCE)
_LANGUAGES = ("English", "Chinese")
_POSITIONS = ("End", "Start")


def _branches(body: list[ast.stmt], env: Mapping[str, str]
              ) -> Iterator[tuple[Mapping[str, str], ast.stmt]]:
    """Each statement of ``body`` that is no ``if``, with the ``name == 'text'`` tests of
    the ``if`` branches it sits in."""
    for stmt in body:
        if not isinstance(stmt, ast.If):
            yield env, stmt
            continue
        test = stmt.test
        if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
                and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and isinstance(test.comparators[0], ast.Constant)
                and isinstance(test.comparators[0].value, str)):
            yield from _branches(stmt.body, {**env, test.left.id: test.comparators[0].value})
        yield from _branches(stmt.orelse, env)


def _constants(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)]


def _rewrite(function: ast.FunctionDef, language: str, base: bool) -> _Rewrite:
    """The rewrite of one ``_modify_retrieval_question*`` function in one language."""
    statements = [stmt for env, stmt in _branches(function.body, {})
                  if env.get("language") == language]
    split = [c for stmt in statements for c in ast.walk(stmt) if isinstance(c, ast.Call)
             and isinstance(c.func, ast.Attribute) and c.func.attr == "split"]
    joined = [stmt.value for stmt in statements if isinstance(stmt, ast.Assign)
              and isinstance(stmt.value, ast.BinOp)]
    if len(split) != 1 or len(joined) != 1 or len(_constants(split[0])) != 1 \
            or len(_constants(joined[0])) != 1:
        raise NotNative(f"{_SOURCE_TEXT}: {function.name} is not shaped as this project reads it")
    marker, hint = _constants(split[0])[0], _constants(joined[0])[0]
    if not base:
        return _Rewrite(marker, hint, "", "", 0)
    returned = [stmt.value for stmt in statements if isinstance(stmt, ast.Return)]
    cut = returned[0] if len(returned) == 1 else None
    if not (isinstance(cut, ast.Subscript) and isinstance(cut.slice, ast.Slice)
            and cut.slice.lower is None and cut.slice.step is None
            and isinstance(cut.slice.upper, ast.UnaryOp)
            and isinstance(cut.slice.upper.op, ast.USub)
            and isinstance(cut.slice.upper.operand, ast.Constant)
            and isinstance(cut.slice.upper.operand.value, int)
            and isinstance(cut.value, ast.Call) and isinstance(cut.value.func, ast.Attribute)
            and cut.value.func.attr == "replace" and len(_constants(cut.value)) == 2):
        raise NotNative(f"{_SOURCE_TEXT}: {function.name} is not shaped as this project reads it")
    quote, by = _constants(cut.value)
    return _Rewrite(marker, hint, quote, by, cut.slice.upper.operand.value)


@cache
def _text() -> _Text:
    """The loader's text, read from the ``opencompass`` package on the import path (never
    imported; see :mod:`.oc_text`).

    Raises:
        NotNative: No such package, or its source is not shaped as this project reads it.
    """
    functions = {node.name: node for node in ast.walk(source_tree(package_file(*_SOURCE)))
                 if isinstance(node, ast.FunctionDef)}
    needed = ("_generate_prompt", "_modify_retrieval_question",
              "_modify_retrieval_question_for_base")
    if not all(name in functions for name in needed):
        raise NotNative(f"{_SOURCE_TEXT} has no {', '.join(needed)}")
    prompts = {(env.get("language", ""), env.get("position", "")): stmt.value
               for env, stmt in _branches(functions["_generate_prompt"].body, {})
               if isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets[0]) == "prompt"}
    wanted = [(language, position) for language in _LANGUAGES for position in _POSITIONS]
    if sorted(prompts) != sorted(wanted):
        raise NotNative(f"{_SOURCE_TEXT}: _generate_prompt is not shaped as this project reads "
                        "it")
    text = _Text(prompts, {
        (language, guide): _rewrite(functions["_modify_retrieval_question" if guide else
                                              "_modify_retrieval_question_for_base"],
                                    language, not guide)
        for language in _LANGUAGES for guide in (True, False)})
    for key in wanted:
        text.prompt("", "", *key)  # every prompt is text this project reads
    return text


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
    if language not in _LANGUAGES and files[1:] and num_repeats_per_file > 0:
        raise ConfigError(f"NeedleBenchOriginDataset: language must be 'English' or 'Chinese', "
                          f"got {language!r} (OpenCompass's loader fails there)",
                          key_path="language")
    if position not in _POSITIONS and files[1:] and num_repeats_per_file > 0:
        raise ConfigError(f"NeedleBenchOriginDataset: position must be 'End' or 'Start', got "
                          f"{position!r} (OpenCompass's loader raises ValueError)",
                          key_path="position")
    text = _text()
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
                question = text.question(drawn["retrieval_question"], language, guide)
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
            rows.append({"prompt": text.prompt(context, question, language, position),
                         "answer": answer})
    return rows


READERS = (
    NativeReader("NeedleBenchOriginDataset", _origin, _files),
)
