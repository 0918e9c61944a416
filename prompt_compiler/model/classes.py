"""What this project knows of each OpenCompass 0.5.4 model class, in one table.

One :class:`ModelClass` per class name found in configs (``type=HuggingFaceCausalLM``),
in :data:`MODEL_CLASSES`; every module that needs a fact about a class asks
:func:`find_class`:

* its **renderer**: which parser builds its input (``lm``: ``LMTemplateParser``, one string;
  ``api``: ``APITemplateParser``, a message list; ``hf_chat``: the tokenizer's chat template
  applied to API messages); ``None`` for agent wrappers, whose prompts need the model in
  the loop;
* its **parameters**: the keyword parameters of its ``__init__`` (read from
  ``opencompass/models/*.py`` of the 0.5.4 wheel; tests/test_known_keys.py compares them with
  an installed wheel when there is one) and whether it also takes ``**kwargs`` (it then logs
  ``Unused argument k=v`` and goes on);
* its **token counter** without a ``tokenizer``: OpenCompass's own word count
  (``api-words``) for the API classes that keep ``BaseAPIModel.get_token_len``, else
  whitespace words (:func:`prompt_compiler.model.tokenize.default_counter`);
* its **request builder**: how an API class turns the parser's output into its request
  (:mod:`prompt_compiler.model.api_requests`), and the class keys that shape it;
* its **ids rule**: ``lmdeploy`` when lmdeploy encodes its chat text
  (:mod:`prompt_compiler.model.token_ids`);
* whether it loads a **Hugging Face tokenizer** from ``tokenizer_path``, else ``path``
  (:mod:`prompt_compiler.model.hub` finds that folder, local or in a hub cache);
* the **scoring methods it lacks** (``get_ppl``, ``get_ppl_tokenwise``,
  ``get_loglikelihood``, ``get_logits``), so compat mode fails where OpenCompass fails
  (:func:`prompt_compiler.config.known_keys.scoring_failure`).

Adding a class, or a class's tokenization rule, is one row here.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ConfigError, RegistryError, UnsupportedError
from .api_requests import (
    RequestBuilder,
    claude_request,
    gemini_request,
    litellm_messages,
    openai_messages,
)

__all__ = ["MODEL_CLASSES", "RENDERERS", "ModelClass", "Renderer", "ScoringMethod",
           "check_renderer", "find_class", "renderer_for_model_class", "resolve_renderer"]

Renderer = Literal["lm", "api", "hf_chat"]
RENDERERS: tuple[Renderer, ...] = ("lm", "api", "hf_chat")
"""The renderer names a model config may give (``renderer:``, or ``parser:`` as OpenCompass
and the conformance cases say)."""

ScoringMethod = Literal["get_ppl", "get_ppl_tokenwise", "get_loglikelihood", "get_logits"]


@dataclass(frozen=True, slots=True)
class ModelClass:
    """Everything this project knows of one OpenCompass model class."""

    name: str
    """The class name (``HuggingFaceCausalLM``)."""
    renderer: Renderer | None
    """The renderer its prompts go through; ``None``: an agent (no prompt without a model)."""
    params: frozenset[str] | None = None
    """Its ``__init__`` keyword parameters in OpenCompass 0.5.4; ``None``: not recorded."""
    takes_kwargs: bool = False
    """Whether its ``__init__`` also takes ``**kwargs`` (unknown keys are logged, not refused)."""
    counter: str = "whitespace"
    """The token counter of a model config of this class without ``tokenizer``."""
    request: RequestBuilder | None = None
    """The builder of its API request from the parser's output; ``None``: sent as it is."""
    request_keys: tuple[str, ...] = ()
    """Its config keys that shape the request (LiteLLMAPI's ``system_prompt``)."""
    lacks: frozenset[ScoringMethod] = frozenset()
    """The scoring methods OpenCompass's class does not have."""
    lmdeploy: bool = False
    """lmdeploy encodes its chat text: the text less a leading ``bos_token``, with the
    tokenizer's special tokens (compat mode)."""
    shipped: bool = True
    """OpenCompass 0.5.4 ships it (``QwenLM`` is one fork's class: compat mode refuses it as
    OpenCompass's registry does)."""
    hub: bool = False
    """It loads a Hugging Face tokenizer from ``tokenizer_path``, else ``path`` (a folder or
    a hub id: :mod:`.hub` finds it, offline)."""

    @property
    def agent(self) -> bool:
        """An agent wrapper: each prompt after the first is built from the model's replies."""
        return self.renderer is None

    @property
    def openai_shaped(self) -> bool:
        """Its requests are OpenAI chat-completion messages (``openai_api.py``)."""
        return self.request is openai_messages


