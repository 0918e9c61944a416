#!/usr/bin/env python3
"""Benchmark: what a real tokenizer costs a compile (library level, one process).

    python tools/bench_tokenize.py [--rows 5000] [--tokenizer PATH_OR_NAME]

Compiles an MMLU-shaped 5-shot gen dataset (a 40-word question per row, FixK shots) for an
``lm`` model with ``max_seq_len`` set, once with the built-in whitespace counter and once with
the given tokenizer (default: a byte-level BPE tokenizer trained here with ``tokenizers``), and
prints rows per second for each, plus the tokenizer's cache hits. Needs the ``tokenizers`` extra
for the default tokenizer.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from prompt_compiler.compiler import Compiler
from prompt_compiler.model.tokenize import load_tokenizer

WORDS = ("the of and to in is was for on that with as by at from it an be this which or are "
         "were his her their has have had not but one all been its more also who after when "
         "cell energy market court river theorem enzyme voltage treaty poem").split()


def _rows(n: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    return [{"q": " ".join(rng.choice(WORDS) for _ in range(40)),
             "A": "a b c d e", "B": "f g h i j", "C": "k l m n o", "D": "p q r s t",
             "answer": rng.choice("ABCD")} for _ in range(n)]


def _dataset(rows: int) -> dict[str, object]:
    return {
        "abbr": "mmlu_like",
        "reader_cfg": {"input_columns": ["q", "A", "B", "C", "D"], "output_column": "answer"},
        "infer_cfg": {
            "ice_template": {"type": "PromptTemplate",
                             "template": "{q}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\nAnswer: {answer}\n"},
            "prompt_template": {"type": "PromptTemplate",
                                "template": "</E>{q}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\nAnswer:",
                                "ice_token": "</E>"},
            "retriever": {"type": "FixKRetriever", "fix_id_list": [0, 1, 2, 3, 4]},
            "inferencer": {"type": "GenInferencer"},
        },
        "splits": {"train": _rows(5, 1), "test": _rows(rows, 2)},
    }


def _trained(folder: Path) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([" ".join(WORDS)] * 10, trainers.BpeTrainer(vocab_size=300))
    tok.save(str(folder / "tokenizer.json"))
    return str(folder)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--tokenizer", default=None)
    args = ap.parse_args()
    spec = args.tokenizer or _trained(Path(tempfile.mkdtemp()))
    dataset = _dataset(args.rows)
    for name in ("whitespace", spec):
        model = {"abbr": "m", "parser": "lm", "meta_template": None, "max_seq_len": 2048,
                 "tokenizer": name}
        start = time.perf_counter()
        result = Compiler().compile(dataset, model)
        took = time.perf_counter() - start
        print(f"{'whitespace' if name == 'whitespace' else 'tokenizer':>10}: {args.rows} rows in "
              f"{took:.2f} s = {args.rows / took:,.0f} rows/s "
              f"(mean token_len {sum(r.token_len or 0 for r in result.records) / args.rows:.0f})")
    if name != "whitespace":
        info = load_tokenizer(spec)._cache.cache_info()
        print(f"tokenizer cache: {info.hits} hits, {info.misses} misses")


if __name__ == "__main__":
    main()
