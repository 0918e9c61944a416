"""Compile every dataset config an OpenCompass wheel ships, and report what fails.

    python tools/oc_corpus.py [--wheel PATH | --extracted DIR] [--cache DIR]
                              [--data-dir DIR] [--mode default|compat] [--jobs N]
                              [--sample N] [--only GLOB]... [--embed-model DIR]

Each dataset config file under ``opencompass/configs/datasets/`` is wrapped, unchanged, in
an eval config of its own (``with read_base(): from opencompass.configs.datasets.X import *``)
with one model: an LM model with a chat meta template, or a chat-template model when the
file's datasets use ``RawPromptTemplate``. Rows are synthetic (generated from each dataset's
``reader_cfg`` columns, tagged ``#trN`` / ``#teN``) unless ``--data-dir`` gives real ones.
The wrappers are written to a private temporary folder (never inside the OpenCompass
installation or extraction pointed at, which may be read-only or shared), and the package's
``configs/`` is given as ``opencompass_configs`` (``--opencompass-configs``), so the wrappers
resolve ``opencompass.configs...`` against it. Every wrapper is then compiled with the same
library calls ``compile-prompts --check`` makes, in-process (``--jobs`` worker processes),
and the tool prints ``N files, M ok, K failed`` and one line per failure.

Outcomes are counted apart: files that define no datasets (prompt and settings helpers),
files OpenCompass itself cannot use (``OPENCOMPASS_FAILS`` below, measured with the real
OpenCompass), datasets that need a model in the loop (Agent, Attack and ToT inferencers, the
MDL retriever; see docs/opencompass-corpus.md), and datasets whose embedding retriever names
a model that is not on this machine (``--embed-model DIR`` substitutes a local one; those files
are then listed as substituted). Anything else that fails is a failure (exit status 1).

Without ``--wheel``/``--extracted`` the wheel is fetched with
``pip download --no-deps opencompass==0.5.4`` into the cache folder (default
``~/.cache/prompt_compiler/opencompass-0.5.4``).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VERSION = "0.5.4"
DEFAULT_CACHE = Path.home() / ".cache" / "prompt_compiler" / f"opencompass-{VERSION}"
_WRAPPERS: list[Path] = []  # this process's temporary wrapper folder, made when first needed


def wrapper_dir() -> Path:
    """This process's temporary folder for wrappers (removed when the process ends)."""
    if not _WRAPPERS:
        import atexit
        import shutil
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="pc-corpus-"))
        atexit.register(shutil.rmtree, folder, True)
        _WRAPPERS.append(folder)
    return _WRAPPERS[0]
TRAIN_ROWS = 12
TEST_ROWS = 3

LM_MODEL = """dict(
    type=HuggingFaceCausalLM, abbr='corpus-lm', max_seq_len=None, batch_size=8,
    meta_template=dict(
        round=[
            dict(role='HUMAN', begin='<|im_start|>user\\n', end='<|im_end|>\\n'),
            dict(role='SYSTEM', begin='<|im_start|>system\\n', end='<|im_end|>\\n'),
            dict(role='BOT', begin='<|im_start|>assistant\\n', end='<|im_end|>\\n',
                 generate=True),
        ],
        eos_token_id=2,
    ),
)"""
CHAT_MODEL = "dict(type=HuggingFacewithChatTemplate, abbr='corpus-chat', batch_size=8)"


# --- getting the configs ------------------------------------------------------------------


def fetch_wheel(cache: Path) -> Path:
    """The OpenCompass wheel in ``cache``, downloaded with pip when absent."""
    found = sorted(cache.glob(f"opencompass-{VERSION}-*.whl"))
    if found:
        return found[0]
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache),
           f"opencompass=={VERSION}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    found = sorted(cache.glob(f"opencompass-{VERSION}-*.whl"))
    if proc.returncode != 0 or not found:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel"]
        raise SystemExit(f"oc_corpus: cannot download opencompass=={VERSION}: {tail[0]}")
    return found[0]


def extract_configs(wheel: Path, into: Path) -> Path:
    """Extract ``opencompass/configs/`` of ``wheel`` under ``into``; returns the package dir."""
    package = into / "opencompass"
    marker = into / ".extracted"
    stamp = f"{wheel.name} + {OLYMPIAD_SOURCE}"
    if marker.is_file() and marker.read_text() == stamp:
        return package
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.startswith("opencompass/configs/") or name == OLYMPIAD_SOURCE:
                zf.extract(name, into)
    marker.write_text(stamp)
    return package


