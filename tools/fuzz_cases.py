"""Generated and mutated compile inputs, shared by ``tools/fuzz.py`` and ``tests/test_fuzz.py``.

A *case* is what a user hands the CLI: config files on disk (YAML, JSON, a JSON compile job or a
Python config), perhaps a JSONL data file, and the command-line arguments. It is built from a
``random.Random`` so that the fuzzer replays a case from its seed and Hypothesis (through
``st.randoms()``) can drive and shrink the same generator.

Each case starts from a valid base (hand-written below, or a conformance compile job when a
corpus folder is given), then gets a few mutations: a value anywhere in the dataset or model
replaced by a value of the wrong type or an awkward one (huge ints, NaN/Infinity, lone
surrogates, special tokens, braces, ``</E>``, deep nesting), keys deleted or added, rows
changed, and now and then the serialised file itself damaged.
"""

from __future__ import annotations

import copy
import json
import math
import random
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["Case", "load_corpus", "make_case", "weird_value"]


@dataclass
class Case:
    """Files to write (relative path -> bytes) and the CLI arguments that compile them."""

    files: dict[str, bytes]
    args: list[str]
    notes: list[str] = field(default_factory=list)
    """What was done to the base (for reports)."""


# -- the bases: valid dataset x model pairs --------------------------------------------------

_ROWS = [
    {"question": "What is 1+1?", "answer": "2", "label": 0},
    {"question": "Capital of France?", "answer": "Paris", "label": 1},
    {"question": "2*3?", "answer": "6", "label": 0},
]
_CHAT_ROWS = [
    {"question": ["Hi", "And then?"], "answer": ["Hello", "Bye"]},
    {"question": ["One"], "answer": ["Two"]},
]
_META = {
    "begin": "<s>",
    "round": [
        {"role": "HUMAN", "begin": "<|im_start|>user\n", "end": "<|im_end|>\n"},
        {"role": "BOT", "begin": "<|im_start|>assistant\n", "end": "<|im_end|>\n",
         "generate": True},
    ],
    "reserved_roles": [{"role": "SYSTEM", "begin": "<|im_start|>system\n", "end": "<|im_end|>\n"}],
    "end": "</s>",
    "eos_token_id": 2,
}
_API_META = {"round": [{"role": "HUMAN", "api_role": "HUMAN"},
                       {"role": "BOT", "api_role": "BOT", "generate": True}]}
_CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
                  "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def _reader(inputs: list[str], output: str) -> dict[str, Any]:
    return {"input_columns": inputs, "output_column": output}


def _dataset(abbr: str, infer: dict[str, Any], rows: list[dict[str, Any]],
             inputs: Sequence[str] = ("question",), output: str = "answer") -> dict[str, Any]:
    return {"abbr": abbr, "reader_cfg": _reader(list(inputs), output), "infer_cfg": infer,
            "splits": {"train": copy.deepcopy(rows), "test": copy.deepcopy(rows)}}


