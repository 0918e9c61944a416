"""OlympiadBench's templates: ``OlympiadBenchTemplate`` and ``OlympiadBenchRawTemplate``.

OpenCompass 0.5.4 writes these prompts in Python rather than in the config: per row, an
instruction is chosen from the row's ``language``, ``subject``, ``question_type``,
``answer_type``, ``is_multiple_answer`` and ``unit``, and the row's ``problem`` follows it.
The instruction sentences are OpenCompass's own text, which this project does not ship.
They are read at run time from the installed ``opencompass`` package
(``opencompass/datasets/OlympiadBench.py``), parsed with :mod:`ast` for its string
constants and f-string templates; OpenCompass is never imported or run. Which text a row
gets is decided here, by the same rules. Without the package the template is one error
saying what to install (``pip install --no-deps opencompass==0.5.4`` is enough: only that
one source file is read).

The prompt template fills ``{prompt}`` with the instruction, which holds ``{problem}``; in
compat mode OpenCompass's sequential filling then puts the problem (and the masked output
column) in, so a problem that itself contains ``{solution}`` loses it (defect D1). The
default mode puts the problem in once and reads nothing inserted as template text.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import DataError, UnsupportedError
from ..policy import Policy
from .prompt_template import Ice, PromptTemplate, Rendered
from .raw_template import RawPromptTemplate

__all__ = ["OlympiadBenchRawTemplate", "OlympiadBenchTemplate", "PrompterText",
           "find_source", "prompter_text"]

SOURCE = ("datasets", "OlympiadBench.py")
"""Where the text lives inside the ``opencompass`` package."""
INSTALL_HINT = ("pip install --no-deps opencompass==0.5.4 (only its OlympiadBench.py source "
                "is read, never imported)")

# A statement's place in a function: the (condition source, branch taken) pairs above it.
Path_ = tuple[tuple[str, bool], ...]

_ZH, _EN = ("self.is_chinese", True), ("self.is_chinese", False)
_PROOF, _SOLVE = ("self.is_theorem_proving", True), ("self.is_theorem_proving", False)
_MULTI, _SINGLE = ("is_multiple_answer", True), ("is_multiple_answer", False)
_UNIT = ("unit", True)
_LANG = ("is_chinese", True), ("is_chinese", False)
_SKIP_TYPE = "'Need_human_evaluate' in answer_type or 'Tuple' in answer_type"
_ONE_ANSWER = ("not multiple_answer", True)
_SAME_TYPE = ("',' not in answer_type", True)
_ALL_EQUAL = "len(set(answer_types)) == 1"


class _Shape(Exception):
    """The source file does not have the structure this module reads."""


def _statements(func: ast.FunctionDef) -> dict[tuple[Path_, str], ast.expr]:
    """``(path, target)`` -> value for every ``name =``, ``name +=`` and ``return``.

    ``target`` is the assigned name (``+name`` for an augmented assignment, ``return``
    for a return value). A key met twice keeps its first value.
    """
    out: dict[tuple[Path_, str], ast.expr] = {}

    def walk(body: list[ast.stmt], path: Path_) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                test = ast.unparse(stmt.test)
                walk(stmt.body, (*path, (test, True)))
                walk(stmt.orelse, (*path, (test, False)))
            elif isinstance(stmt, ast.For):
                walk(stmt.body, (*path, ("for " + ast.unparse(stmt.target), True)))
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(
                    stmt.targets[0], ast.Name):
                out.setdefault((path, stmt.targets[0].id), stmt.value)
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                out.setdefault((path, "+" + stmt.target.id), stmt.value)
            elif isinstance(stmt, ast.Return) and stmt.value is not None:
                out.setdefault((path, "return"), stmt.value)

    walk(func.body, ())
    return out


def _text(node: ast.expr, env: Mapping[str, str]) -> str:
    """The value of a string expression: constants, f-strings of names, ``+``, names."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left, env) + _text(node.right, env)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                if v.conversion != -1 or v.format_spec is not None:
                    raise _Shape(f"formatted value {ast.unparse(v)}")
                parts.append(_text(v.value, env))
            else:
                parts.append(_text(v, env))
        return "".join(parts)
    raise _Shape(f"expression {ast.unparse(node)}")


