"""opassess.kb.kernels (kernel-level dtype verdicts) on the shipped aclnn.json, and tools/kb_kernels.py that writes
it."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from opassess.errors import KnowledgeBaseError
from opassess.kb import kernels
from opassess.kb.kernels import PRODUCTS, KernelFacts, UnknownProductError, judge, resolve_product
from opassess.kb.main_api import is_branch, main_api

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import kb_kernels  # noqa: E402

FACTS = Path(__file__).parents[2] / ".." / "shared" / "reference" / "ascend"
SHIPPED = ROOT / "opassess" / "data" / "kb" / "aclnn.json"
BF16 = "bfloat16"


@pytest.fixture(scope="module")
def facts() -> KernelFacts:
    return KernelFacts()


# ------------------------------------------------------------------ the README's spot checks


@pytest.mark.parametrize(("product", "supported"), [("A2", True), ("A3", True), ("950", True),
                                                    ("910", False), ("310P", False)])
def test_mm_bf16_follows_aclnnMm(facts, product, supported):
    # aclnnMm.md: self/mat2 BFLOAT16, FLOAT16, FLOAT32; "不支持BFLOAT16" scoped to 910 and 310P (from-section).
    verdict = facts.judge("aten::mm.default", product, (BF16, BF16))
    assert verdict.aten == "mm" and verdict.lookup == "exact"
    assert verdict.main_api.api == "aclnnMm"  # named like the op, though aclnnMatmulWeightNz is listed first
    assert [a.api for a in verdict.apis] == ["aclnnMatmulWeightNz", "aclnnMm"]
    assert verdict.supported is supported
    assert verdict.confidence == "high"
    if supported:
        assert verdict.native == (BF16,) and BF16 in verdict.allowed
        line = f"cann_aclnn_dtypes.tsv aclnnMm.self: bfloat16 on {product} (not excluded; from-section)"
        assert line in verdict.evidence
    else:
        assert verdict.main_api.excluded == ((BF16, "self"),)  # the first tensor: judged by the carrier row
        assert verdict.not_native == (BF16,) and verdict.allowed == ("float16", "float32")


def test_mm_is_not_on_310B_at_all(facts):
    verdict = facts.judge("aten::mm.default", "310B", ("float32", "float32"))
    assert not verdict.supported and verdict.main_api.product_support is False
    assert verdict.allowed == () and verdict.not_native == ("float32",)


def test_addmm_bf16_on_A2(facts):
    verdict = facts.judge("aten::addmm.default", "A2", (BF16, BF16, BF16))
    assert verdict.supported and verdict.main_api.api == "aclnnAddmm" and verdict.fallback_aclop


def test_first_tensor_is_judged_by_the_carrier_row_only(facts):
    # aclnnAddmm's scalar rows beta/alpha list float64, its tensor rows do not: float64 addmm is not native.
    verdict = facts.judge("aten::addmm.default", "A2", ("float64", "float64", "float64"))
    assert not verdict.supported and verdict.main_api.carrier == "self"
    assert verdict.main_api.unlisted == ("float64",)
    assert "cann_aclnn_dtypes.tsv aclnnAddmm.self: float64 not listed" in verdict.evidence


@pytest.mark.parametrize(("op", "product", "supported"), [
    ("aten::silu.default", "A2", True), ("aten::silu.default", "910", False),
    ("aten::silu_.default", "910", False), ("aten::silu.out", "A2", True)])
def test_silu_bf16(facts, op, product, supported):
    # generated from the yaml (exec: aclnnSilu); the 910/310P exclusion comes from an allow-list: medium.
    verdict = facts.judge(op, product, (BF16,))
    assert verdict.supported is supported and verdict.main_api.api == "aclnnSilu"
    assert verdict.confidence == "medium"
    assert verdict.allowed == (("bfloat16", "float16", "float32") if supported else ("float16", "float32"))


@pytest.mark.parametrize(("product", "supported"), [("A2", True), ("A3", True), ("910", False), ("310P", False),
                                                    ("310B", False)])
def test_mul_tensor_bf16(facts, product, supported):
    verdict = facts.judge("aten::mul.Tensor", product, (BF16, BF16))
    assert verdict.supported is supported and verdict.main_api.api == "aclnnMul"
    assert any(line.startswith("other branch aclnnMuls:") for line in verdict.evidence)


def test_grouped_mm_has_no_kernel_fact(facts):
    assert facts.judge("aten::_grouped_mm.default", "A2", (BF16, BF16)) is None
    assert judge("aten::_grouped_mm", "A2", (BF16,)) is None


def test_histc_bf16_nowhere_but_float32_on_A2(facts):
    for product in PRODUCTS:
        assert not facts.judge("aten::histc.default", product, (BF16,)).supported, product
    assert facts.judge("aten::histc.default", "A2", ("float32",)).supported
    assert not facts.judge("aten::histc.default", "310B", ("float32",)).supported  # API-level ✘


def test_index_put_is_not_on_310P(facts):
    on_310p = facts.judge("aten::index_put_.default", "310P", ("float32", "int64", "float32"))
    assert on_310p.main_api.api == "aclnnIndexPutImpl" and on_310p.main_api.product_support is False
    assert not on_310p.supported
    assert "cann_aclnn_dtypes.tsv aclnnIndexPutImpl: not supported on 310P (API-level)" in on_310p.evidence
    on_a2 = facts.judge("aten::index_put_.default", "A2", (BF16, "int64", BF16))
    assert on_a2.supported and on_a2.native == (BF16, "int64")
    assert not facts.judge("aten::index_put_.default", "910", (BF16, "int64", BF16)).supported


# ------------------------------------------------------------------ lookup, names, confidence


def test_overload_lookup_order(facts):
    assert facts.lookup("aten::add.Tensor") == ("add.Tensor", "exact")
    assert facts.lookup("aten::gelu.default") == ("gelu.out", "out")  # only gelu.out has a row
    assert facts.lookup("aten::addmm_.Scalar") == ("addmm_", "bare")  # no such overload, no addmm_.out
    assert facts.lookup("npu::npu_fusion_attention") == ("npu_fusion_attention", "exact")
    assert facts.lookup("aten::linear.default") is None  # CompositeImplicitAutograd: no row


def test_indirect_lookup_lowers_confidence(facts):
    gelu = facts.judge("aten::gelu.default", "A2", ("float32",))
    assert gelu.supported and gelu.lookup == "out" and gelu.confidence == "medium"
    assert "(no row for aten::gelu.default; its out= kernel)" in gelu.evidence[0]
    assert facts.judge("aten::addmm_.Scalar", "A2", ("float32",) * 3).confidence == "medium"


def test_undocumented_api_says_nothing_against(facts):
    # aclnnMoeReRouting has no doc in the snapshot: the kernel exists, its dtypes are not stated.
    verdict = facts.judge("npu::npu_moe_re_routing", "A2", (BF16,))
    assert verdict.supported and verdict.confidence == "low" and verdict.allowed == ()
    assert not verdict.main_api.documented and not verdict.main_api.takes_all
    assert "aclnnMoeReRouting: no doc row in cann_aclnn_dtypes.tsv, dtypes not stated" in verdict.evidence


def test_dtype_spellings_and_none_entries(facts):
    plain = facts.judge("aten::mm.default", "A2", (BF16, BF16))
    for spelling in ("torch.bfloat16", "bf16", "BFloat16"):
        assert facts.judge("aten::mm.default", "A2", (spelling, None)).native == plain.native
    assert facts.judge("aten::mm.default", "A2", (None, None)).supported  # no tensor dtype: API-level support


@pytest.mark.parametrize(("name", "product"), [
    ("910A", "910"), ("910", "910"), ("Atlas training series", "910"), ("atlas  TRAINING", "910"),
    ("910B", "A2"), ("a2", "A2"), ("Atlas A2", "A2"), ("910c", "A3"), ("A3", "A3"), ("Atlas A3", "A3"),
    ("950", "950"), ("950PR", "950"), ("950dt", "950"), ("Ascend 950DT", "950"), ("310p", "310P"), ("310B", "310B")])
def test_customer_product_names(name, product):
    assert resolve_product(name) == product


def test_judge_takes_customer_names(facts):
    assert facts.judge("aten::mm.default", "910B", (BF16,)).product == "A2"
    assert not facts.judge("aten::mm.default", "Atlas training series", (BF16,)).supported


def test_unknown_product_lists_the_known_ones(facts):
    with pytest.raises(ValueError, match="unknown Ascend product 'H100'") as info:
        resolve_product("H100")
    assert isinstance(info.value, KnowledgeBaseError) and isinstance(info.value, UnknownProductError)
    for product in PRODUCTS:
        assert product in str(info.value)
    with pytest.raises(UnknownProductError):
        facts.judge("aten::mm.default", "Atlas 300", (BF16,))


def test_repeated_judge_is_memoised_and_fast(facts):
    first = facts.judge("aten::mul.Tensor", "A2", (BF16, BF16))
    assert facts.judge("aten::mul.Tensor", "A2", (BF16, BF16)) is first
    start = time.perf_counter()
    for _ in range(10_000):
        facts.judge("aten::mul.Tensor", "A2", (BF16, BF16))
    assert time.perf_counter() - start < 0.5  # about 1 µs a call; the bound leaves room for a loaded machine


# ------------------------------------------------------------------ loading


def _tiny_facts(directory: Path, support: str) -> None:
    data = {"format": 1, "products": list(PRODUCTS), "provenance": {},
            "aten": {"foo": {"apis": ["aclnnFoo"], "source": "own", "fallback": False, "other_aclop": False,
                             "match": "signature", "section": "custom"}},
            "aclnn": {"aclnnFoo": {"support": support, "doc": ["r", "p", "c", "d"], "params": [
                {"name": "x", "io": "input", "dtypes": ["float16", "int8"], "excluded": {"A2": ["int8"]},
                 "notes": ["from-constraints"]}]}}}
    (directory / "aclnn.json").write_text(json.dumps(data), encoding="utf-8")


def test_directory_override(tmp_path):
    _tiny_facts(tmp_path, "yyyyy-")
    facts = kernels.load(tmp_path)
    int8 = facts.judge("foo", "A2", ("int8",))
    assert not int8.supported and int8.main_api.excluded == (("int8", "x"),) and int8.confidence == "medium"
    assert facts.judge("foo", "A3", ("int8",)).supported
    unnamed = facts.judge("foo", "910", ("float16",))  # the doc does not name 910
    assert unnamed.supported and unnamed.confidence == "low" and unnamed.main_api.product_support is None
    assert kernels.judge("foo", "A2", ("float16",), directory=tmp_path).supported


def test_missing_or_foreign_file_is_a_knowledge_base_error(tmp_path):
    with pytest.raises(KnowledgeBaseError, match="cannot read kernel facts"):
        KernelFacts(tmp_path).judge("aten::mm.default", "A2", ())
    (tmp_path / "aclnn.json").write_text('{"aten": {}}', encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match="not a kernel-facts file"):
        KernelFacts(tmp_path).judge("aten::mm.default", "A2", ())


# ------------------------------------------------------------------ shipped data integrity


def test_shipped_products_are_the_six(facts):
    assert tuple(facts.data["products"]) == PRODUCTS == ("950", "A3", "A2", "310B", "310P", "910")
    for api, entry in facts.data["aclnn"].items():
        assert len(entry["support"]) == 6 and set(entry["support"]) <= set("yn-"), api


def test_shipped_entries_resolve(facts):
    aten, aclnn = facts.data["aten"], facts.data["aclnn"]
    counts = facts.provenance["counts"]
    assert len(aten) == counts["aten_overloads"] == 1356 and len(aclnn) == counts["aclnn_apis"] == 1126
    undocumented = set()
    for name, entry in aten.items():
        assert entry["source"] in ("own", "delegated", "yaml-generated", "none"), name
        for api in entry["apis"]:
            doc = facts.api_entry(api)
            if doc is None:
                undocumented.add(api)
                continue
            assert doc["doc"][1].endswith(".md") and len(doc["doc"][2]) == 40, api
    # The README's list of called APIs without a doc row: nothing else may go missing.
    assert undocumented == {
        "aclnnKvQuantSparseFlashAttention", "aclnnKvQuantSparseFlashAttentionV2", "aclnnLessScalar",
        "aclnnMhcPreV2", "aclnnMoeReRouting", "aclnnNotFound", "aclnnNotFoundV2", "aclnnObfuscationCalculateV2",
        "aclnnObfuscationSetupV2", "aclnnQuantFlashAttentionScoreGrad", "aclnnROIAlign", "aclnnROIAlignBackward",
        "aclnnSparseLightningIndexerGradKLLossV2"}


def test_shipped_exclusions_name_known_products(facts):
    outside = set()
    for api, entry in facts.data["aclnn"].items():
        for param in entry["params"]:
            assert param["io"].split("(")[0] in ("input", "inout"), (api, param["name"])
            for product, dtypes in param.get("excluded", {}).items():
                assert product in PRODUCTS and dtypes, (api, param["name"])
                if not set(dtypes) <= set(param.get("dtypes", ())):
                    outside.add(api)
    # Source quirks kept as read: clamp docs exclude BOOL their lists lack; the PA KV-cache docs' allow-lists
    # are wider than their dtype cells. An unlisted dtype is not native either way.
    assert outside == {"aclnnClampMax", "aclnnClampMaxTensor", "aclnnClampMin", "aclnnClampMinTensor",
                       "aclnnInplaceClampMax", "aclnnInplaceClampMaxTensor", "aclnnInplaceClampMinTensor",
                       "aclnnGatherPaKvCache", "aclnnScatterPaKvCache"}


# ------------------------------------------------------------------ the compiler


def _aten_row(aten: str, apis: str, match: str = "signature", fallback: str = "no") -> dict[str, str]:
    return {"aten": aten, "section": "official", "aclnn_apis": apis, "aclnn_source": "own",
            "fallback_aclop": fallback, "other_acl_op_path": "no", "aten_match": match}


def test_duplicate_kernel_rows_merge():
    # Both sides of an #if VERSION_BETWEEN: APIs united in order, the strongest schema match kept, helpers dropped.
    aten, counts = kb_kernels.build_aten([
        _aten_row("hardswish_backward", "aclnnHardswishBackward", match="name-arity", fallback="yes"),
        _aten_row("hardswish_backward", "aclnnHardswishBackward,aclnnHardswishBackwardV2"),
        _aten_row("", "aclnnHelper")])
    assert aten == {"hardswish_backward": {
        "apis": ["aclnnHardswishBackward", "aclnnHardswishBackwardV2"], "source": "own", "fallback": True,
        "other_aclop": False, "match": "signature", "section": "official"}}
    assert counts["aten_helper_rows"] == 1 and counts["aten_overloads"] == 1


@pytest.mark.skipif(not FACTS.is_dir(), reason="../shared/reference/ascend is not beside the checkout")
def test_rebuild_from_facts_reproduces_shipped_json(tmp_path):
    size = kb_kernels.build_aclnn(FACTS, tmp_path)
    assert (tmp_path / "aclnn.json").read_bytes() == SHIPPED.read_bytes(), "rerun tools/build_kb.py"
    assert size == SHIPPED.stat().st_size < 2_000_000


# ------------------------------------------------------------------ a kernel that delegates (issue 37, item 5)


def test_a_delegating_kernel_is_judged_by_its_principal_callee_s_main_api(facts):
    """op_plugin_aten_to_aclnn.tsv lists a delegating kernel's callees' APIs (side work included) in `aclnn_apis` and
    the callees in `via`: _weight_norm delegates to Tensor.div, whose tensor-divisor API is aclnnDiv (aclnnDivs is
    the scalar divisor's); scaled_dot_product_attention prepares masks (masked_fill_, ones, triu, logical_not) and
    calls custom_ops::npu_fusion_attention, whose APIs are aclnnFlashAttention*."""
    norm = facts.judge("aten::_weight_norm", "910", (BF16, BF16))
    main = next(a for a in norm.apis if a.main)
    assert main.api == "aclnnDiv" and "the main API aclnnDiv (it delegates to div" in norm.evidence[0]
    assert not norm.supported and "aclnnDiv.self: bfloat16 excluded on 910" in norm.evidence[1]
    for product in ("910", "A2"):
        sdpa = facts.judge("aten::scaled_dot_product_attention", product, (BF16,) * 3)
        main = next(a for a in sdpa.apis if a.main)
        assert main.api.startswith("aclnnFlashAttention"), main.api
        assert "it delegates to npu_fusion_attention" in sdpa.evidence[0]
        assert not any("aclnnInplaceMaskedFillTensor" in line for line in sdpa.evidence[1:2])
    # the FlashAttention APIs are marked not supported on the 910 (API level); on A2 they take bfloat16
    assert facts.judge("aten::scaled_dot_product_attention", "A2", (BF16,) * 3).supported
    assert not facts.judge("aten::scaled_dot_product_attention", "910", (BF16,) * 3).supported


def test_a_delegating_row_keeps_its_callees():
    aten, _ = kb_kernels.build_aten([{**_aten_row("_weight_norm", "aclnnDivs,aclnnDiv"), "aclnn_source": "delegated",
                                      "via": "Tensor.div"}])
    assert aten["_weight_norm"]["via"] == ["Tensor.div"] and aten["_weight_norm"]["source"] == "delegated"


def test_a_weight_nz_branch_is_never_the_main_api(facts):
    """bmm's row lists aclnnBatchMatMulWeightNz, aclnnBatchMatMul, aclnnMatmul; the first is aclnnBatchMatMul plus
    WeightNz, the branch for a weight in NZ format (marked not supported on the 910), so the main API is
    aclnnBatchMatMul. A version suffix is no branch: npu_fusion_attention keeps aclnnFlashAttentionVarLenScoreV4."""
    for product in ("910", "A2"):
        bmm = facts.judge("aten::bmm.default", product, (BF16, BF16))
        assert next(a for a in bmm.apis if a.main).api == "aclnnBatchMatMul"
    assert main_api("bmm", ["aclnnBatchMatMulWeightNz", "aclnnBatchMatMul"],
                    {"aclnnBatchMatMulWeightNz", "aclnnBatchMatMul"})[0] == "aclnnBatchMatMul"
    assert is_branch("aclnnAddmmWeightNz", ["aclnnAddmmWeightNz", "aclnnAddmm"])
    assert not is_branch("aclnnFlashAttentionScoreV4", ["aclnnFlashAttentionScore", "aclnnFlashAttentionScoreV4"])
