"""``compile-prompts view``: the HTML report, rendered by a real headless Chromium.

The small suite ``tests/data/view/suite.yaml`` is compiled by the CLI, the report written by
``view``, and Chromium's rendered DOM must hold every compiled prompt. The DOM shows
whitespace as glyphs (``↵`` line ends, ``→`` tabs, ``·`` trailing spaces, ``∎`` the end), so
the test undoes exactly those marks before comparing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from _cli import run_cli as cli

SUITE = Path(__file__).resolve().parent / "data" / "view" / "suite.yaml"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")



def browser() -> str:
    for name in BROWSERS:
        if found := shutil.which(name):
            return found
    pytest.skip("no headless browser: install Debian's 'chromium' package (.ci/run does)")


def dump_dom(page: Path, query: str = "") -> str:
    proc = subprocess.run(
        [
            browser(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--user-data-dir=" + str(page.parent / ".chromium"),
            "--dump-dom",
            page.resolve().as_uri() + query,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "<html" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


class Items(HTMLParser):
    """Per ``div.item``: its classes, and the text of each ``pre`` inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[dict[str, Any]] = []
        self.stack: list[str] = []
        self.pre: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        cls = dict(attrs).get("class") or ""
        if tag == "div" and "item" in cls.split():
            self.items.append({"class": cls, "pres": [], "text": []})
        if tag == "pre" and self.items:
            self.pre = []
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre" and self.pre is not None:
            self.items[-1]["pres"].append("".join(self.pre))
            self.pre = None

    def handle_data(self, data: str) -> None:
        if self.pre is not None:
            self.pre.append(data)
        if self.items:
            self.items[-1]["text"].append(data)


def unmark(shown: str) -> str:
    """The text behind the report's visible whitespace marks."""
    assert shown.endswith("∎")
    return shown[:-1].replace("↵\n", "\n").replace("→", "\t").replace("·", " ")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("view")
    proc = cli(SUITE, "-o", "out", "--spans", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return root


def _records(out: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for f in sorted(out.glob("*/*.jsonl"))
        for line in f.read_text(encoding="utf-8").splitlines()
    ]


def test_report_is_self_contained(compiled: Path) -> None:
    proc = cli("view", "out", "-o", "sub/report.html", cwd=compiled)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("wrote sub/report.html")
    page = (compiled / "sub/report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"https?://|//[a-z]", page.replace("file://", "")), "no network"
    assert not re.search(r"""(src|href)=["'](?!#)""", page), "only in-page links"
    assert "<link" not in page and "@import" not in page
    again = cli("view", "out", "-o", "again.html", cwd=compiled)
    assert again.returncode == 0
    assert (compiled / "again.html").read_bytes() == (compiled / "sub/report.html").read_bytes()


def test_chromium_renders_every_prompt(compiled: Path) -> None:
    assert cli("view", "out", "-o", "report.html", cwd=compiled).returncode == 0
    dom = dump_dom(compiled / "report.html")
    parser = Items()
    parser.feed(dom)
    records = _records(compiled / "out")
    assert len(parser.items) == len(records) == 14
    shown = [[unmark(p) for p in item["pres"]] for item in parser.items]
    for rec in records:
        prompt = rec["prompt"]
        want = [prompt] if isinstance(prompt, str) else [m.get("content", m.get("prompt"))
                                                           for m in prompt]
        assert want in shown, (rec, shown)
    # hand-checked pieces: special tokens highlighted, markup escaped, whitespace visible
    assert '<span class="tok">&lt;|im_start|&gt;</span>' in dom
    assert (
        '<span class="o-test" title="column q (test row 1)">tab<span class="ws">→</span>here, '
        'trailing space<span class="ws">·</span></span><span class="o-template" title="template">'
        '<span class="ws">↵</span>\nA:'
    ) in dom
    assert (
        '<span class="o-test" title="column q (test row 0)">Is <span class="tok">&lt;b&gt;</span> '
        '&amp; <span class="tok">&lt;/b&gt;</span> markup?</span>'
    ) in dom
    # index: datasets x models with counts; links between the same item across models
    assert re.search(r'<th class="ds">qa</th><td><a href="#i[0-9a-f]+">3</a>', dom)
    item = next(i for i in parser.items if "What is 2+2?" in "".join(i["text"]))
    assert "same item for:" in "".join(item["text"])
    # coloured by origin (--spans): a test value, an in-context example value, meta text
    assert '<span class="o-test" title="column q (test row 2)">What is 2+2?</span>' in dom
    assert '<span class="o-train" title="column q (train row 0)">1+1?</span>' in dom
    assert '<span class="o-meta" title="meta"><span class="tok">&lt;|im_start|&gt;</span>' in dom
    # api messages (OpenAI's shape, as the API receives them) show their roles
    assert '<div class="msg role-user"><div class="role">user</div>' in dom


def test_search_box_filters_in_the_browser(compiled: Path) -> None:
    assert cli("view", "out", "-o", "report.html", cwd=compiled).returncode == 0
    dom = dump_dom(compiled / "report.html", "?q=fire%20is")
    parser = Items()
    parser.feed(dom)
    visible = [i for i in parser.items if "hidden" not in i["class"].split()]
    assert len(visible) == 4  # Fire row: 2 labels x 2 models
    assert all("Fire is cold." in "".join(i["text"]) for i in visible)


def test_max_items_and_diff_view(compiled: Path) -> None:
    proc = cli("view", "out", "-o", "few.html", "--max-items", "1", cwd=compiled)
    assert proc.returncode == 0
    page = (compiled / "few.html").read_text(encoding="utf-8")
    assert page.count('<div class="item"') == 4
    assert "3 prompts, showing the first 1 (--max-items)" in page
    b = compiled / "b"
    shutil.copytree(compiled / "out", b)
    qa = b / "chatml" / "qa.jsonl"
    lines = qa.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[2])
    rec["prompt"] = rec["prompt"].replace("2+2", "3+3")
    lines[2] = json.dumps(rec)
    qa.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = cli("view", "out", "b", "-o", "diff.html", cwd=compiled)
    assert proc.returncode == 0, proc.stderr
    dom = dump_dom(compiled / "diff.html")
    parser = Items()
    parser.feed(dom)
    assert len(parser.items) == 1
    left, right = parser.items[0]["pres"]
    assert "Q: What is 2+2?↵" in left and "Q: What is 3+3?↵" in right
    assert '<span class="del">Q: What is 2+2?↵</span>' in dom
    assert "1 changed, 0 only in A, 0 only in B, 13 same" in dom


def test_usage_errors(compiled: Path) -> None:
    for args in (["missing"], ["out", "out/chatml/qa.jsonl"], ["out", "--max-items", "-1"]):
        proc = cli("view", *args, cwd=compiled)
        assert proc.returncode == 2, args
        assert "Traceback" not in proc.stderr
