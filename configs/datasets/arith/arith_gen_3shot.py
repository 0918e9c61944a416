# Arithmetic word problems, generation with three fixed in-context examples.
#
# A building block of ../../eval_demo.py, which imports `arith_gen_3shot` inside
# `with read_base():`. The list is deliberately *not* named `*_datasets`: walking configs/
# would otherwise collect it twice (here and through the suite) -- see configs/README.md.
#
# `data_files` paths are relative to the config that collects this list (configs/eval_demo.py),
# which is also the folder OpenCompass suites are run from.
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import FixKRetriever
from opencompass.openicl.icl_inferencer import GenInferencer
from opencompass.openicl.icl_evaluator import AccEvaluator
from opencompass.datasets import JsonlDataset

arith_reader_cfg = dict(
    input_columns=['question'],
    output_column='answer',
    train_split='train',
    test_split='test',
)

arith_infer_cfg = dict(
    # How one solved example (a train row) is shown.
    ice_template=dict(
        type=PromptTemplate,
        template=dict(round=[
            dict(role='HUMAN', prompt='Problem: {question}'),
            dict(role='BOT', prompt='Answer: {answer}'),
        ]),
    ),
    # The test row: the examples go where '</E>' stands, in `begin`, before the first turn.
    # The BOT turn is the one the model generates: only its opening (the meta template's
    # BOT `begin`) is in the prompt, so its text here is never shown.
    prompt_template=dict(
        type=PromptTemplate,
        template=dict(
            begin='</E>',
            round=[
                dict(role='HUMAN', prompt='Problem: {question}'),
                dict(role='BOT', prompt='Answer: {answer}'),
            ],
        ),
        ice_token='</E>',
    ),
    retriever=dict(type=FixKRetriever, fix_id_list=[0, 1, 2]),
    inferencer=dict(type=GenInferencer, max_out_len=32),
)

arith_eval_cfg = dict(evaluator=dict(type=AccEvaluator))

arith_gen_3shot = [
    dict(
        abbr='arith-gen-3shot',
        type=JsonlDataset,
        data_files=dict(
            train='datasets/arith/arith_train.jsonl',
            test='datasets/arith/arith_test.jsonl',
        ),
        reader_cfg=arith_reader_cfg,
        infer_cfg=arith_infer_cfg,
        eval_cfg=arith_eval_cfg,
    )
]
