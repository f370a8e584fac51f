"""A model file: Hugging Face transformers' Llama at Llama-3-8B's published sizes (32 layers, hidden 4096, 32 heads,
8 key/value heads, MLP 14336, vocabulary 128256, rope theta 500000), SDPA attention, 128 tokens. opassess builds it
on the meta device: nothing is allocated or downloaded. OPASSESS_LLAMA_HF_LAYERS overrides the depth;
OPASSESS_LLAMA_HF_TOKENS and OPASSESS_LLAMA_HF_BATCH the micro-batch (benchmarks/bench_parallel.py: 2 x 8192)."""
import os

import torch
import transformers

SIZES = dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
             num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192, rms_norm_eps=1e-5,
             rope_theta=500000.0)
TOKENS = 128


def build_model():
    sizes = dict(SIZES)
    if os.environ.get("OPASSESS_LLAMA_HF_LAYERS"):
        sizes["num_hidden_layers"] = int(os.environ["OPASSESS_LLAMA_HF_LAYERS"])
    config = transformers.LlamaConfig(**sizes)
    config._attn_implementation = "sdpa"
    return transformers.LlamaForCausalLM(config)


def example_inputs():
    batch = int(os.environ.get("OPASSESS_LLAMA_HF_BATCH", 1))
    tokens = int(os.environ.get("OPASSESS_LLAMA_HF_TOKENS", TOKENS))
    return {"input_ids": torch.randint(0, SIZES["vocab_size"], (batch, tokens)), "use_cache": False}
