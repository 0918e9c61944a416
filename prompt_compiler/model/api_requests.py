"""The request an OpenCompass API model class builds from a rendered API prompt.

OpenCompass's API classes take the parser's output (a string, a list of
``{"role", "prompt"}`` items, or raw ``{"role", "content"}`` messages) and turn it into
their API's request; a record's ``prompt`` is that request (the part that carries the
prompt: no model name, token limit or sampling settings). One builder per class family; each
class's row in :data:`prompt_compiler.model.classes.MODEL_CLASSES` names its builder:

* ``OpenAI``, ``OpenAISDK``, ... (``openai_api.py``): OpenAI chat messages
  (:func:`openai_messages`).
* ``ClaudeSDK`` (``claude_sdk_api.py``): ``{"messages": [...], "system": "..."}``, the
  Anthropic Messages API's ``messages`` (``user``/``assistant``) and its top-level
  ``system`` text: every system item, joined by ``\\n``, in the order OpenCompass's
  request dict holds them; ``system`` only when there is one.
* ``GeminiSDK`` (``gemini_sdk_api.py``): ``{"contents": [...], "system_instruction": "..."}``,
  Gemini's ``contents`` (roles ``user``/``model``, each text one ``{"text"}`` part) and the
  system items joined by ``\\n`` (sent as the generation config's ``system_instruction``),
  only when there is one.
* ``LiteLLMAPI`` (``litellm_api.py``): OpenAI chat messages; raw messages go through,
  ``HUMAN``/``BOT``/``SYSTEM`` become ``user``/``assistant``/``system`` and any other role
  or a bare string becomes ``user``; the model's ``system_prompt`` is put first when no
  message is a system message.

Other API classes receive the parser's output as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConfigError, RenderError, UnknownRoleError

__all__ = ["RequestBuilder", "RequestOptions", "claude_request", "gemini_request",
           "litellm_messages", "openai_messages", "request_options"]

RequestOptions = Mapping[str, Any]
"""A class's keyword parameters that shape its request (``system_prompt`` of LiteLLMAPI)."""

RequestBuilder = Callable[[Any, "RequestOptions | None"], Any]
"""Builds a class's request from the parser's output and the class's request options."""

_OPENAI_ROLE = {"HUMAN": "user", "BOT": "assistant", "SYSTEM": "system"}
_CHATML_ROLES = frozenset(_OPENAI_ROLE.values())


def openai_messages(rendered: Any, options: RequestOptions | None = None) -> Any:
    """The request messages OpenCompass's ``OpenAI`` class builds from an API prompt.

    A string becomes one user message; ``HUMAN``/``BOT``/``SYSTEM`` items become
    ``user``/``assistant``/``system`` messages (one per item, nothing merged); a list that
    is already ``system``/``user``/``assistant`` messages goes through as it is.
    """
    if isinstance(rendered, str):
        return [{"role": "user", "content": rendered}]
    if rendered and all(isinstance(m, Mapping) and m.get("role") in _CHATML_ROLES
                        and "content" in m for m in rendered):
        return [dict(m) for m in rendered]
    out = []
    for item in rendered:
        if not isinstance(item, Mapping) or "prompt" not in item:
            raise RenderError(
                "the OpenAI API takes messages only; this prompt holds "
                + ("a bare string (the meta template's 'begin')" if isinstance(item, str)
                   else f"an item without 'prompt': {item!r}"),
                hint="move the text into a SYSTEM or HUMAN role of the meta template",
                reference=("TypeError", "string indices must be integers"))
        role = _OPENAI_ROLE.get(str(item.get("role")))
        if role is None:
            raise UnknownRoleError(
                f"api_role {item.get('role')!r} has no OpenAI role; OpenCompass's OpenAI class "
                "maps HUMAN, BOT and SYSTEM (to user, assistant, system)",
                key_path="meta_template")
        out.append({"role": role, "content": item["prompt"]})
    return out


# -- ClaudeSDK and GeminiSDK: system items apart, the rest as turns ---------------------

_CLAUDE_ROLE = {"HUMAN": "user", "BOT": "assistant", "SYSTEM": "system", "human": "user",
                "bot": "assistant", "system": "system", "user": "user",
                "assistant": "assistant"}
_GEMINI_ROLE = {"HUMAN": "user", "BOT": "model", "SYSTEM": "system", "human": "user",
                "bot": "model", "system": "system", "user": "user", "assistant": "model",
                "model": "model"}


