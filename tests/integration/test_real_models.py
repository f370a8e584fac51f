"""Real models from torchvision and Hugging Face transformers (random weights, tiny configs built in
tests/integration/models, nothing downloaded), scanned end to end: the capture method and device each takes, the
operators found, their counts and FLOPs worked by hand, and categories that follow from the knowledge base's facts.
Skipped where torchvision or transformers are not installed (`pip install -e '.[test,integration]'`)."""
from __future__ import annotations

from pathlib import Path

import pytest

from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.report import build_view

MODELS = Path(__file__).resolve().parent / "models"


def scan(file: str, entry: str | None = None, shape: tuple[int, ...] | None = None, dtype: str | None = None):
    """The JSON document of a default scan, as `opassess scan -f json` writes it."""
    options = ScanOptions(target=str(MODELS / file), entry=entry, input_shapes=(shape,) if shape else (), dtype=dtype)
    return build_view(assess(options)).document


def ops(document) -> dict:
    return {o["op"]: o for o in document["operators"]}


def capture(document) -> tuple[str, str, str | None]:
    c = document["model"]["capture"]
    return c["method"], c["device"], c["device_note"]


# ------------------------------------------------------------------ torchvision

def test_resnet18_is_traced_by_fx_on_meta_with_every_layer_counted():
    pytest.importorskip("torchvision")
    document = scan("vision.py", "resnet18", (1, 3, 64, 64))
    assert capture(document) == ("fx", "meta", None)
    found = ops(document)
    # resnet18: a stem conv, 8 basic blocks of 2 convs, 3 downsampling 1x1 convs = 20 convs, each followed by a
    # BatchNorm; a ReLU after the stem and twice in each block = 17 ReLU calls
    assert (found["torch.nn.Conv2d"]["count"], found["torch.nn.BatchNorm2d"]["count"],
            found["torch.nn.ReLU"]["count"]) == (20, 20, 17)
    assert found["torch.nn.Conv2d"]["aten"] == ["aten::convolution"]
    assert found["torch.nn.Linear"]["flops"] == 2 * 512 * 1000  # the classifier: 512 features -> 1000 classes
    # convolutions, batch norm, ReLU, pooling and the classifier all have NPU kernels
    assert {o["category"] for o in document["operators"]} == {"direct"}
    assert document["unknown_operators"] == []


def test_a_detector_runs_on_the_cpu_because_nonzero_has_no_meta_kernel_and_keeps_its_torchvision_ops():
    pytest.importorskip("torchvision")
    document = scan("detector_inputs.py")
    method, device, note = capture(document)
    assert (method, device) == ("dispatch", "cpu")
    # the detector's box filtering needs values: the meta backend cannot run aten::nonzero, so the scan is retried
    # on the CPU and says why (the meta backend's failure, not the model's)
    assert "the meta kernel of aten::nonzero raised NotImplementedError" in note
    found = ops(document)
    # torchvision's own ops appear as themselves, with torch_npu's replacements from rules.toml
    assert found["torchvision::nms"]["kind"] == "custom" and found["torchvision::nms"]["count"] == 1
    assert found["torchvision::nms"]["replacement"] == "torch_npu.npu_nms_v4"
    assert found["torchvision::roi_align"]["replacement"] == "torch_npu.npu_roi_align"
    assert {found[k]["category"] for k in ("torchvision::nms", "torchvision::roi_align")} == {"param-converted"}


def test_a_vision_transformer_keeps_its_attention_layers_whole():
    pytest.importorskip("torchvision")
    document = scan("vision.py", "vit", (1, 3, 32, 32))
    assert capture(document) == ("fx", "meta", None)
    found = ops(document)
    attention = found["torch.nn.MultiheadAttention"]
    assert attention["count"] == 2 and attention["replacement"] == "torch_npu.npu_fusion_attention"
    # patch embedding: a 8x8 stride-8 conv, 3 -> 32 channels, on a 32x32 image: 16 patches x 32 outputs x 192 MACs
    assert found["torch.nn.Conv2d"]["count"] == 1 and found["torch.nn.Conv2d"]["flops"] == 2 * 16 * 32 * 3 * 8 * 8
    assert found["torch.nn.LayerNorm"]["count"] == 5  # two per encoder layer and the final one


# --------------------------------------------------------------- transformers

def test_bert_runs_in_one_eager_forward_on_meta_with_sdpa_recorded_whole():
    pytest.importorskip("transformers")
    document = scan("hf_tiny.py", "bert")
    method, device, note = capture(document)
    assert (method, device, note) == ("dispatch", "meta", None)
    assert document["model"]["capture"]["attempts"][0]["method"] == "fx"  # transformers' code is not fx-traceable
    found = ops(document)
    # 2 layers x (q, k, v, attention output, intermediate, output) + the pooler = 13 Linear calls
    assert found["torch.nn.Linear"]["count"] == 13 and found["torch.nn.Embedding"]["count"] == 3
    sdpa = found["torch.nn.functional.scaled_dot_product_attention"]
    assert sdpa["count"] == 2 and sdpa["aten"] == ["aten::scaled_dot_product_attention"]


