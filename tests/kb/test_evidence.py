"""opassess.kb.evidence (the evidence hierarchy), opassess.kb.products (one product vocabulary), and the verdicts they
give on tests/models/bf16_block.py: a bf16 LLM-style block with a weight-normed Conv1d and a grouped-mm MoE."""
from __future__ import annotations

from pathlib import Path

import pytest

from opassess.classify import classify
from opassess.findings import find_findings
from opassess.kb import kernels
from opassess.kb.evidence import cast_target, check_dtype, remedy
from opassess.kb.products import UnknownProductError, shipped
from opassess.options import ScanOptions
from opassess.pipeline.capture import scan_inventory

MODELS = Path(__file__).resolve().parents[1] / "models"
BF16 = "bfloat16"



@pytest.fixture(scope="module")
def inventory():
    return scan_inventory(ScanOptions(target=str(MODELS / "bf16_block.py"), dtype=BF16))


def by_key(inventory, kb, target):
    return {c.operator.key: c for c in classify(inventory, kb, target=target)}


@pytest.mark.parametrize(("name", "product"), [("910B", "Atlas A2"), ("a2", "Atlas A2"), ("ATLAS  a2", "Atlas A2"),
                                               ("910C", "Atlas A3"), ("950PR", "Ascend 950"),
                                               ("Ascend 950DT", "Ascend 950"), ("910A", "Atlas training series"),
                                               ("Atlas training", "Atlas training series"),
                                               ("310p", "Atlas inference series")])
def test_aliases_resolve_case_insensitively(kb, name, product):
    assert kb.resolve_product(name) == product


def test_unknown_product_lists_the_known_ones_and_310P_is_inference_only(kb):
    with pytest.raises(UnknownProductError) as info:
        kb.resolve_product("H100")
    for name in kb.products:
        assert name in str(info.value)
    assert shipped().resolve("310P").training is False and shipped().resolve("910B").training is True
    assert kb.default_product == "Atlas A2" and kb.product("Atlas A2").api_page == "Atlas A2"
    assert kernels.resolve_product("910B") == "A2"  # the kernel facts read the same vocabulary


def test_cast_targets_stay_in_the_allowed_set_and_the_kind():
    assert cast_target("float64", ("float16", "float32", "int64")) == "float32"
    assert cast_target("int64", ("int32", "float32")) == "int32"
    assert cast_target("float32", ("int64", "int32")) is None  # never a float image batch cast to int64
    # a forward-only scan has no loss to scale; a training step does
    assert remedy(BF16, ("float16", "float32")) == "run it in float16 (torch_npu.npu.amp autocast) or in float32"
    assert remedy(BF16, ("float16", "float32"), training=True).startswith("run it in float16 with loss scaling")
    assert remedy("float32", ("bfloat16",)) == "cast to bfloat16"
    assert remedy("float32", ("int32",)).startswith("no dtype of the same kind")
    # complex -> int or float would drop the imaginary part (Llama-4's rotary embedding): never suggested
    assert cast_target("complex64", ("int32", "float32")) is None
    assert remedy("complex64", ("int32", "float16")).startswith("no dtype of the same kind")
    assert cast_target("complex128", ("complex64", "int32")) == "complex64"
    # int64 -> int32 loses values beyond 2^31: the remedy says when it is safe, never a bare "cast to int32"
    narrowed = remedy("int64", ("int32", "float32"))
    assert narrowed.startswith("cast to int32 only where every value fits (below 2^31")
    assert cast_target("bool", ("int32", "float32")) == "int32"  # widening keeps every value


def test_kernel_facts_outrank_the_api_page(kb):
    facts = kernels.load(kb.directory)
    a2, t910 = kb.product("A2"), kb.product("910A")
    # torch.nn.Linear's page lists fp16/fp32; aclnnAddmm lists bf16 on A2 and excludes it on 910.
    on_a2 = check_dtype(BF16, a2, ("float16", "float32"), ["aten::addmm"], facts)
    assert on_a2.ok and on_a2.decided_by == "kernel" and on_a2.disagree and on_a2.confidence == "medium"
    assert on_a2.disagreement("Atlas A2") == ("the API page lists float16, float32; aclnnAddmm's doc lists bfloat16 "
                                              "on Atlas A2")
    on_910 = check_dtype(BF16, t910, ("float16", "float32"), ["aten::addmm"], facts)
    assert not on_910.ok and not on_910.disagree and on_910.confidence == "high"
    assert on_910.allowed == ("float16", "float32")
    # No kernel statement: the page decides (one source: medium); nothing at all: low.
    assert check_dtype("float64", a2, ("float16", "float32"), ["aten::addmm"], facts).decided_by == "api-page"
    assert check_dtype(BF16, a2, None, [], facts).confidence == "low"


