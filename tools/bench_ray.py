"""Throughput of ``compile-prompts --engine ray`` against the local engine.

One run each of a 1,000,000-row gen job (5-shot FixK, MMLU-shaped rows): the local CLI (one
process), then Ray with 1 and with 2 workers (``--engine ray --jobs N``: a local instance of N
CPUs). Printed side by side: wall time, rows per second per worker, the 2-vs-1 speedup, and
the peak RSS of each Ray worker process (sampled from /proc while it runs) and of the
``compile-prompts`` process. The outputs must be byte-identical. The load average is printed
with the figures: on a shared machine they are only as good as the idle CPUs.

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
    import pyarrow as pa
    import pyarrow.parquet as pq

    step = 100_000  # the same rows with their ids, for the Ray Data stage
    with pq.ParquetWriter(folder / "test.parquet", pa.schema(
            [(c, pa.string()) for c in _row(0)] + [("idx", pa.int64())])) as writer:
        for lo in range(0, rows, step):
            part = [dict(_row(i), idx=i) for i in range(lo, min(lo + step, rows))]
            writer.write_table(pa.Table.from_pylist(part, schema=writer.schema))


class _Peaks(threading.Thread):
    """Samples the peak RSS (VmHWM) of Ray worker processes (title ``ray::...``) while it runs."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peaks: dict[int, int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as fh:
                        if not fh.read().startswith((b"ray::MapBatches", b"ray::MapWorker")):
                            continue
                    with open(f"/proc/{entry}/status") as fh:
                        for line in fh:
                            if line.startswith("VmHWM:"):
                                kb = int(line.split()[1])
                                self.peaks[int(entry)] = max(self.peaks.get(int(entry), 0), kb)
                except (OSError, ValueError):
                    pass
            time.sleep(0.1)


RAY_RUN = """\
import json, sys, time
import ray
from prompt_compiler import suite as S


class Clock:
    \"\"\"A progress listener that notes when each row block of the pipeline comes back.\"\"\"

    def __init__(self):
        self.marks = []

    def __call__(self, *pair):
        pass

    def rows(self, n):
        pass

    def advance(self, n):
        self.marks.append((time.perf_counter(), n))


ray.init(num_cpus=int(sys.argv[1]), include_dashboard=False, log_to_driver=False,
         logging_level="ERROR", _system_config={"worker_niceness": 0})
clock = Clock()
start = time.perf_counter()
S.compile_to_dir(S.load(["suite.py"]), sys.argv[2], engine="ray", jobs=int(sys.argv[1]),
                 progress=clock)
end = time.perf_counter()
(first, _), (last, _) = clock.marks[0], clock.marks[-1]
steady = sum(n for _, n in clock.marks[1:]) / (last - first)
print(json.dumps({"compile": end - start, "steady": steady, "first": first - start}))
ray.shutdown()
"""


STAGE_RUN = """\
import json, sys, time
import ray
from prompt_compiler.ray import compile_dataset
n = int(sys.argv[1])
ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
         _system_config={"worker_niceness": 0})
ray.data.DataContext.get_current().enable_progress_bars = False
rows = ray.data.read_parquet("test.parquet").repartition(32).materialize()  # before the clock
start = time.perf_counter()
records = compile_dataset(rows, dataset="suite.py", model="suite.py", concurrency=n)
count = sum(b.num_rows() for b in records.iter_internal_ref_bundles())  # blocks stay put
print(json.dumps({"compile": time.perf_counter() - start, "records": count}))
ray.shutdown()
"""


