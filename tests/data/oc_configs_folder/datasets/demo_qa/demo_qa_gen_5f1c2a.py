from opencompass.datasets import JsonlDataset
from opencompass.openicl.icl_evaluator import AccEvaluator
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever

demo_qa_reader_cfg = dict(input_columns=['question'], output_column='answer')

demo_qa_infer_cfg = dict(
    prompt_template=dict(
        type=PromptTemplate,
        template=dict(round=[
            dict(role='HUMAN', prompt='Q: {question}\nA:'),
        ])),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=GenInferencer, max_out_len=32))

demo_qa_eval_cfg = dict(evaluator=dict(type=AccEvaluator))

demo_qa_datasets = [
    dict(abbr='demo_qa', type=JsonlDataset, path='demo_qa.jsonl',
         reader_cfg=demo_qa_reader_cfg, infer_cfg=demo_qa_infer_cfg,
         eval_cfg=demo_qa_eval_cfg)
]
