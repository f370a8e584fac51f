"""The 2026 attention variants on the real transformers implementations (small configs built here, random weights):
gpt-oss's attention sinks (eager attention: cat, max, sub, softmax, drop the sink column) and DeepSeek-V3's
multi-head latent attention (kv_a_proj_with_mqa -> split -> RMSNorm -> kv_b_proj), each with the time the time
model puts at risk on Atlas A2."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.assess import assess  # noqa: E402
from opassess.report.sections.time import finding_time_doc  # noqa: E402
from tests.integration.support import causal_lm_file  # noqa: E402

TINY = dict(vocab_size=128, hidden_size=64, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64)
CONFIGS = {
    "GptOssConfig": ({"num_local_experts": 4, "num_experts_per_tok": 2, "head_dim": 16, "sliding_window": 8},
                     "attention with sinks"),
    "DeepseekV3Config": ({"n_routed_experts": 4, "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1,
                          "moe_intermediate_size": 32, "first_k_dense_replace": 1, "kv_lora_rank": 16,
                          "q_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16},
                         "multi-head latent attention"),
}


def model_file(tmp_path, config: str, extra: dict) -> str:
    attention = "eager" if config == "GptOssConfig" else "sdpa"  # gpt-oss has no SDPA path in transformers
    return causal_lm_file(tmp_path, config, dict(TINY, **extra), attention)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_the_variant_is_found_on_the_real_implementation(tmp_path, config):
    extra, title = CONFIGS[config]
    assessment = assess(ScanOptions(target=model_file(tmp_path, config, extra), project_scan=False))
    found = [f for f in assessment.findings if f.kind == "attention-variant" and f.title.startswith(title)]
    assert len(found) == 1 and "2x" in found[0].title, [f.title for f in assessment.findings]
    assert assessment.performance.step.step_us > 0
    time = finding_time_doc(assessment.performance, found[0])
    assert time["gain_us"] <= time["step_at_risk_us"]
    if config == "GptOssConfig":  # the score ops, sink cat and column drop around each layer's matmuls are at risk
        assert time["gain_us"] > 0 and {"torch.cat", "torch.nn.functional.softmax"} <= set(found[0].ops)
    else:
        assert found[0].npu_api == "torch_npu.npu_mla_prolog"