def run(folder: Path, out: str, extra: list[str], ray_cpus: int = 0,
        script: str = RAY_RUN) -> dict[str, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                      env.get("PYTHONPATH", "")]))
    peaks = _Peaks()
    peaks.start()
    start = time.perf_counter()
    command = (["-c", script, str(ray_cpus), out] if ray_cpus else
               ["-m", "prompt_compiler", "suite.py", "-o", out, *extra])
    proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", sys.executable, *command],
                            cwd=folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - start
    peaks.stop.set()
    peaks.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(extra) or 'local'} failed: {stderr}")
    driver_kb = int(stderr.strip().splitlines()[-1])
    found = json.loads(stdout.strip().splitlines()[-1]) if ray_cpus else {}
    compile_s = found.get("compile", wall)
    return {"wall": wall, "compile": compile_s, "records": found.get("records", -1),
            "steady": found.get("steady", 0.0), "first": found.get("first", 0.0),
            "driver_mb": driver_kb / 1024,
            "worker_mb": max(peaks.peaks.values(), default=0) / 1024,
            "workers_seen": len(peaks.peaks)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = p.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench_ray_"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        make(folder, args.rows)
        load_before = os.getloadavg()
        local = run(folder, "out_local", [])
        control = run(folder, "out_local2", ["--jobs", "2"])  # what 2 cores give right now
        one = run(folder, "out_ray1", ["--engine", "ray", "--jobs", "1"])
        two = run(folder, "out_ray2", ["--engine", "ray", "--jobs", "2"])
        # the compile alone: Ray started beforehand in the same process (compile_to_dir)
        one_c = run(folder, "out_ray1c", [], ray_cpus=1)
        two_c = run(folder, "out_ray2c", [], ray_cpus=2)
        # the Ray Data stage alone (compile_dataset, Parquet rows in, records counted, nothing
        # written): how the workers scale without the driver's writing and hashing
        one_s = run(folder, "", [], ray_cpus=1, script=STAGE_RUN)
        two_s = run(folder, "", [], ray_cpus=2, script=STAGE_RUN)
        load_after = os.getloadavg()
        same = one_s["records"] == two_s["records"] == args.rows and all(
            (folder / o / "manifest.json").read_bytes()
                   == (folder / "out_local/manifest.json").read_bytes()
                   for o in ("out_ray1", "out_ray2", "out_ray1c", "out_ray2c"))
        n = args.rows
        print(f"{n:,} rows, 5-shot FixK gen; load average {load_before[0]:.2f} before, "
              f"{load_after[0]:.2f} after ({os.cpu_count()} CPUs)")
        print(f"{'':22}{'local CLI':>14}{'Ray, 1 worker':>16}{'Ray, 2 workers':>16}")
        print(f"{'wall time (s)':22}{local['wall']:14.1f}{one['wall']:16.1f}{two['wall']:16.1f}")
        rate = [n / local["wall"], n / one["wall"], n / two["wall"] / 2]
        print(f"{'rows/s per worker':22}{rate[0]:14,.0f}{rate[1]:16,.0f}{rate[2]:16,.0f}")
        print(f"{'  vs local':22}{'':14}{rate[1] / rate[0]:16.0%}{rate[2] / rate[0]:16.0%}")
        print(f"{'compile alone (s)':22}{local['wall']:14.1f}{one_c['compile']:16.1f}"
              f"{two_c['compile']:16.1f}")
        steady = [n / local["wall"], n / one_c["compile"], n / two_c["compile"] / 2]
        print(f"{'  rows/s per worker':22}{steady[0]:14,.0f}{steady[1]:16,.0f}{steady[2]:16,.0f}")
        print(f"{'  vs local':22}{'':14}{steady[1] / steady[0]:16.0%}"
              f"{steady[2] / steady[0]:16.0%}")
        print(f"{'  first block after':22}{'':14}{one_c['first']:15.1f}s{two_c['first']:15.1f}s")
        flow = [one_c["steady"], two_c["steady"] / 2]
        print(f"{'  then rows/s/worker':22}{'':14}{flow[0]:16,.0f}{flow[1]:16,.0f}")
        print(f"{'  vs local':22}{'':14}{flow[0] / steady[0]:16.0%}{flow[1] / steady[0]:16.0%}")
        stage = [n / one_s["compile"], n / two_s["compile"] / 2]
        print(f"{'stage alone (s)':22}{'':14}{one_s['compile']:16.1f}{two_s['compile']:16.1f}")
        print(f"{'  rows/s per worker':22}{'':14}{stage[0]:16,.0f}{stage[1]:16,.0f}")
        print(f"{'peak RSS/worker (MB)':22}{local['driver_mb']:14.0f}"
              f"{max(one['worker_mb'], one_c['worker_mb']):16.0f}"
              f"{max(two['worker_mb'], two_c['worker_mb']):16.0f}")
        print(f"{'driver peak RSS (MB)':22}{'':14}{one['driver_mb']:16.0f}"
              f"{two['driver_mb']:16.0f}")
        print(f"2 workers vs 1: {one['wall'] / two['wall']:.2f}x "
              f"({steady[2] * 2 / steady[1]:.2f}x compiling alone, "
              f"{flow[1] * 2 / flow[0]:.2f}x once the blocks flow, "
              f"{stage[1] * 2 / stage[0]:.2f}x the stage alone); outputs byte-identical: "
              f"{same}")
        print(f"control, the local engine at the same time: --jobs 2 vs 1: "
              f"{local['wall'] / control['wall']:.2f}x")
        print("(wall times of the CLI include starting and stopping the local Ray instance;"
              " 'compile alone' times compile_to_dir with Ray already running; 'first block"
              " after' is the pipeline's start-up within it (plan, workers started, the rows"
              " file indexed), 'then' the rate from the first block back to the last)")
        return 0 if same else 1
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
