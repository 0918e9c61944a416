from mmengine.config import read_base

with read_base():
    from .demo_qa_gen_5f1c2a import demo_qa_datasets  # noqa: F401, F403
