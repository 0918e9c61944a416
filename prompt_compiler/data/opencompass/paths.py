"""Where OpenCompass 0.5.4 reads a dataset's files: its ``get_data_path`` rule.

A loader's ``path`` is a dataset id (``opencompass/mmlu``) or a path. OpenCompass resolves it:

1. an absolute path is used as it is;
2. with ``local_mode`` (some loaders, or the config's ``local_mode=True``) the path is
   ``$COMPASS_DATA_CACHE/<path>``;
3. otherwise ``DATASET_SOURCE=ModelScope`` or ``HF`` reads a hub repository instead of files
   (not done here: this project reads local files only), and without it the id's local
   folder (:data:`LOCAL_PATHS`; an id not listed is itself the path) under
   ``$COMPASS_DATA_CACHE``;
4. a relative result is relative to the working folder; when it does not exist there,
   ``~/.cache/opencompass/<path>`` is tried; when neither exists OpenCompass downloads the
   data archive there. This project never downloads: it names the path and stops.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...errors import DataError

__all__ = ["LOCAL_PATHS", "DataPath", "resolve"]

LOCAL_PATHS: Mapping[str, str] = {
    # dataset id (as OpenCompass's configs name it) -> its folder or file in OpenCompassData
    "opencompass/ai2_arc-dev": "./data/ARC/ARC-c/ARC-Challenge-Dev.jsonl",
    "opencompass/ai2_arc-easy-dev": "./data/ARC/ARC-e/ARC-Easy-Dev.jsonl",
    "opencompass/ai2_arc-test": "./data/ARC/ARC-c/ARC-Challenge-Test.jsonl",
    "opencompass/GAOKAO-BENCH": "./data/GAOKAO-BENCH/data",
    "opencompass/aime2024": "./data/aime.jsonl",
    "opencompass/babilong": "./data/babilong/data/",
    "opencompass/bbh": "./data/BBH/data",
    "opencompass/bigcodebench": "./data/bigcodebench/",
    "opencompass/ceval-exam": "./data/ceval/formal_ceval",
    "opencompass/cmmlu": "./data/cmmlu/",
    "opencompass/commonsense_qa": "./data/commonsenseqa",
    "opencompass/gsm8k": "./data/gsm8k/",
    "opencompass/LiveMathBench202412": "./data/LiveMathBench/",
    "opencompass/LiveMathBench": "./data/LiveMathBench/",
    "opencompass/korbench": "./data/korbench",
    "opencompass/humaneval": "./data/humaneval/human-eval-v2-20210705.jsonl",
    "opencompass/math": "./data/math/",
    "opencompass/mbpp": "./data/mbpp/mbpp.jsonl",
    "opencompass/mmlu": "./data/mmlu/",
    "opencompass/mmlu_pro": "./data/mmlu_pro",
    "opencompass/natural_question": "./data/nq/",
    "opencompass/needlebench": "./data/needlebench",
    "opencompass/nq_open": "./data/nq-open/",
    "opencompass/race": "./data/race/",
    "opencompass/sanitized_mbpp": "./data/mbpp/sanitized-mbpp.jsonl",
    "opencompass/trivia_qa": "./data/triviaqa/",
}
"""The local paths of the dataset ids the native readers' configs use (OpenCompass 0.5.4's
``DATASETS_MAPPING``, the entries these readers need)."""

DEFAULT_CACHE = "~/.cache/opencompass/"
"""Where OpenCompass looks when a path is not under the working folder (and downloads)."""


@dataclass(frozen=True, slots=True)
class DataPath:
    """A dataset path as OpenCompass resolves it."""

    path: Path
    """The file or folder OpenCompass reads (it exists)."""
    text: str
    """The same path spelt as OpenCompass spells it (a trailing ``/`` kept), for loaders that
    append a file name to it as text."""
    tried: tuple[str, ...]
    """Every place looked at, in order."""


def resolve(dataset_id: str, *, local_mode: bool = False,
            environ: Mapping[str, str] | None = None, cwd: Path | None = None,
            elsewhere: str = "", hint: str = "") -> DataPath:
    """The file or folder OpenCompass 0.5.4 reads for ``dataset_id``.

    ``elsewhere`` and ``hint`` are added to the message and the hint of a missing-data error
    (the caller's other places tried, and how else to give the rows).

    Raises:
        DataError: ``DATASET_SOURCE`` names a hub, or the path is in neither place (the
            message names both and says that OpenCompass would download the data there).
    """
    env = os.environ if environ is None else environ
    cache = env.get("COMPASS_DATA_CACHE", "")
    if os.path.isabs(dataset_id):
        return DataPath(Path(dataset_id), dataset_id, (dataset_id,))
    if local_mode:
        local = os.path.join(cache, dataset_id)
    else:
        source = env.get("DATASET_SOURCE")
        if source in ("ModelScope", "HF"):
            raise DataError(
                f"DATASET_SOURCE={source}: OpenCompass reads {dataset_id!r} from the "
                f"{'ModelScope' if source == 'ModelScope' else 'Hugging Face'} hub, which this "
                "project does not do (it reads local files only)",
                hint="unset DATASET_SOURCE to read OpenCompass's local data folder")
        local = os.path.join(cache, LOCAL_PATHS.get(dataset_id, dataset_id))
    base = Path.cwd() if cwd is None else cwd
    first = base / local
    if local and first.exists():  # an empty path: os.path.exists("") is False
        return DataPath(first, os.path.join(base, local), (str(first),))
    second_text = os.path.join(os.path.expanduser(DEFAULT_CACHE), local)
    second = Path(second_text)
    if second.exists():
        return DataPath(second, second_text, (str(first), str(second)))
    raise DataError(
        f"no data at {first} (nor at {second}): OpenCompass would download "
        f"{dataset_id!r} there (from its dataset URLs, or the hub DATASET_SOURCE names); "
        f"this project never downloads{elsewhere}",
        hint="unpack OpenCompass's data (the OpenCompassData zip) in the working folder, "
             f"or set COMPASS_DATA_CACHE to the folder holding its data/ folder{hint}")
