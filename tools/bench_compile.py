#!/usr/bin/env python3
"""Benchmark: the whole ``compile-prompts`` process on two OpenCompass-shaped jobs.

    python tools/bench_compile.py [--rows 50000] [--ppl-rows 15000] [--modes default,compat]
                                  [--jobs 1] [--memory-rows 1000000]
                                  [--only startup,gen,ppl,memory]
                                  [--opencompass PYTHON [--opencompass-rows 5000]]
                                  [--only mmlu-csv [--mmlu-rows 1000]]
                                  [--only bridge --opencompass-python PYTHON [--bridge-rows N]]

Writes, into a temporary folder, a dataset config in the shape of OpenCompass's
``mmlu/mmlu_gen_4d595a.py`` (5-shot FixK, a dict ICE template, ``</E>`` in ``begin``), one in
the shape of ``ceval/ceval_ppl_578f8d.py`` (5-shot FixK, a 4-label ICE template that is also the
prompt), a model config with the internlm-chat meta template (``max_seq_len=2048``, as OpenCompass
ships it), and MMLU-sized synthetic rows (a 40-word question, four 5-word options). Each job then
runs as ``python -m prompt_compiler CONFIG --model MODEL --data-dir DATA -o OUT --mode M`` in a
subprocess; the figures cover everything (interpreter start, config, reading JSONL, writing JSONL
and the manifest). Peak RSS is the child's ``ru_maxrss`` (``os.wait4``).

The start-up runs measure the fixed cost of a run (interpreter start, imports, loading the
configs, the output folder and manifest): the gen job on a dataset of one test row, and with
``--limit 1`` on the ``--rows`` dataset (which also indexes and hashes that file); each is the
best of three runs.
The memory run compiles a ``--memory-rows`` gen dataset 0-shot and 5-shot.
With ``--opencompass PYTHON`` (an interpreter with OpenCompass 0.5.4 installed), each job is
also run by OpenCompass itself, in-process on the first ``--opencompass-rows`` test rows of the
same files (``tools/bench_opencompass.py``), and the ratio of the rates is printed.
The configs are written by hand for this benchmark; no OpenCompass file is copied.

``mmlu-csv`` (needs ``$PC_OPENCOMPASS_PACKAGE``, OpenCompass 0.5.4's files, never imported):
OpenCompass's own ``mmlu/mmlu_gen.py`` suite (57 subsets) read through ``read_base``, its rows
once from the native folder ``./data/mmlu/{dev,test}/<name>_{dev,test}.csv`` (as the
OpenCompassData zip unpacks; ``--mmlu-rows`` synthetic test rows a subset) and once from the
same rows as JSONL (``--data-dir``); the CSV rate over the JSONL rate is printed.
``bridge`` (needs ``--opencompass-python``): a ``GSMHardDataset`` (not native) of
``--bridge-rows`` rows through OpenCompass's own loader, the first run (an OpenCompass process,
rows into an empty cache) and the cached run (no process), each the whole CLI process.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODEL = '''\
from opencompass.models import HuggingFaceCausalLM

_meta_template = dict(
    round=[
        dict(role='HUMAN', begin='<|User|>:', end='\\n'),
        dict(role='BOT', begin='<|Bot|>:', end='<eoa>\\n', generate=True),
    ],
)

models = [
    dict(
        type=HuggingFaceCausalLM,
        abbr='internlm-chat-7b-hf',
        path='internlm/internlm-chat-7b',
        tokenizer_path='internlm/internlm-chat-7b',
        max_out_len=100,
        max_seq_len=2048,
        batch_size=8,
        meta_template=_meta_template,
        run_cfg=dict(num_gpus=1, num_procs=1),
        end_str='<eoa>',
    )
]
'''

# MMLU gen: a hint, the question and four options; the answer letter as the BOT turn.
GEN = '''\
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import {retriever}
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.datasets import MMLUDataset

mmlu_reader_cfg = dict(
    input_columns=['input', 'A', 'B', 'C', 'D'],
    output_column='target',
    train_split='dev')

mmlu_datasets = []
for _name in ['college_physics']:
    _hint = f'There is a single choice question about {{_name.replace("_", " ")}}. Answer the question by replying A, B, C or D.'
    mmlu_infer_cfg = dict(
        ice_template=dict(
            type=PromptTemplate,
            template=dict(round=[
                dict(role='HUMAN',
                     prompt=f'{{_hint}}\\nQuestion: {{{{input}}}}\\nA. {{{{A}}}}\\nB. {{{{B}}}}\\nC. {{{{C}}}}\\nD. {{{{D}}}}\\nAnswer: '),
                dict(role='BOT', prompt='{{target}}\\n'),
            ]),
        ),
        prompt_template=dict(
            type=PromptTemplate,
            template=dict(
                begin='</E>',
                round=[
                    dict(role='HUMAN',
                         prompt=f'{{_hint}}\\nQuestion: {{{{input}}}}\\nA. {{{{A}}}}\\nB. {{{{B}}}}\\nC. {{{{C}}}}\\nD. {{{{D}}}}\\nAnswer: '),
                ],
            ),
            ice_token='</E>',
        ),
        retriever=dict(type={retriever}{retriever_args}),
        inferencer=dict(type=GenInferencer),
    )
    mmlu_datasets.append(dict(
        abbr=f'lukaeval-mmlu-{{_name}}',
        type=MMLUDataset,
        path='opencompass/mmlu',
        name=_name,
        reader_cfg=mmlu_reader_cfg,
        infer_cfg=mmlu_infer_cfg,
    ))
'''

# C-Eval ppl: the ICE template is a label dict with '</E>' in begin; it also builds the prompt.
PPL = '''\
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import FixKRetriever
from opencompass.openicl.icl_inferencer import PPLInferencer
from opencompass.datasets import CEvalDataset

ceval_datasets = []
for _split in ['val']:
    for _name, _ch_name in [('college_physics', '大学物理')]:
        ceval_infer_cfg = dict(
            ice_template=dict(
                type=PromptTemplate,
                template={
                    answer: dict(
                        begin='</E>',
                        round=[
                            dict(role='HUMAN',
                                 prompt=f'以下是中国关于{_ch_name}考试的单项选择题，请选出其中的正确答案。\\n{{question}}\\nA. {{A}}\\nB. {{B}}\\nC. {{C}}\\nD. {{D}}\\n答案: '),
                            dict(role='BOT', prompt=answer),
                        ])
                    for answer in ['A', 'B', 'C', 'D']
                },
                ice_token='</E>',
            ),
            retriever=dict(type=FixKRetriever, fix_id_list=[0, 1, 2, 3, 4]),
            inferencer=dict(type=PPLInferencer),
        )
        ceval_datasets.append(dict(
            type=CEvalDataset,
            path='opencompass/ceval-exam',
            name=_name,
            abbr='ceval-' + _name if _split == 'val' else 'ceval-test-' + _name,
            reader_cfg=dict(
                input_columns=['question', 'A', 'B', 'C', 'D'],
                output_column='answer',
                train_split='dev',
                test_split=_split),
            infer_cfg=ceval_infer_cfg,
        ))
'''

WORDS = ("alpha beta gamma delta energy field mass charge wave particle force motion "
         "orbit photon quantum spin lattice crystal thermal entropy").split()


def _words(seed: int, n: int) -> str:
    return " ".join(WORDS[(seed * 7 + k * 13 + k * k) % len(WORDS)] for k in range(n)) + f" {seed}"


def _row(i: int, question: str, answer: str) -> dict[str, str]:
    row = {question: _words(i, 40) + "?"}
    for j, letter in enumerate("ABCD"):
        row[letter] = _words(i * 4 + j + 1, 5)
    row[answer] = "ABCD"[i % 4]
    return row


def _write_rows(path: Path, n: int, question: str, answer: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps(_row(i, question, answer), ensure_ascii=False) + "\n")


def _run(cmd: list[str], cwd: Path) -> tuple[float, float, float]:
    """Run ``cmd``; (wall seconds, CPU seconds, peak RSS MiB). Fails loudly on a non-zero exit.

    CPU seconds (user + system, the process and any workers it waited for) show the cost
    when other processes share the cores; wall time is what a user waits."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = b"", b""
    _, status, usage = os.wait4(proc.pid, 0)
    dt = time.perf_counter() - t0
    out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"benchmark command failed ({proc.returncode}): {' '.join(cmd)}\n"
                 f"{out.decode()}{err.decode()}")
    return dt, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # Linux: KiB


