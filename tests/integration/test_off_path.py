"""Verdicts off the beaten path (issue 37), on real models built here (random weights, tiny configs, nothing
downloaded): host-only factories, the overload the dispatcher ran, and the other classes the issue names."""
from __future__ import annotations

from pathlib import Path

import pytest

from opassess.classify import classify
from opassess.options import ScanOptions
from opassess.pipeline.capture import scan_inventory
from tests.integration.support import causal_lm_file

MODELS = Path(__file__).resolve().parent / "models"
TINY = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64)


def verdicts(inventory, kb, target: str) -> dict:
    return {c.operator.key: c for c in classify(inventory, kb, target=target)}


def test_torch_tensor_of_python_data_is_a_host_factory_not_an_api_page_mark_on_ascend_950(kb):
    pytest.importorskip("torchvision")
    # SSDlite's transform builds its mean and std with torch.tensor(list): the 950DT API page marks torch.tensor ✘,
    # but the data is filled on the host and copied: lift_fresh, which runs everywhere, is all it dispatches
    on_950 = verdicts(scan_inventory(ScanOptions(target=str(MODELS / "detection.py"))), kb, "950")
    tensor = on_950["torch.tensor"]
    assert tensor.category == "direct"
    assert [r.code for r in tensor.reasons][:1] == ["host-factory"]
    assert "api-unsupported" not in {r.code for r in tensor.reasons}
    assert tensor.aten_support == {"aten::lift_fresh": True}


def test_integer_repeat_interleave_is_judged_by_its_own_overload_on_910a(tmp_path, kb):
    pytest.importorskip("transformers")
    # Ernie 4.5's rotary embedding calls cos.repeat_interleave(2, dim=-1): the dispatcher runs self_int, whose
    # kernel (aclnnRepeatInterleaveIntWithDim) falls back to aclop on 910A; the tensor-repeats overload's kernel
    # (aclnnRepeatInterleaveTensor, no fallback there) is another row and must not decide
    inventory = scan_inventory(ScanOptions(target=causal_lm_file(tmp_path, "Ernie4_5Config", TINY)))
    repeat = verdicts(inventory, kb, "910A")["Tensor.repeat_interleave"]
    assert repeat.operator.entry == ("aten::repeat_interleave.self_int",)
    assert repeat.category == "direct"
    assert "aten::repeat_interleave.Tensor" not in repeat.aten_support
    assert not any("aclnnRepeatInterleaveTensor" in r.message for r in repeat.reasons)


def test_a_weight_norm_parametrized_conv_follows_the_taken_whole_op_into_the_training_step(kb):
    pytest.importorskip("transformers")
    # wav2vec2's positional convolution is weight-normed through torch.nn.utils.parametrize: torch_npu runs
    # aten::_weight_norm whole, so the backward of the CPU's fused _weight_norm_interface never runs there
    inventory = scan_inventory(ScanOptions(target=str(MODELS / "hf_speech.py"), train=True))
    for target in ("A2", "910A"):
        conv = verdicts(inventory, kb, target)["torch.nn.utils.parametrize.ParametrizedConv1d"]
        assert "aten::_weight_norm_interface_backward" in conv.operator.backward_aten
        assert conv.category != "custom-dev", [r.message for r in conv.reasons]
        assert "backward-no-kernel" not in {r.code for r in conv.reasons}
        assert any(r.code == "taken-whole" and "_weight_norm_interface_backward" in r.message for r in conv.reasons)
        assert conv.backward_support == {"aten::convolution_backward": True}