@dataclass(frozen=True)
class PrompterText:
    """OlympiadBench's instruction texts, as read from OpenCompass's source file."""

    source: str
    """The file they were read from (for messages)."""
    type_order: tuple[str, ...]
    """Answer-type keywords, in the order they are looked for in ``answer_type``."""
    type_names: Mapping[bool, Mapping[str, str]]
    """Chinese (True) / English (False): answer-type keyword -> its wording."""
    answer_type: Mapping[tuple[Path_, str], ast.expr] = field(repr=False)
    prompt: Mapping[tuple[Path_, str], ast.expr] = field(repr=False)

    def _get(self, table: Mapping[tuple[Path_, str], ast.expr], path: Path_,
             target: str) -> ast.expr:
        try:
            return table[(path, target)]
        except KeyError:
            raise _Shape(f"no {target!r} under {path}") from None

    def _one_type(self, answer_type: str, chinese: bool) -> str:
        if "-" in answer_type:
            answer_type = answer_type[:answer_type.find("-")]
        for keyword in self.type_order:
            if keyword in answer_type:
                return self.type_names[chinese][keyword]
        raise DataError(f"OlympiadBench: the row's answer_type {answer_type!r} names none of "
                        f"{', '.join(self.type_order)}",
                        reference=("ValueError", f"Error parsing answer type {answer_type}!"))

    def _answer_type_text(self, answer_type: str, chinese: bool, multiple: bool) -> str:
        t = self.answer_type
        if "Need_human_evaluate" in answer_type or "Tuple" in answer_type:
            return _text(self._get(t, ((_SKIP_TYPE, True),), "return"), {})
        lang = _LANG[0] if chinese else _LANG[1]
        if not multiple:
            env = {"answer_text": self._one_type(answer_type, chinese)}
            return _text(self._get(t, (_ONE_ANSWER, lang), "return"), env)
        if "," not in answer_type:
            env = {"answer_text": self._one_type(answer_type, chinese)}
            return _text(self._get(t, (_SAME_TYPE, lang), "return"), env)
        names = [self._one_type(part, chinese) for part in answer_type.split(",")]
        if len(set(names)) == 1:
            return _text(self._get(t, ((_ALL_EQUAL, True), lang), "return"),
                         {"answer_text": names[0]})
        path = ((_ALL_EQUAL, False), lang)
        joiner = self._get(t, path, "answer_text")
        if not (isinstance(joiner, ast.Call) and isinstance(joiner.func, ast.Attribute)
                and joiner.func.attr == "join"):
            raise _Shape("the answer types are not joined with str.join")
        sep = _text(joiner.func.value, {})
        return _text(self._get(t, path, "return"), {"answer_text": sep.join(names)})

    def instruction(self, row: Mapping[str, Any]) -> str:
        """The prompt text for ``row``, with the ``{problem}`` placeholder still in it."""
        try:
            return self._instruction(row)
        except _Shape as exc:
            raise _shape_error(self.source, str(exc)) from None

    def _instruction(self, row: Mapping[str, Any]) -> str:
        chinese = row.get("language", "English") == "Chinese"
        math = row.get("subject", "Math") == "Math"
        proof = row.get("question_type", "") == "Theorem proof"
        multiple = bool(row.get("is_multiple_answer", False))
        unit = bool(row.get("unit", ""))
        p = self.prompt
        lang = _ZH if chinese else _EN
        subject = self._get(p, (lang,), "subject_content")
        if not isinstance(subject, ast.IfExp):
            raise _Shape("subject_content is not a conditional expression")
        env = {"subject_content": _text(subject.body if math else subject.orelse, {})}
        if proof:
            text = _text(self._get(p, (lang, _PROOF), "prompt"), env)
        else:
            answer_type = row.get("answer_type", "")
            if not isinstance(answer_type, str):
                raise DataError(
                    f"OlympiadBench: the row's answer_type must be a str, got {answer_type!r}",
                    reference=("TypeError", f"argument of type '{type(answer_type).__name__}' "
                               "is not iterable"))
            env["answer_type_text"] = self._answer_type_text(answer_type, chinese, multiple)
            box = _text(self._get(p, (lang, _SOLVE, _MULTI if multiple else _SINGLE),
                                  "multiple_answer_text"), env)
            env["unit_text"] = _text(self._get(p, (lang, _SOLVE), "unit_text"), env)
            if unit:
                box += _text(self._get(p, (lang, _SOLVE, _UNIT), "+multiple_answer_text"), env)
                env["unit_text"] = _text(self._get(p, (lang, _SOLVE, _UNIT), "unit_text"), env)
            env["multiple_answer_text"] = box
            text = _text(self._get(p, (lang, _SOLVE), "prompt"), env)
        text = _text(self._get(p, (), "prompt"), {"prompt": text})  # the problem slot
        return text + _text(self._get(p, (lang,), "+prompt"), {})


def _shape_error(source: str, detail: str) -> UnsupportedError:
    return UnsupportedError(
        f"OlympiadBench's prompt text is read from {source}, but that file does not have the "
        f"structure of OpenCompass 0.5.4's ({detail})", key_path="type",
        hint=f"install OpenCompass 0.5.4: {INSTALL_HINT}")


