from opencompass.datasets import JsonlDataset
from opencompass.openicl.icl_evaluator import AccEvaluator
from opencompass.openicl.icl_inferencer import PPLInferencer
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever

demo_choice_reader_cfg = dict(input_columns=['question'], output_column='label')

demo_choice_infer_cfg = dict(
    prompt_template=dict(
        type=PromptTemplate,
        template={
            'yes': dict(round=[dict(role='HUMAN', prompt='{question}'),
                               dict(role='BOT', prompt='yes')]),
            'no': dict(round=[dict(role='HUMAN', prompt='{question}'),
                              dict(role='BOT', prompt='no')]),
        }),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=PPLInferencer))

demo_choice_datasets = [
    dict(abbr='demo_choice', type=JsonlDataset, path='demo_choice.jsonl',
         reader_cfg=demo_choice_reader_cfg, infer_cfg=demo_choice_infer_cfg,
         eval_cfg=dict(evaluator=dict(type=AccEvaluator)))
]
