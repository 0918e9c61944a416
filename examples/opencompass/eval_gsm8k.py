from mmengine.config import read_base
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.datasets import GSM8KDataset, gsm8k_postprocess

with read_base():
    from .models.hf_internlm2_chat_7b import models as internlm_models

datasets = [dict(abbr='gsm8k', type=GSM8KDataset, path='opencompass/gsm8k',
                 reader_cfg=dict(input_columns=['question'], output_column='answer'),
                 infer_cfg=dict(prompt_template=dict(type=PromptTemplate, template='{question}'),
                                retriever=dict(type=ZeroRetriever),
                                inferencer=dict(type=GenInferencer)),
                 eval_cfg=dict(pred_postprocessor=dict(type=gsm8k_postprocess)))]
models = [*internlm_models]