def _c(name: str, renderer: Renderer | None, params: str | None = None, *,
       kwargs: bool = False, words: bool = False, request: RequestBuilder | None = None,
       request_keys: tuple[str, ...] = (), lacks: str = "", lmdeploy: bool = False,
       hub: bool = False, shipped: bool = True) -> ModelClass:
    """One row: ``params`` and ``lacks`` as space-separated names."""
    return ModelClass(name, renderer, frozenset(params.split()) if params is not None else None,
                      kwargs, "api-words" if words else "whitespace", request, request_keys,
                      frozenset(lacks.split()), lmdeploy, shipped,  # type: ignore[arg-type]
                      hub)


# Parameters shared by families of classes (the 0.5.4 signatures, in their order).
_API = "path key url query_per_second max_seq_len meta_template retry"
_HF = ("path hf_cache_dir max_seq_len tokenizer_path tokenizer_kwargs peft_path tokenizer_only "
       "model_kwargs generation_kwargs meta_template extract_pred_after_decode batch_padding "
       "pad_token_id mode")
_MS = ("path ms_cache_dir max_seq_len tokenizer_path tokenizer_kwargs peft_path tokenizer_only "
       "model_kwargs meta_template extract_pred_after_decode batch_padding pad_token_id mode")
_HF_NEW = ("path model_kwargs tokenizer_path tokenizer_kwargs peft_path peft_kwargs "
           "tokenizer_only generation_kwargs max_seq_len pad_token_id stop_words")
_OPENAI = ("path max_seq_len query_per_second rpm_verbose retry key org meta_template "
           "openai_api_base openai_proxy_url mode logprobs top_logprobs temperature "
           "tokenizer_path extra_body verbose")
_SDK = _OPENAI + " http_client_cfg status_code_mappings think_tag"

