"""The system-role policy of a model: what happens to a system message.

A model config's ``system_role`` key decides, the same way for meta templates and chat
templates:

* ``native`` -- the system text reaches the model as a system message (the meta
  template's SYSTEM role; for API and chat-template models ``api_role: SYSTEM``, even
  where OpenCompass's default chat meta template maps SYSTEM to HUMAN);
* ``merge`` -- the system text is folded into the first user (HUMAN) turn, followed by
  :data:`MERGE_SEPARATOR`;
* ``drop`` -- system messages are removed, with a :class:`PromptCompilerWarning`;
* ``error`` -- a prompt with a system message is an error.

Without the key, OpenCompass's behaviour applies; :func:`system_handling` says what it
amounts to for a given model (``native``, ``merged`` or ``dropped``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError, PromptCompilerWarning, RenderError
from ..promptlist import PromptList, RoleItem

__all__ = ["MERGE_SEPARATOR", "SYSTEM_ROLES", "apply_system_role", "chat_template_system",
           "has_system", "merge_cause", "native_meta", "system_handling"]

SYSTEM_ROLES = ("native", "merge", "drop", "error")
MERGE_SEPARATOR = "\n\n"
"""Put between the system text and the first user turn's text by ``merge``."""

_PROBE_SYSTEM = "\u2983SYSTEM-PROBE\u2984"
_PROBE_USER = "\u2983USER-PROBE\u2984"


def check_system_role(value: Any, *, where: str, model: str) -> str | None:
    """Validate the ``system_role`` key (``None`` = OpenCompass behaviour)."""
    if value is None or value in SYSTEM_ROLES:
        return value  # type: ignore[no-any-return]
    raise ConfigError(f"system_role must be one of {', '.join(SYSTEM_ROLES)}, got {value!r}",
                      key_path=where, model=model)


def _is_system(item: Any) -> bool:
    if isinstance(item, RoleItem):
        return bool(item.role == "SYSTEM")
    return isinstance(item, Mapping) and item.get("role") == "system" and "content" in item


def has_system(prompt: Any) -> bool:
    """Whether a compiled prompt (PromptList or OpenAI message list) holds a system message."""
    if isinstance(prompt, PromptList):
        return any(_is_system(i) for i in prompt)
    if isinstance(prompt, list):
        return any(_is_system(i) for i in prompt)
    return False


def apply_system_role(prompt: Any, policy: str | None, *, model: str) -> Any:
    """``prompt`` with the model's policy applied to its system messages (``native`` and
    ``None`` leave it unchanged: the meta template decides)."""
    if policy in (None, "native") or not has_system(prompt):
        return prompt
    if policy == "error":
        raise RenderError(f"the prompt has a system message and model {model!r} has "
                          "system_role: error", model=model, key_path="model.system_role",
                          hint="use system_role: merge, drop or native, or remove the system "
                               "message from the dataset's template")
    if policy == "drop":
        warnings.warn(f"model {model!r}: system message dropped (system_role: drop)",
                      PromptCompilerWarning, stacklevel=2)
    if isinstance(prompt, PromptList):
        return _fold_promptlist(prompt, merge=policy == "merge")
    return _fold_messages(prompt, merge=policy == "merge")


def _fold_promptlist(prompt: PromptList, *, merge: bool) -> PromptList:
    texts = [str(i.prompt or "") for i in prompt if isinstance(i, RoleItem) and _is_system(i)]
    items = [i for i in prompt if not _is_system(i)]
    if merge:
        text = "".join(t + MERGE_SEPARATOR for t in texts if t)
        for n, item in enumerate(items):
            if isinstance(item, RoleItem) and item.role == "HUMAN":
                items[n] = item.with_prompt(text + str(item.prompt or ""))
                break
        else:  # no user turn: the system text becomes one, where the first system item was
            first = next(n for n, i in enumerate(prompt) if _is_system(i))
            kept = sum(1 for i in prompt.items[:first] if not _is_system(i))
            items.insert(kept, RoleItem.of("HUMAN", text[: -len(MERGE_SEPARATOR)]))
    return PromptList(tuple(items))


