"""NeedleBench's haystacks with one needle or several (``NeedleBenchOriginDataset``,
``NeedleBenchMultiDataset`` of ``opencompass.datasets.needlebench``).

For each haystack file the config lists (in the loader's fixed order of file names, not the
config's), ``num_repeats_per_file`` rows: the file's lines shuffled again with seed ``counter``
(the shuffles accumulate), a needle (or a record of ``num_needles`` needles) drawn with the same
seed, the
lines' texts encoded with tiktoken (the encoding of ``tokenizer_model``, an OpenAI model name)
until ``length - length_buffer`` minus the needles' tokens are gathered, the needles' tokens
inserted from ``depth`` percent on, the whole decoded back to text and put in the loader's prompt.
Python's ``random`` with an integer seed gives the same draws in every process, so the rows are
the ones OpenCompass builds. The prompt and the question's rewrites are OpenCompass's own text:
they are read from its source (:mod:`.oc_text`); without an ``opencompass`` package on the import
path the rows come from OpenCompass's own loader.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ...errors import ConfigError, DataError, UnsupportedError
from ..rows import Row
from .files import json_document, json_lines
from .oc_text import filled, package_file, source_tree
from .registry import NativeReader, NotNative, Splits

__all__ = ["READERS"]

HAYSTACKS = (
    "PaulGrahamEssays.jsonl", "multi_needle_reasoning_en.json", "multi_needle_reasoning_zh.json",
    "zh_finance.jsonl", "zh_game.jsonl", "zh_general.jsonl", "zh_government.jsonl",
    "zh_movie.jsonl", "zh_tech.jsonl",
)
"""The haystack files ``NeedleBenchMultiDataset`` knows, in the order it reads them
(``NeedleBenchOriginDataset``: :data:`ORIGIN_HAYSTACKS`)."""
ORIGIN_HAYSTACKS = ("en_un_asr.jsonl", "zh_all.jsonl", *HAYSTACKS)

Text = str | list[str]
_LANGUAGES = ("English", "Chinese")
_POSITIONS = ("End", "Start")


@dataclass(frozen=True, slots=True)
class _Rewrite:
    """How the loader rewrites a needle's question in one language: split at ``marker``, the
    first two parts joined by ``hint`` (no ``marker``: ``hint`` appended); with ``cut``, also
    ``quote`` replaced by ``by`` and the last ``cut`` characters dropped."""

    marker: str | None
    hint: str
    quote: str = ""
    by: str = ""
    cut: int = 0

    def __call__(self, question: str) -> str:
        if self.marker is None:
            return question + self.hint
        parts = question.split(self.marker)
        if len(parts) < 2:
            raise ValueError(f"its question lacks {self.marker!r}, which the loader splits it at")
        question = parts[0] + self.hint + parts[1]
        return question.replace(self.quote, self.by)[:-self.cut] if self.cut else question


@dataclass(frozen=True, slots=True)
class _Text:
    """A loader's own text, read from OpenCompass's source: the prompt per (language,
    position) and the question's rewrite per (language, guide); none: left as it is."""

    source: str
    prompts: Mapping[tuple[str, str], ast.expr]
    rewrites: Mapping[tuple[str, bool], _Rewrite | None]

    def question(self, question: str, language: str, guide: bool) -> str:
        rewrite = self.rewrites[language, guide]
        return question if rewrite is None else rewrite(question)

    def prompt(self, context: str, question: str, language: str, position: str) -> Text:
        return filled(self.prompts[language, position],
                      {"context": context, "retrieval_question": question}, self.source)


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


