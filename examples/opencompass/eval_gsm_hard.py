from mmengine.config import read_base
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.datasets import GSMHardDataset

with read_base():
    from .models.hf_internlm2_chat_7b import models as internlm_models

# GSMHardDataset has no native reader: its rows need OpenCompass's own loader
datasets = [dict(abbr='gsm-hard', type=GSMHardDataset, path='./data/gsm-hard/test.jsonl',
                 reader_cfg=dict(input_columns=['question'], output_column='answer'),
                 infer_cfg=dict(prompt_template=dict(type=PromptTemplate,
                                                     template='Question: {question}\nAnswer:'),
                                retriever=dict(type=ZeroRetriever),
                                inferencer=dict(type=GenInferencer)))]
models = [*internlm_models]
