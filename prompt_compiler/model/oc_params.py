"""The keyword parameters of OpenCompass 0.5.4's model classes.

:data:`OPENCOMPASS_MODEL_PARAMS`: for each model class, the keyword parameters of its
``__init__`` (read from ``opencompass/models/*.py`` of the 0.5.4 wheel; tests/test_known_keys.py
compares them with an installed wheel when there is one), and whether it also takes
``**kwargs`` (it then logs ``Unused argument k=v`` and goes on). The model side asks it which
keys a class hands on (``tokenizer_kwargs``); :mod:`prompt_compiler.config.known_keys` checks a
config's model keys against it.
"""

from __future__ import annotations

__all__ = ["OPENCOMPASS_MODEL_PARAMS"]

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

_PARAMS: dict[str, tuple[str, bool]] = {  # class -> (keyword parameters, takes **kwargs)
    "AI360GPT": (_API + " generation_kwargs", False),
    "AlayaLM": ("path max_seq_len tokenizer_only meta_template", True),
    "BaiChuan": (_API + " system_prompt", False),
    "BailingAPI": ("path token url meta_template query_per_second retry generation_kwargs "
                   "max_seq_len", False),
    "BlueLMAPI": (_API + " system_prompt generation_kwargs", False),
    "ByteDance": ("path accesskey secretkey url query_per_second max_seq_len meta_template "
                  "retry generation_kwargs", False),
    "Claude": ("key path query_per_second max_seq_len meta_template retry", False),
    "ClaudeAllesAPIN": ("path url key query_per_second max_seq_len meta_template retry", False),
    "GeminiSDK": ("key path query_per_second max_seq_len meta_template temperature top_p top_k "
                  "thinking base_url stream retry think_tag gemini_extra_kwargs "
                  "client_extra_kwargs max_workers", False),
    "LiteLLMAPI": ("path key api_base api_version query_per_second rpm_verbose max_seq_len "
                   "meta_template retry system_prompt temperature stream think_tag max_workers "
                   "extra_body", False),
    "TeleChat": ("path url key query_per_second max_seq_len meta_template retry "
                 "generation_kwargs", False),
    "TeleChatStream": ("path url key query_per_second max_seq_len meta_template retry "
                       "generation_kwargs", False),
    "ClaudeSDK": ("key path query_per_second max_seq_len meta_template temperature thinking "
                  "base_url stream retry extra_headers think_tag claude_extra_kwargs", False),
    "DeepseekAPI": (_API + " system_prompt timeout", False),
    "Doubao": ("path accesskey secretkey query_per_second max_seq_len meta_template retry "
               "generation_kwargs", False),
    "ERNIEBot": ("path key secretkey url query_per_second max_seq_len meta_template retry "
                 "generation_kwargs", False),
    "GLM130B": ("pkg_root ckpt_path tokenizer_only meta_template", True),
    "Gemini": ("key path query_per_second max_seq_len meta_template retry temperature top_p "
               "top_k", False),
    "HuggingFace": (_HF + " use_fastchat_template end_str", False),
    "HuggingFaceBaseModel": (_HF_NEW + " drop_middle", True),
    "HuggingFaceCausalLM": (_HF + " use_fastchat_template end_str", False),
    "HuggingFaceChatGLM3": (_HF + " num_extra_tokens", False),
    "HuggingFacewithChatTemplate": (_HF_NEW + " meta_template fastchat_template mode", True),
    "Hunyuan": ("path secret_id secret_key endpoint query_per_second max_seq_len meta_template "
                "retry", False),
    "InternLM": ("path max_seq_len tokenizer_only tokenizer_path model_config tokenizer_type "
                 "meta_template", False),
    "InternTrain": ("path module_path max_seq_len tokenizer_only tokenizer_path tokenizer_type "
                    "model_config parallel_config model_type ckpt_type meta_template model_dtype "
                    "generation_kwargs sync_rank mode end_str", False),
    "KrGPT": ("path url max_seq_len meta_template retry generation_kwargs", False),
    "LLaMA2AccessoryModel": ("tokenizer_only meta_template additional_stop_symbols", True),
    "LightllmAPI": ("path url meta_template max_workers_per_task rate_per_worker retry "
                    "generation_kwargs", False),
    "LightllmChatAPI": ("path url query_per_second max_seq_len meta_template retry", False),
    "Llama2": ("path max_seq_len max_batch_size tokenizer_only tokenizer_path meta_template",
               False),
    "Llama2Chat": ("path max_seq_len max_batch_size tokenizer_only tokenizer_path meta_template "
                   "force_bf16", False),
    "MiniMax": ("path key group_id model_type url query_per_second max_seq_len meta_template "
                "retry", False),
    "MiniMaxChatCompletionV2": (_API, False),
    "Mistral": ("path api_key url query_per_second max_seq_len meta_template retry", False),
    "Mixtral": ("path max_seq_len max_batch_size tokenizer_only tokenizer_path meta_template "
                "num_gpus", False),
    "ModelScope": (_MS, False),
    "ModelScopeCausalLM": (_MS, False),
    "MoonShot": (_API + " system_prompt", False),
    "Nanbeige": (_API, False),
    "OpenAI": (_OPENAI + " think_tag max_workers image_format image_min_edge", False),
    "OpenAISDK": (_SDK + " max_workers openai_extra_kwargs timeout image_format image_min_edge",
                  False),
    "OpenAISDKStreaming": (_SDK + " openai_extra_kwargs stream stream_chunk_size timeout "
                           "finish_reason_confirm max_workers image_format image_min_edge", False),
    "OpenAISDKResponse": (_SDK + " max_workers openai_extra_kwargs response_kwargs stream "
                          "timeout", False),
    "OpenAISDKRollout": (_SDK + " max_workers openai_extra_kwargs", False),
    "PanGu": ("path access_key secret_key url token_url project_name query_per_second "
              "max_seq_len meta_template retry", False),
    "Qwen": ("path key query_per_second max_seq_len meta_template retry generation_kwargs",
             False),
    "Rendu": (_API + " generation_kwargs", False),
    "SenseTime": ("path url key query_per_second max_seq_len meta_template retry parameters",
                  False),
    "StepFun": (_API + " system_prompt", False),
    "TurboMindModel": ("path backend max_seq_len meta_template engine_config gen_config "
                       "batch_padding drop_middle end_str", False),
    "TurboMindModelwithChatTemplate": ("path tokenizer_only backend engine_config gen_config "
                                       "max_seq_len meta_template fastchat_template stop_words "
                                       "drop_middle", False),
    "UniGPT": ("path appkey secret url query_per_second max_seq_len meta_template retry "
               "temperature", False),
    "VLLM": ("path max_seq_len model_kwargs generation_kwargs meta_template mode "
             "use_fastchat_template lora_path stop_words", False),
    "VLLMwithChatTemplate": ("path model_kwargs tokenizer_only generation_kwargs max_seq_len "
                             "meta_template fastchat_template stop_words lora_path "
                             "chat_template_kwargs", False),
    "XunFei": ("path appid api_secret api_key domain query_per_second max_seq_len meta_template "
               "retry", False),
    "XunFeiSpark": ("path url app_id api_key api_secret query_per_second max_seq_len "
                    "meta_template retry", False),
    "Yayi": ("path url url_path x_tilake_app_key x_tilake_app_secret "
             "x_tilake_ca_sginature_method query_per_second max_seq_len meta_template retry "
             "temperature", False),
    "YiAPI": (_API + " system_prompt", False),
    "ZhiPuAI": ("path key query_per_second max_seq_len meta_template retry", False),
    "ZhiPuV2AI": ("path key query_per_second max_seq_len meta_template retry generation_kwargs",
                  False),
}

OPENCOMPASS_MODEL_PARAMS: dict[str, tuple[frozenset[str], bool]] = {
    name: (frozenset(params.split()), kwargs) for name, (params, kwargs) in _PARAMS.items()
}
"""OpenCompass 0.5.4 model class -> (its ``__init__`` keyword parameters, takes ``**kwargs``)."""
