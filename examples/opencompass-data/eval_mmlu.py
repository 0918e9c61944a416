# An OpenCompass-style config: MMLUDataset reads ./data/mmlu as OpenCompass does.
from opencompass.datasets import MMLUDataset
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import FixKRetriever

mmlu_datasets = [
    dict(
        abbr=f'lukaemon_mmlu_{name}',
        type=MMLUDataset,
        path='opencompass/mmlu',
        name=name,
        reader_cfg=dict(input_columns=['input', 'A', 'B', 'C', 'D'], output_column='target',
                        train_split='dev'),
        infer_cfg=dict(
            ice_template=dict(
                type=PromptTemplate,
                template='{input}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\nAnswer: {target}\n'),
            prompt_template=dict(
                type=PromptTemplate, ice_token='</E>',
                template='</E>{input}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\nAnswer:'),
            retriever=dict(type=FixKRetriever, fix_id_list=[0, 1]),
            inferencer=dict(type=GenInferencer)),
    )
    for name in ['anatomy']
]
