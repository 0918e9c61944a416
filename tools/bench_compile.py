#!/usr/bin/env python3
"""Benchmark: compile a synthetic 10,000-row, 5-shot gen job (and a PPL job) and print figures.

    python tools/bench_compile.py [--rows 10000] [--shots 5]

Prints rows/s, wall time and peak memory (tracemalloc) for each mode and renderer.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import prompt_compiler as pc  # noqa: E402

INTERNLM = {"round": [
    {"role": "HUMAN", "begin": "<|User|>:", "end": "\n"},
    {"role": "BOT", "begin": "<|Bot|>:", "end": "<eoa>\n", "generate": True},
]}
API = {"round": [{"role": "HUMAN", "api_role": "HUMAN"},
                 {"role": "BOT", "api_role": "BOT", "generate": True}]}


def rows(n: int, tag: str) -> list[dict[str, str]]:
    return [{"question": f"Natalia sold {i} clips in April and half as many in May. How many? #{tag}{i}",
             "answer": f"She sold {i + i // 2} clips. The answer is {i + i // 2}"} for i in range(n)]


def gen_dataset(n: int, shots: int) -> dict:
    return {
        "abbr": "bench_gen",
        "reader_cfg": {"input_columns": ["question"], "output_column": "answer"},
        "infer_cfg": {
            "ice_template": {"type": "PromptTemplate", "template": {"round": [
                {"role": "HUMAN", "prompt": "Question: {question}\nLet's think step by step\nAnswer:"},
                {"role": "BOT", "prompt": "{answer}\n"}]}},
            "prompt_template": {"type": "PromptTemplate", "ice_token": "</E>", "template": {
                "begin": "</E>", "round": [
                    {"role": "HUMAN", "prompt": "Question: {question}\nLet's think step by step\nAnswer:"},
                    {"role": "BOT", "prompt": "{answer}\n"}]}},
            "retriever": {"type": "FixKRetriever", "fix_id_list": list(range(shots))},
            "inferencer": {"type": "GenInferencer", "max_out_len": 512},
        },
        "splits": {"train": rows(max(shots, 8), "tr"), "test": rows(n, "te")},
    }


def ppl_dataset(n: int) -> dict:
    return {
        "abbr": "bench_ppl",
        "reader_cfg": {"input_columns": ["question", "A", "B"], "output_column": "label"},
        "infer_cfg": {
            "prompt_template": {"type": "PromptTemplate", "template": {
                lab: {"round": [{"role": "HUMAN", "prompt": "{question}"},
                                {"role": "BOT", "prompt": f"Answer: {{{lab}}}"}]} for lab in ("A", "B")}},
            "retriever": {"type": "ZeroRetriever"},
            "inferencer": {"type": "PPLInferencer"},
        },
        "rows": [{"question": r["question"], "A": "yes", "B": "no", "label": "A"} for r in rows(n, "te")],
    }


def measure(label: str, compiler: pc.Compiler, dataset: dict, model: dict, n: int) -> None:
    t0 = time.perf_counter()
    count = sum(1 for _ in compiler.iter_records(dataset, model))
    dt = time.perf_counter() - t0
    tracemalloc.start()  # a second, untimed pass: tracing slows Python down several-fold
    sum(1 for _ in compiler.iter_records(dataset, model))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{label:<44} {n:>6} rows  {count:>6} prompts  {dt:6.2f} s  "
          f"{n / dt:9.0f} rows/s  peak {peak / 2**20:6.1f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--shots", type=int, default=5)
    args = ap.parse_args()
    n = args.rows
    for mode in ("default", "opencompass"):
        c = pc.Compiler(mode=mode)
        for name, meta, parser in (("lm internlm", INTERNLM, "lm"), ("api", API, "api")):
            model = {"abbr": name, "parser": parser, "meta_template": meta, "max_seq_len": 2048}
            measure(f"gen {args.shots}-shot [{mode}] {name}", c, gen_dataset(n, args.shots), model, n)
        model = {"abbr": "lm", "parser": "lm", "meta_template": INTERNLM}
        measure(f"ppl 2 labels [{mode}] lm", c, ppl_dataset(n), model, n)


if __name__ == "__main__":
    main()
