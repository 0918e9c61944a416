# Capital cities, zero-shot generation from a plain string template (no roles). As in
# OpenCompass, a string prompt bypasses the meta template: local models receive exactly this
# text (no turn markers), and so do API models (their client sends it as one user message);
# chat-template models receive it as one user message.
#
# A building block of ../../eval_demo.py (imported as `capitals_gen_0shot`; not named
# `*_datasets` so that walking configs/ collects it once -- see configs/README.md).
# `path` is relative to configs/, the folder of the suite that collects it.
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.datasets import CustomDataset

capitals_reader_cfg = dict(input_columns=['country'], output_column='capital')

capitals_infer_cfg = dict(
    prompt_template=dict(
        type=PromptTemplate,
        template='What is the capital of {country}? Reply with the city name only.\n',
    ),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=GenInferencer, max_out_len=16),
)

capitals_gen_0shot = [
    dict(
        abbr='capitals-gen-0shot',
        type=CustomDataset,  # CustomDataset picks the reader by suffix (.jsonl here)
        path='datasets/capitals/capitals.jsonl',
        reader_cfg=capitals_reader_cfg,
        infer_cfg=capitals_infer_cfg,
    )
]
