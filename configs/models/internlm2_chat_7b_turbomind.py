# A model whose meta template is named instead of spelled out: 'internlm2-chat' is looked up
# in the built-in library (prompt_compiler/meta_templates/internlm2-chat.yaml; `compile-prompts models` lists
# them all). The class (TurboMindModel) says how prompts are rendered: `lm`, one string.
#
# A building block of ../eval_demo.py, imported as `internlm2_chat_7b_turbomind`. Not named
# `models` / `*_models`, so walking configs/ collects it once -- see configs/README.md.
from opencompass.models import TurboMindModel

internlm2_chat_7b_turbomind = [
    dict(
        type=TurboMindModel,
        abbr='internlm2-chat-7b-turbomind',
        path='internlm/internlm2-chat-7b',
        meta_template='internlm2-chat',
        engine_config=dict(session_len=4096, max_batch_size=16, tp=1),
        gen_config=dict(top_k=1, temperature=1e-6, top_p=0.9, max_new_tokens=256),
        max_seq_len=4096,
        max_out_len=256,
        batch_size=16,
        run_cfg=dict(num_gpus=1),
    )
]
