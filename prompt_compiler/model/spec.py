"""The model side of a compile: renderer kind, meta template, length limit, token counter."""

from __future__ import annotations

import copy
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ConfigError, PromptCompilerError, RegistryError
from ..policy import Policy
from ..promptlist import PromptList
from ..render import DEFAULT_CHAT_META, MetaTemplate, render_api, render_lm, to_chat_messages
from ..render.api import prompt_text
from .api_requests import openai_messages, request_options
from .classes import RENDERERS, find_class, resolve_renderer
from .data_tokens import check_mode
from .hub import missing_tokenizer, model_tokenizer
from .tokenize import (
    TokenCounter,
    Tokenizer,
    api_words,
    default_counter,
    token_counter,
    token_counters,
    whitespace_tokens,
)

__all__ = ["Model", "TokenCounter", "api_words", "build_model", "manifest_models",
           "openai_messages", "whitespace_tokens"]

_Chat = tuple[tuple[tuple[str, Any], ...], ...]  # messages as hashable item tuples


def _prompter(cfg: Any, renderer: str, where: str, abbr: str) -> Any:
    """Build an instruction prompter from ``{"type": "ChatPrompter", "model": ..., ...}``."""
    if cfg is None:
        return None
    if renderer != "hf_chat" or not isinstance(cfg, Mapping):
        raise ConfigError("prompter must be a dict with a 'type' (AlpacaPrompter or ChatPrompter) "
                          "on an hf_chat model", key_path=where, model=abbr)
    from .. import prompters

    kind = str(cfg.get("type", "ChatPrompter")).rsplit(".", 1)[-1]
    cls = {"AlpacaPrompter": prompters.AlpacaPrompter,
           "ChatPrompter": prompters.ChatPrompter}.get(kind)
    if cls is None:
        raise RegistryError(f"unknown prompter {kind!r}; available: AlpacaPrompter, ChatPrompter",
                            key_path=f"{where}.type", model=abbr)
    args = {k: v for k, v in cfg.items() if k != "type"}
    try:
        return cls(**args)
    except PromptCompilerError as err:
        raise err.located(key_path=where, model=abbr) from None
    except TypeError as exc:
        raise ConfigError(f"bad prompter arguments: {exc}", key_path=where, model=abbr) from None


def __getattr__(name: str) -> Any:
    if name == "PARSERS":  # the name before the rename (issue 19)
        import warnings

        warnings.warn("prompt_compiler.model.spec.PARSERS is deprecated; use RENDERERS",
                      DeprecationWarning, stacklevel=2)
        return RENDERERS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")



def _tokenizer_template(renderer: str, count_tokens: Any, key: str, key_path: str,
                        abbr: str) -> Any:
    """The chat template ``tools``/``documents`` go through when the model names none: its
    tokenizer folder's (as transformers' ``apply_chat_template(tools=...)`` uses it).

    Raises:
        ConfigError: Neither the model nor its tokenizer folder has one.
    """
    template = getattr(count_tokens, "chat_template", None) if renderer == "hf_chat" else None
    if template is None:
        raise ConfigError(
            f"{key} are handed to a chat template, and this model has none (no chat_template, "
            "and no tokenizer folder holding one)", key_path=key_path, model=abbr,
            hint="give the model a chat_template, or a tokenizer folder with one "
                 "(renderer hf_chat)")
    return template

def _default_turn(meta: MetaTemplate, text: Any, where: str, model: str) -> str:
    """The default system turn (``text`` in the meta template's SYSTEM role) as it stands in
    ``begin``; a built-in template's ``default_system`` key (:mod:`.meta_library`)."""
    system = meta.roles.get("SYSTEM", {})
    turn = f"{system.get('begin') or ''}{text}{system.get('end') or ''}"
    if not isinstance(text, str) or "SYSTEM" not in meta.roles or turn not in (meta.begin or ""):
        raise ConfigError("default_system must be the text of a SYSTEM turn that the meta "
                          f"template's begin writes, got {text!r:.80}",
                          key_path=f"{where}.default_system", model=model)
    return turn


