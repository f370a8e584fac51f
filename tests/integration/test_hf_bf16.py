"""Hugging Face LLM configs (tiny sizes, built here, no downloads) in bfloat16: no operator is non-direct for a bf16
reason on Atlas A2 where the kernel facts take bf16 (issue 11); on 910A the bf16 Linear is flagged."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from opassess.classify import classify  # noqa: E402
from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.capture import scan_inventory  # noqa: E402
from tests.integration.support import causal_lm_file  # noqa: E402

TINY = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64)
CONFIGS = {
    "LlamaConfig": {}, "Qwen2Config": {}, "MistralConfig": {}, "Gemma2Config": {"head_dim": 16},
    "MixtralConfig": {"num_local_experts": 4, "num_experts_per_tok": 2},
    "DeepseekV3Config": {"n_routed_experts": 4, "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1,
                         "moe_intermediate_size": 32, "first_k_dense_replace": 0, "kv_lora_rank": 16,
                         "q_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16},
}



def model_file(tmp_path, config: str, extra: dict) -> str:
    return causal_lm_file(tmp_path, config, dict(TINY, **extra), "eager" if "Gemma2" in config else "sdpa")


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_no_bf16_verdict_where_the_kernel_facts_take_bf16(tmp_path, kb, config):
    inventory = scan_inventory(ScanOptions(target=model_file(tmp_path, config, CONFIGS[config]), dtype="bfloat16"))
    on_a2 = classify(inventory, kb, target="A2")
    bf16 = [(c.operator.key, r.message) for c in on_a2 for r in c.reasons
            if r.code == "dtype" and "bfloat16" in r.message]
    assert bf16 == []
    assert all(c.confidence in ("high", "medium", "low") for c in on_a2)
    on_910 = {c.operator.key: c for c in classify(inventory, kb, target="910A")}
    linear = on_910["torch.nn.Linear"]
    assert linear.category != "direct"
    assert any("run it in float16 (" in r.message for r in linear.reasons if r.code == "dtype")