@pytest.mark.parametrize("file", ["detection.py", "detector_inputs.py"])
def test_bf16_detectors_are_scanned_when_the_cpu_has_no_bf16_nms(file, kb):
    pytest.importorskip("torchvision")
    # SSDlite and Faster R-CNN cannot run on meta (nonzero); on the CPU torchvision's nms has no bfloat16 kernel. It
    # runs in float32 there and is judged in bfloat16, the dtype asked for; the report says so
    inventory = scan_inventory(ScanOptions(target=str(MODELS / file), dtype="bfloat16"))
    assert inventory.capture.device == "cpu"
    note = inventory.capture.device_note.splitlines()[-1]
    assert note.startswith("on the CPU, torchvision::nms") and note.endswith(  # Faster R-CNN: roi_align as well
        " refused bfloat16: run in float32 there, and judged in bfloat16 as the model asked")
    nms = verdicts(inventory, kb, "A2")["torchvision::nms"]
    assert {d for s in nms.operator.signatures for d in s.input_dtypes if d} == {"bfloat16"}
    assert nms.category == "param-converted"  # torch_npu.npu_nms_v4 replaces it, as in float32
    if file == "detector_inputs.py":
        # Tensor.detach's API page lists float32 only, but aten::detach is a view: no kernel reads the bf16 data
        detach = verdicts(inventory, kb, "A2")["Tensor.detach"]
        assert detach.operator.aten == ("aten::detach",)
        assert detach.category == "direct" and "dtype" not in {r.code for r in detach.reasons}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_identity_dispatches_nothing_and_never_drives_a_precision_decision_on_310p(dtype):
    pytest.importorskip("timm")
    from opassess.pipeline.assess import assess
    from opassess.report import build_view

    # timm's ViT keeps nn.Identity where a layer is off; the 310P API page lists float32 only for it, but Identity
    # runs no operator: it is zero-cost, and float16 (that card's native inference dtype) needs no plan at all
    options = ScanOptions(target=str(MODELS / "timm_models.py"), entry="vit", dtype=dtype, product="310P")
    document = build_view(assess(options)).document
    identity = next(o for o in document["operators"] if o["op"] == "torch.nn.Identity")
    assert (identity["category"], identity["aten"], identity["cost"]) == ("direct", [], "zero-cost")
    assert "dtype" not in {r["code"] for r in identity["reasons"]}
    decisions = document["summary"]["decisions"]
    assert all("torch.nn.Identity" not in d["operators"] for d in decisions)
    assert not any("Identity" in f["title"] and "documents" in f["title"] for f in document["findings"])
    if dtype == "float16":
        assert not any(d["name"] == "precision" for d in decisions)


def test_each_param_converted_reason_names_the_limit_its_own_signature_crosses(kb):
    pytest.importorskip("torchvision")
    # Faster R-CNN resizes its images bilinearly and upsamples its FPN levels by nearest: on 910A the nearest kernel's
    # doc excludes float32, the bilinear one's does not. Only the nearest signatures are param-converted, and their
    # reason cites the nearest kernel's row alone
    inventory = scan_inventory(ScanOptions(target=str(MODELS / "detector_inputs.py")))
    interpolate = verdicts(inventory, kb, "910A")["torch.nn.functional.interpolate"]
    modes = [s.attrs.get("mode") for s in interpolate.operator.signatures]
    assert set(modes) == {"bilinear", "nearest"}
    for mode, category in zip(modes, interpolate.signature_categories, strict=True):
        assert category == ("param-converted" if mode == "nearest" else "direct"), (mode, category)
    for reason in (r for r in interpolate.reasons if r.code == "dtype"):
        assert modes[reason.signature] == "nearest"
        assert "aclnnUpsampleNearest2d" in reason.evidence and "Bilinear" not in reason.evidence


