"""prompt_compiler: compile declarative prompt configs into the exact model inputs.

The pipeline, each stage usable alone::

    config -> template -> retrieve -> assemble -> plan -> render -> emit

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

__version__ = "0.1.0"

from .assemble.base import Record
from .compiler import CompiledDataset, Compiler
from .data.reader import ReaderConfig
from .errors import *  # noqa: F403
from .errors import __all__ as _errors_all
from .model.spec import Model, whitespace_tokens
from .policy import DEFECTS, Policy
from .promptlist import Marker, PromptList, RoleItem
from .render import MetaTemplate
from .suite import Suite, compile, compile_to_dir, load
from .template.prompt_template import PromptTemplate
from .template.raw_template import RawPromptTemplate

__all__ = [
    *_errors_all,
    "DEFECTS",
    "CompiledDataset",
    "Compiler",
    "Marker",
    "MetaTemplate",
    "Model",
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
    "load",
    "whitespace_tokens",
]