@dataclass(frozen=True, slots=True)
class Model:
    """How one model consumes prompts.

    Attributes:
        abbr: The model's name in records.
        renderer: ``lm`` (one string), ``api`` (OpenCompass API messages) or ``hf_chat``
            (API messages, then OpenAI chat messages for the tokenizer's chat template).
            Configs may say ``parser`` (OpenCompass's word) for the same key.
        meta: The validated meta template (``None`` = none).
        max_seq_len: Prompts longer than this drop in-context examples from the end.
        batch_size: Kept for records; prompts do not depend on it.
        count_tokens: Token counter used for ``max_seq_len`` and ``token_len``.
    """

    abbr: str
    renderer: str
    meta: MetaTemplate | None
    max_seq_len: int | None = None
    batch_size: int | None = None
    count_tokens: TokenCounter = field(default=whitespace_tokens)
    meta_raw: Mapping[str, Any] | None = None
    chat_template: Any = None
    """A :class:`~prompt_compiler.render.chat_template.ChatTemplate` applied to the chat
    messages."""
    api_format: str | None = None
    """A per-API request format (``openai``, ``gemini``, ...) applied to the messages."""
    template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    """Extra chat-template variables, e.g. ``{"enable_thinking": False}``."""
    prompter: Any = None
    """An instruction prompter (``AlpacaPrompter``/``ChatPrompter``) that builds the final input."""
    system_role: str | None = None
    """``native``, ``merge``, ``drop`` or ``error`` (:mod:`prompt_compiler.model.system_role`);
    ``None`` keeps OpenCompass's behaviour."""
    model_class: str | None = None
    """The OpenCompass model class (``type``), which decides an API model's request shape."""
    assistant_prefix: str | None = None
    """Text the reply starts with, in gen prompts (:mod:`prompt_compiler.model.chat_controls`)."""
    tools: Any = None
    """Tool schemas handed to the chat template (``tools``), or ``None``."""
    documents: Any = None
    """Retrieval documents handed to the chat template (``documents``), or ``None``."""
    date: str | None = None
    """The date the chat template's ``strftime_now`` prints (``today``: the clock); set only
    when the template prints one."""
    max_out_len: int | None = None
    """The model's ``max_out_len`` (a dataset's inferencer setting wins, as in OpenCompass)."""
    stop_words: tuple[str, ...] = ()
    """The model's ``stop_words`` (:mod:`prompt_compiler.model.generation`)."""
    tokenize: bool = False
    """Give every record ``input_ids`` (:mod:`prompt_compiler.model.token_ids`)."""
    request_options: Mapping[str, Any] = field(default_factory=dict)
    """The class's keyword parameters that shape its API request (LiteLLMAPI's
    ``system_prompt``; :mod:`prompt_compiler.model.api_requests`)."""
    data_special_tokens: str = "split"
    """``split``: in default mode, special-token text from data is ordinary text in the ids;
    ``parse``: the tokenizer's encoding (:mod:`prompt_compiler.model.data_tokens`)."""

    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any], *, where: str = "model",
                  count_tokens: TokenCounter = whitespace_tokens) -> Model:
        """Build from a case-format model dict (``name``/``abbr``, ``renderer`` (or
        ``parser``), ``meta_template``...)."""
        if not isinstance(cfg, Mapping):
            raise ConfigError(f"a model config must be a dict, got {type(cfg).__name__}",
                              key_path=where)
        abbr = cfg.get("abbr") or cfg.get("name") or "model"
        model_type = cfg.get("type")
        class_name = str(model_type).rsplit(".", 1)[-1] if model_type is not None else None
        renderer = resolve_renderer(cfg, class_name, where=where, model=str(abbr)) or "lm"
        rkey = "renderer" if cfg.get("renderer") is not None or cfg.get("parser") is None \
            else "parser"
        raw = cfg.get("meta_template")
        from .system_role import check_system_role, native_meta

        system_role = check_system_role(cfg.get("system_role"), where=f"{where}.system_role",
                                        model=str(abbr))
        effective = raw or (DEFAULT_CHAT_META if renderer == "hf_chat" else None)
        if system_role == "native" and not isinstance(effective, list):
            # (a meta template of API messages sends a system message as it is)
            effective = native_meta(effective, renderer, model=str(abbr),
                                    where=f"{where}.system_role")
        try:
            meta = MetaTemplate.parse(effective,
                                      where=f"{where}.meta_template", lm=renderer == "lm")
        except PromptCompilerError as err:
            raise err.located(model=str(abbr)) from None
        if cfg.get("default_system") is not None and meta is not None and renderer == "lm":
            meta = replace(meta, default_system=_default_turn(meta, cfg["default_system"],
                                                              where, str(abbr)))
        max_len, batch_size, max_out, _ = (
            _optional_int(cfg, key, where, str(abbr))
            for key in ("max_seq_len", "batch_size", "max_out_len", "min_out_len"))
        chat_template = None
        if cfg.get("chat_template") is not None:
            from ..render.chat_template import ChatTemplate

            if renderer != "hf_chat":
                raise ConfigError(f"chat_template needs {rkey} 'hf_chat' (messages go through "
                                  "the model's chat template)", key_path=f"{where}.chat_template",
                                  model=str(abbr))
            if not isinstance(cfg["chat_template"], (str, os.PathLike)):
                raise ConfigError("chat_template must be template text or a path, got "
                                  f"{type(cfg['chat_template']).__name__}",
                                  key_path=f"{where}.chat_template", model=str(abbr))
            try:
                chat_template = ChatTemplate.load(cfg["chat_template"])
            except PromptCompilerError as err:
                raise err.located(model=str(abbr), key_path=f"{where}.chat_template") from None
            except OSError as exc:  # e.g. a "path" longer than the file system allows
                raise ConfigError(f"chat_template is not template text and cannot be read as "
                                  f"a path: {exc.strerror or exc}",
                                  key_path=f"{where}.chat_template", model=str(abbr)) from None
        api_format = cfg.get("api_format")
        if api_format is not None:
            from ..api_formats import DEFAULT_FORMATS

            if renderer == "lm":
                raise ConfigError("api_format applies to api or hf_chat models, not lm",
                                  key_path=f"{where}.api_format", model=str(abbr))
            try:
                DEFAULT_FORMATS.get(str(api_format))
            except PromptCompilerError as err:
                raise err.located(model=str(abbr), key_path=f"{where}.api_format") from None
        prompter = _prompter(cfg.get("prompter"), renderer, f"{where}.prompter", str(abbr))
        from . import chat_controls as cc

        kw_key = "chat_template_kwargs" if cfg.get("chat_template_kwargs") is not None \
            else "template_kwargs"
        if cfg.get("chat_template_kwargs") is not None and cfg.get("template_kwargs") is not None:
            raise ConfigError("give chat_template_kwargs or its older name template_kwargs, "
                              "not both", key_path=f"{where}.chat_template_kwargs",
                              model=str(abbr))
        kwargs = cfg.get(kw_key) or {}
        if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
            raise ConfigError(f"{kw_key} must be a dict of template variable names to values "
                              f"(e.g. {{enable_thinking: false}}), got {kwargs!r:.60}",
                              key_path=f"{where}.{kw_key}", model=str(abbr))
        prefix = cc.check_prefix(cfg.get("assistant_prefix"), where=f"{where}.assistant_prefix",
                                 model=str(abbr))
        tools = cc.check_dicts(cfg.get("tools"), "tools", where=f"{where}.tools",
                               model=str(abbr))
        documents = cc.check_dicts(cfg.get("documents"), "documents",
                                   where=f"{where}.documents", model=str(abbr))
        for key, value in (("tools", tools), ("documents", documents)):
            if value is not None and chat_template is None:
                chat_template = _tokenizer_template(renderer, count_tokens, key,
                                                    f"{where}.{key}", str(abbr))
        date_text, now = cc.parse_date(cfg.get("date"), where=f"{where}.date", model=str(abbr))
        date = None
        if chat_template is not None:
            tokens = cc.tokenizer_special_tokens(count_tokens)
            if tokens:  # the tokenizer's own tokens, as transformers renders any template
                chat_template = replace(chat_template, special_tokens={
                    **chat_template.special_tokens, **tokens})
            if cc.prints_date(chat_template):
                chat_template, date = chat_template.with_now(now), date_text
        if system_role == "native" and chat_template is not None:
            from .system_role import chat_template_system

            handled = chat_template_system(chat_template)
            if handled != "native":
                raise ConfigError(
                    f"system_role: native, but the model's chat template "
                    f"{ {'error': 'rejects', 'merged': 'merges', 'dropped': 'drops'}[handled]} "
                    "a system message",
                    key_path=f"{where}.system_role", model=str(abbr),
                    hint="use system_role: merge (fold it into the first user turn) or drop")
        stop_words = cfg.get("stop_words") or ()
        if isinstance(stop_words, str) or not isinstance(stop_words, (list, tuple)) or not all(
                isinstance(s, str) for s in stop_words):
            raise ConfigError(f"stop_words must be a list of strings, got {stop_words!r:.80}",
                              key_path=f"{where}.stop_words", model=str(abbr))
        tokenize = cfg.get("tokenize", False)
        if not isinstance(tokenize, bool):
            raise ConfigError(f"tokenize must be true or false, got {tokenize!r:.80}",
                              key_path=f"{where}.tokenize", model=str(abbr))
        if tokenize:
            from .token_ids import check_tokenize

            check_tokenize(renderer, count_tokens, where=where, model=str(abbr),
                           missing=missing_tokenizer(cfg))
        entry = find_class(class_name)
        options = request_options(entry.request_keys if entry is not None else (), cfg,
                                  where=where, model=str(abbr)) if renderer == "api" else {}
        return cls(str(abbr), renderer, meta, max_len, batch_size, count_tokens, raw,
                   chat_template, api_format, dict(kwargs), prompter, system_role,
                   class_name, prefix, tools, documents, date, max_out, tuple(stop_words),
                   tokenize, options,
                   check_mode(cfg.get("data_special_tokens"), where=where, model=str(abbr)))

    def with_dataset_keys(self, dataset: Mapping[str, Any]) -> Model:
        """This model with a dataset's ``assistant_prefix`` / ``tools`` / ``documents``
        (each wins over the model's own)."""
        from . import chat_controls as cc

        changes: dict[str, Any] = {}
        if dataset.get("assistant_prefix") is not None:
            changes["assistant_prefix"] = cc.check_prefix(
                dataset["assistant_prefix"], where="assistant_prefix")
        for key in ("tools", "documents"):
            if dataset.get(key) is not None:
                changes[key] = cc.check_dicts(dataset[key], key, where=key)
                if self.chat_template is None and "chat_template" not in changes:
                    changes["chat_template"] = _tokenizer_template(
                        self.renderer, self.count_tokens, key, key, self.abbr)
        return replace(self, **changes) if changes else self

    @property
    def parser(self) -> str:
        """Deprecated: the old name of :attr:`renderer`."""
        import warnings

        warnings.warn("Model.parser is deprecated; use Model.renderer", DeprecationWarning,
                      stacklevel=2)
        return self.renderer

    @property
    def is_api(self) -> bool:
        return self.renderer == "api"

    def render(self, prompt: Any, mode: str, policy: Policy) -> Any:
        """The model input for a compiled prompt (``mode``: ``gen`` or ``ppl``)."""
        try:
            if self.system_role is not None:
                from .system_role import apply_system_role

                prompt = apply_system_role(prompt, self.system_role, model=self.abbr)
            if self.renderer == "lm":
                rendered = render_lm(prompt, self.meta, mode, policy)
            else:
                rendered = render_api(prompt, self.meta, mode, policy)
            if mode == "gen" and self.assistant_prefix is not None:
                return _with_prefix(rendered, self.assistant_prefix, self.renderer == "lm")
            return rendered
        except PromptCompilerError as err:
            raise err.located(model=self.abbr, key_path="model.meta_template") from None

    def chat_messages(self, rendered: Any, policy: Policy, mode: str = "gen"
                      ) -> list[dict[str, str]] | None:
        """OpenAI messages for chat-template models (``None`` for other renderers).

        OpenCompass converts a prompt into chat messages when it generates; a message list
        that is already OpenAI-style fails there (D18), not in the scoring modes."""
        if self.renderer != "hf_chat" or isinstance(rendered, PromptList):
            return None  # (an unparsed prompt: OpenCompass's CLP scores it as it is, D9)
        return to_chat_messages(rendered, pass_openai=policy.fixes("D18") or mode != "gen")

    def deliver(self, rendered: Any, mode: str, policy: Policy) -> Any:
        """What the model finally receives, when it differs from ``rendered`` and
        :meth:`chat_messages`: the chat template's text, or the API format's request."""
        if self.chat_template is None and self.api_format is None and self.prompter is None:
            return None
        if isinstance(rendered, PromptList):  # unparsed (CLP, D9): nothing to deliver but it
            return None
        messages = to_chat_messages(rendered,
                                    pass_openai=policy.fixes("D18") or mode != "gen")
        if self.prompter is not None:
            # The last user turn is the input; earlier turns (system aside) are the history.
            turns = [m for m in messages if m["role"] != "system"]
            last = turns.pop() if turns and turns[-1]["role"] == "user" else {"content": ""}
            return self.prompter.generate_prompt(last["content"], history=turns or None)
        if self.chat_template is not None:
            # A reply prefix is the last (assistant) message, left open for the model.
            prefill = mode == "gen" and self.assistant_prefix is not None
            try:
                text = self.chat_template.render(
                    messages, add_generation_prompt=mode == "gen" and not prefill,
                    continue_final_message=prefill, tools=self.tools, documents=self.documents,
                    **self.template_kwargs)
            except PromptCompilerError as err:
                raise _chat_template_located(err) from None
            if policy.fixes("D21"):
                return text
            from .token_ids import lmdeploy_text  # compat: the text lmdeploy is handed

            return lmdeploy_text(self, text)
        from ..api_formats import format_chat

        return format_chat(str(self.api_format), messages)

    @property
    def openai_shaped(self) -> bool:
        """True when an API model's requests are OpenAI messages (no class, or an OpenAI class)."""
        if self.renderer != "api":
            return False
        entry = find_class(self.model_class)
        return self.model_class is None or (entry is not None and entry.openai_shaped)

    def api_request(self, rendered: Any) -> Any:
        """The request this API model's class builds from ``rendered``
        (:mod:`prompt_compiler.model.api_requests`), or ``None`` when the class sends the
        parser's output as it is."""
        if self.renderer != "api" or isinstance(rendered, PromptList):
            return None
        entry = find_class(self.model_class)
        build = openai_messages if self.model_class is None \
            else entry.request if entry is not None else None
        if build is None:
            return None
        try:
            return build(rendered, self.request_options)
        except PromptCompilerError as err:
            raise err.located(model=self.abbr) from None

    def inputs(self, rendered: Any, mode: str, policy: Policy) -> tuple[Any, Any, Any]:
        """``(receives, chat_messages, delivered)`` for a rendered prompt.

        ``receives`` is exactly what the model gets: the chat template's text, the API
        format's request or the prompter's output when configured; else OpenAI messages
        for chat-template models; else the request an API model's class builds
        (:meth:`api_request`); else ``rendered`` (the LM string, or another API class's
        OpenCompass messages).
        """
        chat = self.chat_messages(rendered, policy, mode)
        delivered = self.deliver(rendered, mode, policy)
        if delivered is not None:
            return delivered, chat, delivered
        if chat is not None:
            return chat, chat, None
        request = self.api_request(rendered)
        return (rendered if request is None else request), chat, None

    def token_len(self, rendered: Any) -> int:
        """Tokens of a rendered prompt, counted as OpenCompass's model class counts them.

        With the built-in counters a raw message list counts each message's repr. With a
        real tokenizer (:mod:`prompt_compiler.model.tokenize`): ``lm`` and ``api`` models count
        the prompt text with the tokenizer's special tokens (``tokenizer.encode(text)``;
        tiktoken adds none), ``hf_chat`` models count the chat template's text for one user
        turn holding the prompt, with a generation prompt and no added special tokens
        (HuggingFacewithChatTemplate.get_token_len).
        """
        counter = self.count_tokens
        text = prompt_text(rendered)
        if not isinstance(counter, Tokenizer):
            if isinstance(text, str):
                return counter(text)
            return sum(counter(t) for t in text)
        if self.renderer != "hf_chat":
            if isinstance(text, str):
                return counter.count(text)
            return sum(counter.count(t) for t in text)
        template = self.chat_template if self.chat_template is not None else counter.chat_template
        if template is None:
            raise ConfigError(
                "an hf_chat model counts tokens on its chat template's text, but neither the "
                f"model nor the tokenizer ({counter.name}) has a chat_template",
                key_path="model.chat_template", model=self.abbr,
                hint="give the model a chat_template, or a tokenizer folder whose "
                     "tokenizer_config.json has one")
        if isinstance(text, str):
            messages: _Chat = ((("role", "user"), ("content", text)),)
        else:  # raw OpenAI messages (default mode, D18) go to the template as they are
            messages = tuple(tuple(m.items()) for m in rendered if isinstance(m, Mapping))
        try:
            return _chat_token_len(template, counter, messages)
        except TypeError:  # unhashable content (multimodal blocks): count without the cache
            return _chat_token_len.__wrapped__(template, counter, messages)


