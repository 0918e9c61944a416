"""Newer benchmark folders: BigCodeBench's JSON Lines, CIBench's notebooks, MMLU-Pro's
Parquet shards, TheoremQA's CSV file, AlignmentBench's questions, LiveMathBench's sets,
KOR-Bench's rules and questions."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Mapping, Sequence
from itertools import product
from pathlib import Path
from typing import Any

import yaml

from ...errors import ConfigError, DataError
from ..rows import Row
from .arrow import from_list
from .files import csv_records, json_document, json_lines
from .oc_text import module_strings, package_file, source_tree
from .registry import NativeReader, NotNative, Splits

__all__ = ["READERS"]


def _bigcodebench_file(root: str, arguments: Mapping[str, Any]) -> list[str]:
    version = arguments["dataset_version"]
    if version not in ("full", "hard"):
        raise ConfigError(f"BigCodeBenchDataset: dataset_version must be 'full' or 'hard', got "
                          f"{version!r} (OpenCompass's loader asserts it)")
    hard = "-Hard" if version == "hard" else ""
    return [f"BigCodeBench{hard}-{arguments['release_version']}.jsonl"]


def _bigcodebench(files: list[Path], path: str = "opencompass/bigcodebench",
                  local_mode: bool = False, release_version: str = "v0.1.2",
                  dataset_version: str = "full") -> Splits:
    """``BigCodeBenchDataset``: the tasks of ``BigCodeBench[-Hard]-<release>.jsonl`` (blank
    lines skipped), the same rows as ``train`` and ``test``."""
    (file,) = files
    rows = from_list(list(json_lines(file, blank_ok=True)), str(file))
    return {"train": rows, "test": list(rows)}


def _walk(path: str) -> list[str]:
    """Every file under ``path`` whose name holds ``.ipynb``, spelt and ordered as the loader's
    walk finds them (folders and files sorted by name; linked folders not entered)."""
    found = []
    for folder, dirs, names in os.walk(path):
        dirs.sort()
        names.sort()
        found += [os.path.join(folder, name) for name in names if ".ipynb" in name]
    return found


def _notebooks(root: str, arguments: Mapping[str, Any]) -> list[str]:
    return [os.path.relpath(file, root) for file in _walk(root)]


def _joined(parts: Any) -> str:
    """A notebook's multi-line text (a list of lines, or one string) as one string."""
    return "".join(parts)


def _cell_output(cell: Row) -> tuple[str, str | None]:
    """A code cell's tag and output: its first image (``vis``), else its last printed
    text or result (``general``), else none (``exec``)."""
    outputs = cell["outputs"]
    image: str | None = None
    shown = False
    for output in outputs:
        if output["output_type"] == "display_data":
            if shown:
                raise ValueError("an output after an image (OpenCompass's loader asserts none)")
            if "image/png" in output["data"]:
                shown, image = True, output["data"]["image/png"]
    if shown:
        return "vis", image
    for output in reversed(outputs):
        if output["output_type"] == "stream" and output["name"] == "stdout":
            return "general", _joined(output["text"])
        if output["output_type"] == "execute_result":
            return "general", _joined(output["data"]["text/plain"])
    return "exec", None


def _experiment(file: str) -> Row:
    """One notebook as ``CIBenchDataset`` reads it: each markdown cell a user turn (its text
    before ``Thought:``, with the modules to use), each code cell the assistant's thought and
    code, and the outputs to compare."""
    notebook = json_document(Path(file))
    cells = notebook["cells"]
    metadata = notebook["metadata"]
    modules = metadata.get("modules", [])
    if modules:
        if len(modules) != len(metadata.get("step_types")):
            raise ValueError("metadata 'modules' and 'step_types' differ in length "
                             "(OpenCompass's loader asserts they match)")
        modules = [[m.strip() for m in step.split("&")] for step in modules]
    questions: list[str] = []
    thoughts: list[str] = []
    codes: list[str] = []
    outputs: list[str | None] = []
    tags: list[str] = []
    for cell in cells:
        if cell["cell_type"] == "markdown":
            text = _joined(cell["source"]).strip()
            parts = text.split("\n\nThought: ")
            text, thought = parts if len(parts) == 2 else (text, " ")
            if modules:
                names = modules.pop(0)
                text += (f"Please use {' and '.join(names)} modules." if "chinese" not in file
                         else f"请用 {' 和 '.join(names)} 模块.")
            questions.append(text.strip() + "\n")
            thoughts.append(thought)
        elif cell["cell_type"] == "code":
            codes.append(_joined(cell["source"]))
            tag, output = _cell_output(cell)
            tags.append(tag)
            outputs.append(output)
    turns: list[Row] = []
    for question, code, thought in zip(questions, codes, thoughts, strict=False):
        turns += [{"role": "user", "content": question},
                  {"role": "assistant", "content": thought + "**split**" + code}]
    return {"experiment": file, "questions": turns,
            "references": {"outputs": outputs, "tags": tags, "metadata": metadata,
                           "experiment": file}}


