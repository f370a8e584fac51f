"""Tests for opassess.score: each sub-score from its measured signal, worked by hand with the shipped weights.

Shipped weights used in the arithmetic below:
  dimensions   functional 0.3, performance 0.5, ecosystem 0.2
  functional   shape_match 0.3, dtype_support 0.4, special_attrs 0.3
  performance  fusion 0.4, memory_layout 0.2, pipeline 0.4
  ecosystem    custom_op_maintenance 0.5, version_compat 0.3, multi_card 0.2
A model with a single operator gives it 100% of the compute, so multi_card = min(1, 1.0 / 0.25) = 1 and the
ecosystem dimension carries 0.2 x 1 = 0.2, i.e. 0.2 x 0.2 = 0.04 of the composite, in every one-op test.
"""
from __future__ import annotations

import pytest

from opassess.records import Finding, Reason
from opassess.score.criteria import score
from opassess.score.weights import CRITERIA, DIMENSIONS
from opassess.score.weights.load import load_weights
from tests.score.records import call, classified, inventory, node, operator, scan

WEIGHTS = load_weights(None)
ONE_OP_ECOSYSTEM = 0.04  # multi_card 1 x 0.2 (criterion) x 0.2 (dimension)


def only(inv, op_key, weights=WEIGHTS, findings=(), **kwargs):
    (result,) = score([classified(operator(inv, op_key), **kwargs)], inv, weights, findings)
    return result


def sub(result, criterion):
    return next(s for s in result.subscores if s.criterion == criterion)


def direct_conv(**overrides):
    defaults = dict(attrs={"stride": [1, 1], "dilation": [1, 1]}, aten=[call("aten::convolution")])
    defaults.update(overrides)
    return inventory([node("conv", "torch.nn.Conv2d", "conv", **defaults)])


# ------------------------------------------------------------------------------ structure


def test_every_criterion_is_scored_in_order_with_its_weight():
    result = only(direct_conv(), "torch.nn.Conv2d")
    expected = [(d, c, WEIGHTS.criteria[d][c]) for d in DIMENSIONS for c in CRITERIA[d]]
    assert [(s.dimension, s.criterion, s.weight) for s in result.subscores] == expected
    assert all(s.signal for s in result.subscores)


def test_a_plain_direct_op_scores_only_its_compute_share():
    # float32, rank 4, one signature, its one ATen op has a kernel: every functional and performance signal is 0.
    # ecosystem = 0.2 x multi_card 1 = 0.2; composite = 0.2 x 0.2 = 0.04.
    result = only(direct_conv(), "torch.nn.Conv2d")
    assert result.functional == 0 and result.performance == 0
    assert result.ecosystem == pytest.approx(0.2)
    assert result.composite == pytest.approx(0.04)
    assert "100.0% of model compute" in sub(result, "multi_card").signal


# ------------------------------------------------------------------------------ functional


def test_float64_input_is_a_dtype_difficulty():
    # dtype_support = difficulty[float64] = 1.0; functional = 0.4 x 1 = 0.4; composite = 0.3 x 0.4 + 0.04 = 0.16.
    inv = inventory([node("add", "Tensor.add", kind="method", shapes=((2, 3), (2, 3)),
                          dtypes=("float64", "float64"), aten=[call("aten::add", "Tensor", dtypes=("float64",) * 2)])])
    result = only(inv, "Tensor.add")
    assert sub(result, "dtype_support").value == 1.0
    assert "dtype float64: 1" in sub(result, "dtype_support").signal
    assert result.functional == pytest.approx(0.4)
    assert result.composite == pytest.approx(0.16)


def test_changing_a_criterion_weight_moves_the_composite_as_computed(tmp_path):
    # dtype_support 0.4 -> 0.6 (shape_match 0.2, special_attrs 0.2 keep the sum at 1):
    # functional = 0.6 x 1 = 0.6; composite = 0.3 x 0.6 + 0.04 = 0.22 (was 0.16).
    path = tmp_path / "w.toml"
    path.write_text("[criteria.functional]\nshape_match = 0.2\ndtype_support = 0.6\nspecial_attrs = 0.2\n")
    inv = inventory([node("add", "Tensor.add", kind="method", dtypes=("float64",),
                          aten=[call("aten::add", "Tensor", dtypes=("float64",))])])
    assert only(inv, "Tensor.add", load_weights(path)).composite == pytest.approx(0.22)


