"""BABILong's tasks (``BabiLongDataset``): ``<path>/<task>/<split_name>.json``, each sample's
context and question put in the loader's template with the task's instruction, examples and
closing words (each left out when the config turns it off).

The template and the task prompts are OpenCompass's text: they are read from the source of the
``opencompass`` package on the import path (:mod:`.oc_text`; never imported); without one the
rows come from OpenCompass's own loader.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ...errors import ConfigError, DataError
from ..rows import Row
from .arrow import from_list
from .files import json_document
from .oc_text import filled, module_strings, package_file, source_tree
from .registry import NativeReader, NotNative, Splits

__all__ = ["READERS"]

TASKS = tuple(f"qa{n}" for n in range(1, 11))
"""The tasks the loader accepts (its ``assert``)."""
SPLITS = ("0k", "1k", "2k", "4k", "8k", "16k", "32k", "64k", "128k", "256k", "512k", "1m")
"""The context lengths it accepts."""
_PARTS = ("instruction", "examples", "post_prompt")


@cache
def _prompts() -> tuple[str, dict[str, dict[str, str]]]:
    """The loader's template and its prompts per task, read from OpenCompass's source.

    Raises:
        NotNative: No ``opencompass`` package, or its source is not shaped as read here.
    """
    file = package_file("datasets", "babilong", "prompts.py")
    where = "opencompass/datasets/babilong/prompts.py"
    strings = module_strings(file)
    nodes = {node.targets[0].id: node.value for node in source_tree(file).body
             if isinstance(node, ast.Assign) and len(node.targets) == 1
             and isinstance(node.targets[0], ast.Name)}
    if "DEFAULT_TEMPLATE" not in nodes or "DEFAULT_PROMPTS" not in nodes:
        raise NotNative(f"{where} has no DEFAULT_TEMPLATE or DEFAULT_PROMPTS")
    template = filled(nodes["DEFAULT_TEMPLATE"], strings, where)
    try:
        prompts = ast.literal_eval(nodes["DEFAULT_PROMPTS"])
    except ValueError:
        raise NotNative(f"{where}: DEFAULT_PROMPTS is not a literal") from None
    shaped = (isinstance(template, str) and isinstance(prompts, dict) and all(
        isinstance(prompts.get(task), dict)
        and all(isinstance(prompts[task].get(part), str) for part in _PARTS) for task in TASKS))
    if not shaped:
        raise NotNative(f"{where} is not shaped as this project reads it")
    assert isinstance(template, str)
    return template, prompts


def _file(root: str, arguments: Mapping[str, Any]) -> list[str]:
    task, split_name = arguments["task"], arguments["split_name"]
    if task not in TASKS:
        raise ConfigError(f"BabiLongDataset: task must be one of qa1 ... qa10, got {task!r} "
                          "(OpenCompass's loader asserts it)", key_path="task")
    if split_name not in SPLITS:
        raise ConfigError(f"BabiLongDataset: split_name must be one of {', '.join(SPLITS)}, got "
                          f"{split_name!r} (OpenCompass's loader asserts it)",
                          key_path="split_name")
    return [f"{task}/{split_name}.json"]


def _babilong(files: list[Path], path: str, task: str, split_name: str,
              use_instruction: bool = True, use_examples: bool = True,
              use_post_prompt: bool = True) -> Splits:
    """``BabiLongDataset``: per sample, ``prompt`` (a list of one text) and ``answer`` (a list
    of its ``target``)."""
    template, prompts = _prompts()
    used = {"instruction": use_instruction, "examples": use_examples,
            "post_prompt": use_post_prompt}
    parts = {part: prompts[task][part] if used[part] else "" for part in _PARTS}
    (file,) = files
    samples = json_document(file)
    if not isinstance(samples, list):
        raise DataError(f"{file}: not a JSON list of samples (BABILong's task file)")
    rows: list[Row] = []
    for index, sample in enumerate(samples):
        try:
            text = template.format(**parts, context=sample["input"].strip(),
                                   question=sample["question"]).strip()
            rows.append({"prompt": [text], "answer": [sample["target"]]})
        except (KeyError, TypeError, AttributeError) as exc:
            raise DataError(f"{file}: sample {index}: not a BABILong sample "
                            f"({type(exc).__name__}: {exc})") from None
    return from_list(rows, str(file))


READERS = (
    NativeReader("BabiLongDataset", _babilong, _file),
)
