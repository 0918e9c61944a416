"""Path-only custom datasets: the reader and infer config OpenCompass builds from a data file.

A dataset entry with a ``path`` and no loader ``type`` (``dict(path='data/x.jsonl',
data_type='circular-mcq', infer_method='gen')``) is completed from the first row of its
file, as OpenCompass 0.5.4 completes it:

* ``input_columns`` = every key of that row except ``answer``; ``output_column`` =
  ``answer`` when the row has one;
* ``options`` = the leading run of keys ``A``, ``B``, ``C`` ... present in the row;
  ``data_type`` = ``mcq`` with two or more options, else ``qa``; ``infer_method`` = ``gen``;
* keys from ``<path>.meta.json`` (or ``meta_path``) override these, and keys of the entry
  override both;
* the prompt template is ``Question: {question}`` plus one ``\\n{X}. {{X}}`` line per option
  and ``Answer: {answer}`` (``{question}`` / ``{answer}`` for ``qa``), as HUMAN / BOT turns
  unless the entry gives ``template``, ``human_prompt`` or ``bot_prompt``; ``ppl`` makes
  one template per option with the answer filled in;
* ``circular-mcq`` rows are rotated through every cyclic order of the options (CircularEval),
  each copy with ``qid`` and ``circular_pattern`` columns and the answer moved with it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..safety.format_guard import FormatRefused, safe_format

__all__ = ["circular_rows", "complete_custom_dataset"]

_MAKERS = {("mcq", "gen"), ("mcq", "ppl"), ("qa", "gen"), ("circular-mcq", "gen"),
           ("circular-mcq", "ppl")}


def _parsed_meta(path: str, first_row: Mapping[str, Any]) -> dict[str, Any]:
    options = []
    for i in range(26):
        key = chr(ord("A") + i)
        if key not in first_row:
            break
        options.append(key)
    return {
        "path": path,
        "input_columns": [k for k in first_row if k != "answer"],
        "output_column": "answer" if "answer" in first_row else None,
        "options": options,
        "abbr": Path(path).name.split(".")[0],
        "data_type": "mcq" if len(options) > 1 else "qa",
        "infer_method": "gen",
    }


def _meta_file(entry: Mapping[str, Any], search: Sequence[Path]) -> dict[str, Any]:
    name = entry.get("meta_path", str(entry["path"]) + ".meta.json")
    for folder in search:
        file = Path(folder) / str(name)
        if file.is_file():
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"cannot read the custom dataset meta file {file}: {exc}",
                                  key_path="meta_path") from exc
            if isinstance(data, dict):
                return data
    return {}


def complete_custom_dataset(entry: Mapping[str, Any], first_row: Mapping[str, Any],
                            search: Sequence[Path] = ()) -> dict[str, Any]:
    """The full dataset config (case format) of a path-only custom dataset.

    Args:
        entry: The dataset entry as written (``path`` and optional overrides).
        first_row: The first row of its data file.
        search: Folders in which a relative ``<path>.meta.json`` is looked for.

    Raises:
        ConfigError: ``data_type`` / ``infer_method`` name no known combination.
    """
    meta = _parsed_meta(str(entry["path"]), first_row)
    meta.update(_meta_file(entry, search))
    meta.update(copy.deepcopy(dict(entry)))
    kind = (meta["data_type"], meta["infer_method"])
    if kind not in _MAKERS:
        raise ConfigError(
            f"unsupported custom dataset data_type {meta['data_type']!r} with infer_method "
            f"{meta['infer_method']!r}; supported: mcq/gen, mcq/ppl, qa/gen, circular-mcq/gen, "
            "circular-mcq/ppl", key_path="data_type",
            reference=("ValueError", f"Unsupported dataset data_type: {meta['data_type']} and "
                       f"infer_method: {meta['infer_method']}"))
    output = meta["output_column"]
    reader: dict[str, Any] = {"input_columns": meta["input_columns"], "output_column": output}
    if "test_range" in meta:
        reader["test_range"] = meta["test_range"]
    template = meta.get("template")
    if template is None:
        template = _template(meta, kind)
    inferencer = "PPLInferencer" if kind[1] == "ppl" else "GenInferencer"
    spec: dict[str, Any] = {
        "abbr": meta["abbr"],
        "type": "CircularCustomDataset" if kind[0] == "circular-mcq" else "CustomDataset",
        "path": meta["path"],
        "reader_cfg": reader,
        "infer_cfg": {
            "prompt_template": {"type": "PromptTemplate", "template": template},
            "retriever": {"type": "ZeroRetriever"},
            "inferencer": {"type": inferencer},
        },
    }
    if kind[0] == "circular-mcq":
        spec["option_keys"] = meta["options"]
        spec["answer_key"] = output
    return spec


def _template(meta: Mapping[str, Any], kind: tuple[str, str]) -> Any:
    output = meta["output_column"]
    if kind[0] == "qa":
        human = meta.get("human_prompt", "{question}")
        if output is None:
            return {"round": [{"role": "HUMAN", "prompt": human}]}
        bot = meta.get("bot_prompt", "{" + str(output) + "}")
        return {"round": [{"role": "HUMAN", "prompt": human}, {"role": "BOT", "prompt": bot}]}
    default_human = "Question: {question}" + "".join(f"\n{o}. {{{o}}}" for o in meta["options"])
    human = meta.get("human_prompt", default_human)
    bot = meta.get("bot_prompt", f"Answer: {{{output}}}")
    if kind[1] == "gen":
        return {"round": [{"role": "HUMAN", "prompt": human}, {"role": "BOT", "prompt": bot}]}
    return {
        answer: {"round": [{"role": "HUMAN", "prompt": human},
                           {"role": "BOT", "prompt": _fill_bot(bot, str(output), answer)}]}
        for answer in meta["options"]
    }


def _fill_bot(bot: Any, output: str, answer: str) -> str:
    """OpenCompass's ``bot_prompt.format(**{output_column: answer})``, names only."""
    if not isinstance(bot, str):
        raise ConfigError(f"bot_prompt must be a str, got {type(bot).__name__}",
                          key_path="bot_prompt")
    try:
        return safe_format(bot, **{output: answer})
    except FormatRefused as exc:
        raise ConfigError(str(exc), key_path="bot_prompt") from None
    except (KeyError, IndexError) as exc:
        name = exc.args[0] if exc.args else "?"
        raise ConfigError(
            f"the placeholder {{{name}}} names no value; a ppl bot_prompt is filled with "
            f"{{{output}}} (the output column) only", key_path="bot_prompt",
            hint="write a literal brace as {{ or }}",
            reference=(type(exc).__name__, repr(name))) from None
    except ValueError as exc:
        raise ConfigError(f"malformed bot_prompt: {exc}", key_path="bot_prompt") from None


def circular_rows(rows: Sequence[Mapping[str, Any]], option_keys: Sequence[str],
                  answer_key: str | None) -> list[dict[str, Any]]:
    """Every row once per cyclic rotation of its options (OpenCompass's CircularEval)."""
    keys = list(option_keys)
    patterns = [tuple((keys + keys)[i:i + len(keys)]) for i in range(len(keys))]
    out: list[dict[str, Any]] = []
    for qid, row in enumerate(rows):
        for pattern in patterns:
            item = copy.deepcopy(dict(row))
            for i, key in enumerate(keys):
                item[pattern[i]] = row.get(key)
            if answer_key is not None and row.get(answer_key) in keys:
                item[answer_key] = pattern[keys.index(row[answer_key])]
            item["qid"] = qid
            item["circular_pattern"] = list(pattern)
            out.append(item)
    return out