def _bases() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    gen = {"prompt_template": {"type": "PromptTemplate", "template": "Q: {question}\nA:"},
           "retriever": {"type": "ZeroRetriever"}, "inferencer": {"type": "GenInferencer"}}
    ice = {"ice_template": {"type": "PromptTemplate",
                            "template": "Q: {question}\nA: {answer}\n"},
           "prompt_template": {"type": "PromptTemplate", "template": "</E>Q: {question}\nA:",
                               "ice_token": "</E>"},
           "retriever": {"type": "FixKRetriever", "fix_id_list": [0, 1]},
           "inferencer": {"type": "GenInferencer", "max_out_len": 16}}
    meta_ice = {
        "ice_template": {"type": "PromptTemplate", "template": {
            "begin": "</E>", "round": [{"role": "HUMAN", "prompt": "Q: {question}"},
                                       {"role": "BOT", "prompt": "{answer}"}]},
            "ice_token": "</E>"},
        "retriever": {"type": "RandomRetriever", "ice_num": 2, "seed": 43},
        "inferencer": {"type": "GenInferencer"}}
    ppl = {"prompt_template": {"type": "PromptTemplate", "template": {
               0: "Q: {question} A: no", 1: {"round": [{"role": "HUMAN", "prompt": "{question}"},
                                                        {"role": "BOT", "prompt": "yes"}]}}},
           "retriever": {"type": "BM25Retriever", "ice_num": 1},
           "inferencer": {"type": "PPLInferencer"}}
    clp = {"prompt_template": {"type": "PromptTemplate", "template": "{question} Answer:"},
           "retriever": {"type": "SlidingWindowRetriever", "k": 1},
           "inferencer": {"type": "CLPInferencer"}}
    chat = {"prompt_template": {"type": "PromptTemplate", "template": {
                "round": [{"role": "HUMAN", "prompt": "{question}"},
                          {"role": "BOT", "prompt": "{answer}"}]}},
            "retriever": {"type": "ZeroRetriever"},
            "inferencer": {"type": "ChatInferencer", "infer_mode": "every_with_gt"}}
    jinja_text = "Q: {{ question }}{% if answer %} ({{ answer|length }}){% endif %}"
    jinja = {"prompt_template": {"type": "PromptTemplate", "engine": "jinja2",
                                 "template": jinja_text},
             "retriever": {"type": "ZeroRetriever"}, "inferencer": {"type": "GenInferencer"}}
    lm = {"abbr": "lm", "parser": "lm", "meta_template": None, "max_seq_len": 64}
    lm_meta = {"abbr": "lm-meta", "type": "HuggingFaceCausalLM",
               "meta_template": copy.deepcopy(_META), "max_seq_len": 2048}
    api = {"abbr": "api", "type": "OpenAISDK", "meta_template": copy.deepcopy(_API_META)}
    hf_chat = {"abbr": "hf-chat", "parser": "hf_chat", "chat_template": _CHAT_TEMPLATE}
    named = {"abbr": "named", "meta_template": "qwen2.5-instruct"}
    return [
        (_dataset("gen", gen, _ROWS), lm),
        (_dataset("ice", ice, _ROWS), lm_meta),
        (_dataset("meta-ice", meta_ice, _ROWS), api),
        (_dataset("ppl", ppl, _ROWS, output="label"), lm_meta),
        (_dataset("clp", clp, _ROWS, output="label"), lm),
        (_dataset("chat", chat, _CHAT_ROWS), lm_meta),
        (_dataset("jinja", jinja, _ROWS), hf_chat),
        (_dataset("ice-named", ice, _ROWS), named),
    ]


BASES = _bases()