def _fold_messages(messages: list[Any], *, merge: bool) -> list[Any]:
    texts = [str(m.get("content") or "") for m in messages if _is_system(m)]
    out = [dict(m) for m in messages if not _is_system(m)]
    if merge:
        text = "".join(t + MERGE_SEPARATOR for t in texts if t)
        for m in out:
            if m.get("role") == "user" and isinstance(m.get("content"), str):
                m["content"] = text + m["content"]
                break
        else:
            out.insert(0, {"role": "user", "content": text[: -len(MERGE_SEPARATOR)]})
    return out


def native_meta(meta: Mapping[str, Any] | None, renderer: str, *, model: str,
                where: str) -> dict[str, Any] | None:
    """The meta template under ``native``: SYSTEM sent with ``api_role: SYSTEM`` (API and
    chat-template models); an LM meta template must declare a SYSTEM role itself."""
    if meta is None:
        raise ConfigError("system_role: native needs a meta template with a SYSTEM role "
                          "(without one, a system message is plain text)", key_path=where,
                          model=model)
    out = {k: [dict(r) if isinstance(r, Mapping) else r for r in v] if k in
           ("round", "reserved_roles") else v for k, v in meta.items()}
    roles = [r for k in ("round", "reserved_roles") for r in out.get(k, ()) if isinstance(r, dict)]
    system = next((r for r in roles if r.get("role") == "SYSTEM"), None)
    if renderer == "lm":
        if system is None:
            raise ConfigError("system_role: native, but the meta template declares no SYSTEM "
                              f"role (roles: {', '.join(str(r.get('role')) for r in roles)})",
                              key_path=where, model=model,
                              hint="add a SYSTEM role to reserved_roles, or use system_role: merge")
        return out
    # Out of the round (where OpenCompass's default chat meta template has it as a second
    # HUMAN slot, rendering an empty message each round) into the reserved roles.
    out["round"] = [r for r in out["round"]
                    if not (isinstance(r, dict) and r.get("role") == "SYSTEM")]
    out["reserved_roles"] = [r for r in out.get("reserved_roles", []) if r.get("role") != "SYSTEM"]
    out["reserved_roles"].append({**(system or {"role": "SYSTEM"}), "api_role": "SYSTEM"})
    return out


def chat_template_system(template: Any) -> str:
    """How a chat template treats a system message: ``native`` (its own turn),
    ``merged`` (into the user turn), ``dropped`` or ``error`` (the template raises)."""
    from ..errors import PromptCompilerError
    from .special_tokens import model_special_tokens

    messages = [{"role": "system", "content": _PROBE_SYSTEM},
                {"role": "user", "content": _PROBE_USER}]
    try:
        text = template.render(messages, add_generation_prompt=True)
    except PromptCompilerError:
        return "error"
    s, u = text.find(_PROBE_SYSTEM), text.find(_PROBE_USER)
    if s < 0:
        return "dropped"
    between = text[s + len(_PROBE_SYSTEM):u] if u > s else text[u + len(_PROBE_USER):s]
    tokens = model_special_tokens(None, template)
    return "native" if any(t in between for t in tokens) else "merged"


def system_handling(model: Any) -> str:
    """What a system message becomes for ``model`` (a :class:`~prompt_compiler.model.spec.Model`):
    ``native``, ``merged``, ``dropped`` or ``error``."""
    policy = getattr(model, "system_role", None)
    if policy is not None:
        return {"native": "native", "merge": "merged", "drop": "dropped", "error": "error"}[policy]
    if model.prompter is not None:
        return "dropped"  # an instruction prompter takes only the turns
    if model.meta is None:
        return "merged"  # plain text, joined with the rest
    role = model.meta.roles.get("SYSTEM")
    if role is None:
        return "merged"  # rendered through its fallback role (HUMAN)
    if model.renderer == "lm":
        return "native"
    if role.get("api_role") != "SYSTEM":
        return "merged"
    if model.chat_template is not None:
        return chat_template_system(model.chat_template)
    return "native"


def merge_cause(model: Any) -> str:
    """Why a model without ``system_role`` merges a system message into a user turn (the
    words of lint's ``system-dropped``)."""
    role = model.meta.roles.get("SYSTEM") if model.meta is not None else None
    if role is None or model.renderer == "lm":
        return "it has no system role"
    if role.get("api_role") != "SYSTEM":
        has = ("its chat template has one" if model.chat_template is not None
               and chat_template_system(model.chat_template) == "native"
               else "the model may have one")
        return (f"OpenCompass's meta template maps SYSTEM to HUMAN, though {has}: "
                "system_role: native sends it as a system message")
    return "its chat template has no system role"
