"""One evidence hierarchy on every product (issue 22, item 1): small Hugging Face configs built here in bfloat16.

On Ascend 950 the torch_npu API page marks many APIs ✘ (nn.Linear, nn.Embedding, SDPA, Tensor.new_ones ...) while
the aclnn docs of the kernels they run list 950 as supported: the kernel facts decide, so nothing is custom-dev; a
non-direct verdict there is a documented parameter limit (topk sorted=False). On Atlas training series (910A) bf16
is excluded by many kernels' docs: every non-direct verdict names the limit that applies on that chip."""
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
    "Qwen3Config": {"head_dim": 16}, "LlamaConfig": {},
    "DeepseekV3Config": {"n_routed_experts": 4, "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1,
                         "moe_intermediate_size": 32, "first_k_dense_replace": 0, "kv_lora_rank": 16,
                         "q_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16},
    "GptOssConfig": {"num_local_experts": 4, "num_experts_per_tok": 2, "head_dim": 16, "sliding_window": 16},
}
LIMITS = {"dtype", "dtype-cast", "param-limit", "shape-limit", "binding", "replacement", "cpu-fallback"}



def model_file(tmp_path, config: str, extra: dict) -> str:
    attention = "eager" if config == "GptOssConfig" else "sdpa"  # gpt-oss has no SDPA path in transformers
    return causal_lm_file(tmp_path, config, dict(TINY, **extra), attention)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_950_follows_the_kernel_facts_and_910A_names_its_limits(tmp_path, kb, config):
    inventory = scan_inventory(ScanOptions(target=model_file(tmp_path, config, CONFIGS[config]), dtype="bfloat16"))
    on_950 = classify(inventory, kb, target="950")
    assert [c.operator.key for c in on_950 if c.category == "custom-dev"] == []
    for c in on_950:
        if c.category != "direct":  # a documented parameter limit, not a product mark
            assert {r.code for r in c.reasons} & {"param-limit", "shape-limit"}, (c.operator.key, c.reasons)
    # the API page's ✘ overruled by the kernel docs is said, with confidence low ("not verified on Ascend 950")
    overruled = [c for c in on_950 if any(r.code == "kernel-product" and "marks Ascend 950DT ✘" in r.message
                                          for r in c.reasons)]
    assert overruled and all(c.confidence == "low" for c in overruled)
    assert "torch.nn.Linear" in {c.operator.key for c in overruled}
    on_910 = classify(inventory, kb, target="910A")
    for c in on_910:
        if c.category == "direct":
            continue
        limits = [r for r in c.reasons if r.code in LIMITS]
        assert limits, (c.operator.key, [r.code for r in c.reasons])
        for r in limits:
            if r.code == "dtype":
                assert "on Atlas training series" in r.message and "bfloat16" in r.message
