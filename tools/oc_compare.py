"""Compare prompt_compiler with OpenCompass itself, prompt by prompt, over the wheel's configs.

    python tools/oc_compare.py --extracted DIR --reference-python PY [--sample 90]
                               [--per-kind 2] [--work DIR] [--only GLOB]... [-v]

1. A deterministic sample of the wheel's dataset config files (every k-th file, k chosen to
   give ``--sample`` files, plus the first ``--per-kind`` files naming each rare inferencer,
   template or retriever the sample lacks: CLP, LL, SC, PPLOnly, ..., ``multiround=True``)
   is loaded as ``tools/oc_corpus.py`` loads them. The first and the
   last dataset of each file become compile jobs in the shared conformance case format
   (../shared/conformance/README.md), with ``oc_corpus``'s synthetic rows (a few hostile
   values added: braces, a column reference, a newline), once per model kind: ``lm`` (a
   ChatML-like meta template), ``api`` (HUMAN/BOT API roles, SYSTEM reserved) and ``hf_chat``
   (OpenCompass's default chat meta template, messages as HuggingFacewithChatTemplate makes
   them).
2. ``PY`` -- a Python with opencompass 0.5.4 -- runs ``tools/oc_reference.py`` over them:
   OpenCompass's own dataset, retriever, templates and inferencer with a stand-in model that
   records every call.
3. Every job is compiled here in compat mode and in default mode and compared with the
   recorded calls: the model inputs of each call type (as a multiset: OpenCompass batches and
   orders calls its own way), chat messages for ``hf_chat``, and errors (type and message).
   Default mode is expected to differ only where a defect fix applies: those differences are
   listed apart, with their first difference, for review.

The cases and references hold the configs' prompt text (third-party text): they stay in
``--work`` (a temporary folder by default) and are never committed.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))
sys.path.insert(0, str(TOOLS.parent))

import oc_corpus  # noqa: E402

ORACLE_REPLY = "ORACLE_REPLY"
PLAIN = "_plain"  # the twin of a case without the hostile values
LM_META = {"round": [
    {"role": "HUMAN", "begin": "<|im_start|>user\n", "end": "<|im_end|>\n"},
    {"role": "SYSTEM", "begin": "<|im_start|>system\n", "end": "<|im_end|>\n"},
    {"role": "BOT", "begin": "<|im_start|>assistant\n", "end": "<|im_end|>\n", "generate": True},
], "eos_token_id": 2}
API_META = {"round": [{"role": "HUMAN", "api_role": "HUMAN"},
                      {"role": "BOT", "api_role": "BOT", "generate": True}],
            "reserved_roles": [{"role": "SYSTEM", "api_role": "SYSTEM"}]}
MODELS = {
    "lm": {"name": "corpus-lm", "parser": "lm", "meta_template": LM_META, "max_seq_len": None,
           "batch_size": 1},
    "api": {"name": "corpus-api", "parser": "api", "meta_template": API_META,
            "max_seq_len": None, "batch_size": 1},
    "hf_chat": {"name": "corpus-chat", "parser": "hf_chat", "meta_template": None,
                "max_seq_len": None, "batch_size": 1},
}
# Which recorded call carries each inferencer's model inputs.
CALL = {"GenInferencer": "generate", "SCInferencer": "generate", "ChatInferencer": "generate",
        "PPLInferencer": "get_ppl", "PPLOnlyInferencer": "get_ppl",
        "InferencePPLOnlyInferencer": "get_ppl_tokenwise", "LLInferencer": "get_loglikelihood",
        "CLPInferencer": "cond_prob", "SWCELossInferencer": "encode"}


# --- building cases ------------------------------------------------------------------------


def encode_keys(value: Any) -> Any:
    """The case format's ``{"__items__": [[k, v], ...]}`` for dicts with non-str keys."""
    if isinstance(value, Mapping):
        if all(isinstance(k, str) for k in value):
            return {k: encode_keys(v) for k, v in value.items()}
        return {"__items__": [[k, encode_keys(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [encode_keys(v) for v in value]
    return value


def hostile(rows: list[dict[str, Any]], columns: list[str]) -> list[dict[str, Any]]:
    """Row 1 of a split gets braces, a column reference and a newline in its first input."""
    if len(rows) > 1 and columns and isinstance(rows[1].get(columns[0]), str):
        other = columns[-1]
        rows[1][columns[0]] += f" {{x}} {{{other}}}\nline2"
    return rows


def case_for(spec: Mapping[str, Any], parser: str, case_id: str, *, braces: bool = True
             ) -> dict[str, Any]:
    reader = dict(spec.get("reader_cfg") or {})
    train = str(reader.get("train_split") or "train")
    test = str(reader.get("test_split") or "test")
    inputs, _ = oc_corpus._columns(spec)
    if not braces:
        inputs = []  # no hostile values: the plain twin
    n_train = max(oc_corpus.TRAIN_ROWS, oc_corpus._max_fix_id(spec) + 1)
    train_rows = hostile(oc_corpus.synthetic_rows(spec, "train", n_train), inputs)
    dataset: dict[str, Any] = {"abbr": spec.get("abbr", "dataset"), "reader_cfg": reader,
                               "infer_cfg": spec["infer_cfg"]}
    if train == test:  # one split, under its own name (a plain "rows" list means train/test)
        dataset["splits"] = {train: train_rows}
    else:
        test_rows = hostile(oc_corpus.synthetic_rows(spec, "test", oc_corpus.TEST_ROWS), inputs)
        dataset["splits"] = {train: train_rows, test: test_rows}
    return {"id": case_id, "dataset": encode_keys(dataset), "model": MODELS[parser],
            "options": {}}


def _templates(spec: Mapping[str, Any]) -> set[str]:
    infer = spec.get("infer_cfg") or {}
    return {str(infer[p].get("type", "")) for p in ("ice_template", "prompt_template")
            if isinstance(infer.get(p), Mapping)}


def build_cases(package: Path, files: list[Path], out: Path) -> dict[str, str]:
    """Case files for ``files`` under ``out``; returns case id -> the config file it is from."""
    from prompt_compiler.errors import PromptCompilerError

    out.mkdir(parents=True, exist_ok=True)
    origin: dict[str, str] = {}
    root = package / "configs" / "datasets"
    for n, file in enumerate(files):
        rel = file.relative_to(root).as_posix()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                suite = oc_corpus._load(package, file, 9000 + n, None)
        except PromptCompilerError as err:
            print(f"skip {rel}: {' '.join(str(err).split())[:160]}", file=sys.stderr)
            continue
        picks = list(dict.fromkeys([0, len(suite.datasets) - 1])) if suite.datasets else []
        for i in picks:
            spec = suite.datasets[i].spec
            if not isinstance(spec.get("infer_cfg"), Mapping) or not isinstance(
                    spec.get("reader_cfg"), Mapping):
                continue
            if oc_corpus._retriever(spec) in (*oc_corpus.EMBEDDING_RETRIEVERS, "MDLRetriever"):
                continue  # model-dependent choices: not comparable with a stand-in model
            inferencer = oc_corpus._inferencer(spec).rsplit(".", 1)[-1]
            if inferencer not in CALL:
                continue  # model in the loop
            for parser in MODELS:
                if parser == "api" and inferencer == "SWCELossInferencer":
                    continue  # it scores with the local model's tokenizer; API models have none
                for braces in (True, False):
                    case_id = f"{n:03d}_{i}_{parser}" + ("" if braces else PLAIN)
                    case = case_for(spec, parser, case_id, braces=braces)
                    try:
                        text = json.dumps(case, ensure_ascii=False, indent=1)
                    except TypeError:
                        print(f"skip {rel}: a value is not JSON data", file=sys.stderr)
                        break
                    file = out / f"{case_id}.json"
                    if file.is_file() and file.read_text(encoding="utf-8") != text + "\n":
                        (out.parent / "golden" / file.name).unlink(missing_ok=True)  # stale
                    file.write_text(text + "\n", encoding="utf-8")
                    origin[case_id] = rel
    return origin


# --- comparing -----------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Both sides' prompts as plain JSON: PromptLists as lists of items."""
    from prompt_compiler.promptlist import PromptList

    if isinstance(value, PromptList):
        return [_plain(v) for v in value.to_list()]
    if isinstance(value, dict):
        if set(value) == {"__promptlist__"}:
            return [_plain(v) for v in value["__promptlist__"]]
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _key(value: Any) -> str:
    return json.dumps(_plain(value), ensure_ascii=False, sort_keys=True)


def _decode(pairs: list[tuple[str, Any]]) -> dict[Any, Any]:
    if len(pairs) == 1 and pairs[0][0] == "__items__":
        return {k: v for k, v in pairs[0][1]}
    return dict(pairs)


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_decode)


@dataclass
class Result:
    case: str
    mode: str
    status: str  # same | differs | error-differs | skipped
    detail: str = ""
    prompts: int = 0


def _ours(case: dict[str, Any], mode: str, unfixed: str | None = None
          ) -> tuple[Any, BaseException | None]:
    """Compile ``case``; with ``unfixed``, in default mode with that one defect not fixed."""
    import prompt_compiler as pc
    from prompt_compiler.policy import DEFECTS, Policy

    compiler = pc.Compiler(mode=mode)
    if unfixed is not None:
        compiler.policy = Policy(frozenset(DEFECTS) - {unfixed})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = compiler.compile(
                case["dataset"], case["model"], options=case.get("options") or {},
                reply=lambda _p: ORACLE_REPLY)
        return result, None
    except pc.PromptCompilerError as err:
        return None, err


def _inputs(golden: dict[str, Any], call: str) -> list[Any]:
    out = []
    for c in golden.get("calls", []):
        if c["call"] != call:
            continue
        out += [c["text"]] if call == "encode" else list(c["inputs"])
    return out


def _our_inputs(result: Any, kind: str, parser: str) -> list[Any]:
    recs = list(result.records)
    if kind == "SWCELossInferencer":
        return [r.prompt for r in recs]
    if kind == "SCInferencer":
        return [r.rendered for r in recs for _ in range(int(r.extra.get("samples", 1)))]
    return [r.rendered if r.rendered is not None else r.prompt for r in recs]


def _first_difference(expected: list[str], actual: list[str]) -> str:
    missing = Counter(expected) - Counter(actual)
    extra = Counter(actual) - Counter(expected)
    lines = [f"{len(expected)} expected, {len(actual)} compiled"]
    exp = next(iter(missing), "")
    act = next(iter(extra), "")
    pairs = enumerate(zip(exp, act, strict=False))
    at = next((i for i, (a, b) in pairs if a != b), min(len(exp), len(act)))
    start = max(0, at - 150)
    if missing:
        lines.append(f"OpenCompass (from char {start}): " + exp[start:at + 250])
    if extra:
        lines.append(f"ours        (from char {start}): " + act[start:at + 250])
    return "\n    ".join(lines)


def compare(case: dict[str, Any], golden: dict[str, Any], mode: str) -> Result:
    error = golden.get("error") or {}
    if error.get("type") == "LookupError" and "Resource" in error.get("message", ""):
        # OpenCompass's BM25 needs nltk data that its environment lacks: nothing to compare
        return Result(case["id"], mode, "skipped", "OpenCompass's environment lacks nltk data")
    res = _compare(case, golden, mode)
    if mode == "default" and res.status != "same":
        # Which defect fix explains it: with that one fix left out, OpenCompass's output
        from prompt_compiler.policy import DEFECTS

        for defect in DEFECTS:
            if _compare(case, golden, mode, defect).status == "same":
                res.status, res.detail = "defect", f"{defect} ({DEFECTS[defect]})"
                break
    return res


def _compare(case: dict[str, Any], golden: dict[str, Any], mode: str,
             unfixed: str | None = None) -> Result:
    result, err = _ours(case, "opencompass" if mode == "compat" else "default", unfixed)
    cid = case["id"]
    late = getattr(result, "reference_failure", None) if result is not None else None
    if golden.get("status") == "error" and late is not None:
        # OpenCompass failed after the model calls (PPL bookkeeping): the prompts still count
        exp = golden["error"]
        if tuple(late) != (exp["type"], exp["message"]):
            return Result(cid, mode, "error-differs", f"after scoring: OpenCompass "
                          f"{exp['type']}: {exp['message'][:200]}; ours {late}")
    elif golden.get("status") == "error":
        exp = golden["error"]
        if err is None:
            return Result(cid, mode, "error-differs",
                          f"OpenCompass raised {exp['type']}: {exp['message'][:300]}; "
                          "we compiled")
        ref = getattr(err, "reference", None)
        if ref is None or ref[0] != exp["type"]:
            return Result(cid, mode, "error-differs",
                          f"OpenCompass {exp['type']}: {exp['message'][:200]}; ours "
                          f"{type(err).__name__} {ref}: {' '.join(str(err).split())[:300]}")
        if ref[1] != exp["message"]:
            return Result(cid, mode, "error-differs",
                          f"message: OpenCompass {exp['message'][:300]!r}, ours {ref[1][:300]!r}")
        return Result(cid, mode, "same")
    if err is not None:
        return Result(cid, mode, "error-differs",
                      f"we raised {type(err).__name__}: {' '.join(str(err).split())[:400]}")
    kind = golden["inferencer"]
    parser = golden.get("parser", "lm")
    expected = sorted(_key(x) for x in _inputs(golden, CALL[kind]))
    actual = sorted(_key(x) for x in _our_inputs(result, kind, parser))
    if late is not None:
        # OpenCompass stopped after its first batch: what it built must be among ours
        if Counter(expected) - Counter(actual):
            return Result(cid, mode, "differs", _first_difference(expected, actual),
                          len(expected))
        return Result(cid, mode, "same", prompts=len(expected))
    if expected != actual:
        return Result(cid, mode, "differs", _first_difference(expected, actual), len(actual))
    if parser == "hf_chat" and CALL[kind] == "generate":
        exp_msgs = sorted(_key(m) for c in golden["calls"] if c["call"] == "generate"
                          for m in c.get("chat_messages", []))
        act_msgs = sorted(_key(r.chat_messages) for r in result.records
                          for _ in range(int(r.extra.get("samples", 1))
                                         if kind == "SCInferencer" else 1))
        if exp_msgs != act_msgs:
            return Result(cid, mode, "differs", "chat messages: " +
                          _first_difference(exp_msgs, act_msgs), len(actual))
    return Result(cid, mode, "same", prompts=len(actual))


@dataclass
class Summary:
    configs: int = 0
    cases: int = 0
    reference_ok: int = 0
    reference_errors: int = 0
    results: list[Result] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    """Cases per inferencer x template type."""


# Inferencers and options rare in the wheel: a few files using each join the sample.
RARE = ("CLPInferencer", "LLInferencer", "SCInferencer", "PPLOnlyInferencer",
        "InferencePPLOnlyInferencer", "SWCELossInferencer", "ChatInferencer", "multiround=True",
        "RawPromptTemplate", "OlympiadBenchRawTemplate", "XiezhiRetriever", "BM25Retriever",
        "RandomRetriever", "SlidingWindowRetriever", "sep_token")


def by_kind(files: list[Path], sample: list[Path], per_kind: int) -> list[Path]:
    """Up to ``per_kind`` files (in order) naming each of ``RARE`` that ``sample`` lacks."""
    texts = {f: f.read_text(encoding="utf-8", errors="replace") for f in files}
    extra: list[Path] = []
    for word in RARE:
        have = sum(word in texts[f] for f in sample)
        extra += [f for f in files if word in texts[f] and f not in sample][:max(
            0, per_kind - have)]
    return extra


def run(args: argparse.Namespace) -> Summary:
    package = oc_corpus.package_dir(args.extracted)
    files = oc_corpus.dataset_files(package)
    if args.only:
        root = package / "configs" / "datasets"
        files = [f for f in files if any(fnmatch.fnmatchcase(f.relative_to(root).as_posix(), g)
                                         for g in args.only)]
    if args.sample and len(files) > args.sample:
        step = len(files) / args.sample
        sample = [files[int(i * step)] for i in range(args.sample)]
        files = sorted(set(sample) | set(by_kind(files, sample, args.per_kind)))
    work = args.work or Path(tempfile.mkdtemp(prefix="oc_compare_"))
    cases_dir, golden_dir = work / "cases", work / "golden"
    source = oc_corpus.olympiad_source(package, work / "oc-source")
    if source is not None:
        sys.path.insert(0, str(source))
    origin = build_cases(package, files, cases_dir)
    summary = Summary(configs=len(set(origin.values())), cases=len(origin))
    case_files = sorted(cases_dir.glob("*.json"))
    todo = [f for f in case_files if not (golden_dir / f.name).is_file()]
    if todo:  # references already in --work (for unchanged cases) are reused
        # run in --work: OpenCompass's inferencers make ./icl_inference_output wherever they run
        proc = subprocess.run([str(args.reference_python), str(TOOLS / "oc_reference.py"),
                               *(str(f.resolve()) for f in todo), "--out",
                               str(golden_dir.resolve())],
                              capture_output=True, text=True, cwd=golden_dir.resolve().parent)
        if proc.returncode != 0:
            raise SystemExit(f"oc_reference.py failed:\n{proc.stderr[-3000:]}")
    case_files = [f for f in case_files if f.stem in origin]
    for file in case_files:
        case, golden = load(file), load(golden_dir / file.name)
        infer = case["dataset"]["infer_cfg"]
        template = (infer.get("prompt_template") or infer.get("ice_template") or {}).get("type")
        summary.kinds[f"{golden['inferencer'].removesuffix('Inferencer')}/{template}"] += 1
        if golden["status"] == "ok":
            summary.reference_ok += 1
        else:
            summary.reference_errors += 1
        for mode in ("compat", "default"):
            res = compare(case, golden, mode)
            res.detail = f"[{origin.get(case['id'], '?')}] {res.detail}"
            summary.results.append(res)
    # A default-mode difference that only the hostile twin shows comes from values read as
    # template text: D1 (its fix is not one policy switch, so it is found this way).
    default_ok = {r.case for r in summary.results if r.mode == "default"
                  and r.status in ("same", "defect")}
    for r in summary.results:
        if (r.mode == "default" and r.status in ("differs", "error-differs")
                and not r.case.endswith(PLAIN) and r.case + PLAIN in default_ok):
            r.status = "defect"
            origin_tag = r.detail.split("] ", 1)[0]
            r.detail = origin_tag + "] D1 (values with braces; the plain twin matches)"
    print(f"work folder: {work}", file=sys.stderr)
    return summary


def report(summary: Summary, verbose: bool) -> int:
    by = Counter((r.mode, r.status) for r in summary.results)
    compat_bad = [r for r in summary.results if r.mode == "compat"
                  and r.status not in ("same", "skipped")]
    default_bad = [r for r in summary.results if r.mode == "default"
                   and r.status not in ("same", "defect", "skipped")]
    skipped = sum(r.status == "skipped" for r in summary.results if r.mode == "compat")
    fixes = Counter(r.detail.split("] ", 1)[-1].split(" ")[0] for r in summary.results
                    if r.mode == "default" and r.status == "defect")
    for r in compat_bad:
        print(f"COMPAT {r.status.upper()} {r.case} {r.detail}")
    for r in default_bad:
        print(f"DEFAULT {r.status.upper()} {r.case} {r.detail}")
    if verbose:
        for r in summary.results:
            if r.mode == "default" and r.status == "defect":
                print(f"DEFAULT DEFECT-FIX {r.case} {r.detail}")
    prompts = sum(r.prompts for r in summary.results if r.mode == "compat")
    print("cases by inferencer/template: " + ", ".join(
        f"{k} {n}" for k, n in sorted(summary.kinds.items())))
    explained = ", ".join(f"{d} {n}" for d, n in sorted(fixes.items())) or "none"
    print(f"{summary.configs} configs, {summary.cases} cases ({summary.reference_ok} ok and "
          f"{summary.reference_errors} errors in OpenCompass"
          + (f", {skipped} it could not run here" if skipped else "")
          + f"), {prompts} prompts compared per "
          f"mode; compat: {by[('compat', 'same')]} same, {len(compat_bad)} differ; default: "
          f"{by[('default', 'same')]} same, {sum(fixes.values())} differ by a defect fix "
          f"({explained}), {len(default_bad)} differ otherwise")
    return 1 if compat_bad or default_bad else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="oc_compare", description=__doc__.split("\n\n")[0])
    p.add_argument("--extracted", type=Path, required=True,
                   help="an extracted wheel or site-packages (holds opencompass/configs)")
    p.add_argument("--reference-python", type=Path, required=True,
                   help="a Python with opencompass 0.5.4 installed")
    p.add_argument("--sample", type=int, default=90, help="about this many config files")
    p.add_argument("--per-kind", type=int, default=2, metavar="N",
                   help="add files so that each rare inferencer/template/retriever kind has N")
    p.add_argument("--only", action="append", default=[], metavar="GLOB")
    p.add_argument("--work", type=Path, help="keep cases and references here (references "
                   "of unchanged cases are reused on the next run)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also list default-mode differences where compat matches")
    args = p.parse_args(argv)
    return report(run(args), args.verbose)


if __name__ == "__main__":
    sys.exit(main())