def _count(out: Path) -> int:
    manifest = json.loads((out / "manifest.json").read_text())
    return sum(v["records"] for v in manifest["outputs"].values())


def _opencompass(args: argparse.Namespace, root: Path, name: str, config: str, rows: int,
                 data: str, ours: float) -> None:
    """OpenCompass's in-process prompt building of the same job (first ``--opencompass-rows``
    test rows), and our slower mode's rate over its rate."""
    n = min(rows, args.opencompass_rows)
    sub = root / f"oc_{name}"
    for folder in (root / data).iterdir():
        for file in folder.iterdir():
            with file.open(encoding="utf-8") as fh:
                lines = [line for _, line in zip(range(n), fh, strict=False)]
            (sub / folder.name).mkdir(parents=True, exist_ok=True)
            (sub / folder.name / file.name).write_text("".join(lines), encoding="utf-8")
    abbr = "lukaeval-mmlu-college_physics" if name == "gen" else "ceval-college_physics"
    proc = subprocess.run([args.opencompass, str(ROOT / "tools" / "bench_opencompass.py"),
                           config, abbr, str(sub)], cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"OpenCompass run failed:\n{proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    rate = result["prompts_per_s"]
    print(f"{name:<6} [opencompass 0.5.4, in-process] {n:>8} rows {result['prompts']:>8} prompts "
          f"{result['seconds']:6.2f} s {rate:8.0f} prompts/s | compile-prompts (slower mode) is "
          f"{ours / rate:5.1f}x")


EVAL_MMLU = """\
from mmengine.config import read_base

with read_base():
    from opencompass.configs.datasets.mmlu.mmlu_gen import mmlu_datasets

datasets = mmlu_datasets
"""

EVAL_GSM_HARD = """\
from mmengine.config import read_base

with read_base():
    from opencompass.configs.datasets.gsm_hard.gsmhard_gen import gsmhard_datasets

datasets = gsmhard_datasets
"""


def _mmlu_csv(args: argparse.Namespace, root: Path, cli: list[str]) -> None:
    """OpenCompass's mmlu_gen suite from its native CSV folder vs the same rows as JSONL."""
    package = os.environ.get("PC_OPENCOMPASS_PACKAGE")
    if not package:
        sys.exit("mmlu-csv: set PC_OPENCOMPASS_PACKAGE to a folder holding OpenCompass 0.5.4")
    configs = str(Path(package) / "opencompass" / "configs")
    sys.path.insert(0, str(ROOT))
    import prompt_compiler as pc

    csv_dir, jsonl_dir = root / "mmlu_csv", root / "mmlu_jsonl"
    csv_dir.mkdir()
    jsonl_dir.mkdir()
    for folder in (csv_dir, jsonl_dir):
        (folder / "eval_mmlu.py").write_text(EVAL_MMLU, encoding="utf-8")
        (folder / "model.py").write_text(MODEL, encoding="utf-8")
    suite = pc.load(csv_dir / "eval_mmlu.py", opencompass_configs=configs, models=["chatml"])
    keys = ("input", "A", "B", "C", "D", "target")
    for d, dataset in enumerate(suite.datasets):
        name = dataset.spec["name"]
        for split, n in (("dev", 5), ("test", args.mmlu_rows)):
            rows = [dict(zip(keys, _row(d * 100_000 + i, "input", "target").values(),
                             strict=True)) for i in range(n)]
            target = csv_dir / "data" / "mmlu" / split / f"{name}_{split}.csv"
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("w", encoding="utf-8", newline="") as fh:
                csv.writer(fh).writerows([r[k] for k in keys] for r in rows)
            lines = jsonl_dir / "data" / dataset.abbr / f"{split}.jsonl"
            lines.parent.mkdir(parents=True, exist_ok=True)
            with lines.open("w", encoding="utf-8") as fh:
                fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    rates = {}
    for label, folder, extra in (("jsonl", jsonl_dir, ["--data-dir", "data"]),
                                 ("csv", csv_dir, [])):
        out = folder / "out"
        dt, cpu, rss = _run([*cli, "eval_mmlu.py", "--model", "model.py", "--opencompass-configs",
                             configs, "-o", str(out), *extra], folder)
        n = _count(out)
        rates[label] = n / cpu
        print(f"mmlu   [{label:<5}] 57 subsets {args.mmlu_rows:>6} rows each {n:>8} prompts "
              f"{dt:6.2f} s {n / dt:8.0f} prompts/s | cpu {cpu:6.2f} s {n / cpu:8.0f} "
              f"prompts/cpu-s | peak RSS {rss:6.1f} MiB")
    print(f"mmlu   native CSV folder / JSONL (cpu rate): {rates['csv'] / rates['jsonl']:6.1%}")


def _bridge(args: argparse.Namespace, root: Path, cli: list[str]) -> None:
    """A class with no native reader through OpenCompass's loader: first and cached run."""
    package = os.environ.get("PC_OPENCOMPASS_PACKAGE")
    if not package or not args.opencompass_python:
        sys.exit("bridge: needs --opencompass-python PYTHON and PC_OPENCOMPASS_PACKAGE")
    configs = str(Path(package) / "opencompass" / "configs")
    folder = root / "bridge"
    data = folder / "data" / "gsm-hard" / "test.jsonl"
    data.parent.mkdir(parents=True)
    (folder / "model.py").write_text(MODEL, encoding="utf-8")
    with data.open("w", encoding="utf-8") as fh:
        for i in range(args.bridge_rows):
            fh.write(json.dumps({"input": _words(i, 40) + "?", "code": "", "target": i}) + "\n")
    (folder / "eval_gsm_hard.py").write_text(EVAL_GSM_HARD, encoding="utf-8")
    os.environ["XDG_CACHE_HOME"] = str(folder / "cache")  # an empty cache: the first run loads
    for label in ("first run", "cached run"):
        out = folder / "out"
        dt, cpu, rss = _run([*cli, "eval_gsm_hard.py", "--model", "model.py",
                             "--opencompass-configs", configs, "--opencompass-python",
                             args.opencompass_python, "-o", str(out)], folder)
        print(f"bridge [{label:<10}] GSMHardDataset {args.bridge_rows:>7} rows {_count(out):>7} "
              f"prompts {dt:6.2f} s wall | cpu {cpu:6.2f} s | peak RSS {rss:6.1f} MiB (the "
              "OpenCompass process included)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000, help="gen test rows")
    ap.add_argument("--ppl-rows", type=int, default=15_000, help="ppl test rows (x4 prompts)")
    ap.add_argument("--memory-rows", type=int, default=1_000_000, help="rows of the memory run")
    ap.add_argument("--modes", default="default,compat")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--only", default="startup,gen,ppl,memory",
                    help="which runs: startup, gen, ppl, memory")
    ap.add_argument("--opencompass", metavar="PYTHON",
                    help="an interpreter with OpenCompass 0.5.4: time its own prompt building of "
                         "the same gen and ppl jobs (tools/bench_opencompass.py) side by side")
    ap.add_argument("--opencompass-rows", type=int, default=5_000,
                    help="rows of OpenCompass's runs (it is slow: rates are compared)")
    ap.add_argument("--mmlu-rows", type=int, default=1_000,
                    help="mmlu-csv: test rows of each of the 57 subsets")
    ap.add_argument("--opencompass-python", metavar="PYTHON",
                    help="bridge: the python of a venv with OpenCompass 0.5.4")
    ap.add_argument("--bridge-rows", type=int, default=10_000, help="bridge: rows of the dataset")
    args = ap.parse_args()
    runs = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="bench_compile.") as tmp:
        root = Path(tmp)
        (root / "model.py").write_text(MODEL, encoding="utf-8")
        fixk = GEN.format(retriever="FixKRetriever", retriever_args=", fix_id_list=[0, 1, 2, 3, 4]")
        (root / "mmlu_gen.py").write_text(fixk, encoding="utf-8")
        (root / "mmlu_gen_0shot.py").write_text(
            GEN.format(retriever="ZeroRetriever", retriever_args=""), encoding="utf-8")
        (root / "ceval_ppl.py").write_text(PPL, encoding="utf-8")
        mmlu, ceval = "lukaeval-mmlu-college_physics", "ceval-college_physics"
        _write_rows(root / "data" / mmlu / "dev.jsonl", 5, "input", "target")
        _write_rows(root / "data" / mmlu / "test.jsonl", args.rows, "input", "target")
        _write_rows(root / "data" / ceval / "dev.jsonl", 5, "question", "answer")
        _write_rows(root / "data" / ceval / "val.jsonl", args.ppl_rows, "question", "answer")
        cli = [sys.executable, "-m", "prompt_compiler"]
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
              f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if "startup" in runs:
            _write_rows(root / "tiny" / mmlu / "dev.jsonl", 5, "input", "target")
            _write_rows(root / "tiny" / mmlu / "test.jsonl", 1, "input", "target")
            limited = (f"--limit 1 of {args.rows} rows", "data", ["--limit", "1"])
            for label, data, extra in (("1-row dataset", "tiny", []), limited):
                best = min(_run([*cli, "mmlu_gen.py", "--model", "model.py", "--data-dir", data,
                                 "-o", str(root / "out_startup"), *extra], root)
                           for _ in range(3))
                print(f"{'startup':<6} [default] {label:<28} {best[0]:6.3f} s wall | cpu "
                      f"{best[1]:6.3f} s | peak RSS {best[2]:6.1f} MiB  (best of 3)")
        ours: dict[str, float] = {}  # the slower mode's prompts/s, per job
        jobs = [("gen", "mmlu_gen.py", args.rows, "data"),
                ("ppl", "ceval_ppl.py", args.ppl_rows, "data")]
        for name, config, rows, data in jobs:
            if name not in runs:
                continue
            for mode in args.modes.split(","):
                out = root / f"out_{name}_{mode}"
                dt, cpu, rss = _run([*cli, config, "--model", "model.py", "--data-dir", data, "-o",
                                     str(out), "--mode", mode, "--jobs", str(args.jobs)], root)
                n = _count(out)
                ours[name] = min(ours.get(name, n / dt), n / dt)
                print(f"{name:<6} [{mode:<7}] jobs={args.jobs} {rows:>8} rows {n:>8} prompts "
                      f"{dt:6.2f} s {n / dt:8.0f} prompts/s | cpu {cpu:6.2f} s {n / cpu:8.0f} "
                      f"prompts/cpu-s | peak RSS {rss:6.1f} MiB")
            if args.opencompass:
                _opencompass(args, root, name, config, rows, data, ours[name])
        if "mmlu-csv" in runs:
            _mmlu_csv(args, root, cli)
        if "bridge" in runs:
            _bridge(args, root, cli)
        if "memory" in runs:
            big = args.memory_rows
            _write_rows(root / "big" / mmlu / "dev.jsonl", 5, "input", "target")
            _write_rows(root / "big" / mmlu / "test.jsonl", big, "input", "target")
            for config, shots in (("mmlu_gen_0shot.py", 0), ("mmlu_gen.py", 5)):
                out = root / f"out_big_{shots}"
                dt, cpu, rss = _run([*cli, config, "--model", "model.py", "--data-dir", "big",
                                     "-o", str(out), "--jobs", str(args.jobs)], root)
                print(f"{'gen':<6} [{shots}-shot ] jobs={args.jobs} {big:>8} rows {big:>8} prompts "
                      f"{dt:6.2f} s {big / dt:8.0f} prompts/s | cpu {cpu:6.2f} s {big / cpu:8.0f} "
                      f"prompts/cpu-s | peak RSS {rss:6.1f} MiB")


if __name__ == "__main__":
    main()
