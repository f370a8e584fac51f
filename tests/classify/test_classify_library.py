"""Stand-in operators (kind "library") judged from source_facts.json's third-party kernel table: never direct, the
row cited, the arguments a route drops named, an unknown function custom-dev with low confidence."""
from __future__ import annotations

from opassess.classify.library import classify_library
from opassess.records import Operator, OpNode, Signature


def library_op(key: str, attrs: dict | None = None) -> Operator:
    attrs = attrs or {}
    shapes, dtypes = ((2, 16, 4, 8),), ("bfloat16",)
    node = OpNode("n0", key, "library", "", attrs, shapes, dtypes, shapes, dtypes, (), "model.py:7")
    return Operator(key, "library", 1, ("",), (Signature(attrs, shapes, dtypes, 1, ("",), ("model.py:7",)),), (),
                    ("model.py:7",), (node,))


def test_flash_attn_func_is_param_converted_to_npu_fusion_attention_citing_its_row():
    judged = classify_library(library_op("flash_attn.flash_attn_interface.flash_attn_func", {"causal": True}))
    assert judged.category == "param-converted" and judged.signature_categories == ("param-converted",)
    assert judged.replacement == "torch_npu.npu_fusion_attention" and judged.known
    assert [r.evidence for r in judged.reasons if r.code == "library-route"] == \
        ["third_party_kernel_libs.tsv:3 flash_attn (direct calls)"]
    assert not [r for r in judged.reasons if r.code == "param-limit"]  # causal has a counterpart


def test_a_row_without_route_stays_custom_dev():
    judged = classify_library(library_op("mamba_ssm.ops.selective_scan_interface.selective_scan_fn"))
    assert judged.category == "custom-dev"  # row 14: no NPU kernel for selective_scan_cuda
    assert any(r.evidence.startswith("third_party_kernel_libs.tsv:14 mamba_ssm") for r in judged.reasons)


def test_a_library_with_an_npu_build_is_still_not_direct():
    # row 16 (flash-linear-attention): a triton_ascend backend ships with fla -> direct in the table
    judged = classify_library(library_op("fla.modules"))
    assert judged.category == "param-converted"
    assert any("dependency change" in r.message for r in judged.reasons)


def test_an_unknown_function_of_a_known_library_is_custom_dev_with_low_confidence():
    judged = classify_library(library_op("flash_attn.flash_attn_kvpacked_func"))
    assert (judged.category, judged.confidence, judged.known) == ("custom-dev", "low", False)
    reason = next(r for r in judged.reasons if r.code == "not-in-kb")
    assert "third_party_kernel_libs.tsv:2 flash_attn" in reason.evidence and "(none names it)" in reason.evidence


def test_a_triton_launch_is_custom_dev_until_the_source_scan_judges_its_body():
    judged = classify_library(library_op("triton:add_kernel", {"n": 1024}))
    assert (judged.category, judged.confidence) == ("custom-dev", "low")
    assert judged.replacement == "triton-ascend"
    assert any("cuda_api_migration.tsv:48" in r.evidence for r in judged.reasons)
