"""Qwen3 (a tiny Hugging Face config built here, no downloads) in bfloat16 on 910A, which has no bfloat16 kernels:
one precision decision, priced once, and a total within a few days of the same model on Atlas A2 (issue 23)."""
from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("transformers")

from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.assess import assess  # noqa: E402

QWEN3 = textwrap.dedent("""
    import torch, transformers

    def build_model():
        config = transformers.Qwen3Config(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                          head_dim=16)
        config._attn_implementation = "sdpa"
        return transformers.AutoModelForCausalLM.from_config(config)

    def example_inputs():
        return {"input_ids": torch.randint(0, 128, (1, 16)), "use_cache": False}
""")


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory):
    path = tmp_path_factory.mktemp("qwen3") / "qwen3_tiny.py"
    path.write_text(QWEN3)
    return {product: assess(ScanOptions(target=str(path), product=product, dtype="bfloat16"))
            for product in ("910A", "Atlas A2")}


def test_qwen3_bf16_on_910A_is_one_precision_decision(qwen3):
    est = qwen3["910A"].estimate
    precision = [d for d in est.decisions if d.name == "precision"]
    assert len(precision) == 1
    plan = precision[0]
    assert {"torch.nn.Linear", "torch.nn.functional.silu", "Tensor.neg"} <= set(plan.operators)
    ops = {op.score.classified.operator.key: op for op in est.ops}
    for key in plan.operators:  # verdicts and reasons stay; the effort is the decision's
        assert ops[key].score.classified.category == "param-converted"
        assert any(r.code == "dtype" for r in ops[key].score.classified.reasons)
        assert ops[key].cost == "decision"
    assert "run in float16 on" in plan.title and "loss scaling" not in plan.title  # a forward-only capture
    prone = next(line for line in plan.plan if line.startswith("keep in float32"))
    assert "scaled_dot_product_attention" in prone and "torch.rsqrt" in prone  # attention's softmax, the RMSNorm
    assert not any(d.name == "precision" for d in qwen3["Atlas A2"].estimate.decisions)


def test_qwen3_bf16_on_910A_total_is_within_a_few_days_of_A2(qwen3):
    on_910, on_a2 = qwen3["910A"].estimate, qwen3["Atlas A2"].estimate
    assert 0 < on_910.p50 - on_a2.p50 < 4.0  # 46 person-days before decisions (eight ports of one fact)