def test_a_host_copy_runs_whatever_the_page_lists(kb):
    facts = kernels.load(kb.directory)
    a2 = kb.product("A2")
    # Tensor.item's page: `self` only fp32. Its kernel, aten::_local_scalar_dense, is torch_npu's own device-to-host
    # copy (npu_aten_ops: torch_npu native, no op-plugin row): no CANN doc limits its dtype, so int64 runs, low.
    copy = check_dtype("int64", a2, ("float32",), ["aten::_local_scalar_dense"], facts,
                       host_copies=("aten::_local_scalar_dense",))
    assert copy.ok and copy.decided_by == "host-copy" and copy.confidence == "low"
    # The same allow-list with no host copy behind it decides; a page that names int64 as unsupported decides too.
    assert not check_dtype("int64", a2, ("float32",), [], facts).ok
    named = check_dtype("int64", a2, ("float32",), [], facts, host_copies=("aten::_local_scalar_dense",),
                        page_excludes=True)
    assert not named.ok and named.decided_by == "api-page"


def test_bf16_block_is_direct_on_A2(inventory, kb):
    ops = by_key(inventory, kb, "Atlas A2")
    for key in ("torch.nn.Linear", "torch.nn.functional.silu", "Tensor.neg", "torch.matmul", "Tensor.new_ones"):
        assert ops[key].category == "direct", (key, ops[key].reasons)
        assert not any(r.code == "dtype" for r in ops[key].reasons)
    linear = ops["torch.nn.Linear"]
    assert linear.confidence == "medium"  # the page and the kernel facts disagree; the kernel facts decide
    assert any(r.code == "kernel-dtype" and "aclnnAddmm's doc lists bfloat16 on Atlas A2" in r.message
               for r in linear.exclusions)
    assert any(r.code == "options-only" for r in ops["Tensor.new_ones"].exclusions)
    assert all(c.confidence in ("high", "medium", "low") for c in ops.values())


def test_bf16_linear_is_flagged_on_910A_with_advice_for_that_chip(inventory, kb):
    ops = by_key(inventory, kb, "910A")
    linear = ops["torch.nn.Linear"]
    # medium: the kernel doc alone speaks; the API page has no mark for the 910A, so its fp16/fp32 list (written
    # for the products it covers) neither corroborates nor decides
    assert linear.category == "param-converted" and linear.confidence == "medium"
    message = next(r.message for r in linear.reasons if r.code == "dtype")
    assert "aclnnAddmm on Atlas training series" in message and "run it in float16 (" in message
    assert "loss scaling" not in message  # a forward-only capture
    assert "cast bfloat16 to float16" not in message


def test_weight_norm_is_taken_whole(inventory, kb):
    conv = by_key(inventory, kb, "Atlas A2")["torch.nn.utils.parametrize.ParametrizedConv1d"]
    assert conv.category == "direct"
    whole = next(r for r in conv.exclusions if r.code == "taken-whole")
    assert "aten::_weight_norm whole" in whole.message and "_weight_norm_interface" in whole.message


def test_grouped_mm_has_flops_and_points_to_npu_grouped_matmul(inventory, kb):
    ops = by_key(inventory, kb, "Atlas A2")
    grouped = ops["torch._grouped_mm"]
    assert grouped.category == "direct" and grouped.operator.flops == 2 * 8 * 16 * 16
    findings = find_findings(inventory, kb, dtype=BF16, product="Atlas A2")
    slow = [f for f in findings if f.kind == "slow-path"]
    assert [f.npu_api for f in slow] == ["torch_npu.npu_grouped_matmul", "torch_npu.npu_moe_gating_top_k_softmax"]
    assert slow[0].ops == ("torch._grouped_mm",) and slow[0].metrics["flops"] == grouped.operator.flops
    # the kernel facts take bf16 on A2: no mixed-precision finding for the block's bf16 ops
    assert not [f for f in findings if f.kind == "mixed-precision"]


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_custom_op_verdict_does_not_depend_on_the_device(kb, device):
    inventory = scan_inventory(ScanOptions(target=str(MODELS / "custom_op.py"), device=device))
    op = {c.operator.key: c for c in classify(inventory, kb)}["opassess_tests::scale_shift"]
    assert op.category == "direct" and op.confidence == "medium"  # its body's mul and add: one source speaks


def test_evidence_order_names_the_product_and_a_missing_api_page_column():
    from opassess.kb.evidence import evidence_order

    assert evidence_order("910A").startswith("Verdicts from: kernel facts (CANN aclnn docs) for Atlas training series")
    assert "API page (which has no column for it)" in evidence_order("310P")
    assert evidence_order("no such chip") == ""
