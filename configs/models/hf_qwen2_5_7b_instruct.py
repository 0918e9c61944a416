# A chat-template model: HuggingFacewithChatTemplate hands OpenAI-style messages to the
# tokenizer's own chat template, so the compiled prompt is the message list (no meta
# template needed; OpenCompass's default HUMAN/BOT/SYSTEM roles are used).
#
# A building block of ../eval_demo.py, imported as `hf_qwen2_5_7b_instruct`. Not named
# `models` / `*_models`, so walking configs/ collects it once -- see configs/README.md.
from opencompass.models import HuggingFacewithChatTemplate

hf_qwen2_5_7b_instruct = [
    dict(
        type=HuggingFacewithChatTemplate,
        abbr='qwen2.5-7b-instruct-hf',
        path='Qwen/Qwen2.5-7B-Instruct',
        max_out_len=1024,
        batch_size=8,
        run_cfg=dict(num_gpus=1),
    )
]