# Renderers: ``lm`` for BaseModel subclasses with LMTemplateParser; ``api`` for BaseAPIModel
# subclasses and the BaseModel subclasses that set an APITemplateParser (HuggingFaceChatGLM3,
# Llama2, Llama2Chat, Mixtral, LLaMA2AccessoryModel: their generate() takes messages);
# ``hf_chat`` for the classes that apply the tokenizer's chat template. ``words``: the class
# keeps BaseAPIModel.get_token_len (OpenAI's classes count with tiktoken instead).
_ROWS = (
    _c("AI360GPT", "api", _API + " generation_kwargs", words=True),
    _c("AlayaLM", "lm", "path max_seq_len tokenizer_only meta_template", kwargs=True,
       lacks="get_ppl_tokenwise get_loglikelihood"),
    _c("BaiChuan", "api", _API + " system_prompt", words=True),
    _c("BaiChuan3", "api", words=True),
    _c("BailingAPI", "api",
       "path token url meta_template query_per_second retry generation_kwargs max_seq_len",
       words=True),
    _c("BlueLMAPI", "api", _API + " system_prompt generation_kwargs", words=True),
    _c("ByteDance", "api",
       ("path accesskey secretkey url query_per_second max_seq_len meta_template retry "
        "generation_kwargs"),
       words=True),
    _c("Claude", "api", "key path query_per_second max_seq_len meta_template retry", words=True),
    _c("ClaudeAllesAPIN", "api", "path url key query_per_second max_seq_len meta_template retry",
       words=True),
    _c("ClaudeSDK", "api",
       ("key path query_per_second max_seq_len meta_template temperature thinking base_url "
        "stream retry extra_headers think_tag claude_extra_kwargs"),
       words=True, request=claude_request),
    _c("CodeAgent", None),
    _c("DeepseekAPI", "api", _API + " system_prompt timeout", words=True),
    _c("Doubao", "api",
       ("path accesskey secretkey query_per_second max_seq_len meta_template retry "
        "generation_kwargs"),
       words=True),
    _c("ERNIEBot", "api",
       "path key secretkey url query_per_second max_seq_len meta_template retry generation_kwargs",
       words=True),
    _c("GLM130B", "lm", "pkg_root ckpt_path tokenizer_only meta_template", kwargs=True,
       lacks="get_ppl_tokenwise get_loglikelihood"),
    _c("Gemini", "api",
       "key path query_per_second max_seq_len meta_template retry temperature top_p top_k",
       words=True),
    _c("GeminiAllesAPIN", "api", words=True),
    _c("GeminiSDK", "api",
       ("key path query_per_second max_seq_len meta_template temperature top_p top_k thinking "
        "base_url stream retry think_tag gemini_extra_kwargs client_extra_kwargs max_workers"),
       words=True, request=gemini_request),
    _c("HuggingFace", "lm", _HF + " use_fastchat_template end_str", lacks="get_ppl_tokenwise",
       hub=True),
    _c("HuggingFaceBaseModel", "lm", _HF_NEW + " drop_middle", kwargs=True, lacks="get_logits",
       hub=True),
    _c("HuggingFaceCausalLM", "lm", _HF + " use_fastchat_template end_str",
       lacks="get_ppl_tokenwise", hub=True),
    _c("HuggingFaceChatGLM3", "api", _HF + " num_extra_tokens", lacks="get_ppl_tokenwise",
       hub=True),
    _c("HuggingFacewithChatTemplate", "hf_chat", _HF_NEW + " meta_template fastchat_template mode",
       kwargs=True, lacks="get_ppl get_loglikelihood get_logits", hub=True),
    _c("Hunyuan", "api",
       "path secret_id secret_key endpoint query_per_second max_seq_len meta_template retry",
       words=True),
    _c("InternLM", "lm",
       "path max_seq_len tokenizer_only tokenizer_path model_config tokenizer_type meta_template",
       lacks="get_ppl_tokenwise get_loglikelihood"),
    _c("InternTrain", "lm",
       ("path module_path max_seq_len tokenizer_only tokenizer_path tokenizer_type "
        "model_config parallel_config model_type ckpt_type meta_template model_dtype "
        "generation_kwargs sync_rank mode end_str"),
       lacks="get_ppl_tokenwise"),
    _c("KrGPT", "api", "path url max_seq_len meta_template retry generation_kwargs", words=True),
    _c("LLaMA2AccessoryModel", "api", "tokenizer_only meta_template additional_stop_symbols",
       kwargs=True, lacks="get_ppl_tokenwise get_loglikelihood"),
    _c("LagentAgent", None),
    _c("LangchainAgent", None),
    _c("LightllmAPI", "lm",
       "path url meta_template max_workers_per_task rate_per_worker retry generation_kwargs",
       lacks="get_ppl_tokenwise get_loglikelihood"),
    _c("LightllmChatAPI", "api", "path url query_per_second max_seq_len meta_template retry",
       words=True),
    _c("LiteLLMAPI", "api",
       ("path key api_base api_version query_per_second rpm_verbose max_seq_len meta_template "
        "retry system_prompt temperature stream think_tag max_workers extra_body"),
       words=True, request=litellm_messages, request_keys=("system_prompt",)),
    _c("Llama2", "api",
       "path max_seq_len max_batch_size tokenizer_only tokenizer_path meta_template",
       lacks="get_ppl_tokenwise"),
    _c("Llama2Chat", "api",
       "path max_seq_len max_batch_size tokenizer_only tokenizer_path meta_template force_bf16",
       lacks="get_ppl get_ppl_tokenwise get_loglikelihood"),
    _c("LmdeployPytorchModel", "lm", hub=True),
    _c("LmdeployTisModel", "lm"),
    _c("MiniMax", "api",
       "path key group_id model_type url query_per_second max_seq_len meta_template retry",
       words=True),
    _c("MiniMaxChatCompletionV2", "api", _API, words=True),
    _c("Mistral", "api", "path api_key url query_per_second max_seq_len meta_template retry",
       words=True),
    _c("Mixtral", "api",
       "path max_seq_len max_batch_size tokenizer_only tokenizer_path meta_template num_gpus",
       lacks="get_ppl_tokenwise get_loglikelihood"),
    _c("ModelScope", "lm", _MS, lacks="get_ppl_tokenwise", hub=True),
    _c("ModelScopeCausalLM", "lm", _MS, lacks="get_ppl_tokenwise", hub=True),
    _c("MoonShot", "api", _API + " system_prompt", words=True),
    _c("Nanbeige", "api", _API, words=True),
    _c("OpenAI", "api", _OPENAI + " think_tag max_workers image_format image_min_edge",
       request=openai_messages),
    _c("OpenAISDK", "api",
       _SDK + " max_workers openai_extra_kwargs timeout image_format image_min_edge",
       request=openai_messages),
    _c("OpenAISDKResponse", "api",
       _SDK + " max_workers openai_extra_kwargs response_kwargs stream timeout",
       request=openai_messages),
    _c("OpenAISDKRollout", "api", _SDK + " max_workers openai_extra_kwargs",
       request=openai_messages),
    _c("OpenAISDKStreaming", "api",
       (_SDK + " openai_extra_kwargs stream stream_chunk_size timeout finish_reason_confirm "
               "max_workers image_format image_min_edge"),
       request=openai_messages),
    _c("PanGu", "api",
       ("path access_key secret_key url token_url project_name query_per_second max_seq_len "
        "meta_template retry"),
       words=True),
    _c("Qwen", "api",
       "path key query_per_second max_seq_len meta_template retry generation_kwargs", words=True),
    _c("QwenLM", "lm", shipped=False),
    _c("Rendu", "api", _API + " generation_kwargs", words=True),
    _c("SenseTime", "api",
       "path url key query_per_second max_seq_len meta_template retry parameters", words=True),
    _c("StepFun", "api", _API + " system_prompt", words=True),
    _c("TeleChat", "api",
       "path url key query_per_second max_seq_len meta_template retry generation_kwargs",
       words=True),
    _c("TeleChatStream", "api",
       "path url key query_per_second max_seq_len meta_template retry generation_kwargs",
       words=True),
    _c("TurboMindAPIModel", "lm"),
    _c("TurboMindModel", "lm",
       ("path backend max_seq_len meta_template engine_config gen_config batch_padding "
        "drop_middle end_str"),
       lacks="get_ppl_tokenwise", hub=True),
    _c("TurboMindModelwithChatTemplate", "hf_chat",
       ("path tokenizer_only backend engine_config gen_config max_seq_len meta_template "
        "fastchat_template stop_words drop_middle"),
       lacks="get_ppl get_ppl_tokenwise get_loglikelihood", lmdeploy=True, hub=True),
    _c("TurboMindTisModel", "lm"),
    _c("UniGPT", "api",
       "path appkey secret url query_per_second max_seq_len meta_template retry temperature",
       words=True),
    _c("VLLM", "lm",
       ("path max_seq_len model_kwargs generation_kwargs meta_template mode "
        "use_fastchat_template lora_path stop_words"),
       lacks="get_ppl_tokenwise", hub=True),
    _c("VLLMwithChatTemplate", "hf_chat",
       ("path model_kwargs tokenizer_only generation_kwargs max_seq_len meta_template "
        "fastchat_template stop_words lora_path chat_template_kwargs"),
       lacks="get_ppl get_ppl_tokenwise get_loglikelihood", hub=True),
    _c("XunFei", "api",
       "path appid api_secret api_key domain query_per_second max_seq_len meta_template retry",
       words=True),
    _c("XunFeiSpark", "api",
       "path url app_id api_key api_secret query_per_second max_seq_len meta_template retry",
       words=True),
    _c("Yayi", "api",
       ("path url url_path x_tilake_app_key x_tilake_app_secret x_tilake_ca_sginature_method "
        "query_per_second max_seq_len meta_template retry temperature"),
       words=True),
    _c("YiAPI", "api", _API + " system_prompt", words=True),
    _c("ZhiPuAI", "api", "path key query_per_second max_seq_len meta_template retry", words=True),
    _c("ZhiPuV2AI", "api",
       "path key query_per_second max_seq_len meta_template retry generation_kwargs", words=True),
)

