"""The script the OpenCompass interpreter runs for the bridge (``bridge.py``).

It is passed by path to the interpreter named by ``--opencompass-python`` and never imported by
prompt_compiler (it imports OpenCompass, which this project never does). It reads one request
(a JSON file: ``{"calls": [{"class", "kwargs", "out"}, ...]}``, one call per dataset), calls
each class's ``load(**kwargs)`` as OpenCompass's ``BaseDataset`` does, and writes into the
call's ``out`` folder:

- ``<n>.parquet`` per split (the class's own Arrow table: column order and types as it built
  them; a ``Dataset`` is one split, a ``DatasetDict`` one file per split in its order);
- ``result.json``: the split names (or none for a ``Dataset``), the files and folders the
  loader read (from the interpreter's audit events), OpenCompass's version.

Only the one module that defines the class is imported: ``opencompass.datasets`` is given a
stub package so that its ``__init__.py`` (which imports every loader and takes tens of seconds)
does not run; a module that needs the real package gets it on a second try. Nothing is
downloaded: OpenCompass's ``download_dataset`` is replaced by an error naming the path it was
asked for, and the Hugging Face libraries run offline. A failed call writes ``error.json``
(its one line) and prints that line to stderr; the others still run; the exit status is 1 if
any failed.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import types
from collections.abc import Iterable
from typing import Any


class BridgeFailure(Exception):
    """A failure reported to the bridge as one line."""


def _accepts(source: str, name: str, kwargs: dict[str, Any]) -> bool:
    """Whether the ``load`` of class ``name`` in ``source`` takes ``kwargs`` (read with
    :mod:`ast`; a ``load`` it cannot find or read is taken to)."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "load":
                    args = item.args
                    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                    required = [a.arg for a in args.args[:len(args.args) - len(args.defaults)]]
                    required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults,
                                                       strict=True) if d is None]
                    if required[:1] in (["self"], ["cls"]):
                        required = required[1:]
                    return (all(k in names for k in kwargs) or args.kwarg is not None) and \
                        all(r in kwargs for r in required)
    return True


def _find_module(datasets_dir: str, name: str, kwargs: dict[str, Any] | None = None) -> str:
    """The dotted name of the module under ``opencompass/datasets`` defining class ``name``:
    where several do (``needlebench`` and ``needlebench_v2`` share class names), the first
    whose ``load`` takes ``kwargs`` (the one a config that works in OpenCompass imported)."""
    pattern = re.compile(r"^class\s+" + re.escape(name) + r"\s*[(:]", re.MULTILINE)
    found: list[tuple[str, str]] = []
    for root, dirs, files in os.walk(datasets_dir):
        dirs.sort()
        for file in sorted(files):
            if not file.endswith(".py"):
                continue
            path = os.path.join(root, file)
            with open(path, encoding="utf-8", errors="replace") as handle:
                source = handle.read()
            if pattern.search(source):
                found.append((path, source))
    if not found:
        raise BridgeFailure(f"{name} is not a class of OpenCompass's opencompass.datasets")
    chosen = next((path for path, source in found
                   if kwargs is None or _accepts(source, name, kwargs)), found[0][0])
    rel = os.path.relpath(chosen, datasets_dir)[: -len(".py")]
    parts = [p for p in rel.split(os.sep) if p != "__init__"]
    return ".".join(["opencompass.datasets", *parts])


def _load_class(name: str, kwargs: dict[str, Any] | None = None) -> tuple[Any, str]:
    import opencompass  # type: ignore[import-not-found]

    datasets_dir = os.path.join(os.path.dirname(opencompass.__file__), "datasets")
    module_name = _find_module(datasets_dir, name, kwargs)
    stub = types.ModuleType("opencompass.datasets")
    stub.__path__ = [datasets_dir]
    stub.__package__ = "opencompass.datasets"
    sys.modules["opencompass.datasets"] = stub
    try:
        module = importlib.import_module(module_name)
    except Exception:  # noqa: BLE001 - e.g. an ImportError of a name the real package holds
        # the module wants names of the real package: import it whole
        for key in [k for k in sys.modules if k.startswith("opencompass.datasets")]:
            del sys.modules[key]
        module = importlib.import_module(module_name)
    cls = getattr(module, name, None)
    if cls is None or not hasattr(cls, "load"):
        raise BridgeFailure(f"{module_name} has no loader class {name}")
    return cls, opencompass.__version__


def _no_download(local_path: str, cache_dir: object = None, *args: object, **kwargs: object,
                 ) -> None:
    raise BridgeFailure(
        f"data not found at {local_path}; OpenCompass would download it there "
        "(prompt_compiler never downloads: fetch it with OpenCompass or unpack its data zip)"
    )


