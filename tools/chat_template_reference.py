"""Reference renders for ``tools/chat_template_corpus.py``: run with a Python that has transformers.

    /path/to/venv-with-transformers/bin/python tools/chat_template_reference.py JOB.json

``JOB.json`` holds ``{"templates": {id: text or {name: text}}, "special_tokens": {...},
"probes": [probe, ...], "pairs": [[template_id, probe_id], ...]}`` (a probe's own
``special_tokens`` replace the job's). For each pair the chat is
rendered by a real ``PreTrainedTokenizerFast`` (a tiny in-memory WordLevel vocabulary carrying
the special-token strings, the template set as its ``chat_template``) with
``apply_chat_template(tokenize=False)``, and one JSON line is printed:
``{"template", "probe", "now", "output"}`` or ``{"template", "probe", "now", "error": {"type",
"message"}}``. ``now`` is the wall-clock time just before the render (templates may print the
date), so a later comparison can pin the same date.

This file imports nothing from prompt_compiler: it runs in the reference environment only.
"""

from __future__ import annotations

import datetime
import json
import sys
from typing import Any


def _tokenizer(special_tokens: dict[str, str]) -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNUSED]": 0}
    for token in special_tokens.values():
        vocab.setdefault(token, len(vocab))
    model = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNUSED]"))
    model.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=model, **special_tokens)


def main(argv: list[str]) -> int:
    """Render every pair of the job file and print one JSON line per render."""
    with open(argv[0], encoding="utf-8") as handle:
        job = json.load(handle)
    tokenizers: dict[str, Any] = {}
    probes = {probe["id"]: probe for probe in job["probes"]}
    out = sys.stdout
    for template_id, probe_id in job["pairs"]:
        probe = probes[probe_id]
        tokens = probe.get("special_tokens", job["special_tokens"])
        key = json.dumps(tokens, sort_keys=True)
        if key not in tokenizers:
            tokenizers[key] = _tokenizer(tokens)
        tokenizer = tokenizers[key]
        tokenizer.chat_template = job["templates"][template_id]
        record: dict[str, Any] = {"template": template_id, "probe": probe_id,
                                  "now": datetime.datetime.now().isoformat()}
        try:
            record["output"] = tokenizer.apply_chat_template(
                probe["messages"], tokenize=False,
                add_generation_prompt=probe.get("add_generation_prompt", False),
                continue_final_message=probe.get("continue_final_message", False),
                tools=probe.get("tools"), documents=probe.get("documents"),
                **probe.get("kwargs", {}),
            )
        except Exception as exc:  # every failure is a result to compare
            record["error"] = {"type": type(exc).__name__, "message": str(exc)[:500]}
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
