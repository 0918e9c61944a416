"""Token ids: exactly the ids a local model is fed (``--tokenize`` / model key ``tokenize``).

Needs the model's ``tokenizer`` (a Hugging Face ``tokenizer.json``, its folder or its
``tokenizer_config.json``). The text encoded is what the model receives: the ``lm`` prompt
string, or the chat template's text for ``hf_chat`` models (the model's ``chat_template``,
else the tokenizer folder's).

**Compat mode** (``--mode opencompass``) encodes as OpenCompass 0.5.4's model classes do:

* ``lm`` models (HuggingFaceBaseModel, HuggingFaceCausalLM, VLLM): ``tokenizer(text)``, with
  the special tokens the tokenizer's post-processor adds. A BOS the meta template already
  wrote is then doubled (defect D21);
* ``hf_chat`` models (HuggingFacewithChatTemplate, VLLMwithChatTemplate): the template's
  text encoded without special tokens (``add_special_tokens=False``): a BOS comes only from
  the template, so a template that writes none drops the tokenizer's (defect D28);
  TurboMindModelwithChatTemplate: the template's text less a leading ``bos_token`` (the
  record's ``prompt``: :func:`lmdeploy_text`), encoded by lmdeploy with the tokenizer's
  special tokens, so a tokenizer whose post-processor adds no
  BOS (Llama 3 with a named ``bos_token``) loses the template's (D21).

**Default mode** (D21): exactly one BOS where the model has one (the token the post-processor puts
first, else the tokenizer's named ``bos_token``), never two and never a stray one: the text
is encoded without special tokens, leading BOS copies are collapsed to one and a missing one
is prepended; nothing else is added (no EOS/SEP after the prompt). A model whose tokenizer
names no BOS gets the text's ids as they are.

**mask_length** (PPL, CLP and LL records: the first ``mask_length`` ids are context, not
scored; OpenCompass's ``get_ppl(inputs, mask_length)`` name):

* ``ppl``: ``0`` (OpenCompass scores every token), or with ``normalizing_str`` the tokens of
  the context before the answer, as OpenCompass counts them (``get_token_len_from_template``);
* ``clp``: ``len(input_ids)``: the scored token is the one after the prompt;
* ``ll``: compat: what HuggingFaceBaseModel.get_loglikelihood passes, the continuation's
  token count (so OpenCompass masks the first tokens of the context instead: defect D22);
  default: the context's token count, with ``input_ids`` the context's ids followed by the
  continuation's (``context + continuation`` split as lm-evaluation-harness does).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..errors import ConfigError, PromptCompilerError, RenderError
from .classes import find_class
from .hub import FETCH_HINT

__all__ = ["BosRule", "IdsJson", "RecordIds", "check_tokenize", "lmdeploy_text", "one_bos",
           "prompt_ids"]


def _lmdeploy(model: Any) -> bool:
    """Whether lmdeploy encodes the model class's chat text (its row in :mod:`.classes`)."""
    entry = find_class(getattr(model, "model_class", None))
    return entry is not None and entry.lmdeploy


def check_tokenize(renderer: str, counter: Any, *, where: str, model: str,
                   missing: tuple[str, str] | None = None) -> None:
    """Refuse ``tokenize`` where there are no ids to give (``missing``: the model's
    ``tokenizer_path``/``path`` key and where it was looked for, :mod:`.hub`)."""
    from .tokenize import HFTokenizer

    if renderer == "api":
        raise ConfigError("tokenize: true gives the token ids a local model is fed; an API "
                          "model (renderer 'api') is sent text", key_path=f"{where}.tokenize",
                          model=model, hint="drop tokenize for this model")
    if not isinstance(counter, HFTokenizer) and missing is not None:
        raise ConfigError(f"tokenize: true needs the model's tokenizer: {missing[1]}",
                          key_path=f"{where}.{missing[0]}", model=model, hint=FETCH_HINT)
    if not isinstance(counter, HFTokenizer):
        raise ConfigError(
            "tokenize: true needs the model's tokenizer: set "
            f"{where}.tokenizer to a tokenizer.json, its folder or its tokenizer_config.json",
            key_path=f"{where}.tokenizer", model=model)


def model_bos(tokenizer: Any) -> int | None:
    """The model's BOS id: what the post-processor puts first, else the named ``bos_token``."""
    prefix = tokenizer.added_prefix
    if prefix:
        first: int = prefix[0]
        return first
    found: int | None = tokenizer.bos_id
    return found


