# The example suite: three Python datasets x four models, collected OpenCompass-style with
# `with read_base():` (relative imports resolve against this file's folder).
#
#   compile-prompts configs/eval_demo.py -o out/      # this suite alone
#   compile-prompts configs/ -o out/                  # this suite + the YAML chat dataset
#
# The imported lists are not named `*_datasets` / `*_models`, so that only this file's
# `datasets` and `models` are collected when configs/ is walked (see configs/README.md).
from mmengine.config import read_base

with read_base():
    from .datasets.arith.arith_gen_3shot import arith_gen_3shot
    from .datasets.sentiment.sentiment_ppl import sentiment_ppl
    from .datasets.capitals.capitals_gen_0shot import capitals_gen_0shot
    from .models.internlm2_chat_7b_turbomind import internlm2_chat_7b_turbomind
    from .models.hf_tinychat_1b import hf_tinychat_1b
    from .models.gpt_4o_mini import gpt_4o_mini
    from .models.hf_qwen2_5_7b_instruct import hf_qwen2_5_7b_instruct

datasets = [*arith_gen_3shot, *sentiment_ppl, *capitals_gen_0shot]
models = [
    *internlm2_chat_7b_turbomind,
    *hf_tinychat_1b,
    *gpt_4o_mini,
    *hf_qwen2_5_7b_instruct,
]

work_dir = 'outputs/eval_demo'  # ignored by compile-prompts (OpenCompass's output folder)