OLYMPIAD_SOURCE = "opencompass/datasets/OlympiadBench.py"


def olympiad_source(package: Path, into: Path) -> Path | None:
    """A folder holding only ``opencompass/datasets/OlympiadBench.py`` of ``package``.

    prompt_compiler reads OlympiadBench's prompt text from that file of an importable
    ``opencompass`` (it never imports it); putting this folder on ``sys.path`` gives the
    corpus run the wheel's own text without installing OpenCompass.
    """
    src = package / "datasets" / "OlympiadBench.py"
    if not src.is_file():
        return None
    dst = into / "opencompass" / "datasets" / "OlympiadBench.py"
    dst.parent.mkdir(parents=True, exist_ok=True)
    (into / "opencompass" / "__init__.py").write_text("")
    if not dst.is_file() or dst.read_bytes() != src.read_bytes():
        dst.write_bytes(src.read_bytes())
    return into


def package_dir(extracted: Path) -> Path:
    """The ``opencompass`` package folder inside an extracted wheel (or the folder itself)."""
    for cand in (extracted / "opencompass", extracted):
        if (cand / "configs" / "datasets").is_dir():
            return cand
    raise SystemExit(f"oc_corpus: no opencompass/configs/datasets under {extracted}")


def dataset_files(package: Path) -> list[Path]:
    root = package / "configs" / "datasets"
    return sorted(p for p in root.rglob("*.py") if p.name != "__init__.py"
                  and "__pycache__" not in p.parts)


# --- wrappers and rows ------------------------------------------------------------------------


def module_name(package: Path, file: Path) -> str:
    rel = file.relative_to(package / "configs").with_suffix("")
    return "opencompass.configs." + ".".join(rel.parts)


def write_wrapper(package: Path, file: Path, index: int, chat: bool,
                  variable: str | None = None) -> Path:
    """An eval config importing ``file`` unchanged, with one model.

    With ``variable``, the config compiles only that ``*_datasets`` list (for files whose
    lists reuse one abbr for different datasets, e.g. a 0-shot and a 3-shot variant).
    """
    folder = wrapper_dir()
    model_class = "HuggingFacewithChatTemplate" if chat else "HuggingFaceCausalLM"
    text = (
        "from mmengine.config import read_base\n"
        f"from opencompass.models import {model_class}\n\n"
        "with read_base():\n"
        f"    from {module_name(package, file)} import *  # noqa: F401,F403\n\n"
        f"models = [{CHAT_MODEL if chat else LM_MODEL}]\n"
    )
    if variable is not None:
        text += f"datasets = {variable}\n"
    suffix = ("_chat" if chat else "") + (f"_{variable}" if variable else "")
    wrapper = folder / f"eval_{index:04d}{suffix}.py"
    if not wrapper.is_file() or wrapper.read_text() != text:
        wrapper.write_text(text)
    return wrapper


def _value(column: str, tag: str) -> str:
    return f"{column} value {tag}"


def _columns(spec: Mapping[str, Any]) -> tuple[list[str], str | None]:
    reader = spec.get("reader_cfg")
    if not isinstance(reader, Mapping):  # a path-only custom dataset: an MCQ file
        return ["question", "A", "B", "C", "D"], "answer"
    cols = reader.get("input_columns") or []
    if isinstance(cols, str):
        cols = cols.split()
    out = reader.get("output_column")
    return [str(c) for c in cols], out if isinstance(out, str) and out else None


def _max_fix_id(spec: Mapping[str, Any]) -> int:
    infer = spec.get("infer_cfg")
    ids: list[int] = []
    if isinstance(infer, Mapping):
        for part in ("retriever", "inferencer"):
            cfg = infer.get(part)
            if isinstance(cfg, Mapping) and isinstance(cfg.get("fix_id_list"), list):
                ids += [i for i in cfg["fix_id_list"] if isinstance(i, int)]
    return max(ids, default=-1)


