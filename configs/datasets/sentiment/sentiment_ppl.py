# Product-review sentiment as four-way multiple choice, scored by perplexity: one prompt per
# label, and the label with the lowest perplexity is the prediction.
#
# A building block of ../../eval_demo.py (imported as `sentiment_ppl`; not named
# `*_datasets` so that walking configs/ collects it once -- see configs/README.md).
# `path` is relative to configs/, the folder of the suite that collects it. One JSONL file is
# one split, used as both train and test.
from opencompass.openicl.icl_prompt_template import PromptTemplate
from opencompass.openicl.icl_retriever import ZeroRetriever
from opencompass.openicl.icl_inferencer import PPLInferencer
from opencompass.openicl.icl_evaluator import AccEvaluator
from opencompass.datasets import JsonlDataset

_choices = {
    'A': 'positive',
    'B': 'negative',
    'C': 'neutral',
    'D': 'mixed',
}
_question = ('Review: {review}\n'
             'What is the sentiment of this review?\n'
             'A. positive\nB. negative\nC. neutral\nD. mixed')

sentiment_reader_cfg = dict(input_columns=['review'], output_column='label')

sentiment_infer_cfg = dict(
    prompt_template=dict(
        type=PromptTemplate,
        # The label dict: one template per answer, keyed by the label itself.
        template={
            label: dict(round=[
                dict(role='HUMAN', prompt=_question),
                dict(role='BOT', prompt=f'Answer: {label}. {meaning}'),
            ])
            for label, meaning in _choices.items()
        },
    ),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=PPLInferencer),
)

sentiment_ppl = [
    dict(
        abbr='sentiment-ppl',
        type=JsonlDataset,
        path='datasets/sentiment/sentiment.jsonl',
        reader_cfg=sentiment_reader_cfg,
        infer_cfg=sentiment_infer_cfg,
        eval_cfg=dict(evaluator=dict(type=AccEvaluator)),
    )
]
