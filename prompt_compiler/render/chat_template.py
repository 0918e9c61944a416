"""Hugging Face chat templates, rendered with jinja2 alone.

A model's ``chat_template`` (a Jinja2 text shipped with its tokenizer) turns a list of
OpenAI-style messages into the exact string the model sees. This module reproduces what
``transformers``' ``apply_chat_template(..., tokenize=False)`` returns, byte for byte,
without depending on ``transformers`` or ``tokenizers``:

* the same engine setup: an immutable sandbox with ``trim_blocks``/``lstrip_blocks``, the
  ``loopcontrols`` extension and a ``{% generation %}`` block that simply renders its body;
* the same helpers: ``raise_exception(msg)``, ``strftime_now(fmt)`` and a ``tojson``
  filter that keeps non-ASCII text and accepts ``indent``/``separators``/``sort_keys``;
* the same variables: ``messages``, ``tools``, ``documents``, ``add_generation_prompt``,
  the tokenizer's special tokens (``bos_token``, ``eos_token``, ...) and any extra keyword
  (``enable_thinking=False``...), extras winning over special tokens;
* the same ``continue_final_message`` cut and named-template selection (``default``, and
  ``tool_use`` when tools are given).

``strftime_now`` reads the wall clock like transformers does, so templates that print
today's date are not reproducible; pin ``now=`` to make them so.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.parser
import jinja2.runtime

from ..errors import (
    ConfigError,
    DataError,
    PromptCompilerError,
    RenderError,
    TemplateError,
    TemplateSyntaxError,
    UnsupportedError,
)
from ..safety.jinja_sandbox import PromptSandbox, json_indent_check
from .chat_inputs import continue_fields, plain, prepare_messages, template_globals
from .chat_template_files import (
    SPECIAL_TOKEN_NAMES,
    named_templates,
    read_json_object,
    read_model_folder,
    read_text,
    special_tokens_from_config,
)

__all__ = ["SPECIAL_TOKEN_NAMES", "ChatTemplate", "RaisedTemplateError"]

#: Named special tokens a tokenizer exposes to its chat template (when set).

# The sentinel appended to the message being continued; everything from it on is cut.
# Same text as transformers so templates that transform content behave identically.
_CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "


class RaisedTemplateError(TemplateError):
    """The chat template itself called ``raise_exception(message)``.

    ``message`` (and ``str()``) is exactly the template's text, e.g. ``System role not
    supported``, so callers can show it as the model author wrote it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, reference=("TemplateError", message))