def synthetic_rows(spec: Mapping[str, Any], split: str, count: int) -> list[dict[str, Any]]:
    """Rows with every reader_cfg column (and ``choices`` for CLP), values tagged per row."""
    inputs, output = _columns(spec)
    columns = list(dict.fromkeys(inputs + ([output] if output else [])))
    labels = _label_values(spec)
    tag = "tr" if split == "train" else "te"
    rows = []
    for i in range(count):
        row: dict[str, Any] = {c: _value(c, f"#{tag}{i}") for c in columns}
        if output and labels:
            row[output] = labels[i % len(labels)]
        inferencer = _inferencer(spec)
        if inferencer == "CLPInferencer":
            row.setdefault("choices", ["A", "B"])
        if inferencer == "LLInferencer":  # the scored continuation, from the loader
            row.setdefault("cont", f" cont value #{tag}{i}")
        if inferencer == "InferencePPLOnlyInferencer":  # token-wise targets, from the loader
            row.setdefault("label", [1, 2, 3])
        if _template_type(spec).startswith("OlympiadBench"):
            row.update(_olympiad_fields(i))
        if _retriever(spec) == "XiezhiRetriever":
            # Xiezhi's loader gives every row a list of category labels, most specific first;
            # each test row's labels must occur in the training rows (they do: the same cycle).
            row["labels"] = [f"label {i % 3}", "label common"]
        rows.append(row)
    return rows


def _inferencer(spec: Mapping[str, Any]) -> str:
    infer = spec.get("infer_cfg")
    inf = infer.get("inferencer") if isinstance(infer, Mapping) else None
    return str(inf.get("type", "")) if isinstance(inf, Mapping) else ""


# Rows of OlympiadBench's loader choose the instruction: a cycle through its branches.
_OLYMPIAD = [
    ("English", "Math", "Open-ended", "Numerical", False, ""),
    ("Chinese", "Physics", "Open-ended", "Expression,Numerical", True, "m"),
    ("English", "Physics", "Theorem proof", "Need_human_evaluate", False, ""),
    ("Chinese", "Math", "Open-ended", "Interval", True, ""),
    ("English", "Math", "Open-ended", "Equation,Equation", True, "s"),
    ("Chinese", "Math", "Theorem proof", "Tuple", False, ""),
]


def _olympiad_fields(i: int) -> dict[str, Any]:
    keys = ("language", "subject", "question_type", "answer_type", "is_multiple_answer", "unit")
    return dict(zip(keys, _OLYMPIAD[i % len(_OLYMPIAD)], strict=True))


def _template_type(spec: Mapping[str, Any]) -> str:
    infer = spec.get("infer_cfg")
    tp = infer.get("prompt_template") if isinstance(infer, Mapping) else None
    kind = tp.get("type", "") if isinstance(tp, Mapping) else ""
    return str(kind).rsplit(".", 1)[-1]


def _retriever(spec: Mapping[str, Any]) -> str:
    infer = spec.get("infer_cfg")
    ret = infer.get("retriever") if isinstance(infer, Mapping) else None
    kind = ret.get("type", "") if isinstance(ret, Mapping) else ""
    return str(kind).rsplit(".", 1)[-1]


def _label_values(spec: Mapping[str, Any]) -> list[Any]:
    """PPL label keys of a label-dict template (rows take them as answers)."""
    infer = spec.get("infer_cfg")
    if not isinstance(infer, Mapping):
        return []
    for part in ("prompt_template", "ice_template"):
        tp = infer.get(part)
        if isinstance(tp, Mapping) and isinstance(tp.get("template"), Mapping):
            keys = list(tp["template"])
            if keys and not set(map(str, keys)) <= {"begin", "round", "end"}:
                return keys
    return []


def write_rows(data_dir: Path, dataset: Any) -> None:
    """``data_dir/<abbr>/<split>.jsonl`` for the dataset's train and test splits."""
    spec = dataset.spec
    reader = spec.get("reader_cfg") if isinstance(spec.get("reader_cfg"), Mapping) else {}
    train = str(reader.get("train_split") or "train")
    test = str(reader.get("test_split") or "test")
    folder = data_dir / _safe(dataset.abbr)
    folder.mkdir(parents=True, exist_ok=True)
    n_train = max(TRAIN_ROWS, _max_fix_id(spec) + 1)
    if train == test:
        _dump(folder / f"{train}.jsonl", synthetic_rows(spec, "train", n_train))
    else:
        _dump(folder / f"{train}.jsonl", synthetic_rows(spec, "train", n_train))
        _dump(folder / f"{test}.jsonl", synthetic_rows(spec, "test", TEST_ROWS))