def find_source(root: Path | None = None) -> Path:
    """``opencompass/datasets/OlympiadBench.py`` of the installed package (not imported), else
    beside the configs folder ``root`` stood for when the dataset's config loaded."""
    try:
        spec = importlib.util.find_spec("opencompass")
    except (ImportError, ValueError):
        spec = None
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    for folder in folders:
        candidate = Path(folder).joinpath(*SOURCE)
        if candidate.is_file():
            return candidate
    # Else the package whose configs/ the configs were read from (--opencompass-configs
    # .../site-packages/opencompass/configs): its datasets/OlympiadBench.py lies beside.
    if root is not None:
        candidate = Path(os.path.realpath(root / "configs")).parent.joinpath(*SOURCE)
        if candidate.is_file():
            return candidate
    found = " (the installed opencompass has no datasets/OlympiadBench.py)" if folders else ""
    raise UnsupportedError(
        "OlympiadBenchTemplate and OlympiadBenchRawTemplate build their prompt from text "
        "written in OpenCompass's Python code, which this project does not ship; it is read "
        f"from an installed 'opencompass' package, and none is importable{found}",
        key_path="type", hint=INSTALL_HINT)


def _function(tree: ast.Module, name: str, source: str) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise _shape_error(source, f"no function {name}")


@lru_cache(maxsize=4)
def _read(path: str) -> PrompterText:
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise _shape_error(path, f"{type(exc).__name__}: {exc}") from None
    single = _statements(_function(tree, "get_single_answer_type_text", path))
    try:
        names = {chinese: ast.literal_eval(single[((), var)]) for chinese, var in
                 ((True, "chinese_answer_type_dict"), (False, "english_answer_type_dict"))}
    except (KeyError, ValueError) as exc:
        raise _shape_error(path, f"answer-type wordings: {exc}") from None
    loop = next((n for n in ast.walk(_function(tree, "get_single_answer_type_text", path))
                 if isinstance(n, ast.For)), None)
    try:
        order = tuple(ast.literal_eval(loop.iter)) if loop is not None else ()
    except ValueError:
        order = ()
    if not order or not all(isinstance(t, str) and all(t in names[c] for c in names)
                            for t in order):
        raise _shape_error(path, "answer-type keywords")
    return PrompterText(path, order, names,
                        _statements(_function(tree, "get_answer_type_text", path)),
                        _statements(_function(tree, "make_prompt", path)))


def prompter_text(root: Path | None = None) -> PrompterText:
    """The texts of the installed OpenCompass (read once per process; ``root``: as
    :func:`find_source`)."""
    return _read(str(find_source(root)))


def _problem(row: Mapping[str, Any], policy: Policy) -> str:
    problem = row.get("problem", "")
    if not isinstance(problem, str) and policy.compat:
        raise DataError(f"OlympiadBench: the row's problem must be a str, got {problem!r}",
                        reference=("TypeError", "replace() argument 2 must be str, not "
                                   f"{type(problem).__name__}"))
    return str(problem)


class OlympiadBenchTemplate(PromptTemplate):
    """OpenCompass's ``OlympiadBenchTemplate``: one HUMAN turn, instruction then problem."""

    def __init__(self, *, where: str = "template", root: Path | None = None) -> None:
        super().__init__({"round": [{"role": "HUMAN", "prompt": "{prompt}"}]}, where=where)
        self.text = prompter_text(root)

    def gen_item(self, row: Mapping[str, Any], ice: Ice, policy: Policy, *,
                 output_column: str | None = None, replace_token: str = "") -> Rendered:
        instruction = self.text.instruction(row)
        if policy.compat:  # OpenCompass fills prompt, then problem, then the output column
            entry: dict[str, Any] = {"prompt": instruction, "problem": row.get("problem", "")}
        else:
            entry = {"prompt": instruction.replace("{problem}", str(row.get("problem", "")))}
        return super().gen_item(entry, ice, policy, output_column=output_column,
                                replace_token=replace_token)


@dataclass(frozen=True, slots=True, init=False)
class OlympiadBenchRawTemplate(RawPromptTemplate):
    """OpenCompass's ``OlympiadBenchRawTemplate``: one user message, instruction + problem."""

    text: PrompterText | None

    def __init__(self, *, where: str = "template", text: PrompterText | None = None) -> None:
        RawPromptTemplate.__init__(self, [{"role": "user", "content": "{problem}"}], True,
                                   "</E>", where=where)
        object.__setattr__(self, "text", text)

    @classmethod
    def create(cls, *, where: str = "template",
               root: Path | None = None) -> OlympiadBenchRawTemplate:
        return cls(where=where, text=prompter_text(root))

    def gen_item(self, row: Mapping[str, Any], ice: Ice, policy: Policy, *,
                 output_column: str | None = None, replace_token: str = "") -> list[Any]:
        assert self.text is not None
        full = self.text.instruction(row).replace("{problem}", _problem(row, policy))
        return super(OlympiadBenchRawTemplate, self).gen_item(
            {"problem": full}, ice, policy, output_column=output_column,
            replace_token=replace_token)