def test_changing_a_dimension_weight_moves_the_composite_as_computed(tmp_path):
    # functional 0.3 -> 0.5, performance 0.5 -> 0.3: composite = 0.5 x 0.4 + 0.2 x 0.2 = 0.24 (was 0.16).
    path = tmp_path / "w.toml"
    path.write_text("functional = 0.5\nperformance = 0.3\n")
    inv = inventory([node("add", "Tensor.add", kind="method", dtypes=("float64",),
                          aten=[call("aten::add", "Tensor", dtypes=("float64",))])])
    assert only(inv, "Tensor.add", load_weights(path)).composite == pytest.approx(0.24)


def test_int64_is_a_partial_dtype_difficulty():
    # int64 -> 0.3 from the table: functional = 0.4 x 0.3 = 0.12; composite = 0.3 x 0.12 + 0.04 = 0.076.
    inv = inventory([node("emb", "torch.nn.Embedding", "emb", shapes=((1, 8),), dtypes=("int64",),
                          out_shapes=((1, 8, 16),), out_dtypes=("float32",), aten=[call("aten::embedding")])])
    result = only(inv, "torch.nn.Embedding")
    assert sub(result, "dtype_support").value == pytest.approx(0.3)
    assert result.composite == pytest.approx(0.076)


@pytest.mark.parametrize("code, value", [("dtype", 0.8), ("dtype-cast", 0.5)])
def test_dtype_reason_from_the_classifier_raises_dtype_support(code, value):
    # float32 alone scores 0, but the classifier says this op's kernel rejects (dtype: 0.8) or silently casts
    # (dtype-cast: 0.5) this node's dtype: the value from [signals.dtype_support.reasons].
    reason = Reason(code, "bfloat16 not supported by this kernel", "apis: torch.nn.Foo [fp16, fp32]")
    result = only(direct_conv(), "torch.nn.Conv2d", reasons=[reason], category="param-converted")
    assert sub(result, "dtype_support").value == pytest.approx(value)
    assert "bfloat16 not supported" in sub(result, "dtype_support").signal


def test_rank_limit_reason():
    # The documented API limits the input rank: [signals.shape_match.reasons] shape-limit = 0.5.
    reason = Reason("shape-limit", "input rank 3: only 4-D input", "npu_native_api_support: torch.nn.Foo")
    result = only(direct_conv(), "torch.nn.Conv2d", reasons=[reason], category="param-converted")
    assert sub(result, "shape_match").value == pytest.approx(0.5)


def test_rank_five_input_leaves_the_native_formats():
    # max rank 5: (5 - 4) / (8 - 4) = 0.25; functional = 0.3 x 0.25 = 0.075; composite = 0.3 x 0.075 + 0.04 = 0.0625.
    inv = inventory([node("conv", "torch.nn.Conv3d", "conv", shapes=((1, 2, 4, 8, 8),),
                          aten=[call("aten::convolution", shapes=((1, 2, 4, 8, 8),))])])
    result = only(inv, "torch.nn.Conv3d")
    assert sub(result, "shape_match").value == pytest.approx(0.25)
    assert result.composite == pytest.approx(0.0625)


def test_data_dependent_output_scores_shape_and_pipeline():
    # Tensor.nonzero: float32 in, int64 out. shape_match 1.0 (data-dependent); dtype_support 0.3 (int64);
    # pipeline max(0/1 missing kernels, dynamic 0.8) = 0.8.
    # functional = 0.3 x 1 + 0.4 x 0.3 = 0.42; performance = 0.4 x 0.8 = 0.32;
    # composite = 0.3 x 0.42 + 0.5 x 0.32 + 0.04 = 0.126 + 0.16 + 0.04 = 0.326.
    inv = inventory([node("nz", "Tensor.nonzero", kind="method", shapes=((4, 4),), out_shapes=((5, 2),),
                          out_dtypes=("int64",), aten=[call("aten::nonzero", shapes=((4, 4),))])])
    result = only(inv, "Tensor.nonzero")
    assert sub(result, "shape_match").value == 1.0
    assert sub(result, "pipeline").value == pytest.approx(0.8)
    assert "aten::nonzero" in sub(result, "pipeline").signal
    assert result.composite == pytest.approx(0.326)