def test_llama_takes_the_graph_safe_path_of_transformers_mask_helpers_on_meta():
    pytest.importorskip("transformers")
    document = scan("hf_tiny.py", "llama")
    assert capture(document) == ("dispatch-compiling", "meta", None)
    attempts = {a["method"]: a["error"] for a in document["model"]["capture"]["attempts"]}
    assert "Tensor.item() cannot be called on meta tensors" in attempts["dispatch"]
    found = ops(document)
    # 2 layers x (q, k, v, o, gate, up, down) + lm_head = 15; RMSNorm is written out (pow, mean, rsqrt) 2 x 2 + 1
    assert found["torch.nn.Linear"]["count"] == 15 and found["torch.rsqrt"]["count"] == 5
    assert found["torch.nn.functional.scaled_dot_product_attention"]["count"] == 2
    assert found["torch.nn.functional.silu"]["category"] == "direct"


def test_a_gpu_script_around_llama_scans_the_same_and_transformers_keeps_seeing_no_flash_attn():
    transformers = pytest.importorskip("transformers")
    document = scan("hf_gpu_script.py")
    assert capture(document) == ("dispatch-compiling", "meta", None)
    found = ops(document)
    assert found["torch.nn.Linear"]["count"] == 15 and found["torch.rsqrt"]["count"] == 5
    assert found["torch.nn.functional.scaled_dot_product_attention"]["count"] == 2
    assert not [o for o in document["operators"] if o["kind"] == "library"]  # imported, never called
    used = {s["library"]: s for s in document["model"]["capture"]["stand_ins"]}
    assert used["flash_attn"]["symbols"] == [] and used["torch.cuda"]["symbols"]
    # transformers probed for flash_attn while the stand-in was installed: it must not have been offered it
    assert transformers.utils.is_flash_attn_2_available() is False


# Grouped-GEMM FLOPs in bfloat16, worked by hand: 16 tokens x top-k experts = S routed rows; each MoE layer runs
# gate_up (S, H) x (E, H, 2I) and down (S, I) x (E, I, H): 2 S H 2I + 2 S I H = 6 S H I per layer.
MOE = {
    #            entry          MoE layers  S = 16 x top-k  H   I (expert)
    "mixtral": ("mixtral", 2, 32, 64, 128),
    "qwen2_moe": ("qwen2_moe", 2, 32, 64, 32),
    "qwen3_moe": ("qwen3_moe", 2, 32, 64, 32),
    "deepseek_v3": ("deepseek_v3", 1, 32, 64, 32),  # first_k_dense_replace=1: layer 0 is dense
}


@pytest.mark.parametrize("dtype", [None, "bfloat16"])
@pytest.mark.parametrize("name", sorted(MOE))
def test_moe_models_scan_on_meta_in_float32_and_bfloat16(name, dtype):
    pytest.importorskip("transformers")
    entry, layers, rows, hidden, inter = MOE[name]
    document = scan("hf_tiny.py", entry, dtype=dtype)
    method, device, note = capture(document)
    assert device == "meta" and note is None and method.startswith("dispatch")
    assert document["model"]["dtype"] == (dtype or "float32")
    experts = [o for o in document["operators"] if any(m.endswith(".experts") for m in o["modules"])
               and ({"aten::_grouped_mm", "transformers::grouped_mm_fallback"} & set(o["aten"]))]
    assert len(experts) == 1, [o["op"] for o in document["operators"]]
    [grouped] = experts
    assert grouped["count"] == 2 * layers  # gate_up and down per MoE layer
    if dtype == "bfloat16":
        # the grouped GEMM itself: torch's kernel for bfloat16, with its FLOPs
        assert grouped["aten"] == ["aten::_grouped_mm"]
        assert grouped["flops"] == layers * 6 * rows * hidden * inter


def test_wav2vec2_keeps_its_weight_normed_positional_conv_and_feature_convs():
    pytest.importorskip("transformers")
    document = scan("hf_speech.py")
    assert capture(document) == ("dispatch", "meta", None)
    found = ops(document)
    assert found["torch.nn.Conv1d"]["count"] == 2 and found["torch.nn.GroupNorm"]["count"] == 1
    positional = found["torch.nn.utils.parametrize.ParametrizedConv1d"]
    assert positional["count"] == 1 and "aten::_weight_norm_interface" in positional["aten"]
    assert found["torch.nn.functional.scaled_dot_product_attention"]["count"] == 2


def test_whisper_encoder_scans_on_meta():
    pytest.importorskip("transformers")
    document = scan("hf_whisper.py")
    assert capture(document) == ("dispatch", "meta", None)
    found = ops(document)
    # two Conv1d in front of the encoder: 16 mel bins -> 32 (k=3, 100 frames), 32 -> 32 (k=3, stride 2, 50 frames)
    assert found["torch.nn.Conv1d"]["count"] == 2
    assert found["torch.nn.Conv1d"]["flops"] == 2 * 100 * 32 * 16 * 3 + 2 * 50 * 32 * 32 * 3
    assert found["torch.nn.functional.scaled_dot_product_attention"]["count"] == 2
