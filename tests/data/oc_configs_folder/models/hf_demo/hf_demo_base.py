from opencompass.models import HuggingFaceBaseModel

models = [
    dict(
        type=HuggingFaceBaseModel,
        abbr='demo-base-hf',
        path='example/demo-base',
        max_out_len=64,
        batch_size=8,
        run_cfg=dict(num_gpus=1),
    )
]
