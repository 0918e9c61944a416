# A suite: package-style read_base() imports; datasets collected from locals(), models
# left as *_models variables.
from mmengine.config import read_base

with read_base():
    from opencompass.configs.datasets.mrpc.mrpc_ppl import mrpc_datasets
    from opencompass.configs.datasets.gsm8k.gsm8k_gen import gsm8k_datasets
    from opencompass.configs.models.openai.gpt_4o import models as gpt_4o_models

datasets = sum([v for k, v in locals().items() if k.endswith('_datasets')], [])

from opencompass.partitioners import NaivePartitioner
from opencompass.runners import LocalRunner
from opencompass.tasks import OpenICLInferTask

infer = dict(
    partitioner=dict(type=NaivePartitioner),
    runner=dict(type=LocalRunner, task=dict(type=OpenICLInferTask)),
)
