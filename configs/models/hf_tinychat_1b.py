# An OpenCompass-style HuggingFaceCausalLM with its meta template written inline: plain-text
# `User:` / `Assistant:` turns after a fixed preamble in `begin`. A SYSTEM item of a dataset
# template (there is none in these examples) would render in the reserved system turn.
#
# A building block of ../eval_demo.py, imported as `hf_tinychat_1b`. Not named `models` /
# `*_models`, so walking configs/ collects it once -- see configs/README.md.
from opencompass.models import HuggingFaceCausalLM

_meta_template = dict(
    begin='### Conversation\n',
    round=[
        dict(role='HUMAN', begin='User: ', end='\n'),
        dict(role='BOT', begin='Assistant: ', end='<|end|>\n', generate=True),
    ],
    reserved_roles=[dict(role='SYSTEM', begin='System: ', end='\n')],
    eos_token_id=2,
)

hf_tinychat_1b = [
    dict(
        type=HuggingFaceCausalLM,
        abbr='tinychat-1b-hf',
        path='example-org/tinychat-1b',
        tokenizer_path='example-org/tinychat-1b',
        tokenizer_kwargs=dict(padding_side='left', truncation_side='left'),
        meta_template=_meta_template,
        max_seq_len=2048,
        max_out_len=128,
        batch_size=8,
        run_cfg=dict(num_gpus=1, num_procs=1),
    )
]
