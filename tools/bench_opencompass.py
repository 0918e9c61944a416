"""OpenCompass's own prompt building, timed in-process: the other side of bench_compile.py.

    /path/to/opencompass-venv/bin/python tools/bench_opencompass.py CONFIG.py ABBR ROWS_DIR \\
        [--max-seq-len 2048]

Run with OpenCompass 0.5.4 installed (``bench_compile.py --opencompass PYTHON`` does it). It
loads CONFIG.py with mmengine as OpenCompass does, takes the dataset ``ABBR``, reads its
``train``/``test`` rows from ``ROWS_DIR/ABBR/{dev,test|val}.jsonl`` (the files bench_compile
writes), and runs OpenCompass's retriever and inferencer with a stand-in for the internlm-chat
model of bench_compile (its meta template; ``get_token_len`` counts whitespace words, the
generation and scoring calls return at once). So the figure is OpenCompass building and
parsing every prompt (retrieval, templates, ``max_seq_len`` checks, meta template, its own
prediction file), and nothing of a model. Prints one JSON line:
``{"prompts": N, "seconds": S, "prompts_per_s": R}``.

This file only drives OpenCompass as a library; it never ships with or runs inside
prompt_compiler.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

META_TEMPLATE = dict(round=[
    dict(role="HUMAN", begin="<|User|>:", end="\n"),
    dict(role="BOT", begin="<|Bot|>:", end="<eoa>\n", generate=True),
])


def _rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _kind(value: Any) -> str:
    """The class name a config value refers to (a class, or an mmengine lazy object)."""
    return getattr(value, "__name__", None) or str(value).rsplit(".", 1)[-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", type=Path)
    ap.add_argument("abbr")
    ap.add_argument("rows", type=Path)
    ap.add_argument("--max-seq-len", type=int, default=2048)
    args = ap.parse_args(argv)

    import numpy as np
    from datasets import Dataset, DatasetDict
    from mmengine.config import Config
    from opencompass.datasets.base import BaseDataset
    from opencompass.models.base import BaseModel
    from opencompass.openicl import icl_inferencer, icl_retriever
    from opencompass.openicl.icl_prompt_template import PromptTemplate

    cfg = Config.fromfile(str(args.config))
    datasets = [d for name, value in cfg.items() if name.endswith("_datasets")
                for d in value if d["abbr"] == args.abbr]
    if not datasets:
        sys.exit(f"no dataset {args.abbr!r} in {args.config}")
    ds_cfg = datasets[0]
    reader = dict(ds_cfg["reader_cfg"])
    folder = args.rows / args.abbr
    test_split = reader.get("test_split", "test")
    splits = {reader.get("train_split", "train"): _rows(folder / "dev.jsonl"),
              test_split: _rows(folder / f"{'test' if test_split == 'test' else test_split}.jsonl")}

    class Rows(BaseDataset):
        @staticmethod
        def load(**kwargs: Any) -> Any:
            return DatasetDict({k: Dataset.from_list(v) for k, v in splits.items()})

    class StandIn(BaseModel):
        def __init__(self) -> None:
            BaseModel.__init__(self, path="stand-in", meta_template=META_TEMPLATE)

        def get_token_len(self, prompt: str) -> int:
            return len(str(prompt).split())

        def generate(self, inputs: list[str], max_out_len: int = 100, **kwargs: Any) -> list[str]:
            return ["" for _ in inputs]

        def get_ppl(self, inputs: list[str], mask_length: Any = None) -> Any:
            return np.zeros(len(inputs))

    infer = ds_cfg["infer_cfg"]

    def template(value: Any) -> Any:
        if value is None:
            return None
        value = dict(value)
        value.pop("type")
        return PromptTemplate(**value)

    t0 = time.perf_counter()
    dataset = Rows(reader_cfg=reader, abbr=args.abbr)
    rcfg = dict(infer["retriever"])
    retriever = getattr(icl_retriever, _kind(rcfg.pop("type")))(dataset, **rcfg)
    icfg = dict(infer["inferencer"])
    kind = _kind(icfg.pop("type"))
    if kind == "GenInferencer":
        icfg.setdefault("max_out_len", 100)  # OpenCompass's task passes the model's max_out_len
    inferencer = getattr(icl_inferencer, kind)(model=StandIn(), max_seq_len=args.max_seq_len,
                                               batch_size=8, **icfg)
    with tempfile.TemporaryDirectory() as tmp:
        inferencer.inference(retriever, ice_template=template(infer.get("ice_template")),
                             prompt_template=template(infer.get("prompt_template")),
                             output_json_filepath=tmp, output_json_filename="predictions.json")
        saved = json.loads((Path(tmp) / "predictions.json").read_text(encoding="utf-8"))
    seconds = time.perf_counter() - t0
    n = len(splits[test_split])
    if kind == "PPLInferencer":  # one prompt per label
        n = sum(1 for v in saved.values() for k in v if k.startswith("label: "))
    print(json.dumps({"prompts": n, "seconds": round(seconds, 3),
                      "prompts_per_s": round(n / seconds, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
