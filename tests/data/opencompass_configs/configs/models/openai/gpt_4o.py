from opencompass.models import OpenAISDK

api_meta_template = dict(round=[
    dict(role='HUMAN', api_role='HUMAN'),
    dict(role='BOT', api_role='BOT', generate=True),
], reserved_roles=[dict(role='SYSTEM', api_role='SYSTEM')])

models = [
    dict(
        abbr='gpt-4o',
        type=OpenAISDK,
        path='gpt-4o',
        key='ENV',
        meta_template=api_meta_template,
        query_per_second=1,
        max_out_len=2048,
        max_seq_len=4096,
        batch_size=8,
    ),
]