def _safe(abbr: str) -> str:
    return abbr  # data.py looks rows up by the abbr itself


def _dump(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")


# --- running ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    file: str
    ok: bool
    reason: str = ""
    pairs: int = 0
    prompts: int = 0
    kind: str = "ok"
    """ok | failed | empty (no datasets) | reference (OpenCompass fails too) | loop |
    no-embed-extra (the ``embed`` extra is not installed) | no-embed-model (an embedding
    retriever's model is not on this machine)"""
    substituted: bool = False
    """Compiled with ``--embed-model`` in place of the config's embedding model."""


RAW_TEMPLATES = ("RawPromptTemplate", "OlympiadBenchRawTemplate")


def _uses_raw_template(suite: Any) -> bool:
    for d in suite.datasets:
        infer = d.spec.get("infer_cfg") or {}
        for part in ("prompt_template", "ice_template"):
            tp = infer.get(part)
            if isinstance(tp, Mapping) and str(tp.get("type", "")).endswith(RAW_TEMPLATES):
                return True
    return False


def _dataset_variables(file: Path, package: Path) -> list[str]:
    from prompt_compiler.config.python.load import load_python_config

    top = load_python_config(file, str(file), package)
    return [k for k, v in top.items() if k.endswith("_datasets") and isinstance(v, list) and v]


def _load(package: Path, file: Path, index: int, variable: str | None) -> Any:
    from prompt_compiler.run import suite as S

    configs = package / "configs"
    loaded = S.load([write_wrapper(package, file, index, chat=False, variable=variable)],
                    opencompass_configs=configs)
    if _uses_raw_template(loaded):
        loaded = S.load([write_wrapper(package, file, index, chat=True, variable=variable)],
                        opencompass_configs=configs)
    return loaded


EMBEDDING_RETRIEVERS = ("TopkRetriever", "DPPRetriever", "VotekRetriever")
DEFAULT_EMBED_MODEL = "all-mpnet-base-v2"  # OpenCompass's default for these retrievers


def substitute_embed_model(datasets: Iterable[Any], folder: Path) -> bool:
    """Point embedding retrievers whose model is not a folder on disk at ``folder``.

    OpenCompass's configs name Hub models (``all-mpnet-base-v2``) that a compile never
    downloads; ``--embed-model`` puts a local model (e.g. the packaged all-MiniLM-L6-v2) in
    their place. The ids then differ from OpenCompass's with its own model: such files are
    reported apart. True when a dataset was changed.
    """
    changed = False
    for d in datasets:
        infer = d.spec.get("infer_cfg")
        ret = infer.get("retriever") if isinstance(infer, Mapping) else None
        if not isinstance(ret, dict) or _retriever(d.spec) not in EMBEDDING_RETRIEVERS:
            continue
        name = ret.get("sentence_transformers_model_name", DEFAULT_EMBED_MODEL)
        if not (isinstance(name, str) and Path(name).is_dir()):
            ret["sentence_transformers_model_name"] = str(folder)
            changed = True
    return changed


def classify(rel: str, reason: str) -> str:
    """The outcome kind of a file that stopped with the library error ``reason``."""
    if "needs a model in the loop" in reason or "MDLRetriever scores candidate" in reason:
        return "loop"
    if rel in OPENCOMPASS_FAILS:
        return "reference"
    if "need the 'sentence-transformers' package" in reason:
        return "no-embed-extra"
    if "cannot load sentence-transformers model" in reason:
        return "no-embed-model"
    return "failed"


def check_file(package: Path, file: Path, index: int, data_root: Path, user_data: Path | None,
               mode: str, embed_model: Path | None = None) -> Outcome:
    """Wrap, load, give rows, compile (as ``compile-prompts --check``) one dataset config."""
    import warnings

    from prompt_compiler.run import suite as S
    from prompt_compiler.errors import PromptCompilerError

    rel = file.relative_to(package / "configs" / "datasets").as_posix()
    pairs = prompts = 0
    substituted = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ignored-setting warnings: counted as ok
            try:
                suites = [_load(package, file, index, None)]
            except PromptCompilerError as err:
                if "two different datasets are both named" not in str(err):
                    raise
                suites = [_load(package, file, index, v)
                          for v in _dataset_variables(file, package)]
            if not any(s.datasets for s in suites):
                return Outcome(rel, False, "defines no datasets", kind="empty")
            for n, loaded in enumerate(suites):
                if embed_model is not None:
                    substituted |= substitute_embed_model(loaded.datasets, embed_model)
                data_dir = user_data
                if data_dir is None:
                    data_dir = data_root / f"{index:04d}_{n}"
                    for d in loaded.datasets:
                        write_rows(data_dir, d)
                manifest = S.compile_to_dir(loaded, None, data_dir=data_dir, mode=mode)
                outputs = manifest["outputs"].values()
                pairs += len(outputs)
                prompts += sum(o["records"] for o in outputs)
    except PromptCompilerError as err:
        reason = " ".join(str(err).split())
        kind = classify(rel, reason)
        if kind == "failed" and mode == "opencompass" and err.reference is not None:
            # compat mode reproduces OpenCompass's own exception here (e.g. D18's KeyError)
            kind = "reference"
            reason += f" [OpenCompass: {err.reference[0]}: {err.reference[1]}]"
        return Outcome(rel, False, reason, kind=kind)
    except Exception as exc:  # a bug: report it, keep going
        return Outcome(rel, False, f"BUG {type(exc).__name__}: {' '.join(str(exc).split())}",
                       kind="failed")
    return Outcome(rel, True, "", pairs, prompts, substituted=substituted)


def _worker(args: tuple[str, str, int, str, str | None, str, str | None]) -> Outcome:
    package, file, index, data_root, user_data, mode, embed_model = args
    return check_file(Path(package), Path(file), index, Path(data_root),
                      Path(user_data) if user_data else None, mode,
                      Path(embed_model) if embed_model else None)


def run(package: Path, files: Sequence[Path], *, data_root: Path, user_data: Path | None,
        mode: str, jobs: int, embed_model: Path | None = None) -> list[Outcome]:
    indexed = [(str(package), str(f), i, str(data_root), str(user_data) if user_data else None,
                mode, str(embed_model) if embed_model else None) for i, f in enumerate(files)]
    if jobs <= 1:
        return [_worker(a) for a in indexed]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_worker, indexed, chunksize=8))