def load_corpus(folder: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Dataset x model pairs from conformance compile jobs (``{"dataset", "model"}`` JSON)."""
    out = []
    for path in sorted(folder.glob("*.json")):
        job = json.loads(path.read_text(encoding="utf-8"))
        dataset, model = job.get("dataset"), job.get("model")
        if isinstance(dataset, dict) and isinstance(model, dict) and "splits" in dataset:
            dataset.setdefault("abbr", "corpus")
            model.setdefault("abbr", "model")
            out.append((dataset, model))
    return out


# -- awkward values ---------------------------------------------------------------------------

SPECIAL_STRINGS = (
    "", " ", "\n", "<|im_end|>", "<|im_start|>assistant\n", "</s>", "<s>", "[INST]", "</E>",
    "<SEP>", "{question}", "{answer}", "{", "}", "{{", "}}", "{{ question }}", "{% if x %}",
    "{0.__class__}", "{question.__class__}", "{% for %}", "é", "🙂", "\u202e", "\x00", "\x1b[2J",
    "\ud800", "a\udcffb", "..", "/", "../../x", "NaN", "Infinity", "-", "null", "true", "HUMAN",
    "BOT", "SYSTEM", "user", "assistant", "system", "round", "begin", "end", "x" * 300,
    "é" * 200, "\r\n", "\t", "\\", "'", '"',
)
_NUMBERS = (0, 1, -1, 2, 3, 10**6, -(10**9), 2**63, 10**4400, -(10**5000), 0.5, -0.0, 1e308,
            math.inf, -math.inf, math.nan, True, False)


def weird_value(rng: random.Random, depth: int = 0) -> Any:
    """A value of a random type, biased towards the ones that break code."""
    kind = rng.randrange(10 if depth < 3 else 4)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice(_NUMBERS)
    if kind in (2, 3):
        return _weird_string(rng)
    if kind == 4:
        return [weird_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 5:
        return {_weird_key(rng): weird_value(rng, depth + 1) for _ in range(rng.randrange(4))}
    if kind == 6:
        return _deep(rng)
    if kind == 7:
        return rng.randrange(-3, 8)
    if kind == 8:
        return {"role": weird_value(rng, 3), "prompt": _weird_string(rng)}
    return [{"role": rng.choice(["HUMAN", "BOT", "SYSTEM", "X"]), "prompt": _weird_string(rng)}]


def _weird_string(rng: random.Random) -> str:
    parts = [rng.choice(SPECIAL_STRINGS) for _ in range(rng.randrange(1, 4))]
    if rng.random() < 0.2:
        parts.append("".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randrange(8))))
    return "".join(parts)


def _weird_key(rng: random.Random) -> Any:
    return rng.choice(["question", "answer", "prompt", "role", "begin", "end", "round", "type",
                       "template", "x", "", 0, 1, "\ud800", "<|im_end|>", "{q}"])


DEEP = "DEEPxNESTINGx"
"""Stands for a deeply nested list in a config; the serialised file gets the real nesting."""
_DEEP_LEVELS = (5, 50, 300, 600, 1100)


def _deep(rng: random.Random) -> Any:
    depth = rng.choice(_DEEP_LEVELS)
    if depth < 100:
        value: Any = rng.choice(["x", 1, None])
        for _ in range(depth):
            value = [value] if rng.random() < 0.5 else {"k": value}
        return value
    return f"{DEEP}{depth}{DEEP}"  # written as text when the file is serialised (see _nest)


def _nest(text: str, quote: str) -> str:
    """Replace quoted :data:`DEEP` markers by ``[[[...1...]]]`` (valid JSON, YAML, Python)."""
    for depth in _DEEP_LEVELS:
        text = text.replace(f"{quote}{DEEP}{depth}{DEEP}{quote}",
                            "[" * depth + "1" + "]" * depth)
    return text


# -- mutations --------------------------------------------------------------------------------

def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node[:6]):
            yield from _paths(value, (*prefix, i))


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        node = node[key]
    return node


def _mutate(tree: dict[str, Any], rng: random.Random, notes: list[str]) -> None:
    """One mutation somewhere in ``tree`` (a dict holding the dataset and model)."""
    paths = [p for p in _paths(tree) if len(p) >= (1 if rng.random() < 0.02 else 2)]
    path = rng.choice(paths)
    parent = _get(tree, path[:-1])
    key = path[-1]
    op = rng.randrange(6)
    where = ".".join(str(k) for k in path)
    if op <= 2:
        parent[key] = weird_value(rng)
        notes.append(f"set {where}")
    elif op == 3:
        del parent[key]
        notes.append(f"del {where}")
    elif op == 4 and isinstance(parent, dict):
        parent[_weird_key(rng)] = weird_value(rng)
        notes.append(f"add key under {where}")
    else:
        node = parent[key]
        if isinstance(node, list) and node:
            node.append(copy.deepcopy(rng.choice(node)) if rng.random() < 0.5 else weird_value(rng))
        elif isinstance(node, dict) and node:
            k = rng.choice(list(node))
            node[k] = [node[k], weird_value(rng)] if rng.random() < 0.5 else {"k": node[k]}
        else:
            parent[key] = [node]
        notes.append(f"wrap {where}")


# Keys users get wrong, with near-valid values worth trying on each (besides weird_value).
NEAR_VALUES: dict[str, tuple[Any, ...]] = {
    "seed": (-1, 0, 2**32, 2**40, 1.5, "43"),
    "ice_num": (-1, 0, 1, 10**9, 10**30, 2.0),
    "k": (-1, 0, 10**9),
    "fix_id_list": ([], [-1], [0, 0], [10**9], [True], [0.0], "0,1"),
    "max_seq_len": (-1, 0, 1, 10**18, "2048", 1.5),
    "max_out_len": (-1, "x", None),
    "abbr": ("", "x" * 300, "é" * 200, "../up", "a/b", "/abs", ".", "..", "con", "a\x00b",
             "\n", " ", "-o", "*", "a b", "<|im_end|>"),
    "role": ("HUMAN", "BOT", "SYSTEM", "", "user", ["HUMAN"], {"r": 1}, 1, None),
    "fallback_role": ("HUMAN", "NOPE", ["HUMAN"], 0),
    "begin": ("", "</E>", ["</E>"], [{"role": "HUMAN", "prompt": "x"}], {"role": "HUMAN"}, 0),
    "end": ("", "</s>", ["x"], {"role": "BOT", "prompt": "{answer}"}, {"x": 1}, 0),
    "prompt": ("", "{question}", "{answer}", "</E>", None, 1, ["x"]),
    "generate": (True, False, "yes", None),
    "api_role": ("HUMAN", "BOT", "SYSTEM", "", ["HUMAN"], 1),
    "ice_token": ("</E>", "", "{question}", "Q", None, 1),
    "sep_token": ("<SEP>", "", "</E>", 1),
    "engine": ("jinja2", "format", "", "mako", None),
    "template": ("{question}", "", "</E>{question}", "{{ question }}", "{% if %}",
                 {"round": []}, {"round": "x"}, {"begin": "x"}, {0: "a", 1: "b"},
                 {float("inf"): "a"}, {float("nan"): "a"}, {10**40: "a"}, {"": ""}, [], None),
    "input_columns": ([], ["question", "question"], "question", [1], ["nope"], None),
    "output_column": (None, "nope", "question", ["answer"], 1),
    "train_split": ("test", "nope", "", None, 1),
    "test_split": ("train", "nope", "", 1),
    "test_range": ("[0:1]", "[:-1]", "[::0]", "[5:0]", "[", "[0:10**9]", "x", 1),
    "train_range": ("[0:1]", "[::-1]", "bad"),
    "infer_mode": ("last", "every", "every_with_gt", "nope", None),
    "parser": ("lm", "api", "hf_chat", "nope", None),
    "renderer": ("lm", "api", "hf_chat", ""),
    "meta_template": (None, {}, {"round": []}, {"round": [{"role": "HUMAN"}]},
                      "qwen2.5-instruct", "internlm2-chat", "nope", "../x.py", []),
    "chat_template": ("{{ messages }}", "{% for %}", "{{ raise_exception('no') }}", "", 1,
                      "{{ messages[0].content.__class__ }}", "x" * 1000),
    "api_format": ("openai", "gemini", "dashscope_chat", "nope", 1),
    "type": ("PromptTemplate", "ZeroRetriever", "GenInferencer", "PPLInferencer",
             "CLPInferencer", "ChatInferencer", "FixKRetriever", "TopkRetriever", "Nope", "", 1),
    "path": ("data.jsonl", "nope.jsonl", "", "/dev/null", ".", "..", "/etc/passwd", 1),
    "rows": ([], [{}], [None], "x", [{"question": "q"}]),
    "splits": ({}, {"train": []}, {"test": [{}]}, [], {"train": "x"}),
    "fewshot": ("multiturn", "inline", "nope", 1),
    "system_role": ("system", "merge", "drop", "nope", 1),
    "template_kwargs": ({}, {"enable_thinking": True}, [], "x"),
    "prompter": ({"type": "ChatPrompter", "instruction": "{input} {input.__class__}"},
                 {"type": "AlpacaPrompter", "instruction": "x"}, {"type": "Nope"}, "x", 1),
    "tokenizer": ("whitespace", "nope", 1, None),
    "labels": ([], [0, 1], [float("inf")], None),
}


def _targeted(tree: dict[str, Any], rng: random.Random, notes: list[str]) -> None:
    """Set one known key somewhere in ``tree`` (existing or added) to a near-valid value."""
    holders = [p for p in _paths(tree) if isinstance(_get(tree, p), dict)]
    hits = [(p, k) for p in holders for k in _get(tree, p) if k in NEAR_VALUES]
    if hits and rng.random() < 0.8:
        path, key = rng.choice(hits)
    else:
        path, key = rng.choice(holders), rng.choice(sorted(NEAR_VALUES))
    value = rng.choice(NEAR_VALUES[key]) if rng.random() < 0.8 else weird_value(rng)
    _get(tree, path)[key] = copy.deepcopy(value)
    notes.append(f"near {'.'.join(map(str, (*path, key)))}")


def _mutate_rows(dataset: dict[str, Any], rng: random.Random, notes: list[str]) -> None:
    splits = dataset.get("splits")
    if not isinstance(splits, dict):
        return
    for rows in splits.values():
        if not isinstance(rows, list) or not rows:
            continue
        row = rng.choice(rows)
        if not isinstance(row, dict):
            continue
        op = rng.randrange(4)
        if op == 0 and row:
            del row[rng.choice(list(row))]
            notes.append("row: drop a column")
        elif op == 1:
            row[rng.choice(list(row) or ["question"])] = weird_value(rng)
            notes.append("row: odd value")
        elif op == 2:
            rows.append(weird_value(rng))
            notes.append("row: odd row")
        else:
            row[_weird_key(rng)] = weird_value(rng)
            notes.append("row: extra column")


# -- serialising ------------------------------------------------------------------------------

def _py_literal(value: Any) -> str:
    """A Python expression for ``value`` (floats that have no literal spelled as expressions)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "float('nan')" if math.isnan(value) else ("float('inf')" if value > 0
                                                          else "-float('inf')")
    if isinstance(value, dict):
        pairs = (f"{_py_literal(k)}: {_py_literal(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_py_literal(v) for v in value) + "]"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**4000:
        return f"({'-' if value < 0 else ''}10 ** {len(str(abs(value))) - 1})"
    return repr(value)


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _dump(fmt: str, dataset: dict[str, Any], model: dict[str, Any]) -> tuple[str, bytes]:
    # Huge ints must reach the file (a user can write them); lift the int->str digit limit.
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return _dump_unlimited(fmt, dataset, model)
    finally:
        sys.set_int_max_str_digits(limit)


def _dump_unlimited(fmt: str, dataset: dict[str, Any], model: dict[str, Any]) -> tuple[str, bytes]:
    if fmt == "yaml":
        text = yaml.safe_dump({"datasets": [dataset], "models": [model]}, allow_unicode=False,
                              sort_keys=False, width=1 << 20)
        return "cfg.yaml", _encode(_nest(text, ""))
    if fmt == "py":
        return "cfg.py", _encode(_nest(f"datasets = [{_py_literal(dataset)}]\n"
                                       f"models = [{_py_literal(model)}]\n", "'"))
    top = ({"id": "fuzz", "dataset": dataset, "model": model} if fmt == "job"
           else {"datasets": [dataset], "models": [model]})
    return "cfg.json", _encode(_nest(json.dumps(_json_keys(top), ensure_ascii=True), '"'))


def _json_keys(value: Any) -> Any:
    """Dicts with non-str keys written as ``{"__items__": [[key, value], ...]}``."""
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: _json_keys(v) for k, v in value.items()}
        return {"__items__": [[k, _json_keys(v)] for k, v in value.items()]}
    if isinstance(value, list):
        return [_json_keys(v) for v in value]
    return value