def test_boolean_mask_indexing_is_data_dependent():
    inv = inventory([node("idx", "Tensor.__getitem__", kind="method", shapes=((4, 4), (4, 4)),
                          dtypes=("float32", "bool"),
                          aten=[call("aten::index", "Tensor", shapes=((4, 4), (4, 4)), dtypes=("float32", "bool"))])])
    result = only(inv, "Tensor.__getitem__")
    assert sub(result, "shape_match").value == 1.0
    assert "bool mask" in sub(result, "shape_match").signal


def test_attribute_limit_hits():
    # One param-limit reason: 1 x 0.5 = 0.5; functional = 0.3 x 0.5 = 0.15; composite = 0.045 + 0.04 = 0.085.
    reason = Reason("param-limit", "dilation (2, 2) outside the kernel's limit 1", "rules.toml: max_pool2d")
    result = only(direct_conv(), "torch.nn.Conv2d", category="param-converted", reasons=[reason])
    assert sub(result, "special_attrs").value == pytest.approx(0.5)
    assert "dilation (2, 2)" in sub(result, "special_attrs").signal
    assert result.composite == pytest.approx(0.085)


def test_limits_per_signature_and_combinations(tmp_path):
    # Three Conv2d signatures (dilation 2, 3, 4), each hitting the dilation limit once: the worst signature hits
    # 1 limit -> 0.5; 3 combinations hit a limit -> (3 - 1) x 0.1 = 0.2; the larger decides: 0.5.
    inv = inventory([node(f"c{d}", "torch.nn.Conv2d", f"c{d}", attrs={"dilation": d}, aten=[call("aten::convolution")])
                     for d in (2, 3, 4)])
    limits = [Reason("param-limit", f"dilation={d}: must be 1", "rules", signature=i) for i, d in enumerate((2, 3, 4))]
    result = only(inv, "torch.nn.Conv2d", category="param-converted", reasons=limits)
    assert sub(result, "special_attrs").value == pytest.approx(0.5)
    assert "3 attribute combinations hit a limit: (3 - 1) x 0.1 = 0.2" in sub(result, "special_attrs").signal
    # per_limit_hit 0.05 lets the combinations decide: max(0.05, 0.2) = 0.2.
    path = tmp_path / "w.toml"
    path.write_text("[signals.special_attrs]\nper_limit_hit = 0.05\n")
    weights = load_weights(path)
    assert sub(only(inv, "torch.nn.Conv2d", weights, category="param-converted", reasons=limits),
               "special_attrs").value == pytest.approx(0.2)
    # Two limits on one signature (dilation and padding): 2 x 0.5 = 1.
    two = [Reason("param-limit", "dilation=2: must be 1", "rules", signature=0),
           Reason("param-limit", "padding=-1: must be >= 0", "rules", signature=0)]
    assert sub(only(inv, "torch.nn.Conv2d", category="param-converted", reasons=two), "special_attrs").value == 1.0
    # Classified direct with no limit reason: 0.
    assert sub(only(inv, "torch.nn.Conv2d"), "special_attrs").value == 0



# ------------------------------------------------------------------ custom-dev and replacements


def test_aten_op_without_kernel():
    # torch.lgamma: aten::lgamma has no NPU kernel. functional: 0 attributes to implement -> 0.
    # pipeline 1/1 = 1 -> performance 0.4; custom_op_maintenance 1/1 = 1, version_compat 1 (no release has it),
    # multi_card 1 -> ecosystem 0.5 + 0.3 + 0.2 = 1.0. composite = 0.5 x 0.4 + 0.2 x 1.0 = 0.4.
    inv = inventory([node("lg", "torch.lgamma", kind="function", aten=[call("aten::lgamma")])])
    result = only(inv, "torch.lgamma", category="custom-dev", support={"aten::lgamma": False})
    assert sub(result, "pipeline").value == 1.0
    assert "aten::lgamma" in sub(result, "pipeline").signal
    assert sub(result, "version_compat").value == 1.0
    assert result.ecosystem == pytest.approx(1.0)
    assert result.composite == pytest.approx(0.4)


