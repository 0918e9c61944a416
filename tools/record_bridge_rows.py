"""Record what OpenCompass 0.5.4's own loader classes return for the bridge's test data.

Run once with the python of a venv that has OpenCompass installed (never this project's)::

    /work/oc-venv/bin/python tools/record_bridge_rows.py

It imports ``opencompass.datasets`` whole (as OpenCompass does; not the bridge's runner), calls
each class's ``load(**kwargs)`` in ``tests/data/oc_bridge`` (the relative paths OpenCompass's
configs use resolve there) and writes ``tests/data/oc_bridge/expected/<Class>.json``: the
split names (null for a single ``Dataset``) and every split's rows as ``Dataset.to_list()``
gives them. ``tests/test_oc_bridge.py`` compares the bridge's rows with these files.
"""

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "tests" / "data" / "oc_bridge"
# class -> the load() arguments of OpenCompass 0.5.4's own config for it
CASES = {
    "GSMHardDataset": {"path": "./data/gsm-hard/test.jsonl"},  # gsm_hard/gsmhard_gen_8a1400.py
    "C3Dataset": {"path": "./data/CLUE/C3/dev_0.json"},  # CLUE_C3/CLUE_C3_ppl_e24a31.py
    "TabMWPDataset": {"path": "./data/tabmwp/"},  # TabMWP/TabMWP_gen_2aef96.py
}


def main() -> None:
    os.chdir(HERE)
    import opencompass
    import opencompass.datasets as oc
    from datasets import Dataset

    out = HERE / "expected"
    out.mkdir(exist_ok=True)
    for name, kwargs in CASES.items():
        loaded = getattr(oc, name).load(**kwargs)
        if isinstance(loaded, Dataset):
            splits, rows = None, {"": loaded.to_list()}
        else:
            splits = list(loaded)
            rows = {split: loaded[split].to_list() for split in splits}
        record = {"class": name, "kwargs": kwargs, "opencompass": opencompass.__version__,
                  "splits": splits, "rows": rows}
        text = json.dumps(record, ensure_ascii=False, indent=1) + "\n"
        (out / f"{name}.json").write_text(text, encoding="utf-8")
        print(name, {k: len(v) for k, v in rows.items()}, file=sys.stderr)


if __name__ == "__main__":
    main()
