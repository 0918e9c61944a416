# A PPL dataset whose label template is keyed by ints, read by the built-in JSONL reader.
# Like OpenCompass's own data paths, `path` is relative to where suites run (configs/).
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import FixKRetriever
from opencompass.openicl.icl_inferencer import PPLInferencer
from opencompass.openicl.icl_evaluator import AccEvaluator

_hint = 'Are the two sentences equivalent?\n'

mrpc_reader_cfg = dict(
    input_columns=['sentence1', 'sentence2'],
    output_column='label',
    test_split='test',
)

mrpc_infer_cfg = dict(
    ice_template=dict(
        type=PromptTemplate,
        template='S1: {sentence1}\nS2: {sentence2}\nAnswer: {label}',
    ),
    prompt_template=dict(
        type=PromptTemplate,
        template={
            answer: f'{_hint}</E>S1: {{sentence1}}\nS2: {{sentence2}}\nAnswer: {answer}'
            for answer in [0, 1]
        },
        ice_token='</E>',
    ),
    retriever=dict(type=FixKRetriever, fix_id_list=[0, 1]),
    inferencer=dict(type=PPLInferencer),
)

mrpc_datasets = []
for _split in ['validation']:
    mrpc_datasets.append(
        dict(
            abbr=f'mrpc-{_split}',
            type='jsonl',
            path='../data/mrpc.jsonl',
            reader_cfg=mrpc_reader_cfg,
            infer_cfg=mrpc_infer_cfg,
            eval_cfg=dict(evaluator=dict(type=AccEvaluator)),
        ))
