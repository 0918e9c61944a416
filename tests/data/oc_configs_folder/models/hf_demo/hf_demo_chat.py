from opencompass.models import HuggingFaceCausalLM

_meta_template = dict(round=[
    dict(role='HUMAN', begin='<|user|>\n', end='\n'),
    dict(role='BOT', begin='<|bot|>\n', end='\n', generate=True),
])

models = [
    dict(
        type=HuggingFaceCausalLM,
        abbr='demo-chat-hf',
        path='example/demo-chat',
        meta_template=_meta_template,
        max_seq_len=2048,
        max_out_len=64,
        batch_size=8,
        run_cfg=dict(num_gpus=1),
    )
]
