"""A model file: Hugging Face transformers' DeepSeek-V3 at its published sizes (671B parameters, 61 layers, 256
routed experts of which 8 per token, multi-head latent attention). opassess builds it on the meta device: nothing is
allocated or downloaded. OPASSESS_DSV3_LAYERS overrides the depth (the benchmark's smoke test uses 4)."""
import os

import torch
import transformers

SIZES = dict(vocab_size=129280, hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048,
             num_hidden_layers=61, first_k_dense_replace=3, n_routed_experts=256, n_shared_experts=1,
             num_experts_per_tok=8, n_group=8, topk_group=4, num_attention_heads=128, num_key_value_heads=128,
             q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
             max_position_embeddings=163840)
TOKENS = 128


def build_model():
    sizes = dict(SIZES)
    if os.environ.get("OPASSESS_DSV3_LAYERS"):
        sizes["num_hidden_layers"] = int(os.environ["OPASSESS_DSV3_LAYERS"])
    return transformers.DeepseekV3ForCausalLM(transformers.DeepseekV3Config(**sizes))


def example_inputs():
    return {"input_ids": torch.randint(0, SIZES["vocab_size"], (1, TOKENS)), "use_cache": False}