def _turns(rendered: Any, roles: Mapping[str, str], cls: str
           ) -> tuple[list[tuple[str, Any]], list[Any]]:
    """``(role, content)`` turns and system texts, as ``_convert_prompt_list`` splits them."""
    if isinstance(rendered, str):
        return [("user", rendered)], []
    turns: list[tuple[str, Any]] = []
    system: list[Any] = []
    for item in rendered:
        if not isinstance(item, Mapping):
            raise RenderError(
                f"{cls} takes messages only; this prompt holds "
                + ("a bare string (the meta template's 'begin')" if isinstance(item, str)
                   else f"{item!r}"),
                hint="move the text into a SYSTEM or HUMAN role of the meta template",
                reference=("TypeError", f"Prompt item must be a dict, got {type(item)}"))
        role = roles.get(item.get("role"))  # type: ignore[arg-type]
        if role is None:
            raise UnknownRoleError(
                f"api_role {item.get('role')!r} has no role in {cls}'s request; it maps "
                f"{', '.join(roles)}", key_path="meta_template",
                reference=("ValueError", f"Unsupported role: {item.get('role')}"))
        if "prompt" in item:
            content = item["prompt"]
        elif "content" in item:
            content = item["content"]
        else:
            raise RenderError(f"{cls}: a message without 'prompt' or 'content': {dict(item)!r}",
                              reference=("KeyError",
                                         f"Message item missing prompt/content: {item}"))
        if role == "system":
            system.append(content)
        else:
            turns.append((role, content))
    return turns, system


def _joined(system: list[Any]) -> str:
    return "\n".join(system)


def claude_request(rendered: Any, options: RequestOptions | None = None) -> dict[str, Any]:
    """``{"messages", "system"}`` of ``ClaudeSDK`` (Anthropic Messages API)."""
    turns, system = _turns(rendered, _CLAUDE_ROLE, "ClaudeSDK")
    request: dict[str, Any] = {"messages": [{"role": r, "content": c} for r, c in turns]}
    if system:
        request["system"] = _joined(system)
    return request


def gemini_request(rendered: Any, options: RequestOptions | None = None) -> dict[str, Any]:
    """``{"contents", "system_instruction"}`` of ``GeminiSDK`` (Google Gen AI SDK)."""
    turns, system = _turns(rendered, _GEMINI_ROLE, "GeminiSDK")
    request: dict[str, Any] = {
        "contents": [{"role": r, "parts": [{"text": c}]} for r, c in turns]}
    if system:
        request["system_instruction"] = _joined(system)
    return request


# -- LiteLLMAPI ---------------------------------------------------------------------------


def litellm_messages(rendered: Any, options: RequestOptions | None = None
                     ) -> list[dict[str, Any]]:
    """The OpenAI messages ``LiteLLMAPI._build_messages`` builds (``system_prompt`` first
    when no message is a system message)."""
    messages: list[dict[str, Any]]
    if isinstance(rendered, str):
        messages = [{"role": "user", "content": rendered}]
    elif rendered and all(isinstance(m, Mapping) and m.get("role") in _CHATML_ROLES
                          for m in rendered):
        messages = [{"role": m["role"], "content": m.get("content", m.get("prompt", ""))}
                    for m in rendered]
    else:
        messages = []
        for item in rendered:
            if isinstance(item, str):
                messages.append({"role": "user", "content": item})
                continue
            if not isinstance(item, Mapping):
                raise RenderError(f"LiteLLMAPI: a prompt item must be a message or a string, "
                                  f"got {item!r:.80}")
            role = _OPENAI_ROLE.get(item.get("role", ""), "user")
            messages.append({"role": role, "content": item.get("prompt", item.get("content", ""))})
    system_prompt = (options or {}).get("system_prompt")
    if system_prompt and not any(m["role"] == "system" for m in messages):
        messages.insert(0, {"role": "system", "content": system_prompt})
    return messages


def request_options(keys: tuple[str, ...], cfg: Mapping[str, Any], *, where: str,
                    model: str) -> dict[str, Any]:
    """The values of ``keys`` (a class's keys that shape its request) in ``cfg``, checked."""
    out: dict[str, Any] = {}
    for key in keys:
        value = cfg.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ConfigError(f"{key} must be a string, got {value!r:.80}",
                              key_path=f"{where}.{key}", model=model)
        out[key] = value
    return out
