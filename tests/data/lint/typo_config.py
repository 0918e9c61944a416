# A Python config with one placeholder typo ({anwser}) in its in-context example template.
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import FixKRetriever
from opencompass.openicl.icl_inferencer import GenInferencer

datasets = [
    dict(
        abbr='py-typo',
        reader_cfg=dict(input_columns=['question'], output_column='answer'),
        infer_cfg=dict(
            ice_template=dict(type=PromptTemplate, template='Q: {question}\nA: {anwser}\n'),
            prompt_template=dict(type=PromptTemplate, template='</E>Q: {question}\nA:',
                                 ice_token='</E>'),
            retriever=dict(type=FixKRetriever, fix_id_list=[0]),
            inferencer=dict(type=GenInferencer),
        ),
        splits=dict(train=[dict(question='1+1?', answer='2')],
                    test=[dict(question='2+2?', answer='4')]),
    )
]
models = [dict(abbr='base', type='HuggingFaceBaseModel', meta_template=None)]