_UNDEFINED_TOKEN = re.compile(r"'(\w+_token)' is undefined")


def _chat_template_located(err: PromptCompilerError) -> PromptCompilerError:
    """A chat template's render error at the model's ``chat_template`` key; a special token
    the template lacks gets the hint that the model's tokenizer supplies them."""
    if err.key_path is None or err.key_path.startswith("chat_template"):
        err.key_path = "model." + (err.key_path or "chat_template")
    missing = _UNDEFINED_TOKEN.search(err.message)
    if missing and err.hint is None:
        err.hint = (f"the template reads the tokenizer's {missing.group(1)}: give the model a "
                    "tokenizer (a folder with tokenizer_config.json), as transformers renders "
                    "a template with its tokenizer's special tokens")
    return err


def _with_prefix(rendered: Any, prefix: str, lm: bool) -> Any:
    """A gen prompt with the reply's first text: appended to a string (after the meta
    template's generation prompt), or a final assistant message (a prefill) for messages."""
    from ..render.api import ApiPrompt, is_message_list

    if isinstance(rendered, str):
        if lm:
            return rendered + prefix
        rendered = ApiPrompt([{"role": "HUMAN", "prompt": rendered}])
    if isinstance(rendered, ApiPrompt):
        return ApiPrompt([*rendered, {"role": "BOT", "prompt": prefix}])
    if is_message_list(rendered):
        return [*rendered, {"role": "assistant", "content": prefix}]
    return rendered