def test_projects_own_custom_op_unknown_to_the_kb():
    # mylib::fused_gelu with attribute approximate: 1 attribute x 0.1 = 0.1 -> functional 0.3 x 0.1 = 0.03;
    # performance 0.4 (no kernel); ecosystem 1.0 (own op, no kernel, every release missing).
    # composite = 0.3 x 0.03 + 0.5 x 0.4 + 0.2 x 1.0 = 0.009 + 0.2 + 0.2 = 0.409.
    inv = inventory([node("fg", "mylib::fused_gelu", kind="custom", attrs={"approximate": "tanh"},
                          aten=[call("mylib::fused_gelu")])])
    reason = Reason("custom-op", "mylib::fused_gelu is a project-defined operator", "trace: kind custom")
    result = only(inv, "mylib::fused_gelu", category="custom-dev", known=False,
                  support={"mylib::fused_gelu": False}, reasons=[reason])
    assert sub(result, "special_attrs").value == pytest.approx(0.1)
    maintenance = sub(result, "custom_op_maintenance")
    assert maintenance.value == 1.0 and "classifier custom-op" in maintenance.signal
    assert result.composite == pytest.approx(0.409)


def test_replacement_moves_work_from_kernel_to_adoption():
    # deform_conv2d replaced by npu_deformable_conv2d: special_attrs 0.3 (attributes to map), fusion 0.3 (adopt),
    # pipeline 0 (the replacement runs on the NPU), custom_op_maintenance 0.3 (vendor API), version_compat 0.
    # functional 0.3 x 0.3 = 0.09; performance 0.4 x 0.3 = 0.12; ecosystem 0.5 x 0.3 + 0.2 x 1 = 0.35;
    # composite = 0.3 x 0.09 + 0.5 x 0.12 + 0.2 x 0.35 = 0.027 + 0.06 + 0.07 = 0.157.
    inv = inventory([node("dc", "torchvision.ops.deform_conv2d", kind="function",
                          aten=[call("torchvision::deform_conv2d")])])
    result = only(inv, "torchvision.ops.deform_conv2d", category="param-converted",
                  replacement="torch_npu.npu_deformable_conv2d", support={"torchvision::deform_conv2d": False})
    assert [sub(result, c).value for c in ("special_attrs", "fusion", "pipeline", "custom_op_maintenance",
                                           "version_compat")] == pytest.approx([0.3, 0.3, 0.0, 0.3, 0.0])
    assert result.composite == pytest.approx(0.157)


def test_optional_replacement_is_not_an_attribute_mapping():
    # A direct op with an optional fused replacement (sdpa -> npu_fusion_attention): adopting it is fusion work
    # (0.3), not a functional attribute mapping (special_attrs stays 0).
    inv = inventory([node("a", "torch.nn.functional.scaled_dot_product_attention", kind="function",
                          shapes=((1, 2, 8, 4),) * 3, aten=[call("aten::scaled_dot_product_attention")])])
    result = only(inv, "torch.nn.functional.scaled_dot_product_attention",
                  replacement="torch_npu.npu_fusion_attention")
    assert sub(result, "special_attrs").value == 0
    assert sub(result, "fusion").value == pytest.approx(0.3)


def test_autograd_function_is_a_smaller_maintenance_cost():
    # Forward ATen ops all have kernels; the hand-written backward must be verified: autograd-function = 0.4.
    inv = inventory([node("s", "model.SignSTE", kind="custom", aten=[call("aten::sign")])])
    reason = Reason("autograd-function", "SignSTE is a custom autograd.Function", "trace: autograd.Function")
    result = only(inv, "model.SignSTE", category="param-converted", reasons=[reason])
    assert sub(result, "custom_op_maintenance").value == pytest.approx(0.4)
    assert sub(result, "pipeline").value == 0  # its forward runs on NPU kernels


# ------------------------------------------------------------------------------ performance


def test_fusion_findings_add_up_and_saturate():
    inv = inventory([node("mm", "torch.matmul", kind="function", aten=[call("aten::matmul")])])
    attention = Finding("attention", "hand-written attention", ("mm",), ("torch.matmul",), None,
                        "torch_npu.npu_fusion_attention", "fusion 0.6")
    rmsnorm = Finding("rmsnorm", "hand-written RMSNorm", (), ("torch.matmul",), None, None, "")
    # One finding with a fused API: 0.6; performance 0.4 x 0.6 = 0.24; composite 0.5 x 0.24 + 0.04 = 0.16.
    one = only(inv, "torch.matmul", findings=[attention])
    assert sub(one, "fusion").value == pytest.approx(0.6)
    assert one.composite == pytest.approx(0.16)
    # Plus an RMSNorm without a fused API: 0.4 + 0.3 = 0.7; 0.6 + 0.7 = 1.3, saturates at 1.
    assert sub(only(inv, "torch.matmul", findings=[attention, rmsnorm]), "fusion").value == 1.0
    # A compute finding (the op's share of FLOPs) describes impact, not work: no fusion.
    compute = Finding("compute", "12% of FLOPs", ("mm",), ("torch.matmul",), None, None, "impact only")
    assert sub(only(inv, "torch.matmul", findings=[compute]), "fusion").value == 0
    # A finding about another op does not count.
    other = Finding("attention", "elsewhere", ("x",), ("torch.bmm",), None, None, "")
    assert sub(only(inv, "torch.matmul", findings=[other]), "fusion").value == 0