def _cibench(files: list[Path], path: str, internet_check: bool = False) -> Splits:
    """``CIBenchDataset``: one row per notebook under ``path`` (read as given, from the
    working folder), named as the loader's walk spells it."""
    rows: list[Row] = []
    for file in _walk(path):
        try:
            rows.append(_experiment(file))
        except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
            raise DataError(f"{file}: not a CIBench notebook ({type(exc).__name__}: "
                            f"{exc})") from None
    return from_list(rows, path)


def _cibench_online(arguments: Mapping[str, Any]) -> str | None:
    return ("internet_check=True downloads NLTK data to check the connection"
            if arguments["internet_check"] else None)


_MMLU_PRO_SHARD = re.compile(r"(?P<split>test|validation)-\d{5}-of-\d{5}\.parquet")
_LETTERS = "ABCDEFGHIJKLMNOP"
"""The option letters MMLU-Pro's loader knows (a 17th option is an error there)."""
_COT_PREFIX = "A: Let's think step by step."


def _mmlu_pro_shards(root: str, arguments: Mapping[str, Any]) -> list[str]:
    """The Parquet shards of the folder as OpenCompass's data holds them
    (``test-00000-of-00001.parquet``, ``validation-...``), in name order; any other
    layout is ``load_dataset``'s to read."""
    folder = Path(root)
    if not folder.is_dir():
        raise NotNative(f"{root} is not a folder of Parquet shards")
    names = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if not p.is_dir())
    other = [n for n in names if not _MMLU_PRO_SHARD.fullmatch(n)]
    if other or not names:
        raise NotNative(f"{root} holds {other[0] if other else 'no file'}, not only "
                        "test/validation Parquet shards; load_dataset decides such a layout")
    return names


def _mmlu_pro_question(row: Row) -> Row:
    """One question as MMLU-Pro's loader maps it: ``answer_string`` (the answer's listed
    line, or ``""``), ``options_str`` (the options but ``N/A`` as lettered lines) and
    ``cot_content`` without its leading prompt."""
    listed = ""
    row["answer_string"] = ""
    for index, option in enumerate(row["options"]):
        if option == "N/A":
            continue
        line = f"{_LETTERS[index]}. {option}\n"
        listed += line
        if row["answer"] == _LETTERS[index]:
            row["answer_string"] = line
    row["options_str"] = listed.strip()
    row["cot_content"] = row["cot_content"].removeprefix(_COT_PREFIX).strip()
    return row


def _mmlu_pro(files: list[Path], path: str, category: str) -> Splits:
    """``MMLUProDataset``: the questions of ``category`` in each split (``test``,
    ``validation``), mapped by :func:`_mmlu_pro_question`."""
    from ..parquet import ParquetRows

    shards: dict[str, list[Path]] = {}
    for file in files:
        match = _MMLU_PRO_SHARD.fullmatch(file.name)
        assert match is not None  # _mmlu_pro_shards listed only these
        shards.setdefault(match["split"], []).append(file)
    found: dict[str, list[Row]] = {}
    for split in ("validation", "test"):
        if split not in shards:
            continue
        rows: list[Row] = []
        for n, row in enumerate(ParquetRows(shards[split])):
            try:
                if row["category"] == category:
                    rows.append(_mmlu_pro_question(dict(row)))
            except (KeyError, TypeError, IndexError, AttributeError) as exc:
                raise DataError(f"{shards[split][0]}: row {n}: not an MMLU-Pro question "
                                f"({type(exc).__name__}: {exc})") from None
        found[split] = rows
    return found


