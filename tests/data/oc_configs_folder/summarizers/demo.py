summarizer = dict(
    dataset_abbrs=['demo_qa', 'demo_choice'],
    summary_groups=[],
)
