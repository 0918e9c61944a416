"""Throughput of sharded output (``--shard-rows 100000``): local engine and Ray, side by side.

One run each of the 1,000,000-row gen job (5-shot FixK, MMLU-shaped rows) with
``--shard-rows 100000``: the local CLI (one process), then ``--engine ray`` with 1 and with 2
workers (a local instance of N CPUs, started and stopped by the CLI). With shards the
workers write and hash their own shards and the ``compile-prompts`` process writes only the
manifest. Printed: wall time, rows per second per worker, the 2-vs-1 speedup of the whole
run and its marginal speedup from the 250,000-row to the 1,000,000-row job (the wall time the
extra rows add, so Ray's start and stop cancel out, as for the CPU share); the CPU time of
the ``compile-prompts`` process against the CPU time of the whole run (it and every process
it started), as the marginal share from a 250,000-row to the 1,000,000-row job (Ray's start
and stop cancel out); the peak RSS of each Ray worker (sampled from /proc while it runs).
The shard sets must be byte-identical. The load average is printed with the figures: on a
shared machine they are only as good as the idle CPUs.

    python tools/bench_ray.py [--rows N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CONFIG = """\
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import FixKRetriever
from opencompass.openicl.icl_inferencer import GenInferencer

_q = '{question}\\nA. {A}\\nB. {B}\\nC. {C}\\nD. {D}\\nAnswer:'
datasets = [dict(
    abbr='mmlu-1m', type='JsonlDataset',
    data_files=dict(train='dev.jsonl', test='test.jsonl'),
    reader_cfg=dict(input_columns=['question', 'A', 'B', 'C', 'D'], output_column='target',
                    train_split='train', test_split='test'),
    infer_cfg=dict(
        ice_template=dict(type=PromptTemplate, template=dict(round=[
            dict(role='HUMAN', prompt=_q), dict(role='BOT', prompt='{target}')])),
        prompt_template=dict(type=PromptTemplate, ice_token='</E>', template=dict(
            begin='</E>', round=[dict(role='HUMAN', prompt=_q)])),
        retriever=dict(type=FixKRetriever, fix_id_list=[0, 1, 2, 3, 4]),
        inferencer=dict(type=GenInferencer, max_out_len=16)),
)]
models = [dict(abbr='internlm2-chat', type='HuggingFaceCausalLM', meta_template=dict(round=[
    dict(role='HUMAN', begin='<|im_start|>user\\n', end='<|im_end|>\\n'),
    dict(role='BOT', begin='<|im_start|>assistant\\n', end='<|im_end|>\\n', generate=True)]))]
"""


def _row(i: int) -> dict[str, str]:
    return {"question": f"Question {i}: which of these numbers is {i % 97} more than {i}?",
            "A": str(i + i % 97), "B": str(i + 1), "C": str(i * 2), "D": str(i - 1),
            "target": "A"}


def make(folder: Path, rows: int) -> None:
    (folder / "suite.py").write_text(CONFIG)
    with (folder / "dev.jsonl").open("w") as fh:
        for i in range(5):
            fh.write(json.dumps(_row(10**9 + i)) + "\n")
    with (folder / "test.jsonl").open("w") as fh:
        for i in range(rows):
            fh.write(json.dumps(_row(i)) + "\n")


RUN = """\
import json, resource, sys
from prompt_compiler.cli import main
code = main(sys.argv[1:])
own = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu": own.ru_utime + own.ru_stime}), file=sys.stderr)
sys.exit(code)
"""


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of a process, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / tick


class _Sampler(threading.Thread):
    """While a run goes on: the CPU seconds of every process it started (the last value seen
    of each), and the peak RSS (VmHWM) of its Ray workers (process title ``ray::...``)."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.cpu: dict[int, float] = {}
        self.peaks: dict[int, int] = {}
        self.stop = threading.Event()

    def _descends(self, pid: int, parents: dict[int, int]) -> bool:
        seen = 0
        while pid > 1 and seen < 64:
            if pid == self.root:
                return True
            pid = parents.get(pid, 0)
            seen += 1
        return False

    def run(self) -> None:
        while not self.stop.is_set():
            stats = {int(e): _stat(int(e)) for e in os.listdir("/proc") if e.isdigit()}
            parents = {pid: st[0] for pid, st in stats.items() if st}
            for pid, st in stats.items():
                if st is None or pid == self.root or not self._descends(pid, parents):
                    continue
                self.cpu[pid] = max(self.cpu.get(pid, 0.0), st[1])
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as fh:
                        if not fh.read().startswith(b"ray::"):
                            continue
                    with open(f"/proc/{pid}/status") as fh:
                        for line in fh:
                            if line.startswith("VmHWM:"):
                                self.peaks[pid] = max(self.peaks.get(pid, 0),
                                                      int(line.split()[1]))
                except (OSError, ValueError):
                    pass
            time.sleep(0.1)