# Files OpenCompass 0.5.4 itself cannot use, measured by loading every wrapper with
# OpenCompass's mmengine (``--reference-python``) and by building the datasets it loads;
# the reason is OpenCompass's own error.
OPENCOMPASS_FAILS: dict[str, str] = {
    "MathBench/mathbench_2024_few_shot_mixed_4a3fd4.py": "RuntimeError (lazy deepcopy call)",
    "MathBench/mathbench_2024_few_shot_new_mixed.py": "RuntimeError (lazy deepcopy call)",
    "MathBench/mathbench_2024_wocircular_mixed_8eb12b.py": "RuntimeError (lazy deepcopy call)",
    "wikibench/wikibench_few_shot_ppl_c23d79.py": "RuntimeError (lazy deepcopy call)",
    "PMMEval/humanevalxl_gen.py": "ConfigParsingError: base config not found",
    "apps/apps_mini_gen.py": "KeyError: 'APPS_datasets'",
    "collections/base_core.py": "ConfigParsingError: base config not found",
    "collections/base_medium.py": "ConfigParsingError: base config not found",
    "collections/base_medium_llama.py": "ConfigParsingError: base config not found",
    "collections/chat_core.py": "ConfigParsingError: base config not found",
    "collections/chat_medium.py": "ConfigParsingError: base config not found",
    "collections/leaderboard/qwen.py": "ConfigParsingError: base config not found",
    "collections/leaderboard/qwen_chat.py": "ConfigParsingError: base config not found",
    "korbench/korbench_llm_judge_gen.py": "ConfigParsingError: base config not found",
    "livereasonbench/livereasonbench_gen.py": "ConfigParsingError: base config not found",
    "mp20/mp20_gen.py": "ConfigParsingError: `from xxx import *` outside read_base",
    # loaded by OpenCompass, but its PromptTemplate(prompt=...) raises TypeError when built
    "humanevalx/humanevalx_0shot_nocot_gen_3e4bbd.py": "TypeError: PromptTemplate got 'prompt'",
    # no reader_cfg and no infer_cfg: OpenCompass's infer task reads dataset_cfg['infer_cfg']
    "s3eval/s3eval_gen.py": "KeyError: 'infer_cfg' (and no reader_cfg)",
    "s3eval/s3eval_gen_b8ac80.py": "KeyError: 'infer_cfg' (and no reader_cfg)",
    # FixKRetriever without an ice_template: OpenCompass's retriever asserts
    "SciEval/SciEval_5shot_llmjudge_gen_b7b684.py": "AssertionError: no ice_template",
}