def _rewrite(function: ast.FunctionDef, language: str, source: str) -> _Rewrite:
    """The rewrite one ``_modify_retrieval_question*`` function makes in one language."""
    statements = [stmt for env, stmt in _branches(function.body, {})
                  if env.get("language") == language]
    split = [c for stmt in statements for c in ast.walk(stmt) if isinstance(c, ast.Call)
             and isinstance(c.func, ast.Attribute) and c.func.attr == "split"]
    joined = [stmt.value for stmt in statements if isinstance(stmt, ast.Assign)
              and isinstance(stmt.value, ast.BinOp)]
    returned = [stmt.value for stmt in statements if isinstance(stmt, ast.Return)]
    shaped = (len(split) <= 1 and len(joined) == 1 and len(_constants(joined[0])) == 1
              and all(len(_constants(call)) == 1 for call in split) and len(returned) == 1)
    if not shaped:
        raise NotNative(f"{source}: {function.name} is not shaped as this project reads it")
    marker, hint = (_constants(split[0])[0] if split else None), _constants(joined[0])[0]
    cut = returned[0]
    if isinstance(cut, ast.Name):  # the joined question as it is
        return _Rewrite(marker, hint)
    if not (isinstance(cut, ast.Subscript) and isinstance(cut.slice, ast.Slice)
            and cut.slice.lower is None and cut.slice.step is None
            and isinstance(cut.slice.upper, ast.UnaryOp)
            and isinstance(cut.slice.upper.op, ast.USub)
            and isinstance(cut.slice.upper.operand, ast.Constant)
            and isinstance(cut.slice.upper.operand.value, int)
            and cut.slice.upper.operand.value > 0
            and isinstance(cut.value, ast.Call) and isinstance(cut.value.func, ast.Attribute)
            and cut.value.func.attr == "replace" and len(_constants(cut.value)) == 2):
        raise NotNative(f"{source}: {function.name} is not shaped as this project reads it")
    quote, by = _constants(cut.value)
    return _Rewrite(marker, hint, quote, by, cut.slice.upper.operand.value)


@cache
def _text(module: str) -> _Text:
    """The text of the loader in ``opencompass/datasets/<module>.py`` (``needlebench/origin``
    ...), read from the ``opencompass`` package on the import path (never imported; see
    :mod:`.oc_text`).

    Raises:
        NotNative: No such package, or its source is not shaped as this project reads it.
    """
    parts = ("datasets", *f"{module}.py".split("/"))
    source = "opencompass/" + "/".join(parts)
    functions = {node.name: node for node in ast.walk(source_tree(package_file(*parts)))
                 if isinstance(node, ast.FunctionDef)}
    if "_generate_prompt" not in functions:
        raise NotNative(f"{source} has no _generate_prompt")
    prompts = {(env.get("language", ""),
                env.get("position", env.get("quesiton_position", ""))): stmt.value
               for env, stmt in _branches(functions["_generate_prompt"].body, {})
               if isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets[0]) == "prompt"}
    wanted = [(language, position) for language in _LANGUAGES for position in _POSITIONS]
    if sorted(prompts) != sorted(wanted):
        raise NotNative(f"{source}: _generate_prompt is not shaped as this project reads it")
    guide = functions.get("_modify_retrieval_question")
    base = functions.get("_modify_retrieval_question_for_base")
    rewrites: dict[tuple[str, bool], _Rewrite | None] = {}
    for language in _LANGUAGES:
        rewrites[language, True] = None if guide is None else _rewrite(guide, language, source)
        rewrites[language, False] = None if base is None else _rewrite(base, language, source)
    text = _Text(source, prompts, rewrites)
    for key in wanted:
        text.prompt("", "", *key)  # every prompt is text this project reads
    return text


def _encoding(tokenizer_model: str) -> Any:
    try:
        import tiktoken.model
    except ImportError:
        from ..._version import install_hint

        raise UnsupportedError("NeedleBench's loaders count their haystack in tiktoken tokens; "
                               "the 'tiktoken' package is not installed",
                               hint=install_hint("tiktoken")) from None
    from ...model.tokenize import tiktoken_encoding

    try:
        name = tiktoken.model.encoding_name_for_model(tokenizer_model)
    except KeyError:
        raise ConfigError(f"tokenizer_model {tokenizer_model!r} is not an OpenAI model name "
                          "tiktoken knows (NeedleBench's loaders call "
                          "tiktoken.encoding_for_model)", key_path="tokenizer_model") from None
    return tiktoken_encoding(name, "tokenizer_model")


