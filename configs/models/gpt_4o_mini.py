# An API model: prompts become OpenAI-style message lists. `api_role` maps each template role
# to a message role; SYSTEM is reserved (used only where a dataset template puts it).
#
# A building block of ../eval_demo.py, imported as `gpt_4o_mini`. Not named `models` /
# `*_models`, so walking configs/ collects it once -- see configs/README.md.
from opencompass.models import OpenAISDK

_api_meta_template = dict(
    round=[
        dict(role='HUMAN', api_role='HUMAN'),
        dict(role='BOT', api_role='BOT', generate=True),
    ],
    reserved_roles=[dict(role='SYSTEM', api_role='SYSTEM')],
)

gpt_4o_mini = [
    dict(
        type=OpenAISDK,
        abbr='gpt-4o-mini',
        path='gpt-4o-mini',
        key='ENV',  # read from $OPENAI_API_KEY at run time; never needed to compile prompts
        meta_template=_api_meta_template,
        query_per_second=1,
        max_seq_len=8192,
        max_out_len=512,
        batch_size=4,
    )
]