_PANDAS_NA = frozenset({
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
"""The fields pandas' ``read_csv`` reads as missing (its default ``na_values``)."""
_MAYBE_NOT_TEXT = re.compile(
    r"\s*[-+]?(\d+\.?\d*(e[-+]?\d+)?|\.\d+(e[-+]?\d+)?|inf(inity)?|nan)\s*|true|false",
    re.IGNORECASE)
"""A field pandas might read as a number or a boolean (a wide net: such a column is not read
natively, its type is pandas' to decide)."""
_PANDAS_CHUNK = 10_000
"""Rows ``load_dataset("csv")`` gives pandas to type at a time."""


def _theoremqa(files: list[Path], path: str) -> Splits:
    """``TheoremQADataset``: ``load_dataset("csv")`` of the file as one ``test`` split, read
    natively when pandas would type every column as text: each column has a field that is
    neither missing (``""``, ``NA``, ... read as None) nor number-like; any other file goes
    to OpenCompass's own loader."""
    (file,) = files
    with open(file, "rb") as fh:
        head = fh.read(3)
        carriage = head == b"\xef\xbb\xbf" or b"\r" in head + fh.read()
    if carriage:
        raise NotNative(f"{file}: a carriage return or a byte-order mark (pandas' reading)")
    header: list[str] | None = None
    records: list[list[str]] = []
    for line, fields in csv_records(file):
        if not fields:
            continue  # a blank line: pandas skips it
        if header is None:
            if len(set(fields)) != len(fields) or not all(fields):
                raise NotNative(f"{file}: an empty or repeated column name (pandas renames it)")
            header = fields
        elif len(fields) != len(header) or not "".join(fields).strip():
            raise NotNative(f"{file}: line {line}: {len(fields)} fields under "
                            f"{len(header)} names (pandas' reading)")
        else:
            records.append(fields)
    if header is None or len(records) > _PANDAS_CHUNK:
        raise NotNative(f"{file}: no header, or more rows than pandas types at once")
    for index, name in enumerate(header):
        present = [r[index] for r in records if r[index] not in _PANDAS_NA]
        if present and all(_MAYBE_NOT_TEXT.fullmatch(v) for v in present):
            raise NotNative(f"{file}: column {name!r} may be numbers or booleans to pandas")
    rows = [{name: None if value in _PANDAS_NA else value
             for name, value in zip(header, record, strict=True)} for record in records]
    return {"test": rows}


def _alignment_bench(files: list[Path], path: str, name: str,
                     alignment_bench_config_path: str | None = "",
                     alignment_bench_config_name: str | None = "",
                     *args: Any, **kwargs: Any) -> Splits:
    """``AlignmentBenchDataset`` without a judge's config: each question with its
    ``capability`` and ``others``, ``judge`` (capability, question and, once the rows are a
    ``Dataset``, ``others``) and ``ref`` (``others``' ``reference``)."""
    (file,) = files
    data = json_document(file)
    if not isinstance(data, list):
        raise DataError(f"{file}: expected a list of questions, got {type(data).__name__}")
    rows: list[Row] = []
    for n, problem in enumerate(data):
        try:
            question, capability = problem["question"], problem["capability"]
            rows.append({"question": question, "capability": capability,
                         "others": problem["others"],
                         "judge": {"capability": capability, "question": question}})
        except (KeyError, TypeError) as exc:
            raise DataError(f"{file}: question {n}: an AlignmentBench question needs {exc}"
                            ) from None
    for n, row in enumerate(from_list(rows, str(file))):
        try:
            row["judge"]["others"] = row["others"]
            row["ref"] = row["others"]["reference"]
        except (KeyError, TypeError) as exc:
            raise DataError(f"{file}: question {n}: 'others' needs {exc}") from None
        rows[n] = row
    return from_list(rows, str(file))


def _alignment_bench_judged(arguments: Mapping[str, Any]) -> str | None:
    return ("a judge's config (alignment_bench_config_path) adds OpenCompass's own prompt text"
            if arguments["alignment_bench_config_path"] != "" else None)


def _livemath_sets(root: str, arguments: Mapping[str, Any]) -> list[str]:
    return [f"{arguments['version']}/{split}_{language}.jsonl" for split, language in
            product(arguments["dataset_splits"], arguments["dataset_languages"])]


def _livemath_prompts() -> tuple[dict[str, str], tuple[str, str]]:
    """LiveMathBench's prompts (``PROMPT_EN``, ``PROMPT_CN``) and the phrases its loader
    removes from them without ``cot`` (Chinese, English), read from OpenCompass's source."""
    strings = module_strings(package_file("datasets", "livemathbench", "prompts.py"))
    loader = source_tree(package_file("datasets", "livemathbench", "livemathbench.py"))
    phrases = [node.args[0].value for node in ast.walk(loader)
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == "replace" and ast.unparse(node.func.value) == "prompt"
               and len(node.args) == 2 and isinstance(node.args[0], ast.Constant)
               and isinstance(node.args[0].value, str)]
    if len(phrases) != 2 or not {"PROMPT_EN", "PROMPT_CN"} <= set(strings):
        raise NotNative("OpenCompass's LiveMathBench source is not shaped as this project "
                        "reads it")
    return strings, (phrases[0], phrases[1])


def _livemathbench(files: list[Path], path: str,
                   dataset_splits: Sequence[str] = ("CNMO", "CCEE", "AMC", "WLPMC"),
                   dataset_languages: Sequence[str] = ("cn", "en"), cot: bool = True,
                   version: str = "202412") -> Splits:
    """``LiveMathBenchDataset``: the questions of every set and language, each with its
    ``subdivision``, ``idx`` (its place in its file, as text) and ``prompt`` (OpenCompass's
    prompt of the language holding the question; without ``cot``, less its step-by-step
    phrase)."""
    strings, (chinese, english) = _livemath_prompts()
    rows: list[Row] = []
    sets = product(dataset_splits, dataset_languages)
    for file, (split, language) in zip(files, sets, strict=True):
        prompt = strings["PROMPT_EN"] if language == "en" else strings["PROMPT_CN"]
        if not cot:
            prompt = prompt.replace(chinese if language == "cn" else english, "")
        for index, example in enumerate(json_lines(file)):
            try:
                example.update({"subdivision": f"livemathbench_{version}_{split}_{language}",
                                "idx": str(index),
                                "prompt": prompt.format(question=example["question"])})
            except (KeyError, IndexError, ValueError) as exc:
                raise DataError(f"{file}: line {index + 1}: not a LiveMathBench question "
                                f"({type(exc).__name__}: {exc})") from None
            rows.append(example)
    return from_list(rows, path)


_KORBENCH_PARTS = {"0_shot": ("rule", "sample"), "3_shot": ("rule", "sample", "three-shot")}


def _korbench_files(root: str, arguments: Mapping[str, Any]) -> list[str]:
    """Each part's ``<category>/<part>.json``, else its ``.jsonl`` (the first that exists)."""
    names = []
    for part in _KORBENCH_PARTS[arguments["prompt_mode"]]:
        stem = os.path.join(arguments["category"], part)
        names.append(next((f"{stem}.{ext}" for ext in ("json", "jsonl")
                           if os.path.exists(os.path.join(root, f"{stem}.{ext}"))),
                          f"{stem}.json"))
    return names


def _korbench_items(file: Path) -> list[Any]:
    """A part's items: a ``.json`` file's value, a ``.jsonl`` file's lines (a blank line is
    malformed); an empty value is no items."""
    items = json_document(file) if file.suffix == ".json" else list(json_lines(file))
    if not items:
        return []
    if not isinstance(items, list):
        raise DataError(f"{file}: expected a list of objects, got {type(items).__name__}")
    return items


def _korbench_refused(arguments: Mapping[str, Any]) -> str | None:
    if arguments["prompt_mode"] not in _KORBENCH_PARTS:
        return f"prompt_mode {arguments['prompt_mode']!r} is read by OpenCompass's own loader"
    return None


def _korbench(files: list[Path], path: str, prompt_mode: str, category: str,
              **kwargs: Any) -> Splits:
    """``korbenchDataset`` (``0_shot``, ``3_shot``): each question whose rule is found, its
    prompt OpenCompass's template of the category (read from its package) filled with the
    rule, the rule's example questions and answers (``3_shot``) and the question."""
    template_file = package_file("datasets", "korbench", "korbench_dataset_config", "prompt",
                                 f"{prompt_mode}.yaml")
    try:
        with open(template_file, encoding="utf-8") as fh:
            templates = yaml.safe_load(fh)
    except (OSError, yaml.YAMLError) as exc:
        raise NotNative(f"{template_file}: cannot read it ({type(exc).__name__})") from None
    rule_file, sample_file, *shots_file = files
    rules = _korbench_items(rule_file)
    shots = _korbench_items(shots_file[0]) if shots_file else []
    rows: list[Row] = []
    for n, sample in enumerate(_korbench_items(sample_file)):
        try:
            rule_id = sample["rule_id"]
            rule = next((r for r in rules if r["idx"] == rule_id), None)
            examples = [text for shot in shots if shot["rule_id"] == rule_id
                        for text in (shot["question"], shot["answer"])]
            if not rule:
                continue  # OpenCompass prints a warning and skips it
            prompt = templates[f"{category}_prompt_format"][0].format(
                rule["rule_content"], *examples, sample["question"])
            rows.append({"rule_content": rule["rule_content"], "question": sample["question"],
                         "answer": sample["answer"], "prompt": prompt, "rule_id": rule["idx"],
                         "prompt_mode": prompt_mode, "category": category})
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            raise DataError(f"{sample_file}: question {n}: not a KOR-Bench question with its "
                            f"rule ({type(exc).__name__}: {exc})") from None
    return from_list(rows, str(sample_file))


READERS = (
    NativeReader("BigCodeBenchDataset", _bigcodebench, _bigcodebench_file, local_mode=None),
    NativeReader("CIBenchDataset", _cibench, _notebooks, data_path=False,
                 refuse=_cibench_online),
    NativeReader("MMLUProDataset", _mmlu_pro, _mmlu_pro_shards),
    NativeReader("TheoremQADataset", _theoremqa, local_mode=True),
    NativeReader("LiveMathBenchDataset", _livemathbench, _livemath_sets),
    NativeReader("korbenchDataset", _korbench, _korbench_files, refuse=_korbench_refused),
    NativeReader("AlignmentBenchDataset", _alignment_bench, ("{name}.json",), local_mode=True,
                 refuse=_alignment_bench_judged),
)