def test_layout_calls_share():
    # Tensor.permute dispatching aten::permute then aten::clone (a contiguous copy), both layout ops: 2/2 = 1.
    # performance = 0.2 x 1 = 0.2; composite = 0.5 x 0.2 + 0.04 = 0.14.
    inv = inventory([node("p", "Tensor.permute", kind="method", aten=[call("aten::permute"), call("aten::clone")])])
    result = only(inv, "Tensor.permute")
    assert sub(result, "memory_layout").value == 1.0
    assert result.composite == pytest.approx(0.14)
    # Tensor.reshape of a non-contiguous tensor: aten::clone (a copy) + aten::_unsafe_view (a view): 1/2 = 0.5.
    inv = inventory([node("r", "Tensor.reshape", kind="method",
                          aten=[call("aten::clone"), call("aten::_unsafe_view")])])
    assert sub(only(inv, "Tensor.reshape"), "memory_layout").value == pytest.approx(0.5)
    # Linear dispatching t + addmm: aten::t is not a layout op (matmul takes the transposed weight by a flag): 0.
    inv = inventory([node("fc", "torch.nn.Linear", "fc", aten=[call("aten::t"), call("aten::addmm")])])
    assert sub(only(inv, "torch.nn.Linear"), "memory_layout").value == 0


@pytest.mark.parametrize("code, value", [("cpu-fallback", 0.8), ("decomposes", 0.2)])
def test_pipeline_reasons(code, value):
    reason = Reason(code, "the classifier's sentence", "npu_native_api_support: torch.nn.Foo")
    assert sub(only(direct_conv(), "torch.nn.Conv2d", reasons=[reason]), "pipeline").value == pytest.approx(value)


def test_decomposition_the_npu_never_runs_is_not_a_missing_kernel():
    # LSTM traced on meta dispatches its CPU decomposition; the classifier keeps that op in aten_support (False)
    # but says torch_npu runs aten::lstm whole: pipeline and maintenance count only aten::lstm (a kernel): 0.
    inv = inventory([node("l", "torch.nn.LSTM", "lstm", aten=[call("aten::_cpu_lstm_cell")])])
    reason = Reason("cpu-only-decomposition", "aten::_cpu_lstm_cell is the CPU decomposition of aten::lstm, "
                    "which the NPU runs whole; not judged", "rules.toml: composite aten::lstm")
    result = only(inv, "torch.nn.LSTM", reasons=[reason],
                  support={"aten::lstm": True, "aten::_cpu_lstm_cell": False})
    assert sub(result, "pipeline").value == 0
    assert sub(result, "custom_op_maintenance").value == 0


def test_distinct_input_shapes_cost_compiles():
    # Four ReLU calls on 3 distinct input shapes: (3 - 1) x 0.02 = 0.04.
    nodes = [node(f"r{i}", "torch.nn.ReLU", f"r{i}", shapes=(shape,), aten=[call("aten::relu", shapes=(shape,))])
             for i, shape in enumerate([(1, 4), (1, 8), (1, 8), (1, 16)])]
    assert sub(only(inventory(nodes), "torch.nn.ReLU"), "pipeline").value == pytest.approx(0.04)


# ------------------------------------------------------------------------------- ecosystem


