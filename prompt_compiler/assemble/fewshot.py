"""Few-shot style: role-based in-context examples as turns, or inline as text.

A dataset key ``fewshot`` (or the CLI's ``--fewshot``, which wins) picks the style:

* ``multiturn`` -- each example is its own user/assistant exchange before the test
  turn. This is what a role-based (``round``) ice template already gives; the key makes
  it explicit, and a text ice template (which has no turns to keep) is an error.
* ``inline`` -- the examples are folded as text into the first user turn, so the model
  sees one user turn before the generation prompt. Each example's turns are joined with
  ``'\\n'``, examples with ``'\\n\\n'``, and the block is followed by ``'\\n\\n'``.

Without the key the config decides, as in OpenCompass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError, TemplateError
from ..promptlist import Marker, PromptList, RoleItem

__all__ = ["FEWSHOT_STYLES", "check_fewshot", "inline_examples"]

FEWSHOT_STYLES = ("multiturn", "inline")
TURN_SEPARATOR = "\n"
EXAMPLE_SEPARATOR = "\n\n"


def check_fewshot(value: Any, *, where: str) -> str | None:
    """Validate a ``fewshot`` value (``None`` = as the config says)."""
    if value is None or value in FEWSHOT_STYLES:
        return value  # type: ignore[no-any-return]
    raise ConfigError(f"fewshot must be one of {', '.join(FEWSHOT_STYLES)}, got {value!r}",
                      key_path=where)


def check_ice_template(style: str | None, ice_template: Any) -> None:
    """A style needs role-based examples: ``multiturn`` cannot split text examples into turns."""
    if style != "multiturn" or ice_template is None:
        return
    kind = getattr(ice_template, "kind", None)
    template = getattr(ice_template, "template", None)
    role_based = kind == "meta" or kind is None or (
        kind == "labels" and isinstance(template, Mapping)
        and all(not isinstance(v, str) for v in template.values()))
    if not role_based:
        raise ConfigError(
            "fewshot: multiturn needs a role-based ice_template (a 'round' of HUMAN/BOT "
            "turns); this one is text, so its examples have no turns",
            key_path="infer_cfg.ice_template",
            hint="write the ice_template as template=dict(round=[dict(role='HUMAN', ...), "
                 "dict(role='BOT', ...)]), or use fewshot: inline")


def inline_examples(prompt: Any) -> Any:
    """``prompt`` with its role-based examples folded as text into the first user turn."""
    if not isinstance(prompt, PromptList):
        return prompt  # text prompts carry their examples inline already
    examples: list[str] = []
    kept: list[Any] = []
    current: list[str] | None = None
    for item in prompt:
        if isinstance(item, Marker) and item.section == "ice":
            if item.pos == "begin":
                current = []
            else:
                examples.append(TURN_SEPARATOR.join(current or []))
                current = None
            continue
        if current is not None:
            if isinstance(item, RoleItem):
                current.append(str(item.prompt or ""))
            continue
        kept.append(item)
    if not examples:
        return prompt
    block = EXAMPLE_SEPARATOR.join(examples) + EXAMPLE_SEPARATOR
    for n, item in enumerate(kept):
        if isinstance(item, RoleItem) and item.role == "HUMAN":
            kept[n] = item.with_prompt(block + str(item.prompt or ""))
            return PromptList(tuple(kept))
    raise TemplateError("fewshot: inline folds the examples into the first HUMAN turn, but the "
                        "prompt has none", key_path="infer_cfg.prompt_template")