MODEL_CLASSES: Mapping[str, ModelClass] = {row.name: row for row in _ROWS}
"""OpenCompass model class name -> what this project knows of it."""


def find_class(name: object) -> ModelClass | None:
    """The entry of a class name (a dotted name counts by its last component; a class by its
    ``__name__``), or ``None`` for an unknown class or none."""
    if name is not None and not isinstance(name, str):
        name = getattr(name, "__name__", None)
    if not name:
        return None
    return MODEL_CLASSES.get(str(name).rsplit(".", 1)[-1])


def renderer_for_model_class(name: str) -> Renderer | None:
    """The renderer a model class name selects, or ``None`` when the name is unknown (or an
    agent's).

    Args:
        name: A class name, or a dotted name (only the last component counts).
    """
    entry = find_class(name)
    return None if entry is None else entry.renderer


def resolve_renderer(cfg: Mapping[str, Any], class_name: str | None, *, where: str,
                     **located: Any) -> Renderer | None:
    """The renderer of a model dict: its ``renderer`` (or ``parser``, OpenCompass's word) key,
    else its class's; ``None`` when it has neither (the caller decides the default).

    The one rule for files and library dicts alike (``located``: the error's ``config_path``
    and ``model``).

    Raises:
        ConfigError: ``renderer`` and ``parser`` differ.
        RegistryError: An unknown renderer name, or an unknown class without a renderer.
        UnsupportedError: The class is an agent (no prompt without running the model).
    """
    given = [key for key in ("renderer", "parser") if cfg.get(key) is not None]
    if given:
        renderer = check_renderer(cfg[given[0]], f"{where}.{given[0]}", **located)
        if len(given) == 2 and cfg["parser"] != renderer:
            raise ConfigError(f"renderer {renderer!r} and parser {cfg['parser']!r} differ (they "
                              "are one key; give one)", key_path=f"{where}.parser", **located)
    entry = find_class(class_name)
    if entry is not None and entry.agent:
        raise UnsupportedError(
            f"{entry.name} is an agent: it needs a model in the loop (the agent framework "
            "builds each prompt from the model's previous replies and tool results), so "
            "there is no prompt to compile without running the model",
            key_path=f"{where}.type",
            hint="give the model inside the agent (its 'llm') as the model, or see "
            "docs/opencompass-corpus.md (model-in-the-loop inferencers)", **located)
    if given:
        return renderer
    if class_name is None:
        return None
    if entry is None:
        known = sorted(name for name, row in MODEL_CLASSES.items() if not row.agent)
        raise RegistryError(
            f"unknown model class {class_name!r}: cannot tell which renderer consumes "
            f"its prompts{_misspelt_class(class_name, known)}", key_path=f"{where}.type",
            hint="add renderer='lm' | 'api' | 'hf_chat' to the model config (OpenCompass "
            "hands every model key to the class, and a class without **kwargs rejects "
            "'renderer': keep that key in a copy for this tool), or give the model with "
            "--model (a template by name, see 'compile-prompts models')", **located)
    return entry.renderer


def check_renderer(value: Any, key_path: str, **located: Any) -> Renderer:
    """``value`` as a renderer name.

    Raises:
        RegistryError: It is none (with a did-you-mean).
    """
    for name in RENDERERS:
        if value == name:
            return name
    shown = value if isinstance(value, str) else type(value).__name__
    raise RegistryError(
        f"unknown renderer {shown!r}{_did_you_mean(str(value), RENDERERS)}; "
        f"available: {', '.join(RENDERERS)}", key_path=key_path, **located)


def _misspelt_class(name: str, known: list[str]) -> str:
    """A did-you-mean for a class name only where it is a typo (the same name in another case,
    or nearly the same letters): a fork's own class (``InternLMChat``, ``VLLMChat``) is no
    misspelling of a shipped one, whose renderer may differ."""
    same = [k for k in known if k.casefold() == name.casefold()]
    close = same or difflib.get_close_matches(name, known, n=1, cutoff=0.9)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _did_you_mean(name: str, choices: Any) -> str:
    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