def _damage(data: bytes, rng: random.Random) -> bytes:
    pos = rng.randrange(len(data) + 1)
    op = rng.randrange(3)
    if op == 0:
        return data[:pos]
    if op == 1:
        return data[:pos] + rng.choice([b"\xff", b"\x00", b"{", b"]", b"\n  - ", b": ", b"\t",
                                        b"!!python/object:os.system", b"&a", b"*a"]) + data[pos:]
    return data[:pos] + data[pos + 1:]


def _rows_to_file(dataset: dict[str, Any], rng: random.Random,
                  files: dict[str, bytes], notes: list[str]) -> None:
    """Move the rows into ``data.jsonl`` (``path``) instead of inline ``splits``."""
    splits = dataset.pop("splits", None)
    rows = splits.get("test") if isinstance(splits, dict) else None
    rows = rows if isinstance(rows, list) else []
    lines = []
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # process-wide: restored whatever happens (tests share it)
    try:
        for row in rows:
            try:
                lines.append(json.dumps(row, ensure_ascii=rng.random() < 0.5))
            except (TypeError, ValueError, RecursionError):
                lines.append(repr(row))
    finally:
        sys.set_int_max_str_digits(limit)
    if rng.random() < 0.2:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(
            ["", "{", "[1, 2]", "null", "1" * 5000, '{"question": ' + "9" * 5000 + "}",
             '{"question": NaN}', '{"question": 1e400}', '{"question": "\\ud800"}']))
    files["data.jsonl"] = _encode("\n".join(lines) + "\n")
    dataset["path"] = "data.jsonl"
    dataset.setdefault("reader_cfg", {})
    if isinstance(dataset["reader_cfg"], dict):
        dataset["reader_cfg"]["train_split"] = "test"
    notes.append("rows in data.jsonl")


