# An OpenCompass-style model config (a HuggingFacewithChatTemplate model), imported by
# ../eval_gsm8k.py through `with read_base():` as OpenCompass's own eval configs import theirs.
from opencompass.models import HuggingFacewithChatTemplate

models = [
    dict(
        type=HuggingFacewithChatTemplate,
        abbr='internlm2-chat-7b-hf',
        path='internlm/internlm2-chat-7b',
        max_out_len=1024,
        batch_size=8,
        run_cfg=dict(num_gpus=1),
    )
]
