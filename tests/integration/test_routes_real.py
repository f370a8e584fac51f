"""The routes on real models: torchvision's ResNet-18 exported to ONNX at opset 17 with every node judged against
the ONNX -> CANN map, and a Hugging Face Llama (tiny config) checked for vLLM-Ascend serving with W8A8 on the 950
generation. Skipped without torchvision, transformers or onnx."""
from __future__ import annotations

from pathlib import Path

import pytest

from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.report import build_view

MODELS = Path(__file__).resolve().parent / "models"


def test_resnet18_exports_at_opset_17_and_every_node_maps_to_a_cann_operator():
    pytest.importorskip("torchvision")
    pytest.importorskip("onnx")
    options = ScanOptions(target=str(MODELS / "vision.py"), entry="resnet18", input_shapes=((1, 3, 64, 64),),
                          route="onnx", opset=17, exporter="torchscript")
    onnx = build_view(assess(options)).document["onnx"]
    assert (onnx["opset"], onnx["exporter"], onnx["failures"]) == (17, "torchscript", [])
    nodes = {n["op_type"]: n for n in onnx["nodes"]}
    # eval-mode export folds each BatchNorm into its Conv: 20 convs, 17 ReLUs, 8 residual adds, one classifier
    assert (nodes["Conv"]["count"], nodes["Relu"]["count"], nodes["Add"]["count"], nodes["Gemm"]["count"]) == \
        (20, 17, 8, 1)
    assert "BatchNormalization" not in nodes
    assert {n["verdict"] for n in onnx["nodes"]} == {"supported"}
    assert (nodes["GlobalAveragePool"]["cann_op"], nodes["Relu"]["cann_op"], nodes["Conv"]["cann_op"]) == (
        "AvgPool", "Relu", "PartitionedCall")


def test_llama_w8a8_on_the_950_generation_is_a_risk_not_support():
    pytest.importorskip("transformers")
    options = ScanOptions(target=str(MODELS / "hf_tiny.py"), entry="llama", route="vllm-ascend", quant="w8a8",
                          product="950")
    serving = build_view(assess(options)).document["serving"]
    assert serving["architecture"] == "LlamaForCausalLM" and serving["target"] == "Ascend 950"
    statuses = [i["status"] for i in serving["items"][1:]]
    assert "risk" in statuses and "supported" not in statuses
    on_a2 = build_view(assess(ScanOptions(target=str(MODELS / "hf_tiny.py"), entry="llama", route="vllm-ascend",
                                          quant="w8a8"))).document["serving"]
    assert on_a2["items"][1]["status"] == "supported"  # the vllm-ascend row: functional on A2