# -- hostile shapes (issue 20): inputs that explode, each must stop at a limit ---------------------

_BUILDERS = (
    "{{ question|center(10**9) }}", "{{ question.ljust(10**9) }}", "{{ '%0999999999d' % 1 }}",
    "{{ '{:>999999999}'.format(question) }}", "{{ (question * 100000).replace('', 'xx') }}",
    "{{ ('\t' * 100000).expandtabs(1000) }}", "{{ [[1]]|tojson(indent=100000000) }}",
    "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}", "{% set ns = namespace(l=[1]) %}{% for i in range(40) %}"
    "{% set ns.l = ns.l + ns.l %}{% endfor %}", "{{ cycler(1)|string }}", "{{ question.upper }}",
    "{{ '{0.__class__.__mro__}'.format(question) }}", "{{ [1, 2]|random }}",
)
_LAUGHS = "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]\n"
                  for i in range(1, 9))


def _hostile(dataset: dict[str, Any], rng: random.Random, notes: list[str]) -> str | None:
    """Make ``dataset`` hostile in one way; returns ``"bomb"`` when the YAML file must get an
    alias bomb (added after serialising)."""
    kind = rng.randrange(6)
    rows = [r for split in (dataset.get("splits") or {}).values() if isinstance(split, list)
            for r in split if isinstance(r, dict)] if isinstance(dataset.get("splits"),
                                                                  dict) else []
    if kind == 0:
        notes.append("hostile: YAML alias bomb")
        return "bomb"
    if kind == 1:
        infer = dataset.get("infer_cfg")
        if isinstance(infer, dict):
            infer["prompt_template"] = {"type": "PromptTemplate", "engine": "jinja2",
                                        "template": rng.choice(_BUILDERS)}
            infer.pop("ice_template", None)
            infer["retriever"] = {"type": "ZeroRetriever"}
            notes.append("hostile: a template that builds a huge value")
    elif kind == 2 and rows:
        rng.choice(rows).update({f"c{i}": "x" for i in range(12_000)})
        notes.append("hostile: a row of 12,000 columns")
    elif kind == 3 and rows:
        row = rng.choice(rows)
        row["question"] = "{c1}" * 20
        row.update({f"c{i}": f"{{c{i + 1}}}" * 20 for i in range(1, 7)})
        notes.append("hostile: values that re-fill each other (compat)")
    elif kind == 4 and rows:
        rng.choice(rows)["question"] = rng.choice(["a." + " " * 30_000 + "b", " " * 30_000,
                                                   "a." + ") " * 15_000 + "b"])
        notes.append("hostile: a value that makes patterns backtrack")
    elif kind == 5:
        dataset["reader_cfg"] = {**(dataset.get("reader_cfg") or {}),
                                 "test_range": "[" + " " * 30_000 + "x]"}
        notes.append("hostile: a range slice of spaces")
    return None


