"""--train on Hugging Face shapes on the meta device (issue 22, item 5): the Llama-2-7B and DeepSeek-V3 671B shapes
(benchmarks/llama2_7b_hf.py, benchmarks/deepseek_v3.py) at small depth. Their mask helpers read a value on meta, so
the step is retried with is_compiling() true, as the forward capture is, instead of falling back to the CPU (25 GiB
of real weights for the 7B shape, refused). No operator is custom-dev whose forward and backward ATen ops all run on
the NPU."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from opassess.classify import classify  # noqa: E402
from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.capture import scan_inventory  # noqa: E402
from tests.support import ROOT  # noqa: E402

BENCHMARKS = ROOT / "benchmarks"



def covered_yet_custom_dev(classified) -> list[str]:
    """Custom-dev operators whose forward and backward ATen ops all run on the NPU (kernel or decomposition)."""
    return [c.operator.key for c in classified if c.category == "custom-dev" and c.aten_support
            and all(c.aten_support.values()) and all(c.backward_support.values())]


@pytest.mark.parametrize(("model", "variable", "layers", "dtype"), [
    ("llama2_7b_hf.py", "OPASSESS_LLAMA_HF_LAYERS", 2, None),
    ("deepseek_v3.py", "OPASSESS_DSV3_LAYERS", 4, "bfloat16"),  # 3 dense layers, then one of 256 experts
])
def test_hf_shapes_train_on_meta(monkeypatch, kb, model, variable, layers, dtype):
    monkeypatch.setenv(variable, str(layers))
    inventory = scan_inventory(ScanOptions(target=str(BENCHMARKS / model), train=True, dtype=dtype))
    capture = inventory.capture
    assert (capture.step, capture.device, capture.method) == ("train", "meta", "dispatch-compiling")
    assert sum(len(n.backward) for n in capture.nodes) > 0
    classified = classify(inventory, kb)
    assert covered_yet_custom_dev(classified) == []
    assert [c.operator.key for c in classified if c.category == "custom-dev"] == []
    if model == "deepseek_v3.py":  # the experts: one grouped matmul with FLOPs, forward and backward on the NPU
        experts = next(c for c in classified if c.operator.key == "torch._grouped_mm")
        assert experts.operator.flops > 0 and all(experts.backward_support.values())


def test_transformers_expert_fallback_counts_its_flops(tmp_path):
    # Granite-MoE in float32 on meta: the mask helper needs is_compiling() true, and then transformers runs its
    # experts through its own custom op transformers::grouped_mm_fallback (non-bfloat16 weights while compiling).
    # Hand-derived FLOPs (16 tokens x 2 experts each = 32 rows, hidden 64, intermediate 128): the gate/up projection
    # 2 x 32 x 64 x 256 = 1,048,576 plus the down projection 2 x 32 x 128 x 64 = 524,288.
    path = tmp_path / "granite_moe.py"
    path.write_text(
        "import torch, transformers\n"
        "def build_model():\n"
        "    config = transformers.GraniteMoeConfig(vocab_size=128, hidden_size=64, intermediate_size=128,\n"
        "        num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,\n"
        "        num_local_experts=4, num_experts_per_tok=2)\n"
        "    config._attn_implementation = 'sdpa'\n"
        "    return transformers.AutoModelForCausalLM.from_config(config)\n"
        "def example_inputs():\n"
        "    return {'input_ids': torch.randint(0, 128, (1, 16)), 'use_cache': False}\n")
    inventory = scan_inventory(ScanOptions(target=str(path)))
    experts = next((o for o in inventory.operators if o.key.endswith("grouped_mm_fallback")), None)
    if experts is None:  # a transformers version that takes torch._grouped_mm here: it carries the FLOPs
        experts = next(o for o in inventory.operators if o.key == "torch._grouped_mm")
    assert experts.flops == 1_048_576 + 524_288


def test_a_models_own_expert_loop_counts_its_flops_forward_and_backward(tmp_path):
    # Granite-MoE with the experts' eager implementation: the model's own code loops over the experts hit (one
    # F.linear pair per expert). On meta its nonzero() has no meta kernel, so the tiny model runs on the CPU; the
    # experts show as the F.linear calls they run. Hand-derived (16 tokens x top-2 = 32 rows over the experts hit,
    # hidden 64, intermediate 128): gate/up 2 x 32 x 64 x 256 = 1,048,576 plus down 2 x 32 x 128 x 64 = 524,288;
    # their backward (--train), the input and the weight gradient of each: twice that.
    path = tmp_path / "granite_moe_eager.py"
    path.write_text(
        "import torch, transformers\n"
        "def build_model():\n"
        "    config = transformers.GraniteMoeConfig(vocab_size=128, hidden_size=64, intermediate_size=128,\n"
        "        num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,\n"
        "        num_local_experts=4, num_experts_per_tok=2)\n"
        "    config._attn_implementation = 'sdpa'\n"
        "    config._experts_implementation = 'eager'\n"
        "    return transformers.AutoModelForCausalLM.from_config(config)\n"
        "def example_inputs():\n"
        "    return {'input_ids': torch.randint(0, 128, (1, 16)), 'use_cache': False}\n")
    inventory = scan_inventory(ScanOptions(target=str(path), train=True))
    experts = [n for n in inventory.capture.nodes if n.module_path.endswith("block_sparse_moe.experts")
               and n.key == "torch.nn.functional.linear"]
    assert sum(n.flops for n in experts) == 1_048_576 + 524_288
    assert sum(n.backward_flops for n in experts) == 2 * (1_048_576 + 524_288)
    linear = next(o for o in inventory.operators if o.key == "torch.nn.functional.linear")
    assert linear.backward_flops > 0 and "aten::mm" in linear.backward_aten
