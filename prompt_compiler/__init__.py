"""prompt_compiler: compile declarative prompt configs into the exact model inputs.

The pipeline, each stage usable alone::

    config -> template -> retrieve -> plan -> assemble -> render -> emit

Whole suites, as the CLI compiles them::

    import prompt_compiler as pc
    suite = pc.load("configs/eval_suite.py")      # str or Path, one or many, files or folders
    for rec in pc.compile(suite, only="gsm8k*"):    # streams records
        send(rec.prompt)                            # exactly what the model receives
    pc.compile_to_dir(suite, "out/")                # JSONL per pair + manifest.json

>>> import prompt_compiler as pc
>>> tp = pc.PromptTemplate("Q: {question}\\nA: {answer}")
>>> tp.gen_item({"question": "2+2?", "answer": "4"}, "", pc.Policy.of(), output_column="answer")
'Q: 2+2?\\nA: '
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _moved
from ._version import __version__
from .errors import *  # noqa: F403
from .errors import __all__ as _errors_all

_moved.install()

if TYPE_CHECKING:
    from .api_formats import FormatRegistry, MessageFormat, Msg, format_chat, format_messages
    from .assemble.base import Record
    from .compiler import CompiledDataset, Compiler
    from .data.reader import ReaderConfig
    from .inspection.outputs import read_output
    from .model.spec import Model, whitespace_tokens
    from .model.tokenize import register_token_counter
    from .policy import DEFECTS, Policy
    from .prompters import AlpacaPrompter, ChatPrompter, InstructionPrompter, InstructionTemplate
    from .promptlist import Marker, PromptList, RoleItem
    from .render import APITemplateParser, LMTemplateParser, MetaTemplate
    from .render.chat_template import ChatTemplate
    from .run.settings import CompileSettings
    from .run.suite import Suite, compile, compile_to_dir, load
    from .template.jinja_prompt import JinjaPrompt
    from .template.prompt_template import PromptTemplate
    from .template.raw_template import RawPromptTemplate

_LAZY = {
    # every public name is imported when first used: `import prompt_compiler` (and the
    # command's start) stays light, and the command installs its signal handlers first
    "APITemplateParser": "render",
    "CompileSettings": "run.settings",
    "CompiledDataset": "compiler",
    "Compiler": "compiler",
    "DEFECTS": "policy",
    "LMTemplateParser": "render",
    "Marker": "promptlist",
    "MetaTemplate": "render",
    "Model": "model.spec",
    "Policy": "policy",
    "PromptList": "promptlist",
    "PromptTemplate": "template.prompt_template",
    "RawPromptTemplate": "template.raw_template",
    "ReaderConfig": "data.reader",
    "Record": "assemble.base",
    "RoleItem": "promptlist",
    "Suite": "run.suite",
    "compile": "run.suite",
    "compile_to_dir": "run.suite",
    "load": "run.suite",
    "read_output": "inspection.outputs",
    "register_token_counter": "model.tokenize",
    "whitespace_tokens": "model.spec",
    # the seeds' prompt styles (they pull in jinja2 and more)
    "AlpacaPrompter": "prompters",
    "ChatPrompter": "prompters",
    "ChatTemplate": "render.chat_template",
    "FormatRegistry": "api_formats",
    "InstructionPrompter": "prompters",
    "InstructionTemplate": "prompters",
    "JinjaPrompt": "template.jinja_prompt",
    "MessageFormat": "api_formats",
    "Msg": "api_formats",
    "format_chat": "api_formats",
    "format_messages": "api_formats",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'prompt_compiler' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    *_errors_all,
    "DEFECTS",
    "APITemplateParser",
    "AlpacaPrompter",
    "ChatPrompter",
    "ChatTemplate",
    "CompileSettings",
    "CompiledDataset",
    "Compiler",
    "FormatRegistry",
    "InstructionPrompter",
    "InstructionTemplate",
    "JinjaPrompt",
    "LMTemplateParser",
    "Marker",
    "MessageFormat",
    "MetaTemplate",
    "Model",
    "Msg",
    "Policy",
    "PromptList",
    "PromptTemplate",
    "RawPromptTemplate",
    "ReaderConfig",
    "Record",
    "RoleItem",
    "Suite",
    "__version__",
    "compile",
    "compile_to_dir",
    "format_chat",
    "format_messages",
    "load",
    "read_output",
    "register_token_counter",
    "whitespace_tokens",
]