def lmdeploy_text(model: Any, text: str) -> str:
    """The chat template's text as TurboMindModelwithChatTemplate hands it to lmdeploy: less
    one leading ``bos_token`` of the tokenizer (OpenCompass's workaround for lmdeploy adding
    special tokens); other models' text as it is. Compat mode only (D21)."""
    if not _lmdeploy(model):
        return text
    special = getattr(model.count_tokens, "special", None)
    if special is None and model.chat_template is not None:
        special = model.chat_template.special_tokens
    bos = (special or {}).get("bos_token")
    if isinstance(bos, str) and bos and text.startswith(bos):
        return text[len(bos):]
    return text


@dataclass(frozen=True, slots=True)
class BosRule:
    """How a prompt's ids follow from its body ids (the text encoded without special
    tokens): ``lead`` put first, after dropping the body's leading copies of ``collapse``.
    The one place of the BOS rule of the module docstring (compat and default mode)."""

    lead: tuple[int, ...] | None
    """The ids put before the body; ``None``: the ids are ``encode(text)`` with the
    post-processor's special tokens, which add more than a beginning (compat mode)."""
    collapse: int | None = None
    """Default mode: the BOS, whose leading copies in the body become the one in ``lead``."""

    @classmethod
    def of(cls, model: Any, policy: Any) -> BosRule:
        """The rule of ``model``'s ids under ``policy`` (D21 fixed or not)."""
        tokenizer = model.count_tokens
        if policy.fixes("D21"):
            return cls.one_bos(tokenizer)
        if model.renderer == "hf_chat" and not _lmdeploy(model):
            return cls(())  # the template's text alone, no special tokens added (D28)
        # lm models, and the text OpenCompass hands lmdeploy (already less its leading
        # bos_token: lmdeploy_text): encoded with the post-processor's special tokens
        # (lmdeploy's HuggingFaceTokenizer.encode)
        return cls(tokenizer.full_prefix())

    @classmethod
    def one_bos(cls, tokenizer: Any) -> BosRule:
        """Default mode (D21): exactly one leading BOS where the model has one."""
        bos = model_bos(tokenizer)
        return cls((), None) if bos is None else cls((bos,), bos)

    def keeps(self, body: list[int]) -> bool:
        """Whether the body's ids stay as they are behind :attr:`lead` (nothing collapses)."""
        return self.collapse is None or body[:1] != [self.collapse]

    def apply(self, body: list[int]) -> list[int]:
        """The prompt's ids from its body ids (``lead`` must not be ``None``)."""
        assert self.lead is not None
        start, bos = 0, self.collapse
        if bos is not None:
            while start < len(body) and body[start] == bos:
                start += 1
        return [*self.lead, *body[start:]]


def prompt_ids(model: Any, text: str, policy: Any) -> list[int]:
    """The ids of one prompt text (already the chat template's text for ``hf_chat``)."""
    tokenizer = model.count_tokens
    rule = BosRule.of(model, policy)
    if rule.lead is None:
        return list(tokenizer.encode(text))
    return rule.apply(list(tokenizer.body_ids(text)))


def one_bos(tokenizer: Any, body: list[int]) -> list[int]:
    """Default mode (D21): ``body`` (ids without special tokens added) with exactly one
    leading BOS where the model has one."""
    return BosRule.one_bos(tokenizer).apply(body)


