# Classic style with string types: no imports at all.
demo_datasets = [
    dict(
        abbr='demo-inline',
        reader_cfg=dict(input_columns=['q'], output_column='a'),
        infer_cfg=dict(
            prompt_template=dict(type='PromptTemplate', template='Q: {q}\nA: {a}'),
            retriever=dict(type='ZeroRetriever'),
            inferencer=dict(type='GenInferencer'),
        ),
        rows=[dict(q='one', a='1'), dict(q='two', a='2')],
    )
]