class _Reads:
    """Files opened for reading and folders listed while the loader runs (audit events)."""

    def __init__(self, skip: Iterable[str]) -> None:
        self.files: dict[str, None] = {}
        self.dirs: dict[str, None] = {}
        self.on = False
        self.skip = tuple(os.path.join(os.path.realpath(p), "") for p in skip if p)

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.on:
            return
        if event == "open":
            path, mode = args[0], args[1]
            if not isinstance(path, (str, bytes)) or isinstance(path, bytes):
                return
            if mode is not None and isinstance(mode, str) and any(c in mode for c in "wax+"):
                return
            if isinstance(mode, int) and mode & (os.O_WRONLY | os.O_RDWR):
                return
            self._note(path, self.files)
        elif event in ("os.listdir", "os.scandir", "glob.glob"):
            path = args[0] if args else "."
            if isinstance(path, str):
                self._note(path, self.dirs)

    def _note(self, path: str, into: dict[str, None]) -> None:
        full = os.path.abspath(path)
        if (os.path.realpath(full).startswith(self.skip)
                or full.endswith((".py", ".pyc", ".so"))):
            return
        into.setdefault(full, None)


def _write(dataset: Any, out_dir: str) -> list[str] | None:
    from datasets import Dataset, DatasetDict

    if isinstance(dataset, Dataset):
        dataset.to_parquet(os.path.join(out_dir, "0.parquet"))
        return None
    if isinstance(dataset, (DatasetDict, dict)):
        names = []
        for number, (split, part) in enumerate(dataset.items()):
            if not isinstance(part, Dataset):
                raise BridgeFailure(
                    f"load() returned split {split!r} as {type(part).__name__}, not a Dataset")
            part.to_parquet(os.path.join(out_dir, f"{number}.parquet"))
            names.append(str(split))
        return names
    raise BridgeFailure(
        f"load() returned {type(dataset).__name__}, not a datasets.Dataset or DatasetDict")


def _one(call: dict[str, Any], reads: _Reads, version_of: dict[str, str]) -> None:
    """One loader call: its splits and ``result.json`` into the call's ``out`` folder."""
    out_dir = call["out"]
    cls, version_of["opencompass"] = _load_class(call["class"], call["kwargs"])
    import opencompass.utils.datasets as oc_datasets  # type: ignore[import-not-found]

    oc_datasets.download_dataset = _no_download
    reads.files.clear()
    reads.dirs.clear()
    reads.on = True
    try:
        dataset = cls.load(**call["kwargs"])
    finally:
        reads.on = False
    splits = _write(dataset, out_dir)
    result = {
        "opencompass": version_of["opencompass"],
        "splits": splits,
        "files": sorted(p for p in reads.files if os.path.isfile(p)),
        "dirs": sorted(p for p in reads.dirs if os.path.isdir(p)),
    }
    with open(os.path.join(out_dir, "result.json"), "w", encoding="utf-8") as handle:
        json.dump(result, handle)


def _line(err: BaseException) -> str:
    """A failure as one line: the message, and where it was raised for an unexpected one."""
    if isinstance(err, BridgeFailure):
        return str(err)
    where = ""
    tb = err.__traceback__
    while tb is not None:
        where = f" ({os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno})"
        tb = tb.tb_next
    return f"{type(err).__name__}: {err}{where}".replace("\n", " ")


def main(request_path: str) -> int:
    """Run every call of the request (one process for several datasets); a failed call
    leaves ``error.json`` in its folder and its line on stderr. Exit status 1 if any failed."""
    with open(request_path, encoding="utf-8") as handle:
        calls = json.load(handle)["calls"]
    # the interpreter's own files, our folders, and the system's (a /proc file changes on
    # every run and would make every cache entry stale)
    skip = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(request_path),
            os.environ.get("HF_DATASETS_CACHE", ""), "/proc/", "/sys/", "/dev/", "/etc/"}
    reads = _Reads(skip)
    sys.addaudithook(reads)
    version_of: dict[str, str] = {}
    failed = 0
    for call in calls:
        try:
            _one(call, reads, version_of)
        except BaseException as err:  # noqa: BLE001 - reported per call, the others still run
            if isinstance(err, KeyboardInterrupt):
                raise
            failed += 1
            line = _line(err)
            with open(os.path.join(call["out"], "error.json"), "w", encoding="utf-8") as handle:
                json.dump({"error": line}, handle)
            print(line, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        sys.exit(main(sys.argv[1]))
    except Exception as err:  # noqa: BLE001 - one line for the bridge, whatever it is
        print(_line(err), file=sys.stderr)
        sys.exit(1)
