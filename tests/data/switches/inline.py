# The same dataset as system.yaml in a Python config, with `fewshot='inline'` on the dataset
# and a model that merges the system text into the first user turn.
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import FixKRetriever
from opencompass.openicl.icl_inferencer import GenInferencer

turns = [dict(role='HUMAN', prompt='Q: {question}'), dict(role='BOT', prompt='A: {answer}')]
datasets = [
    dict(
        abbr='qa',
        fewshot='inline',
        reader_cfg=dict(input_columns=['question'], output_column='answer'),
        infer_cfg=dict(
            ice_template=dict(type=PromptTemplate, template=dict(round=turns)),
            prompt_template=dict(
                type=PromptTemplate,
                template=dict(begin=[dict(role='SYSTEM', fallback_role='HUMAN', prompt='Be brief.'),
                                     '</E>'], round=turns),
                ice_token='</E>'),
            retriever=dict(type=FixKRetriever, fix_id_list=[0, 1]),
            inferencer=dict(type=GenInferencer),
        ),
        splits=dict(train=[dict(question='1+1', answer='2'), dict(question='2+2', answer='4')],
                    test=[dict(question='3+3', answer='6')]),
    )
]
models = [dict(abbr='merged', type='HuggingFaceBaseModel', meta_template='chatml',
               system_role='merge')]
