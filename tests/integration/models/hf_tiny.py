"""Hugging Face transformers models from tiny configs built here (random weights, nothing downloaded). The MoE
configs keep their architecture's routing (Mixtral's top-2 of 4, Qwen's shared expert, DeepSeek-V3's grouped
top-k with a dense first layer and multi-head latent attention) at toy sizes."""
import torch
import transformers as T

TOKENS = 16


def bert():
    return T.BertModel(T.BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                    intermediate_size=64, max_position_embeddings=64))


def llama():
    return T.LlamaForCausalLM(T.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                                            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                            max_position_embeddings=64))


def mixtral():
    return T.MixtralForCausalLM(T.MixtralConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                                                num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                num_local_experts=4, num_experts_per_tok=2,
                                                max_position_embeddings=64))


def qwen2_moe():
    return T.Qwen2MoeForCausalLM(T.Qwen2MoeConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                                                  moe_intermediate_size=32, shared_expert_intermediate_size=64,
                                                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                  num_experts=8, num_experts_per_tok=2, max_position_embeddings=64))


def qwen3_moe():
    return T.Qwen3MoeForCausalLM(T.Qwen3MoeConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                                                  moe_intermediate_size=32, num_hidden_layers=2,
                                                  num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                                  num_experts=8, num_experts_per_tok=2, max_position_embeddings=64))


def deepseek_v3():
    return T.DeepseekV3ForCausalLM(T.DeepseekV3Config(
        vocab_size=128, hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=2,
        first_k_dense_replace=1, num_attention_heads=4, num_key_value_heads=4, n_routed_experts=8,
        num_experts_per_tok=2, n_group=2, topk_group=1, n_shared_experts=1, q_lora_rank=32, kv_lora_rank=16,
        qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, max_position_embeddings=64))


def example_inputs():
    return {"input_ids": torch.randint(0, 128, (1, TOKENS)), "use_cache": False}