def test_kernel_version_range_from_the_evidence():
    # [v2.7..newest] in a 2.1..2.15 span: 9 of 15 releases; 1 - 9/15 = 0.4.
    # ecosystem = 0.3 x 0.4 + 0.2 x 1 = 0.32; composite = 0.2 x 0.32 = 0.064.
    late = Reason("kernel", "aten::add.Tensor has an NPU kernel", "npu_aten_ops: add.Tensor [v2.7..newest]")
    result = only(direct_conv(), "torch.nn.Conv2d", reasons=[late])
    assert sub(result, "version_compat").value == pytest.approx(0.4)
    assert result.composite == pytest.approx(0.064)
    # A second kernel that was removed after 2.12: both needed, 2.7..2.12 = 6 releases; 1 - 6/15 = 0.6.
    removed = Reason("kernel", "aten::convolution has an NPU kernel", "npu_aten_ops: convolution [v2.1..v2.12]")
    assert sub(only(direct_conv(), "torch.nn.Conv2d", reasons=[late, removed]), "version_compat").value == \
        pytest.approx(0.6)


def test_kernel_versions_as_the_knowledge_base_writes_them():
    # Two CANN paths are a union: aclnn 2.1..2.12 or aclop 2.5..newest covers all 15 releases: 0.
    # aclnn v*..2.12 (from the first) with aclop none: 12 of 15; 1 - 12/15 = 0.2.
    # Reasons of other codes are not version evidence even when they carry a number ("@torch 2.13.0").
    both = Reason("kernel", "k", "npu_aten_ops: convolution [aclnn v2.1..2.12; aclop v2.5..newest]")
    early = Reason("kernel", "k", "npu_aten_ops: convolution [aclnn v*..2.12; aclop none]")
    api = Reason("api-supported", "a", "npu_native_api_support: torch.nn.Conv2d @torch 2.13.0 [Atlas A2=✔]")
    assert sub(only(direct_conv(), "torch.nn.Conv2d", reasons=[both, api]), "version_compat").value == 0
    assert sub(only(direct_conv(), "torch.nn.Conv2d", reasons=[early, api]), "version_compat").value == \
        pytest.approx(0.2)
    deprecated = Reason("kernel", "k", "npu_aten_ops: npu_foo [aclnn all; aclop all] deprecated->npu_bar")
    assert sub(only(direct_conv(), "torch.nn.Conv2d", reasons=[deprecated]), "version_compat").value == 0.5


def compute_model():
    # Roofline units = max(flops / 200, bytes): conv max(4e6 / 200, 1e4) = 20000; relu 10000; add 8000;
    # flatten 2000. Total 40000: shares 0.5, 0.25, 0.2, 0.05.
    return inventory([
        node("conv", "torch.nn.Conv2d", "conv", aten=[call("aten::convolution")], flops=4_000_000, bytes_moved=10_000),
        node("relu", "torch.nn.ReLU", "relu", aten=[call("aten::relu")], bytes_moved=10_000),
        node("add", "Tensor.add", kind="method", aten=[call("aten::add", "Tensor")], bytes_moved=8_000),
        node("flat", "torch.flatten", kind="function", aten=[call("aten::view")], bytes_moved=2_000),
    ])


def test_multi_card_follows_the_share_of_compute():
    # multi_card = min(1, share / 0.25): conv 1, relu 1, add 0.8, flatten 0.2.
    inv = compute_model()
    results = score([classified(o) for o in inv.operators], inv, WEIGHTS)
    assert [sub(r, "multi_card").value for r in results] == pytest.approx([1.0, 1.0, 0.8, 0.2])
    assert "20.0% of model compute (roofline)" in sub(results[2], "multi_card").signal


def test_ridge_point_moves_the_shares_as_computed(tmp_path):
    # ridge 400: conv max(4e6 / 400, 1e4) = 10000; total 30000; add 8000 / 30000 = 0.267 -> min(1, 1.067) = 1;
    # flatten 2000 / 30000 = 0.0667 -> 0.267.
    path = tmp_path / "w.toml"
    path.write_text("[signals.compute]\nridge_flops_per_byte = 400\n")
    inv = compute_model()
    results = score([classified(o) for o in inv.operators], inv, load_weights(path))
    assert sub(results[3], "multi_card").value == pytest.approx(2000 / 30000 / 0.25)
    assert sub(results[2], "multi_card").value == 1.0