# -- the case ---------------------------------------------------------------------------------

def make_case(rng: random.Random,
              corpus: Sequence[tuple[dict[str, Any], dict[str, Any]]] = (),
              *, formats: Sequence[str] = ("yaml", "json", "job", "yaml", "py")) -> Case:
    """One case: a mutated base, serialised in a random format, with CLI arguments."""
    pool = list(BASES) + list(corpus)
    dataset, model = copy.deepcopy(rng.choice(pool))
    notes: list[str] = [f"base {dataset.get('abbr')} x {model.get('abbr')}"]
    tree = {"dataset": dataset, "model": model}
    for _ in range(rng.choice([0, 1, 1, 2, 3, 5])):
        (_targeted if rng.random() < 0.6 else _mutate)(tree, rng, notes)
    if rng.random() < 0.4:
        _mutate_rows(dataset, rng, notes) if isinstance(dataset, dict) else None
    dataset, model = tree.get("dataset"), tree.get("model")
    files: dict[str, bytes] = {}
    bomb = None
    if isinstance(dataset, dict) and rng.random() < 0.1:
        bomb = _hostile(dataset, rng, notes)
    if isinstance(dataset, dict) and rng.random() < 0.15:
        _rows_to_file(dataset, rng, files, notes)
    fmt = rng.choice(list(formats))
    notes.append(f"format {fmt}")
    try:
        name, data = _dump(fmt, dataset, model)  # type: ignore[arg-type]
    except (TypeError, ValueError, RecursionError, yaml.YAMLError) as exc:
        name, data = "cfg.json", b"{}"
        notes.append(f"unserialisable ({type(exc).__name__}): empty config")
    if bomb and name.endswith(".yaml"):
        data = _encode("l0: &l0 'lol'\n" + _LAUGHS) + data
    if rng.random() < 0.05:
        data = _damage(data, rng)
        notes.append("damaged file")
    files[name] = data
    args = [name]
    if rng.random() < 0.5:
        args += ["--mode", "compat"]
    if rng.random() < 0.3:
        args += ["--check"]
    else:
        args += ["-o", "out"]
    if rng.random() < 0.1:
        args += ["--show", "2"]
    if rng.random() < 0.05:
        args += ["--model", rng.choice(["qwen2.5-instruct", "internlm2-chat", "nope", "cfg.yaml"])]
    if rng.random() < 0.05:
        args += ["--only", rng.choice(["*", "nope", "[", ""])]
    if rng.random() < 0.05:
        args += ["--fewshot", rng.choice(["multiturn", "inline"])]
    return Case(files, args, notes)