def test_a_delegating_kernel_cites_the_api_of_the_op_it_delegates_to_on_910a(tmp_path, kb):
    pytest.importorskip("transformers")
    # op-plugin's _weight_norm only calls Tensor.div (tensor divisor: aclnnDiv); its scaled_dot_product_attention
    # builds masks (masked_fill_, triu, ...) and calls npu_fusion_attention (aclnnFlashAttention*). Before, the
    # first documented API of the row decided: aclnnDivs (the scalar divisor's) and aclnnInplaceMaskedFillTensor
    speech = verdicts(scan_inventory(ScanOptions(target=str(MODELS / "hf_speech.py"), dtype="bfloat16")), kb, "910A")
    conv = speech["torch.nn.utils.parametrize.ParametrizedConv1d"]
    (dtype,) = [r for r in conv.reasons if r.code == "dtype"]  # bfloat16 is excluded on the 910 for both APIs
    assert "by aclnnDiv on Atlas training series" in dtype.message and "aclnnDiv.self" in dtype.evidence
    assert any("the main API aclnnDiv (it delegates to div" in r.evidence for r in conv.reasons)
    assert not any("aclnnDivs" in r.message for r in conv.reasons)
    llama = scan_inventory(ScanOptions(target=causal_lm_file(tmp_path, "LlamaConfig", TINY), dtype="bfloat16"))
    # (on 310B: below Ascend910B1 the kernel runs no fused attention at all, the next test)
    sdpa = verdicts(llama, kb, "310B")["torch.nn.functional.scaled_dot_product_attention"]
    assert not any("MaskedFill" in r.message for r in sdpa.reasons), [r.message for r in sdpa.reasons]
    assert any("aclnnFlashAttention" in r.message and r.code == "kernel-product" for r in sdpa.reasons)


def test_below_ascend910b1_attention_is_judged_by_the_math_decomposition_torch_npu_runs_there(tmp_path, kb):
    pytest.importorskip("transformers")
    # op-plugin's scaled_dot_product_attention calls npu_fusion_attention only from Ascend910B1 on; on the 910 and
    # the 310P it runs at::_scaled_dot_product_attention_math. Llama's grouped-query SDPA (4 query heads, 2 key/value
    # heads) in bf16: that decomposition casts to float32 before bmm and softmax, so their kernels' bf16 exclusions
    # are no limit it crosses, and the flash kernels' product marks are not what runs
    llama = scan_inventory(ScanOptions(target=causal_lm_file(tmp_path, "LlamaConfig", TINY), dtype="bfloat16"))
    for target in ("910A", "310P"):
        sdpa = verdicts(llama, kb, target)["torch.nn.functional.scaled_dot_product_attention"]
        fallback = [r for r in sdpa.reasons if "_scaled_dot_product_attention_math" in r.message]
        assert fallback and "ScaledDotProductAttentionKernelNpuOpApi.cpp" in fallback[0].evidence
        assert not any("aclnnFlashAttention" in r.message for r in sdpa.reasons), [r.message for r in sdpa.reasons]
        kernel = next(r for r in sdpa.reasons if r.code == "kernel")
        assert "calling aten::_to_copy" in kernel.evidence and "aten::bmm" in kernel.evidence
        assert not any(r.code == "dtype" and ("aclnnBatchMatMul" in r.message or "aclnnSoftmax" in r.message)
                       for r in sdpa.reasons)
    on_a2 = verdicts(llama, kb, "A2")["torch.nn.functional.scaled_dot_product_attention"]
    assert on_a2.category == "direct"
    assert not any("_scaled_dot_product_attention_math" in r.message + r.evidence for r in on_a2.reasons)


def test_a_dtype_reason_cites_only_the_kernels_that_read_the_data_in_that_dtype(kb):
    pytest.importorskip("torchvision")
    # torchvision's ViT in bfloat16: nn.MultiheadAttention projects in bf16 (addmm) but computes its scores on float32
    # copies (mul, bmm, _safe_softmax after _to_copy). On 910A only aclnnAddmm's row speaks for bf16 data; the float32
    # calls' kernels (aclnnMuls, aclnnSoftmax) excluding bf16 are no limit this model crosses
    options = ScanOptions(target=str(MODELS / "vision.py"), entry="vit", input_shapes=((1, 3, 32, 32),),
                          dtype="bfloat16")
    mha = verdicts(scan_inventory(options), kb, "910A")["torch.nn.MultiheadAttention"]
    assert {c.input_dtypes[0] for n in mha.operator.nodes for c in n.aten if c.op == "aten::bmm"} == {"float32"}
    dtype = [r for r in mha.reasons if r.code == "dtype"]
    assert mha.category == "param-converted" and dtype
    assert all("by aclnnAddmm on" in r.message for r in dtype), [r.message for r in dtype]
    assert not any("aclnnMuls" in r.evidence or "aclnnSoftmax" in r.evidence for r in dtype)
