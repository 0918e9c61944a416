"""Where a chat template and its special tokens come from: tokenizer configs, files, folders.

A model ships its chat template as ``chat_template.jinja``, ``chat_template.json``, the
``chat_template`` key of ``tokenizer_config.json`` (a string, or named templates) and
``additional_chat_templates/*.jinja``; its special tokens come from ``tokenizer_config.json``
and ``special_tokens_map.json``. These functions read them as transformers 5 does and give
:class:`~prompt_compiler.render.chat_template.ChatTemplate` plain names, texts and tokens.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError

__all__ = ["SPECIAL_TOKEN_NAMES", "folder_special_tokens", "merge_tokens_map", "named_templates",
           "read_json_object", "read_model_folder", "read_text", "special_tokens_from_config"]

SPECIAL_TOKEN_NAMES = (
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
)


def read_model_folder(folder: Path) -> tuple[dict[str, str], dict[str, Any], str]:
    """A model folder's named templates, special tokens and the file the templates came from."""
    if not folder.is_dir():
        raise ConfigError(
            "not a folder; expected a local model folder", config_path=str(folder)
        )
    config_file = folder / "tokenizer_config.json"
    config = read_json_object(config_file) if config_file.is_file() else {}
    tokens = folder_special_tokens(folder, config)

    jinja_file, json_file = folder / "chat_template.jinja", folder / "chat_template.json"
    if jinja_file.is_file():
        named, origin = {"default": read_text(jinja_file)}, str(jinja_file)
    elif json_file.is_file():
        data = read_json_object(json_file)
        if data.get("chat_template") is None:
            raise ConfigError("no 'chat_template' key", config_path=str(json_file))
        named, origin = named_templates(data["chat_template"], str(json_file)), str(json_file)
    elif config.get("chat_template") is not None:
        named = named_templates(config["chat_template"], str(config_file))
        origin = str(config_file)
    else:
        named, origin = {}, str(folder)
    extra_dir = folder / "additional_chat_templates"
    if extra_dir.is_dir():
        for extra in sorted(extra_dir.glob("*.jinja")):
            named.setdefault(extra.stem, read_text(extra))
    if not named:
        raise ConfigError(
            "no chat template found; expected chat_template.jinja, chat_template.json or a "
            "'chat_template' key in tokenizer_config.json", config_path=str(folder),
        )
    return named, tokens, origin


def folder_special_tokens(folder: Path, config: Mapping[str, Any] | None = None
                          ) -> dict[str, Any]:
    """The special tokens a tokenizer folder gives a chat template, as transformers 5 reads
    them: ``tokenizer_config.json``'s, overlaid with ``special_tokens_map.json``'s.

    ``config``: the folder's ``tokenizer_config.json`` when already read. A folder with
    neither file gives no tokens (a bare ``tokenizer.json`` names none).
    """
    config_file = folder / "tokenizer_config.json"
    if config is None:
        config = read_json_object(config_file) if config_file.is_file() else {}
    tokens = special_tokens_from_config(config, str(config_file))
    map_file = folder / "special_tokens_map.json"
    if map_file.is_file():
        token_map = read_json_object(map_file)
        tokens = merge_tokens_map(
            tokens, special_tokens_from_config(token_map, str(map_file), tokens_map=True),
            token_map.get("extra_special_tokens"))
    return tokens


def special_tokens_from_config(
    config: Mapping[str, Any], origin: str | None = None, *, tokens_map: bool = False
) -> dict[str, Any]:
    """The special-token variables a tokenizer config gives its chat template.

    As transformers 5 loads them: the named tokens (``bos_token`` ... ``mask_token``, strings or
    ``{"content": ...}`` token dicts; ``null`` skipped), every other top-level ``*_token`` key
    holding a string or an ``AddedToken`` dict (``image_token`` ...), and the named tokens of a
    dict-valued ``extra_special_tokens`` (which win over those). List-valued
    ``additional_special_tokens``/``extra_special_tokens`` are not template variables.
    ``tokens_map=True`` reads a ``special_tokens_map.json``, where any token dict counts.
    """
    tokens: dict[str, Any] = {}
    for key in SPECIAL_TOKEN_NAMES:
        if config.get(key) is not None:
            tokens[key] = _token_text(config[key], key, origin)
    for key, value in config.items():
        if (isinstance(key, str) and key.endswith("_token") and key not in SPECIAL_TOKEN_NAMES
                and (isinstance(value, str) or _is_added_token(value, tokens_map))):
            tokens[key] = _token_text(value, key, origin)
    extra = config.get("extra_special_tokens")
    if isinstance(extra, Mapping):
        for key, value in extra.items():
            if value is not None:
                tokens[str(key)] = _token_text(value, f"extra_special_tokens.{key}", origin)
    return tokens


def _is_added_token(value: Any, any_dict: bool) -> bool:
    """A token dict transformers turns into an ``AddedToken`` (``__type`` marks it in configs)."""
    return (isinstance(value, Mapping) and isinstance(value.get("content"), str)
            and (any_dict or value.get("__type") == "AddedToken"))


def merge_tokens_map(config_tokens: Mapping[str, Any], map_tokens: Mapping[str, Any],
                     map_extra: Any) -> dict[str, Any]:
    """Tokens of tokenizer_config.json overlaid with special_tokens_map.json, as transformers does.

    The map's named tokens win; its other ``*_token`` keys only fill names the config lacks;
    its dict-valued ``extra_special_tokens`` win over both.
    """
    merged = dict(config_tokens)
    for key, value in map_tokens.items():
        if key in SPECIAL_TOKEN_NAMES or key not in merged:
            merged[key] = value
    if isinstance(map_extra, Mapping):
        merged.update({k: v for k, v in map_tokens.items() if k in map_extra})
    return merged


def named_templates(value: Any, origin: str | None) -> dict[str, str]:
    """``chat_template`` as name -> text: a string is ``default``; lists/dicts keep names."""
    if isinstance(value, str):
        return {"default": value}
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, list):
        items = []
        for i, entry in enumerate(value):
            if not (isinstance(entry, Mapping) and isinstance(entry.get("name"), str)
                    and isinstance(entry.get("template"), str)):
                raise ConfigError(
                    "expected {\"name\": str, \"template\": str}", config_path=origin,
                    key_path=f"chat_template[{i}]",
                )
            items.append((entry["name"], entry["template"]))
    else:
        raise ConfigError(
            f"expected a template string or a list of {{\"name\", \"template\"}} objects, "
            f"got {type(value).__name__}", config_path=origin, key_path="chat_template",
        )
    named: dict[str, str] = {}
    for key, text in items:
        if not isinstance(text, str):
            raise ConfigError("expected a template string", config_path=origin,
                              key_path=f"chat_template[{key!r}]")
        named[str(key)] = text
    if not named:
        raise ConfigError("the list of chat templates is empty", config_path=origin,
                          key_path="chat_template")
    return named


def _token_text(value: Any, key: str, origin: str | None) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])
    raise ConfigError(
        f"expected a token string or a {{\"content\": str}} token dict, got {value!r}",
        config_path=origin, key_path=key,
    )


def read_text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read the file as UTF-8 text: {exc}", config_path=str(file)
        ) from exc


def read_json_object(file: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_text(file))
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
            config_path=str(file),
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(
            f"expected a JSON object, got {type(data).__name__}", config_path=str(file)
        )
    return data