class RecordIds:
    """Adds ``input_ids`` (and ``mask_length``) to the records of one job.

    Args:
        split: Where data's special-token text lies in a record's text
            (:class:`prompt_compiler.assemble.spans.DataSplit`; default mode, D23), or None.
        only_split: Only records whose data holds special-token text get ids (a model
            without ``tokenize``: their engine lines must carry the ids).
    """

    def __init__(self, job: Any, split: Any = None, *, only_split: bool = False) -> None:
        self.job, self.model = job, job.model
        self.policy = job.policy
        self.tokenizer = job.model.count_tokens
        self.split, self.only_split = split, only_split

    def text(self, rec: Any) -> str:
        """The text the model's tokenizer encodes for this record."""
        model = self.model
        if model.renderer == "hf_chat":
            if isinstance(rec.model_input, str):
                return str(rec.model_input)
            template = model.chat_template or self.tokenizer.chat_template
            if template is None:
                raise ConfigError(
                    "tokenize: an hf_chat model's ids are its chat template's text, but neither "
                    f"the model nor its tokenizer ({self.tokenizer.name}) has a chat_template",
                    key_path="model.chat_template", model=model.abbr)
            # the tokenizer folder's template, rendered as the model's own would be
            with_template = replace(model, chat_template=template)
            return str(with_template.deliver(rec.rendered, "ppl" if rec.mode in ("ppl", "ll")
                                             else "gen", self.policy))
        if not isinstance(rec.prompt, str):
            raise RenderError("tokenize: this prompt is not one text (a message list), so it "
                              "has no token ids", model=model.abbr)
        return rec.prompt

    def ids(self, text: str) -> list[int]:
        return prompt_ids(self.model, text, self.policy)

    def add(self, rec: Any) -> Any:
        try:
            data = None if self.split is None else self.split.ranges(rec, self.text)
            if data is None and self.only_split:
                return rec
            text = self.text(rec)
        except PromptCompilerError as err:
            raise err.located(model=self.model.abbr, row=rec.index) from None
        mask = None
        if data is not None:  # D23: data's special-token text encoded as ordinary text
            ids = one_bos(self.tokenizer, self.split.tokens.encode(text, data))
            if rec.mode == "clp":
                mask = len(ids)
            elif rec.mode == "ll":
                cont = str(rec.extra.get("continuation", ""))
                n = len(self.tokenizer.encode(cont, special_tokens=False)) if cont else 0
                mask = max(len(ids) - n, 0)
            elif rec.mode == "ppl":
                mask = self._ppl_mask(rec)
        elif rec.mode == "ll" and self.policy.fixes("D22"):
            ids, mask = self._split(text, str(rec.extra.get("continuation", "")))
        else:
            ids = self.ids(text)
            if rec.mode == "clp":
                mask = len(ids)
            elif rec.mode == "ll":
                mask = len(self.tokenizer.encode(str(rec.extra.get("continuation", "")),
                                                 special_tokens=False))
            elif rec.mode == "ppl":
                mask = self._ppl_mask(rec)
        return replace(rec, input_ids=tuple(ids), mask_length=mask)

    def _ppl_mask(self, rec: Any) -> int:
        """0, or with ``normalizing_str`` the ids of the rendered context (as OpenCompass's
        ``get_token_len_from_template(context)`` counts them in compat mode)."""
        context = rec.extra.get("context") if rec.extra else None
        if not isinstance(context, str):
            return 0
        rendered = self.model.render(context, "ppl", self.policy)
        if not isinstance(rendered, str):
            return 0
        return len(self.ids(rendered))

    def _split(self, text: str, cont: str) -> tuple[list[int], int]:
        """Default-mode LL: the context's ids, then the continuation's."""
        if cont and text.endswith(cont):
            context = self.ids(text[:len(text) - len(cont)])
            return context + list(self.tokenizer.encode(cont, special_tokens=False)), len(context)
        ids = self.ids(text)
        n = len(self.tokenizer.encode(cont, special_tokens=False)) if cont else 0
        return ids, max(len(ids) - n, 0)


class IdsJson:
    """The JSON text of a prompt's ``input_ids`` (``[1, 2, 3]``), as
    :func:`~prompt_compiler.emit.records.record_bytes` writes :func:`prompt_ids`'s list
    (the same :class:`BosRule`), with the JSON of a reused shared beginning
    (:mod:`.fast_ids`) written once."""

    def __init__(self, job: Any) -> None:
        self.model, self.policy = job.model, job.policy
        self.rule = BosRule.of(job.model, job.policy)
        self.fast = job.model.count_tokens.body_encoder
        self.heads: dict[str, bytes] = {}

    def __call__(self, text: str) -> bytes:
        rule = self.rule
        if rule.lead is None:
            return repr(prompt_ids(self.model, text, self.policy)).encode()
        prefix, head_ids, rest = self.fast.encode_parts(text)
        if not prefix:
            return repr(rule.apply(rest)).encode()
        if not rule.keeps(head_ids):
            return repr(rule.apply(head_ids + rest)).encode()
        head = self.heads.get(prefix)
        if head is None:
            if len(self.heads) > 64:
                self.heads.clear()
            head = self.heads[prefix] = ", ".join(map(str, [*rule.lead, *head_ids])).encode()
        if not rest:
            return b"[" + head + b"]"
        # a list of ints' repr is its JSON as record_bytes writes it ("1, 2")
        return b"[" + head + b", " + repr(rest)[1:].encode()
