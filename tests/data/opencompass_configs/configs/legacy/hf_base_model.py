# Classic mmengine style: `_base_` comes first, so imports below really run (via the shim).
_base_ = []

from opencompass.models import HuggingFaceBaseModel

models = [
    dict(
        type=HuggingFaceBaseModel,
        abbr='internlm2-7b-base',
        path='internlm/internlm2-7b',
        max_out_len=256,
        batch_size=8,
    )
]
