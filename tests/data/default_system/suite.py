# The same suite as suite.yaml, as a Python config.
datasets = [
    dict(abbr="qa",
         reader_cfg=dict(input_columns=["question"], output_column="answer"),
         infer_cfg=dict(
             prompt_template=dict(type="PromptTemplate", template=dict(
                 begin=[dict(role="SYSTEM", fallback_role="HUMAN",
                             prompt="You are a calculator.")],
                 round=[dict(role="HUMAN", prompt="{question}"),
                        dict(role="BOT", prompt="{answer}")])),
             retriever=dict(type="ZeroRetriever"),
             inferencer=dict(type="GenInferencer")),
         splits=dict(train=[dict(question="What is 1+1?", answer="2")], test=[dict(question="What is 1+1?", answer="2")])),
]
models = [dict(abbr="qwen", meta_template="qwen2.5-instruct")]