@lru_cache(maxsize=1 << 14)
def _chat_token_len(template: Any, counter: Any, messages: _Chat) -> int:
    """Tokens of the chat-template text of ``messages`` (cached per distinct conversation)."""
    try:
        text = template.render([dict(m) for m in messages], add_generation_prompt=True)
    except PromptCompilerError as err:
        raise err.located(key_path="model.chat_template") from None
    n: int = counter.count(text, special_tokens=False)
    return n


def _takes_tokenizer_kwargs(class_name: Any) -> bool:
    """Whether the OpenCompass class hands ``tokenizer_kwargs`` to its tokenizer (an unknown
    class, one without recorded parameters, or none: taken as one that does)."""
    entry = find_class(class_name)
    return entry is None or entry.params is None or "tokenizer_kwargs" in entry.params


def _optional_int(cfg: Mapping[str, Any], key: str, where: str, abbr: str) -> Any:
    """``cfg[key]`` when it is an int or absent/None (the one check of a model's int keys)."""
    value = cfg.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ConfigError(f"'{key}' must be an integer or None, got {type(value).__name__}",
                      key_path=f"{where}.{key}", model=abbr)


def build_model(cfg: Mapping[str, Any] | Model, *, where: str = "model",
                counters: Mapping[str, TokenCounter] | None = None) -> Model:
    """A :class:`Model` from a model config, its ``tokenizer`` (or the class's default
    counter, :func:`~.tokenize.default_counter`) resolved by :func:`~.tokenize.token_counter`
    among ``counters`` (default: the registered ones).

    A model is built once per process: the :class:`Model` of a config built before (the same
    content, the same counter under its tokenizer's name, the same chat template file) is
    returned again (see :class:`_Built`); ``where`` only names the keys of an error."""
    if isinstance(cfg, Model):
        return cfg
    if not isinstance(cfg, Mapping):
        name: Any = "whitespace"
    elif "tokenizer" in cfg:
        name = cfg["tokenizer"]
    else:  # the folder its class loads (tokenizer_path, path), else the class's counter
        name = model_tokenizer(cfg) or default_counter(cfg)
    known = token_counters() if counters is None else counters
    named = known.get(name) if isinstance(name, str) else None
    key = _BUILT.key(cfg, name, named) if isinstance(cfg, Mapping) else None
    built = _BUILT.get(key)
    if built is not None:
        return built
    kwargs = cfg.get("tokenizer_kwargs") if isinstance(cfg, Mapping) else None
    if kwargs is not None and not _takes_tokenizer_kwargs(cfg.get("type")):
        kwargs = None  # that OpenCompass class loads its tokenizer without them
    if key is not None:  # the kept model holds none of the caller's (mutable) values
        cfg = copy.deepcopy(cfg)
    model = Model.from_dict(cfg, where=where, count_tokens=token_counter(
        name, where, counters, tokenizer_kwargs=kwargs if isinstance(kwargs, Mapping) else None))
    _BUILT.put(key, model, named)
    return model