@dataclass(frozen=True, slots=True)
class _Drawn:
    """What one row hides in its haystack: the needles (each between line ends), the question
    as the loader rewrote it, the answer column."""

    needles: list[str]
    question: str
    answer: str


def _needle(file: Path, language: str, counter: int, text: _Text, guide: bool) -> _Drawn:
    """``NeedleBenchOriginDataset``'s needle for ``counter``: one line of ``language``."""
    needles = []
    for index, line in enumerate(json_lines(file), 1):
        if "language" not in line:
            raise DataError(f"{file}: line {index}: no 'language' key (the loader reads it)")
        if line["language"] == language:
            needles.append(line)
    if not needles:
        raise DataError(f"{file}: no needle of language {language!r} (OpenCompass's loader "
                        "fails there)")
    drawn = random.Random(counter).choice(needles)
    needle = "\n" + drawn["needle"] + "\n"
    return _Drawn([needle], text.question(drawn["retrieval_question"], language, guide),
                  needle + "*" + drawn["arg2"])


def _reasoning(file: Path, count: int, counter: int, text: _Text, language: str,
               guide: bool) -> _Drawn:
    """``NeedleBenchMultiDataset``'s needles for ``counter``: one record of the JSON list whose
    ``derivation_count`` is ``count``."""
    records = json_document(file)
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise DataError(f"{file}: not a JSON list of records (NeedleBench's reasoning needles)")
    matching = [r for r in records if r.get("derivation_count") == count]
    if not matching:
        raise DataError(f"{file}: no record whose derivation_count is {count} "
                        "(OpenCompass's loader fails there)")
    drawn = random.Random(counter).choice(matching)
    return _Drawn(["\n" + needle + "\n" for needle in drawn["derivations"]],
                  text.question(drawn["question"], language, guide),
                  drawn["answer"] + "*" + drawn["answer"])


def _insertion_points(size: int, needles: list[list[int]], depth: float,
                      diff: float) -> list[int]:
    """Where each needle's tokens go in a haystack of ``size`` tokens, as the loader computes
    it: the first at ``depth`` percent, each next ``diff`` percent of the haystack after the
    end of the one before (never past the end), then shifted by the needles put before."""
    points: list[int] = []
    for i in range(len(needles)):
        if i == 0:
            point = int(size * (depth / 100))
        else:
            point = int(points[i - 1] + len(needles[i - 1]) + size * (diff / 100))
        points.append(min(point, size + sum(len(n) for n in needles[:i])))
    for i, needle in enumerate(needles):
        for j in range(i + 1, len(points)):
            points[j] += len(needle)
    return points


def _check(language: str, position: str, files: list[Path], repeats: int) -> None:
    if not files[1:] or repeats <= 0:
        return  # the loader makes no row, so checks nothing
    if language not in _LANGUAGES:
        raise ConfigError(f"language must be 'English' or 'Chinese', got {language!r} "
                          "(OpenCompass's loader fails there)", key_path="language")
    if position not in _POSITIONS:
        raise ConfigError(f"position must be 'End' or 'Start', got {position!r} (OpenCompass's "
                          "loader raises ValueError)", key_path="position")


def _haystack_rows(files: list[Path], *, length: int, length_buffer: int, repeats: int,
                   tokenizer_model: str, draw: Callable[[int], _Drawn],
                   insert: Callable[[int, list[list[int]]], list[int]],
                   prompt: Callable[[str, str], Text]) -> list[Row]:
    """``repeats`` rows (``prompt``, ``answer``) per haystack file (``files[1:]``)."""
    encoding = _encoding(tokenizer_model)
    rows: list[Row] = []
    for file in files[1:]:
        lines = list(json_lines(file))
        tokens_of: dict[int, list[int]] = {}  # a line's tokens, by its place in the file
        order = list(range(len(lines)))
        for counter in range(repeats):
            random.Random(counter).shuffle(order)
            try:
                drawn = draw(counter)
                needles = [encoding.encode(needle) for needle in drawn.needles]
            except (KeyError, TypeError, ValueError) as exc:
                raise DataError(f"{files[0]}: not a NeedleBench needle "
                                f"({type(exc).__name__}: {exc})") from None
            wanted = max(length - length_buffer - sum(map(len, needles)), 0)
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
            for point, needle in zip(insert(len(haystack), needles), needles, strict=True):
                haystack = haystack[:point] + needle + haystack[point:]
            rows.append({"prompt": prompt(encoding.decode(haystack), drawn.question),
                         "answer": drawn.answer})
    return rows


