"""Integration: the capture drives the branches random weights skip (trace/drive.py): a detector's score threshold
at 0 (NMS captured, with its verdict), every expert of a Mixture-of-Experts routed (an expert the random router
leaves without tokens still has its calls captured)."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")
pytest.importorskip("torchvision")

from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.capture import scan_inventory  # noqa: E402

MIXTRAL = '''
import torch
import transformers as T


def build_model():
    model = T.MixtralForCausalLM(T.MixtralConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                                 num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                                 num_local_experts=4, num_experts_per_tok=2,
                                                 max_position_embeddings=16, experts_implementation="eager"))
    with torch.no_grad():  # a router that sends every token to experts 0 and 1: experts 2 and 3 get none
        model.model.layers[0].mlp.gate.weight.zero_()
    return model.eval()


def example_inputs():
    return {"input_ids": torch.tensor([[1, 2]]), "use_cache": False}
'''


def _linears(inventory) -> int:
    """F.linear calls inside the experts module (two per routed expert: gate_up and down)."""
    return sum(1 for node in inventory.capture.nodes
               if node.key == "torch.nn.functional.linear" and node.module_path.endswith("experts"))


def test_every_expert_of_a_moe_is_routed_by_default(model_file):
    path = model_file(MIXTRAL)
    plain = scan_inventory(ScanOptions(target=str(path), device="cpu", drive=False))
    driven = scan_inventory(ScanOptions(target=str(path), device="cpu"))
    assert _linears(plain) == 4  # experts 0 and 1 only
    assert _linears(driven) == 8  # all four: 2 tokens x top-2 spread over 4 experts
    assert driven.capture.driven == ("model.layers.0.mlp.gate: every expert routed",)
    assert plain.capture.driven == ()


def test_a_detector_with_its_threshold_driven_captures_nms(model_file):
    path = model_file('''
        import torch
        import torchvision

        def build_model():
            return torchvision.models.detection.fcos_resnet50_fpn(weights=None, weights_backbone=None, min_size=64,
                                                                  max_size=64, topk_candidates=50).eval()

        def example_inputs():
            return ([torch.rand(3, 64, 64)],)
    ''')
    inventory = scan_inventory(ScanOptions(target=str(path), device="cpu"))
    assert inventory.capture.driven == ("head.score_thresh 0.2 -> 0",) or any(
        "score_thresh" in d for d in inventory.capture.driven)
    assert "torchvision::nms" in {op.key for op in inventory.operators}
