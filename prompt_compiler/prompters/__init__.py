"""LazyLLM-style instruction prompters (``AlpacaPrompter``, ``ChatPrompter``).

They reproduce lazyllm 0.4.1 byte for byte, except where 0.4.1 crashes or silently drops
input (see ``docs/divergences.md``)::

    >>> from prompt_compiler.prompters import ChatPrompter
    >>> p = ChatPrompter("Be brief.")
    >>> p.generate_prompt("1+1?", history=[["2+2?", "4"]])
    'You are an AI-Agent developed by LazyLLM.Be brief.\\n\\n\\n\\n2+2?4\\n\\n1+1?\\n\\n'
    >>> p.generate_prompt("1+1?", return_dict=True)["messages"][0]["content"]
    'You are an AI-Agent developed by LazyLLM.\\nBe brief.\\n\\n'
"""

from __future__ import annotations

from ._base import TOOLS_HEADER, InstructionPrompter, Message, PromptDict
from ._instruction import EXTRA_KEYS_HEADER, InstructionTemplate
from ._prompters import ALPACA_PREAMBLE, ALPACA_RESPONSE, AlpacaPrompter, ChatPrompter
from ._tokens import DEFAULT_SYSTEM, TOKEN_NAMES, ModelTokens

__all__ = [
    "ALPACA_PREAMBLE",
    "ALPACA_RESPONSE",
    "DEFAULT_SYSTEM",
    "EXTRA_KEYS_HEADER",
    "TOKEN_NAMES",
    "TOOLS_HEADER",
    "AlpacaPrompter",
    "ChatPrompter",
    "InstructionPrompter",
    "InstructionTemplate",
    "Message",
    "ModelTokens",
    "PromptDict",
]

for _name in ("AlpacaPrompter", "ChatPrompter", "InstructionPrompter", "InstructionTemplate",
              "ModelTokens"):
    globals()[_name].__module__ = __name__
del _name