class _GenerationBlock(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: marks assistant text; renders its body.

    transformers uses the tag to compute assistant-token masks; for text output the
    block is transparent, but templates using it must still parse.
    """

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        # A call block (own scope), like the original, so `set` inside does not leak out.
        call = self.call_method("_body")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _body(self, caller: jinja2.runtime.Macro) -> str:
        return str(caller())


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """``tojson`` as chat templates expect it: plain ``json.dumps``, no HTML escaping.

    Defaults keep non-ASCII text and key order; with no ``indent`` the separators are
    ``", "``/``": "`` (``json.dumps``' own defaults).
    """
    json_indent_check(value, indent)  # indentation alone could pass the prompt-size limit
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: Any) -> None:
    raise RaisedTemplateError(str(message))


@dataclass(frozen=True, slots=True)
class ChatTemplate:
    """A model's chat template with its special tokens; renders conversations to text.

    Compiled templates are cached on the object, so render it many times rather than
    re-loading it per conversation.

    Attributes:
        source: The Jinja2 text used when no template name is requested.
        special_tokens: Template variables from the tokenizer (``bos_token`` ...).
        alternates: All named templates (``default``, ``tool_use``, ...) when the model
            ships several; empty for a single template.
        selected: The name ``source`` was loaded under when one was requested; ``None``
            means ``source`` is the default, and ``tool_use`` replaces it when tools are
            passed (as transformers does).
        origin: The file or folder the template came from (for error messages).
        now: A pinned date/time for ``strftime_now``; ``None`` reads the local clock.
    """

    source: str
    special_tokens: Mapping[str, Any] = field(default_factory=dict)
    alternates: Mapping[str, str] = field(default_factory=dict)
    selected: str | None = None
    origin: str | None = None
    now: datetime | None = None
    _env: PromptSandbox | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _compiled: dict[str, jinja2.Template] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not isinstance(self.source, str):
            raise ConfigError(
                f"a chat template must be a string, got {type(self.source).__name__}",
                config_path=self.origin, key_path="chat_template",
            )
        # Read-only copies: the object is a value; callers' dicts may change afterwards.
        object.__setattr__(self, "special_tokens", MappingProxyType(dict(self.special_tokens)))
        object.__setattr__(self, "alternates", MappingProxyType(dict(self.alternates)))
        object.__setattr__(self, "_env", self._make_env())
        self.compiled()  # a template that does not parse fails here, not at first render

    def __hash__(self) -> int:
        return hash((self.source, self.selected, self.origin, self.now))

    def __reduce__(self) -> tuple[Any, ...]:
        # The jinja environment holds closures; rebuild it (and the cache) after unpickling.
        return (
            _rebuild,
            (self.source, dict(self.special_tokens), dict(self.alternates),
             self.selected, self.origin, self.now),
        )

    # ----------------------------------------------------------------- loading

    @classmethod
    def from_string(
        cls,
        text: str,
        *,
        special_tokens: Mapping[str, Any] | None = None,
        now: datetime | None = None,
        origin: str | None = None,
    ) -> ChatTemplate:
        """A template from its Jinja2 text."""
        return cls(text, special_tokens=dict(special_tokens or {}), origin=origin, now=now)

    @classmethod
    def from_config(
        cls,
        config: Mapping[str, Any],
        *,
        name: str | None = None,
        special_tokens: Mapping[str, Any] | None = None,
        now: datetime | None = None,
        origin: str | None = None,
    ) -> ChatTemplate:
        """A template from a ``tokenizer_config.json``-shaped mapping.

        ``chat_template`` may be a string or a list of ``{"name", "template"}``; ``name``
        picks one (else ``default``). Special tokens are read from the config (strings or
        ``{"content": ...}`` token dicts); ``special_tokens`` overrides them.
        """
        if "chat_template" not in config or config["chat_template"] is None:
            raise ConfigError(
                "no 'chat_template' key; expected a template string or a list of "
                "{\"name\", \"template\"} objects", config_path=origin,
            )
        named = named_templates(config["chat_template"], origin)
        tokens = {**special_tokens_from_config(config, origin), **(special_tokens or {})}
        return cls._choose(named, name, tokens, now, origin)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        name: str | None = None,
        special_tokens: Mapping[str, Any] | None = None,
        now: datetime | None = None,
    ) -> ChatTemplate:
        """A template from a ``.json`` config (tokenizer_config / chat_template.json) or a
        Jinja2 text file (``.jinja`` or any other suffix)."""
        file = Path(path)
        if not file.is_file():
            raise ConfigError("no such file; expected a chat template file", config_path=str(file))
        if file.suffix.lower() == ".json":
            config = read_json_object(file)
            return cls.from_config(
                config, name=name, special_tokens=special_tokens, now=now, origin=str(file)
            )
        if name is not None:
            raise ConfigError(
                f"template name {name!r} requested, but a .jinja file holds a single template",
                config_path=str(file),
            )
        return cls.from_string(
            read_text(file), special_tokens=special_tokens, now=now, origin=str(file)
        )

    @classmethod
    def from_pretrained_dir(
        cls,
        path: str | os.PathLike[str],
        *,
        name: str | None = None,
        special_tokens: Mapping[str, Any] | None = None,
        now: datetime | None = None,
    ) -> ChatTemplate:
        """A template from a local model folder.

        Looks for ``chat_template.jinja``, then ``chat_template.json``, then the
        ``chat_template`` key of ``tokenizer_config.json``; ``additional_chat_templates/
        *.jinja`` add named templates. Special tokens come from ``tokenizer_config.json``
        and ``special_tokens_map.json`` (the latter wins, as in transformers).
        """
        folder = Path(path)
        named, tokens, origin = read_model_folder(folder)
        tokens.update(special_tokens or {})
        return cls._choose(named, name, tokens, now, origin)

    @classmethod
    def load(
        cls,
        path_or_text: str | os.PathLike[str],
        *,
        name: str | None = None,
        special_tokens: Mapping[str, Any] | None = None,
        now: datetime | None = None,
    ) -> ChatTemplate:
        """Template text, a template/config file, or a model folder, whichever is given.

        A ``str`` holding ``{`` or a newline is template text; any other ``str`` (and
        every ``PathLike``) is a path.
        """
        if isinstance(path_or_text, str) and ("{" in path_or_text or "\n" in path_or_text):
            if name is not None:
                raise ConfigError(f"template name {name!r} requested for a single template text")
            return cls.from_string(path_or_text, special_tokens=special_tokens, now=now)
        target = Path(path_or_text)
        if target.is_dir():
            return cls.from_pretrained_dir(
                target, name=name, special_tokens=special_tokens, now=now
            )
        if target.is_file():
            return cls.from_file(target, name=name, special_tokens=special_tokens, now=now)
        raise ConfigError(
            "neither an existing file or folder nor template text (template text contains "
            "'{{' or '{%')", config_path=str(target),
        )

    def with_now(self, now: datetime | None) -> ChatTemplate:
        """A copy whose ``strftime_now`` returns ``now`` (``None``: the real clock)."""
        return replace(self, now=now)

    # --------------------------------------------------------------- rendering

    def compiled(self, template_name: str | None = None) -> jinja2.Template:
        """The compiled template for ``template_name`` (``None``: ``source``), cached."""
        text = self.source if template_name is None else self._named(template_name)
        template = self._compiled.get(text)
        if template is None:
            template = self._compile(text, template_name)
            self._compiled[text] = template
        return template

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        add_generation_prompt: bool = False,
        continue_final_message: bool | str = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        documents: Sequence[Mapping[str, Any]] | None = None,
        template_name: str | None = None,
        **template_kwargs: Any,
    ) -> str:
        """The model input for one conversation, as ``apply_chat_template(tokenize=False)``.

        Args:
            messages: OpenAI-style messages (``{"role", "content", ...}`` dicts).
            add_generation_prompt: Append the header that opens an assistant turn.
            continue_final_message: Leave the last message open so the model continues it:
                the text from the end of that message on is cut. ``True`` continues its
                ``content``; a string names another field (e.g. ``reasoning_content``).
            tools: JSON-schema tool descriptions, passed as ``tools``.
            documents: Retrieval documents (dicts), passed as ``documents``.
            template_name: Use this named template instead of the default.
            **template_kwargs: More template variables (``enable_thinking=False`` ...);
                they override special tokens of the same name.

        Raises:
            RaisedTemplateError: The template called ``raise_exception``.
            RenderError: The template failed on this input (undefined attribute, ...).
            UnsupportedError: Both ``add_generation_prompt`` and ``continue_final_message``.
        """
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise RenderError(
                f"messages must be a list of message dicts, got {type(messages).__name__}"
            )
        if continue_final_message and add_generation_prompt:
            raise UnsupportedError(
                "add_generation_prompt opens a new assistant turn while continue_final_message "
                "leaves the last message open; set only one of them"
            )
        tool_schemas = plain(_check_tools(tools))
        if documents is not None:
            for i, document in enumerate(documents):
                if not isinstance(document, Mapping):
                    raise RenderError(
                        f"documents[{i}] must be a dict (with 'title' and 'text'), "
                        f"got {type(document).__name__}"
                    )
        if template_name is None and tools is not None and self.selected is None:
            template_name = "tool_use" if "tool_use" in self.alternates else None
        text = self.source if template_name is None else self._named(template_name)
        template = self.compiled(template_name)

        # transformers' pre-processing: None-valued keys dropped, plain data, reasoning aliased.
        chat: Sequence[Any] = prepare_messages(messages)
        continued: str | None = None
        if continue_final_message:
            key = continue_final_message if isinstance(continue_final_message, str) else "content"
            chat, continued = self._tag_final_message(chat, key, text)

        variables = plain({**self.special_tokens, **template_kwargs})
        try:
            rendered = template.render(
                messages=chat, tools=tool_schemas, documents=plain(documents),
                add_generation_prompt=add_generation_prompt, **variables,
            )
        except PromptCompilerError:
            raise
        except Exception as exc:  # anything the template trips on, with jinja's own wording
            raise RenderError(
                f"the chat template failed on this conversation: {type(exc).__name__}: {exc}",
                config_path=self.origin, key_path=_key_path(template_name),
                reference=(type(exc).__name__, str(exc)),
            ) from exc
        if continued is not None:
            rendered = self._cut_after_final(rendered, continued)
        return rendered

    # ---------------------------------------------------------------- internals

    @classmethod
    def _choose(
        cls,
        named: dict[str, str],
        name: str | None,
        tokens: Mapping[str, Any],
        now: datetime | None,
        origin: str | None,
    ) -> ChatTemplate:
        """Pick the requested (else the ``default``) template of a named set."""
        alternates = named if len(named) > 1 or "default" not in named else {}
        if name is not None:
            if name not in named:
                raise ConfigError(
                    f"no chat template named {name!r}; available: {sorted(named)}",
                    config_path=origin, key_path="chat_template",
                )
            return cls(named[name], special_tokens=tokens, alternates=named, selected=name,
                       origin=origin, now=now)
        if "default" not in named:
            raise ConfigError(
                f"several chat templates and none named 'default'; available: {sorted(named)}",
                config_path=origin, key_path="chat_template", hint="pass name=...",
            )
        return cls(named["default"], special_tokens=tokens, alternates=alternates,
                   origin=origin, now=now)

    def _named(self, template_name: str) -> str:
        if template_name in self.alternates:
            return self.alternates[template_name]
        if template_name == "default" and self.selected is None:
            return self.source
        raise ConfigError(
            f"no chat template named {template_name!r}; available: "
            f"{sorted(self.alternates) or ['default']}",
            config_path=self.origin, key_path="chat_template",
        )

    def _make_env(self) -> PromptSandbox:
        env = PromptSandbox(
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=[_GenerationBlock, jinja2.ext.loopcontrols],
        )
        pinned = self.now

        def strftime_now(format: str) -> str:
            # Local wall clock unless pinned: pinning is what makes the output reproducible.
            return (pinned if pinned is not None else datetime.now()).strftime(format)

        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = strftime_now
        env.globals.update(template_globals())  # restricted dict and namespace
        return env

    def _compile(self, text: str, template_name: str | None) -> jinja2.Template:
        assert self._env is not None
        try:
            return self._env.from_string(text)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateSyntaxError(
                f"the chat template does not parse: {exc.message} (line {exc.lineno})",
                config_path=self.origin, key_path=_key_path(template_name),
                reference=(type(exc).__name__, str(exc)),
            ) from exc

    @staticmethod
    def _tag_final_message(
        messages: Sequence[Mapping[str, Any]], key: str, text: str
    ) -> tuple[list[Any], str]:
        """A copy of ``messages`` whose last ``key`` text ends with the cut sentinel.

        Returns the copy and the original text being continued.
        """
        if not messages:
            raise DataError("continue_final_message needs at least one message")
        chat = copy.deepcopy(list(messages))
        last = chat[-1]
        if not isinstance(last, dict):
            raise RenderError(f"the last message must be a dict, got {type(last).__name__}")
        final = last.get(key)
        if final is None:
            raise DataError(f"continue_final_message: the last message has no {key!r} to continue")
        fields = continue_fields(last, key)  # a reasoning text continues in every copy
        if not any(f in text for f in fields):
            raise TemplateError(
                f"continue_final_message: the chat template never mentions {key!r}, so it "
                "cannot render the text to continue"
            )
        if isinstance(final, (list, tuple)):
            # Multimodal content: continue the last block that carries text.
            for block in reversed(final):
                if isinstance(block, dict) and "text" in block:
                    original = block["text"]
                    block["text"] = _append_tag(original)
                    return chat, str(original)
            raise DataError(
                "continue_final_message: the last message has no text block to continue"
            )
        for f in fields:
            last[f] = _append_tag(last[f])
        return chat, str(final)

    def _cut_after_final(self, rendered: str, continued: str) -> str:
        marker = _CONTINUE_TAG.strip()
        if continued.strip() not in rendered or marker not in rendered:
            raise TemplateError(
                "continue_final_message: the rendered chat does not contain the final message "
                "intact (the template alters or drops it), so it cannot be left open",
                config_path=self.origin, key_path="chat_template",
            )
        at = rendered.rindex(marker)
        if rendered.startswith(_CONTINUE_TAG, at):
            return rendered[:at]
        # The template trimmed the message's trailing space; trim what precedes the cut too.
        return rendered[:at].rstrip()


def _rebuild(
    source: str,
    special_tokens: dict[str, Any],
    alternates: dict[str, str],
    selected: str | None,
    origin: str | None,
    now: datetime | None,
) -> ChatTemplate:
    return ChatTemplate(source, special_tokens=special_tokens, alternates=alternates,
                        selected=selected, origin=origin, now=now)


def _append_tag(text: Any) -> str:
    if not isinstance(text, str):
        raise RenderError(
            "continue_final_message: the text to continue must be a string, "
            f"got {type(text).__name__}"
        )
    return text + _CONTINUE_TAG


def _key_path(template_name: str | None) -> str:
    return "chat_template" if template_name is None else f"chat_template[{template_name!r}]"


def _check_tools(tools: Sequence[Mapping[str, Any]] | None) -> list[Mapping[str, Any]] | None:
    if tools is None:
        return None
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence):
        raise ConfigError(f"tools must be a list of JSON-schema dicts, got {type(tools).__name__}")
    for i, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise ConfigError(
                f"tools[{i}] must be a JSON-schema dict (e.g. {{\"type\": \"function\", "
                f"\"function\": {{...}}}}), got {type(tool).__name__}"
            )
    return list(tools)
