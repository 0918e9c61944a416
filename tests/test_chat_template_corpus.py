"""Real chat templates against transformers' own renders (``tools/chat_template_corpus.py``).

The sampled test needs the tool's cache: the collected templates and the renders transformers
5.23 produced for them (``python tools/chat_template_corpus.py`` makes both, given a Python
with transformers). Without the cache it is skipped, saying so. The tool's own helpers are
tested on hand-written inputs either way.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"
sys.path.insert(0, str(TOOLS))
import chat_template_corpus as corpus  # noqa: E402

CACHE = Path(os.environ.get("PC_CHAT_TEMPLATE_CACHE", corpus.DEFAULT_CACHE))


Templates = dict[str, dict[str, object]]
Reference = dict[tuple[str, str], dict[str, object]]


def _cached_reference() -> tuple[Templates, Reference]:
    index = CACHE / "templates.json"
    found = sorted(CACHE.glob("reference-transformers-*.jsonl"))
    if not index.is_file() or not found:
        pytest.skip(f"no chat-template corpus cache in {CACHE} (templates.json and "
                    "reference-transformers-*.jsonl); run `python tools/chat_template_corpus.py "
                    "--reference-python /path/to/python-with-transformers` to build it, or set "
                    "PC_CHAT_TEMPLATE_CACHE")
    return corpus.load_templates(CACHE), corpus.load_reference(found[-1])


def test_sampled_real_templates_render_as_transformers_does() -> None:
    templates, reference = _cached_reference()
    ids = sorted(templates)[::40]  # about 25 templates spread over the corpus, every probe
    pairs = [(tid, probe["id"]) for tid in ids for probe in corpus.PROBES]
    outcomes = corpus.compare(templates, reference, pairs)
    assert len(outcomes) >= len(pairs) // 2, "the cached reference lacks most sampled pairs"
    bad = [f"{o.template} {o.probe} {o.kind}: {o.detail}" for o in outcomes if not o.agrees]
    assert not bad, "\n".join(bad[:20])


# ------------------------------------------------------ the tool's helpers, hand-written


def test_first_difference_names_the_position_and_both_sides() -> None:
    assert corpus.first_difference("abcX", "abcY") == (
        "char 3: transformers 'abcX' vs ours 'abcY'")
    assert corpus.first_difference("ab", "abc").startswith("char 2:")


def test_json_templates_are_found_at_any_depth_in_both_shapes() -> None:
    text = "{% for m in messages %}{{ m.content }}{% endfor %}"
    data = [{"model": "x", "chat_template": text, "nested": {"chat_template": "not jinja"}},
            {"chat_template": [{"name": "default", "template": text},
                               {"name": "tool_use", "template": text + "!"}]}]
    found = list(corpus._json_templates(data, "pkg:f.json"))
    assert found == [("pkg:f.json", text),
                     ("pkg:f.json", {"default": text, "tool_use": text + "!"})]


def test_python_string_constants_that_are_chat_templates() -> None:
    source = ('A = "{% for message in messages %}{{ message.content }}{% endfor %}"\n'
              'B = "no template here {{ x }}"\n')
    assert list(corpus._python_templates(source)) == [
        "{% for message in messages %}{{ message.content }}{% endfor %}"]
    assert list(corpus._python_templates("def (:")) == []


def test_compare_one_judges_text_and_errors() -> None:
    template = "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
    probe = {"id": "p", "messages": [{"role": "user", "content": "hi"}]}
    record = {"template": "t", "probe": "p", "now": "2026-01-01T00:00:00"}
    assert corpus.compare_one(template, probe, {**record, "output": "[user]hi"}).kind == "equal"
    differs = corpus.compare_one(template, probe, {**record, "output": "[user]ho"})
    assert differs.kind == "text" and "char 7" in differs.detail
    raised = {**record, "error": {"type": "ValueError", "message": "no"}}
    assert corpus.compare_one(template, probe, raised).kind == "only-reference-raises"
    empty = {"id": "e", "messages": []}
    assert corpus.compare_one(template, empty, raised).kind == "both-raise"
    assert corpus.compare_one(template, empty, {**record, "output": ""}).kind == "only-ours-raises"