def _files(known: tuple[str, ...]) -> Callable[[str, Mapping[str, Any]], list[str]]:
    """The needle file, then each of the ``known`` haystacks the config lists."""
    def files(root: str, arguments: Mapping[str, Any]) -> list[str]:
        return [arguments["needle_file_name"],
                *(name for name in known if name in arguments["file_list"])]
    return files


_V2 = object()
"""The default of an argument one version of ``NeedleBenchOriginDataset.load`` lacks."""


def _origin(files: list[Path], path: str, length: int, depth: int, tokenizer_model: str,
            file_list: list[str], num_repeats_per_file: int, length_buffer: int,
            language: str, needle_file_name: str, guide: Any = _V2, position: Any = _V2,
            quesiton_position: Any = _V2) -> Splits:
    """``NeedleBenchOriginDataset``: ``num_repeats_per_file`` rows (``prompt``, ``answer``)
    per haystack file, one needle each. Two classes share the name: ``needlebench``'s takes
    ``guide`` (required) and ``position``, ``needlebench_v2``'s neither but
    ``quesiton_position`` (so spelt) and its own prompts; the arguments say which one a config
    imported, as each class rejects the other's."""
    v2 = guide is _V2
    if v2 and position is not _V2:
        raise ConfigError("NeedleBenchOriginDataset.load(): 'position' is an argument of "
                          "needlebench's class, which also requires 'guide' (needlebench_v2's "
                          "takes 'quesiton_position')", key_path="position")
    if not v2 and quesiton_position is not _V2:
        raise ConfigError("NeedleBenchOriginDataset.load(): 'quesiton_position' is an argument "
                          "of needlebench_v2's class, which takes no 'guide'", key_path="guide")
    where = position if not v2 else quesiton_position
    where = "End" if where is _V2 else where
    _check(language, where, files, num_repeats_per_file)
    text = _text("needlebench_v2/origin" if v2 else "needlebench/origin")
    return _haystack_rows(
        files, length=length, length_buffer=length_buffer, repeats=num_repeats_per_file,
        tokenizer_model=tokenizer_model,
        draw=lambda counter: _needle(files[0], language, counter, text, not v2 and guide),
        insert=lambda size, needles: [int(size * (depth / 100))],
        prompt=lambda context, question: text.prompt(context, question, language, where))


def _multi(files: list[Path], path: str, length: int, depth: int, tokenizer_model: str,
           file_list: list[str], num_repeats_per_file: int, length_buffer: int, guide: bool,
           language: str, needle_file_name: str, num_needles: int, diff: int,
           position: str = "End") -> Splits:
    """``NeedleBenchMultiDataset``: ``num_repeats_per_file`` rows (``prompt``, ``answer``)
    per haystack file, ``num_needles`` needles each, ``diff`` percent apart."""
    _check(language, position, files, num_repeats_per_file)
    text = _text("needlebench/multi")
    return _haystack_rows(
        files, length=length, length_buffer=length_buffer, repeats=num_repeats_per_file,
        tokenizer_model=tokenizer_model,
        draw=lambda counter: _reasoning(files[0], num_needles, counter, text, language, guide),
        insert=lambda size, needles: _insertion_points(size, needles, depth, diff),
        prompt=lambda context, question: text.prompt(context, question, language, position))


READERS = (
    NativeReader("NeedleBenchOriginDataset", _origin, _files(ORIGIN_HAYSTACKS)),
    NativeReader("NeedleBenchMultiDataset", _multi, _files(HAYSTACKS)),
)
