"""``compile-prompts check-template MODEL --chat-template PATH``: meta template vs chat template.

    compile-prompts check-template MODEL --chat-template PATH [--strip-bos]
                    [--special-token NAME=VALUE]... [--json]

MODEL is a built-in template name (``compile-prompts models``) or a model config file; PATH a
``.jinja`` file, a ``tokenizer_config.json`` or a model folder. Exit status: 0 when every probe
agrees, 1 when one differs (or on a user error), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import ConfigError, PromptCompilerError
from . import json_text

__all__ = ["run"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="compile-prompts check-template",
        description="Render fixed probe conversations through a model's meta template and "
                    "through a chat template; report per probe identical or the first difference.")
    p.add_argument("model", metavar="MODEL", help="a built-in template name or a model config file")
    p.add_argument("--chat-template", required=True, metavar="PATH",
                   help="a .jinja file, a tokenizer_config.json or a model folder")
    p.add_argument("--strip-bos", action="store_true",
                   help="ignore a leading bos_token printed by the chat template (meta templates "
                        "leave BOS to the tokenizer)")
    p.add_argument("--special-token", action="append", default=[], metavar="NAME=VALUE",
                   help="a special token the chat template reads, e.g. bos_token='<s>' "
                        "(repeatable; over what the chat template's files define)")
    p.add_argument("--json", action="store_true", help="print the results as a JSON list")
    return p


def _special_tokens(given: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in given:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"expected NAME=VALUE (e.g. bos_token=<s>), got {item!r}",
                              key_path="--special-token")
        out[name.strip()] = value
    return out


def _model(name: str) -> object:
    from ..compiler import Compiler
    from ..run.suite import model_from_name

    models = model_from_name(name)
    if len(models) != 1:
        raise ConfigError(f"the config defines {len(models)} models ("
                          f"{', '.join(m.abbr for m in models)}); check-template takes one",
                          config_path=name)
    cfg = models[0]
    try:
        return Compiler().model(cfg.model_dict())
    except PromptCompilerError as err:
        raise err.located(config_path=cfg.config_path, model=cfg.abbr) from None


def run(argv: list[str]) -> int:
    """Check a meta template against a chat template."""
    args = _parser().parse_args(argv)
    from ..inspection.check_template import check_template
    from ..render.chat_template import ChatTemplate

    try:
        model = _model(args.model)
        if not os.path.exists(args.chat_template):
            raise ConfigError("no such file or folder", config_path=args.chat_template,
                              key_path="--chat-template")
        template = ChatTemplate.load(os.fspath(args.chat_template))
        if args.special_token:
            from dataclasses import replace

            template = replace(template, special_tokens={
                **template.special_tokens, **_special_tokens(args.special_token)})
        results = check_template(model, template, strip_bos=args.strip_bos)
    except PromptCompilerError as err:
        if "is undefined" in err.message and err.hint is None:
            err.hint = "give a special token's value with --special-token NAME=VALUE"
        print(f"compile-prompts: error: {err}", file=sys.stderr)
        return 1
    differ = sum(1 for r in results if not r.agrees)
    if args.json:
        sys.stdout.write(json_text([r.to_json() for r in results]) + "\n")
    else:
        for r in results:
            label = f"{r.probe}, {'with' if r.generation_prompt else 'without'} generation prompt"
            if r.status == "identical":
                sys.stdout.write(f"{label}: identical\n")
            elif r.status == "rejected":
                sys.stdout.write(f"{label}: not compared, the chat template rejects it: {r.note}\n")
            else:
                meta, chat = r.excerpts()
                sys.stdout.write(f"{label}: differ at character {r.position} (byte {r.byte})\n"
                                 f"  meta template: {meta!r}\n  chat template: {chat!r}\n")
        sys.stdout.write(f"{len(results)} probes: {len(results) - differ} agree, {differ} differ\n")
    return 1 if differ else 0