class _Built:
    """The models built in this process, most recently used last (at most ``size``).

    A model's key is its config's content (plain data, dict order and value types included;
    a config holding anything else is built every time), its tokenizer's name, the identity of
    the counter registered under that name (a compiler's own counters win, and a counter
    registered after a first build is seen), the working directory (relative paths) and the
    size and time of the chat template file(s) it reads (an edited file is read again)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._models: OrderedDict[Any, tuple[Model, Any]] = OrderedDict()
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):  # a child forked while a thread held the lock
            os.register_at_fork(after_in_child=self._new_lock)

    def _new_lock(self) -> None:
        self._lock = threading.Lock()

    def key(self, cfg: Mapping[str, Any], name: Any, counter: Any) -> Any:
        """The key of ``cfg`` built with the counter ``name`` (``counter``: the registered
        one of that name, or None), or None for a config that is not plain data."""
        try:
            content, here = _frozen(cfg), os.getcwd()  # (a relative path reads from here)
        except (TypeError, OSError):
            return None
        return content, _frozen(name) if isinstance(name, str) else None, id(counter), here, \
            _file_stamp(cfg.get("chat_template"))

    def get(self, key: Any) -> Model | None:
        if key is None:
            return None
        with self._lock:
            found = self._models.get(key)
            if found is None:
                return None
            self._models.move_to_end(key)
            return found[0]

    def put(self, key: Any, model: Model, counter: Any) -> None:
        """Keep ``model`` (and ``counter``, so that its id names no other while kept)."""
        if key is None:
            return
        with self._lock:
            self._models[key] = (model, counter)
            while len(self._models) > self.size:
                self._models.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._models.clear()


_BUILT = _Built(64)


def _frozen(value: Any) -> Any:
    """``value`` as a hashable key that tells apart what ``==`` would not (``1``/``True``/
    ``1.0``, a list/a tuple, dict key order).

    Raises:
        TypeError: It holds something other than plain data.
    """
    kind = type(value)
    if kind is dict:
        return kind, tuple((_frozen(k), _frozen(v)) for k, v in value.items())
    if kind is list or kind is tuple:
        return kind, tuple(_frozen(item) for item in value)
    if kind is float:
        return kind, repr(value)
    if value is None or kind in (str, int, bool):
        return kind, value
    raise TypeError(kind.__name__)


def _file_stamp(value: Any) -> Any:
    """Size and modification time of a chat template path (a model folder: of its files)."""
    if not isinstance(value, str) or "{" in value or "\n" in value:
        return None  # (template text, or none)
    try:
        path = Path(value).expanduser()
        if not path.is_dir():
            found = path.stat()
            return found.st_size, found.st_mtime_ns
        return tuple(sorted((entry.name, entry.stat().st_size, entry.stat().st_mtime_ns)
                            for entry in os.scandir(path) if entry.is_file()))
    except (OSError, ValueError):
        return None


def manifest_models(models: Iterable[Any], mode: str = "default") -> dict[str, dict[str, Any]]:
    """The manifest's ``models`` section: per model abbr (``ModelConfig`` objects), the date
    its chat template prints and its ``chat_template_kwargs`` with their sha256; models with
    neither are left out (so manifests of configs without them are unchanged). The models
    are the same in either ``mode``."""
    from .chat_controls import kwargs_sha256

    out: dict[str, dict[str, Any]] = {}
    for config in models:
        spec = config.spec
        if not any(spec.get(k) is not None for k in ("chat_template", "chat_template_kwargs",
                                                     "template_kwargs")):
            continue
        model = build_model(config.model_dict())
        entry: dict[str, Any] = {}
        if model.date is not None:
            entry["date"] = model.date
        if model.template_kwargs:
            entry["chat_template_kwargs"] = dict(model.template_kwargs)
            entry["chat_template_kwargs_sha256"] = kwargs_sha256(model.template_kwargs)
        if entry:
            out[config.abbr] = entry
    return out