def test_size_proxy_when_the_trace_has_no_counts():
    # No flops or bytes anywhere: bytes from shapes. conv reads (1,4,8,8) and writes (1,4,8,8) float32:
    # 2 x 256 x 4 = 2048; fc reads (1,64) and writes (1,8): (64 + 8) x 4 = 288. conv share 2048 / 2336.
    inv = inventory([
        node("conv", "torch.nn.Conv2d", "conv", aten=[call("aten::convolution")]),
        node("fc", "torch.nn.Linear", "fc", shapes=((1, 64),), out_shapes=((1, 8),), aten=[call("aten::addmm")]),
    ])
    conv, fc = score([classified(o) for o in inv.operators], inv, WEIGHTS)
    assert sub(fc, "multi_card").value == pytest.approx(288 / 2336 / 0.25)
    assert "(size proxy)" in sub(fc, "multi_card").signal


def test_collective_is_a_multi_card_signal():
    inv = inventory([
        node("big", "torch.nn.Linear", "fc", aten=[call("aten::addmm")], bytes_moved=1000),
        node("ar", "torch.distributed.all_reduce", kind="function",
             aten=[call("_c10d_functional::all_reduce")], bytes_moved=1),
    ])
    result = score([classified(o) for o in inv.operators], inv, WEIGHTS)[1]
    assert sub(result, "multi_card").value == 1.0
    assert "HCCL" in sub(result, "multi_card").signal


# ------------------------------------------------------------------ a real model through the pipeline


def test_real_chain_model():
    # tests/models/score_chain.py: i0, sigmoid, mul, add on (8, 64) float32; compute shares 0.2, 0.2, 0.3, 0.3
    # (bytes moved; worked out in the model's docstring). The classifier finds no NPU kernel for aten::i0.
    #   i0:  pipeline 1 -> performance 0.4; maintenance 1, version 1, multi_card 0.2 / 0.25 = 0.8
    #            -> ecosystem 0.5 + 0.3 + 0.2 x 0.8 = 0.96; composite 0.5 x 0.4 + 0.2 x 0.96 = 0.392
    #   sigmoid: multi_card 0.8 -> composite 0.2 x 0.2 x 0.8 = 0.032
    #   mul/add: multi_card min(1, 0.3 / 0.25) = 1 -> 0.04
    inv, classified_ops = scan("score_chain.py")
    results = {r.classified.operator.key: r for r in score(classified_ops, inv, WEIGHTS)}
    assert {k: r.classified.category for k, r in results.items()} == {
        "torch.i0": "custom-dev", "torch.sigmoid": "direct", "Tensor.mul": "direct", "Tensor.add": "direct"}
    composites = {k: r.composite for k, r in results.items()}
    assert composites == pytest.approx({"torch.i0": 0.392, "torch.sigmoid": 0.032, "Tensor.mul": 0.04,
                                        "Tensor.add": 0.04})
    i0 = results["torch.i0"]
    assert "aten::i0" in sub(i0, "pipeline").signal
    assert "20.0% of model compute (roofline)" in sub(i0, "multi_card").signal
    # Kernel ranges "aclnn all; aclop all" cover every release: version_compat 0 for the direct ops.
    assert sub(results["torch.sigmoid"], "version_compat").value == 0


def test_real_float64_model():
    # tests/models/float64.py: every op sees float64 -> dtype_support = difficulty[float64] = 1 whatever else.
    inv, classified_ops = scan("float64.py")
    results = score(classified_ops, inv, WEIGHTS)
    seen = [r for r in results if "dtype float64: 1" in sub(r, "dtype_support").signal]
    assert {r.classified.operator.key for r in seen} == {"torch.nn.Linear", "torch.nn.Tanh"}  # float64 throughout
    assert all(sub(r, "dtype_support").value == 1.0 for r in seen)


@pytest.mark.parametrize("kind, criterion, value", [
    ("layout-churn", "memory_layout", 0.5),   # [signals.memory_layout] layout_churn_finding
    ("mixed-precision", "dtype_support", 0.5),  # [signals.dtype_support] mixed_precision_finding
    ("dynamic-shape", "pipeline", 0.8),       # [signals.pipeline] dynamic_finding
])
def test_findings_routed_to_their_criterion(kind, criterion, value):
    inv = direct_conv()
    finding = Finding(kind, f"a {kind} finding", ("conv",), ("torch.nn.Conv2d",), None, None, "")
    result = only(inv, "torch.nn.Conv2d", findings=[finding])
    assert sub(result, criterion).value == pytest.approx(value)
    assert f"{kind} finding" in sub(result, criterion).signal
    assert sub(result, "fusion").value == 0