def summarize(outcomes: Iterable[Outcome], out: Any = sys.stdout) -> int:
    outcomes = list(outcomes)
    by_kind: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_kind.setdefault(o.kind, []).append(o)
    for kind, tag in (("failed", "FAIL"), ("loop", "LOOP"), ("reference", "OC-FAILS-TOO"),
                      ("no-embed-extra", "NO-EMBED-EXTRA"), ("no-embed-model", "NO-EMBED-MODEL")):
        for o in by_kind.get(kind, []):
            print(f"{tag} {o.file}: {o.reason}", file=out)
    substituted = [o for o in outcomes if o.substituted]
    for o in substituted:
        print(f"SUBSTITUTED-EMBED-MODEL {o.file}", file=out)
    failed = by_kind.get("failed", [])
    line = (f"{len(outcomes)} files, {len(by_kind.get('ok', []))} ok, {len(failed)} failed"
            f"; {len(by_kind.get('loop', []))} need a model in the loop, "
            f"{len(by_kind.get('reference', []))} fail in OpenCompass too, "
            f"{len(by_kind.get('empty', []))} define no datasets")
    if by_kind.get("no-embed-extra"):
        line += (f", {len(by_kind['no-embed-extra'])} need the embed extra "
                 "(sentence-transformers), not installed")
    if by_kind.get("no-embed-model"):
        line += (f", {len(by_kind['no-embed-model'])} need an embedding model not on this "
                 "machine (see --embed-model)")
    if substituted:
        line += f"; {len(substituted)} of the ok ones with --embed-model in place of their own"
    prompts = sum(o.prompts for o in outcomes)
    print(line, file=out)
    print(f"{sum(o.pairs for o in outcomes)} dataset x model pairs, {prompts} prompts",
          file=out)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="oc_corpus", description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group()
    src.add_argument("--wheel", type=Path, help="an opencompass wheel file")
    src.add_argument("--extracted", type=Path, help="an extracted wheel (holds opencompass/)")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="download/extract folder")
    p.add_argument("--data-dir", type=Path, help="real rows (DIR/<abbr>/<split>.jsonl)")
    p.add_argument("--mode", choices=("default", "compat"), default="default")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--sample", type=int, default=0, help="every k-th file, k chosen to give N")
    p.add_argument("--only", action="append", default=[], metavar="GLOB",
                   help="files (relative to configs/datasets) matching GLOB")
    p.add_argument("--embed-model", type=Path, metavar="DIR",
                   help="a sentence-transformers model folder to use where a config's "
                   "embedding retriever names a model that is not on this machine")
    args = p.parse_args(argv)
    if args.embed_model is not None and not args.embed_model.is_dir():
        p.error(f"--embed-model: not a folder: {args.embed_model}")

    if args.extracted is not None:
        package = package_dir(args.extracted)
        # wrappers are written next to the configs: work on a copy when it is not ours
    else:
        wheel = args.wheel or fetch_wheel(args.cache)
        package = extract_configs(wheel, args.cache / "tree")
    files = dataset_files(package)
    if args.only:
        files = [f for f in files if any(fnmatch.fnmatchcase(
            f.relative_to(package / "configs" / "datasets").as_posix(), g) for g in args.only)]
    if args.sample and len(files) > args.sample:
        step = len(files) / args.sample
        files = [files[int(i * step)] for i in range(args.sample)]
    mode = "opencompass" if args.mode == "compat" else "default"
    data_root = args.cache / "rows"
    source = olympiad_source(package, args.cache / "oc-source")
    if source is not None:  # workers are forked: they inherit the path
        sys.path.insert(0, str(source))
    start = time.perf_counter()
    outcomes = run(package, files, data_root=data_root, user_data=args.data_dir, mode=mode,
                   jobs=args.jobs, embed_model=args.embed_model)
    status = summarize(outcomes)
    print(f"({time.perf_counter() - start:.0f} s, {args.jobs} jobs)", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