def run(folder: Path, out: str, extra: list[str]) -> dict[str, float]:
    """One CLI run: wall time, its own CPU, the CPU of what it started, worker peaks."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                      env.get("PYTHONPATH", "")]))
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", RUN, "suite.py", "-o", out,
                             "--shard-rows", "100000", *extra], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = _Sampler(proc.pid)
    sampler.start()
    _, stderr = proc.communicate()
    wall = time.perf_counter() - start
    sampler.stop.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(extra) or 'local'} failed: {stderr}")
    own = json.loads(stderr.strip().splitlines()[-1])["cpu"]
    return {"wall": wall, "driver_cpu": own, "total_cpu": own + sum(sampler.cpu.values()),
            "worker_mb": max(sampler.peaks.values(), default=0) / 1024,
            "workers_seen": len(sampler.peaks)}


def _shards(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "manifest.json"}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = p.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench_ray_"))
    small_folder = folder / "quarter"
    folder.mkdir(parents=True, exist_ok=True)
    small_folder.mkdir(parents=True, exist_ok=True)
    try:
        n, quarter = args.rows, args.rows // 4
        make(folder, n)
        make(small_folder, quarter)
        load_before = os.getloadavg()
        local = run(folder, "out_local", [])
        one = run(folder, "out_ray1", ["--engine", "ray", "--jobs", "1"])
        two = run(folder, "out_ray2", ["--engine", "ray", "--jobs", "2"])
        small_one = run(small_folder, "out_ray1", ["--engine", "ray", "--jobs", "1"])
        small_two = run(small_folder, "out_ray2", ["--engine", "ray", "--jobs", "2"])
        load_after = os.getloadavg()
        reference = _shards(folder / "out_local")
        same = len(reference) == -(-n // 100_000) and all(
            _shards(folder / o) == reference for o in ("out_ray1", "out_ray2"))
        print(f"{n:,} rows, 5-shot FixK gen, --shard-rows 100000; load average "
              f"{load_before[0]:.2f} before, {load_after[0]:.2f} after ({os.cpu_count()} CPUs)")
        print(f"{'':30}{'local CLI':>14}{'Ray, 1 worker':>16}{'Ray, 2 workers':>16}")
        print(f"{'wall time (s)':30}{local['wall']:14.1f}{one['wall']:16.1f}{two['wall']:16.1f}")
        rate = [n / local["wall"], n / one["wall"], n / two["wall"] / 2]
        print(f"{'rows/s per worker':30}{rate[0]:14,.0f}{rate[1]:16,.0f}{rate[2]:16,.0f}")
        print(f"{'compile-prompts CPU (s)':30}{local['driver_cpu']:14.1f}"
              f"{one['driver_cpu']:16.1f}{two['driver_cpu']:16.1f}")
        print(f"{'run CPU, all processes (s)':30}{local['total_cpu']:14.1f}"
              f"{one['total_cpu']:16.1f}{two['total_cpu']:16.1f}")
        shares = []
        for big, small in ((one, small_one), (two, small_two)):
            shares.append((big["driver_cpu"] - small["driver_cpu"])
                          / max(1e-9, big["total_cpu"] - small["total_cpu"]))
        print(f"{'  at 250k rows: driver / run':30}{'':14}"
              f"{small_one['driver_cpu']:7.1f} /{small_one['total_cpu']:6.1f}"
              f"{small_two['driver_cpu']:9.1f} /{small_two['total_cpu']:6.1f}")
        print(f"{'driver share, 250k -> 1M':30}{'':14}{shares[0]:16.1%}{shares[1]:16.1%}")
        print(f"{'peak RSS per worker (MB)':30}{'':14}{one['worker_mb']:16.0f}"
              f"{two['worker_mb']:16.0f}")
        print(f"{'  at 250k rows: wall (s)':30}{'':14}{small_one['wall']:16.1f}"
              f"{small_two['wall']:16.1f}")
        extra = n - quarter
        marginal = [big["wall"] - small["wall"] for big, small in ((one, small_one),
                                                                    (two, small_two))]
        print(f"{'marginal rows/s per worker':30}{'':14}"
              f"{extra / max(1e-9, marginal[0]):16,.0f}"
              f"{extra / max(1e-9, marginal[1]) / 2:16,.0f}")
        print(f"2 workers vs 1: {one['wall'] / two['wall']:.2f}x (wall time of the CLI, Ray's "
              f"start and stop included); marginal, 250k -> 1M rows: "
              f"{marginal[0] / max(1e-9, marginal[1]):.2f}x (the wall time the extra "
              f"{extra:,} rows add: Ray's start and stop cancel out); shard sets "
              f"byte-identical: {same}")
        return 0 if same else 1
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
