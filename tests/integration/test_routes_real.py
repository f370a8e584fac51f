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


def test_a_real_deepseek_v3_is_on_vllm_ascends_model_list_and_llama_is_not_under_its_class_name():
    """A tiny Hugging Face DeepseekV3ForCausalLM is the page's 'DeepSeek V3/3.1' row (✅ on A2/A3, line 33 of
    vllm-ascend@2c8e27ab's supported_models.md); LlamaForCausalLM folds to 'llama', a name the page does not give
    (it says Llama2/3/3.1/3.2): not checked, not guessed."""
    pytest.importorskip("transformers")
    deepseek = build_view(assess(ScanOptions(target=str(MODELS / "hf_tiny.py"), entry="deepseek_v3",
                                             route="vllm-ascend"))).document["serving"]
    first = deepseek["items"][0]
    assert deepseek["architecture"] == "DeepseekV3ForCausalLM"
    assert (first["status"], first["detail"]) == ("supported", "listed by vllm-ascend as DeepSeek V3/3.1: supported "
                                                               "on A2/A3")
    assert first["evidence"].endswith("supported_models.md:L33")
    llama = build_view(assess(ScanOptions(target=str(MODELS / "hf_tiny.py"), entry="llama",
                                          route="vllm-ascend"))).document["serving"]["items"][0]
    assert llama["status"] == "no facts" and llama["evidence"].endswith(": no row named llama")
