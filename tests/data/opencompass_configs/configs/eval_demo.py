# A suite: relative read_base() imports of datasets and models.
from mmengine.config import read_base

with read_base():
    from .datasets.gsm8k.gsm8k_gen import gsm8k_datasets
    from .datasets.mrpc.mrpc_ppl import mrpc_datasets
    from .models.hf_internlm.hf_internlm2_chat_7b import models as hf_internlm2_chat_7b_models
    from .models.openai.gpt_4o import models as gpt_4o_models
    from .models.qwen.hf_qwen2_7b_instruct import models as hf_qwen2_models

datasets = [*gsm8k_datasets, *mrpc_datasets]
models = [*hf_internlm2_chat_7b_models, *gpt_4o_models, *hf_qwen2_models]
