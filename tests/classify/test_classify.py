"""Classifier: each path on a purpose-built model run through scan_inventory, plus hand-built records for the rest.

Every expected category below is derived from the shipped facts (torch 2.13, Atlas A2 unless said otherwise);
the comment above each assertion names the fact.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from opassess.classify import classify
from opassess.errors import KnowledgeBaseError
from opassess.options import ScanOptions
from opassess.pipeline.capture import scan_inventory
from opassess.records import Capture, Inventory, ModelInfo, Operator, Signature
from opassess.vocabulary import Category
from tests.support import needs_cpp_toolchain

MODELS = Path(__file__).resolve().parents[1] / "models"



@pytest.fixture(scope="module")
def scanned(kb):
    """Classify a model file once per module: {operator key: ClassifiedOp}."""
    cache: dict[tuple, dict] = {}

    def run(name: str, target: str = "Atlas A2", torch_version: str | None = None) -> dict:
        key = (name, target, torch_version)
        if key not in cache:
            inventory = scan_inventory(ScanOptions(target=str(MODELS / name)))
            classified = classify(inventory, kb, target=target, torch_version=torch_version)
            cache[key] = {c.operator.key: c for c in classified}
        return cache[key]

    return run


def codes(op, signature=None) -> set[str]:
    return {r.code for r in op.reasons if signature is None or r.signature == signature}


# ------------------------------------------------------------------ real models


def test_float64_model(scanned):
    ops = scanned("float64.py")
    # torch.nn.Linear @2.13: `input` only fp16, fp32 -> float64 input must be cast: param-converted, all 3 signatures.
    linear = ops["torch.nn.Linear"]
    assert linear.category == "param-converted"
    assert linear.signature_categories == ("param-converted",) * 3
    assert any("float64" in r.message and "cast to float32" in r.message for r in linear.reasons if r.code == "dtype")
    # torch.nn.Tanh @2.13: `input` bf16..int64,bool, no fp64 -> param-converted.
    assert ops["torch.nn.Tanh"].category == "param-converted"
    assert ops["torch.nn.Tanh"].aten_support == {"aten::tanh": True}


def test_conv2d_dilation_is_within_the_documented_limits(scanned):
    # The facts put no dilation limit on Conv2d: its doc row only restricts dtypes (bf16, fp16, fp32) and the
    # kernel checks reject only negative padding and non-positive stride (ConvolutionKernelNpu.cpp). So both
    # signatures, dilation 1 and dilation 2, are direct; the attribute mapping names CANN Conv2D.
    conv = scanned("conv_dilation.py")["torch.nn.Conv2d"]
    assert conv.category == "direct" and conv.signature_categories == ("direct", "direct")
    assert conv.cann_op == "Conv2D"
    assert conv.aten_support == {"aten::convolution": True}
    assert "nature" in codes(conv)  # param-converted by nature, but this model's values pass


def test_max_pool_dilation_the_npu_rejects(scanned):
    # torch.nn.functional.max_pool2d @2.13: dilation only 1 or (1,1); nn.MaxPool2d calls it (rules.toml [calls]).
    pool = scanned("classify_pool_dilation.py")["torch.nn.MaxPool2d"]
    assert pool.signature_categories == ("direct", "param-converted")
    assert pool.category == "param-converted"
    (limit,) = [r for r in pool.reasons if r.code == "param-limit"]
    assert limit.signature == 1 and limit.message.startswith("dilation=2") and "max_pool2d" in limit.evidence
    assert pool.cann_op == "MaxPoolWithArgmaxV1"


def test_lstm_with_proj_size(scanned):
    # torch.nn.LSTM @2.13: ✔ on Atlas A2; fp32 only; proj_size and dropout unsupported -> proj_size=8 trips it.
    lstm = scanned("lstm_proj.py")["torch.nn.LSTM"]
    assert lstm.category == "param-converted"
    (limit,) = [r for r in lstm.reasons if r.code == "param-limit"]
    assert limit.message.startswith("proj_size=8")
    # torch_npu takes aten::lstm.input whole: the meta-device unrolling (addmm, sigmoid_, ...) is not judged.
    assert "composite" in codes(lstm) and lstm.aten_support["aten::lstm.input"] is True
    assert lstm.replacement == "torch_npu.npu_lstm" and lstm.cann_op == "DynamicRNN"
    # The same model on Ascend 950DT: the API page marks LSTM ✘, but the aclnn doc of the kernel that ran lists 950 as
    # supported, so the kernel facts decide (issue 22): the page's proj_size limit still holds, confidence low.
    on_950 = scanned("lstm_proj.py", target="Ascend 950DT")["torch.nn.LSTM"]
    assert on_950.category == "param-converted" and "api-unsupported" not in codes(on_950)
    (overruled,) = [r for r in on_950.reasons if r.code == "kernel-product"]
    assert overruled.message.startswith("the API page marks Ascend 950DT ✘;") and "not verified" in overruled.message
    assert on_950.confidence == "low"


def test_torch_library_custom_op(scanned):
    ops = scanned("custom_op.py")
    # opassess_tests::scale_shift is a custom_op without device_types: its CompositeExplicitAutograd kernel runs on
    # every backend (issue 11), and the trace runs it under the recorder: its body's mul and add have NPU kernels.
    op = ops["opassess_tests::scale_shift"]
    assert op.category == "direct" and codes(op) == {"decomposes"} and op.known is True
    assert op.aten_support == {"aten::mul.Tensor": True, "aten::add.Tensor": True}
    assert "without device_types" in op.reasons[0].message and "all have NPU kernels" in op.reasons[0].message
    # SignSTE's forward dispatches aten::sign (NPU kernel all_version) but its backward is hand-written Python.
    sign = next(c for k, c in ops.items() if k.endswith("SignSTE"))
    assert sign.category == "param-converted" and "autograd-function" in codes(sign)
    assert ops["torch.nn.Linear"].category == "direct"


@needs_cpp_toolchain
def test_cpp_extension_is_custom_dev_even_when_its_aten_ops_run_on_the_npu(scanned):
    ops = scanned("cpp_extension.py")
    # scaled_gelu dispatches aten::gelu and aten::mul.Scalar, both with NPU kernels, but it is compiled code of
    # the project's own: it must be rebuilt against torch_npu (issue 3: "C++ extension with no replacement").
    ext = ops["opassess_scaled_gelu_ext.scaled_gelu"]
    assert ext.category == "custom-dev" and codes(ext) == {"extension"}
    assert ext.aten_support == {"aten::gelu": True, "aten::mul.Scalar": True}


def test_lgamma_is_a_binding_to_write(scanned):
    ops = scanned("lgamma.py")
    # npu_aten_ops has no lgamma row and op-plugin none either; the dispatcher's composite (the structured
    # functional wrapper) only calls aten::lgamma.out, which has no NPU kernel either. But CANN documents aclnnLgamma
    # (ops-math, supported on A2): the work is an op-plugin registration -> param-converted, reason "binding".
    lgamma = ops["torch.lgamma"]
    assert lgamma.category == "param-converted"
    assert codes(lgamma, None) >= {"binding"} and lgamma.aten_support == {"aten::lgamma": False}
    (binding,) = [r for r in lgamma.reasons if r.code == "binding"]
    assert "aclnnLgamma" in binding.message and "op-plugin" in binding.message
    assert "cann_aclnn_dtypes.tsv aclnnLgamma" in binding.evidence and "math/lgamma/docs/aclnnLgamma.md" in \
        binding.evidence and "no row for lgamma" in binding.evidence
    # Everything else in the model has kernels and documented support.
    assert {k: c.category for k, c in ops.items() if k != "torch.lgamma"} == dict.fromkeys(
        [k for k in ops if k != "torch.lgamma"], "direct")
    # On Atlas 200I/500 A2 (310B) aclnnLgamma's doc marks the product ✘: no binding would run, custom-dev.
    on_310b = scanned("lgamma.py", target="310B")["torch.lgamma"]
    assert on_310b.category == "custom-dev" and "binding" not in codes(on_310b)


def test_scaled_dot_product_attention(scanned):
    ops = scanned("sdpa.py")
    # F.scaled_dot_product_attention @2.13: ✔ on A2, q/k/v bf16/fp16/fp32 (float32 here); torch_npu has a kernel for
    # aten::scaled_dot_product_attention [v2.5..newest] and takes it whole -> direct, with npu_fusion_attention
    # offered as the fused replacement (rules.toml, optional).
    sdpa = ops["torch.nn.functional.scaled_dot_product_attention"]
    assert sdpa.category == "direct"
    assert sdpa.aten_support["aten::scaled_dot_product_attention"] is True
    assert "composite" in codes(sdpa) and sdpa.replacement == "torch_npu.npu_fusion_attention"
    # Whatever the trace recorded below the composite (the meta-device math path, bmm, _safe_softmax) is not judged.
    assert not any(r.code == "no-kernel" for r in sdpa.reasons)
    # On Ascend 950DT the API page's row is ✘, but the aclnn docs of the kernel taken whole list 950 as supported: the
    # kernel facts decide (issue 22), direct with low confidence and the disagreement said.
    on_950 = scanned("sdpa.py", target="Ascend 950DT")["torch.nn.functional.scaled_dot_product_attention"]
    assert on_950.category == "direct" and on_950.confidence == "low" and "kernel-product" in codes(on_950)


def test_deformable_convolution(scanned):
    ops = scanned("deform_conv.py")
    # torchvision::deform_conv2d is a third-party op with no NPU kernel; rules.toml maps it to
    # npu_deformable_conv2d (npu_custom_ops, all_version), a different signature -> param-converted.
    deform = ops["torchvision::deform_conv2d"]
    assert deform.category == "param-converted" and codes(deform) == {"replacement"}
    assert deform.replacement == "torch_npu.npu_deformable_conv2d" and deform.known
    # Its stem convolutions and the slicing (aten::slice.Tensor runs on every backend) are direct.
    assert ops["torch.nn.Conv2d"].category == "direct"
    assert ops["Tensor.__getitem__"].category == "direct" and "view-op" in codes(ops["Tensor.__getitem__"])


def test_a_deprecated_replacement_carries_its_successor_or_none(scanned):
    # npu_custom_ops: npu_nms_v4 deprecated->(no replacement); npu_deformable_conv2d is not deprecated.
    nms = scanned("nms.py")["torchvision::nms"]
    assert nms.replacement == "torch_npu.npu_nms_v4"
    assert nms.replacement_deprecated and nms.replacement_successor is None
    deform = scanned("deform_conv.py")["torchvision::deform_conv2d"]
    assert not deform.replacement_deprecated and deform.replacement_successor is None


# ------------------------------------------------------------------ hand-built records


def _inventory(*operators: Operator) -> Inventory:
    info = ModelInfo("hand.py", "build_model", "Hand", 0, "float32", ())
    return Inventory(info, Capture("fx", "meta", None, (), ()), operators)


def _op(key: str, kind: str, aten: tuple[str, ...], *signatures: Signature) -> Operator:
    return Operator(key, kind, len(signatures) or 1, ("",), signatures, aten, (), ())


def _sig(attrs=None, shapes=((2, 3),), dtypes=("float32",)) -> Signature:
    return Signature(attrs or {}, shapes, dtypes, 1, ("",), ())


def test_unknown_operator_is_custom_dev_never_direct(kb):
    (op,) = classify(_inventory(_op("mylib.mystery", "function", ("mylib::mystery",), _sig())), kb)
    assert op.category == "custom-dev" and not op.known
    assert codes(op) == {"not-in-kb"}


def test_topk_sorted_false_and_gelu_tanh(kb):
    # torch.topk @2.13: sorted=False unsupported. F.gelu: approximate may only be set to tanh (default none is fine).
    topk, gelu = classify(_inventory(
        _op("torch.topk", "function", ("aten::topk",), _sig({"k": 2, "sorted": True}), _sig({"k": 2, "sorted": False})),
        _op("torch.nn.functional.gelu", "function", ("aten::gelu",), _sig({"approximate": "none"}),
            _sig({"approximate": "tanh"}))), kb)
    assert topk.signature_categories == ("direct", "param-converted")
    assert gelu.signature_categories == ("direct", "direct")
    # aten::gelu is only listed as gelu.out: the functional comes from it (structured delegate).
    assert gelu.aten_support == {"aten::gelu": True}


def test_interpolate_scale_factor_and_mode(kb):
    # F.interpolate @2.13: no scale_factor; modes nearest/linear/bilinear/bicubic/trilinear/area.
    (op,) = classify(_inventory(_op(
        "torch.nn.functional.interpolate", "function", ("aten::upsample_bilinear2d",),
        _sig({"size": [8, 8], "scale_factor": None, "mode": "bilinear"}, ((1, 3, 4, 4),)),
        _sig({"size": None, "scale_factor": 2.0, "mode": "bilinear"}, ((1, 3, 4, 4),)),
        _sig({"size": [8, 8], "scale_factor": None, "mode": "nearest-exact"}, ((1, 3, 4, 4),)))), kb)
    # scale_factor: the page's "not supported" is overruled by the kernel facts: aclnnUpsampleBilinear2d, the API
    # the upsample_bilinear2d kernel calls, takes scalesH/scalesW -> direct, confidence medium, the disagreement said.
    # mode="nearest-exact" is outside the page's list and no kernel fact speaks for a mode: param-converted.
    assert op.signature_categories == ("direct", "direct", "param-converted")
    (taken,) = [r for r in op.reasons if r.code == "kernel-param"]
    assert taken.signature == 1 and taken.message.startswith("scale_factor=2.0: the API page says scale_factor is not")
    assert "aclnnUpsampleBilinear2d" in taken.message and "the kernel facts decide" in taken.message
    assert op.confidence == "medium" and op.cann_op == "ResizeBilinearV2"


def test_indices_come_back_as_int32(kb):
    # F.max_pool2d @2.13: with return_indices=True the returned argmax is int32 (int64 on CPU/GPU).
    (op,) = classify(_inventory(_op(
        "torch.nn.functional.max_pool2d", "function", ("aten::max_pool2d_with_indices",),
        _sig({"kernel_size": 2, "dilation": 1, "return_indices": False}, ((1, 3, 4, 4),)),
        _sig({"kernel_size": 2, "dilation": 1, "return_indices": True}, ((1, 3, 4, 4),)))), kb)
    assert op.signature_categories == ("direct", "param-converted")
    assert [r.code for r in op.reasons if r.signature == 1] == ["dtype-cast"]


def test_version_and_target_selection(kb):
    # aten::cat.names has kernels [v2.1..v2.12]: a Tensor op reaching only it is direct at 2.12, custom-dev at 2.13.
    inventory = _inventory(_op("mylib.cat_by_name", "function", ("aten::cat.names",), _sig()))
    assert classify(inventory, kb, torch_version="2.12")[0].category == "direct"
    assert classify(inventory, kb, torch_version="2.13")[0].category == "custom-dev"
    with pytest.raises(KnowledgeBaseError):
        classify(inventory, kb, target="Atlas 300I")
    with pytest.raises(KnowledgeBaseError):
        classify(inventory, kb, torch_version="1.13")


def test_cpu_only_decomposition_is_not_judged(kb):
    # A stray CPU flash-attention op recorded on its own is named as the CPU path of SDPA, not as a gap.
    (op,) = classify(_inventory(_op("torch.nn.functional.scaled_dot_product_attention", "function",
                                    ("aten::_scaled_dot_product_flash_attention_for_cpu",),
                                    _sig(shapes=((1, 2, 4, 8),) * 3, dtypes=("float32",) * 3))), kb)
    assert op.category == "direct" and "composite" in codes(op)


def test_worst():
    assert Category.worst(["direct", "custom-dev", "param-converted"]) == "custom-dev"
    assert Category.worst([]) == "direct"


def _without_curated_composites(kb, tmp_path):
    """The same knowledge base with rules.toml's [[composite]] tables removed: only the derived rule is left."""
    text = Path(kb.rules_path).read_text(encoding="utf-8")
    stripped = re.sub(r"\[\[composite\]\]\n(?:[^\n]+\n)+", "", text)
    assert stripped != text
    path = tmp_path / "rules.toml"
    path.write_text(stripped, encoding="utf-8")
    derived = dataclasses.replace(kb, rules_path=path, _cache={})
    assert derived.rules.composites == ()
    return derived


def test_every_curated_composite_is_taken_whole_by_the_derived_rule(kb, tmp_path):
    # rules.toml's [[composite]] list is a check of the derived rule (entry op with an NPU kernel -> judged whole,
    # its decomposition not): each curated composite has a kernel, and the models using it get the same verdict
    # with and without the list.
    derived_kb = _without_curated_composites(kb, tmp_path)
    models = {"torch.nn.functional.scaled_dot_product_attention": "sdpa.py", "torch.nn.LSTM": "rnn_whole.py",
              "torch.nn.GRU": "rnn_whole.py"}
    assert {api for c in kb.rules.composites for api in c.apis} == set(models)
    for composite in kb.rules.composites:
        assert kb.kernel_support(composite.aten).supported, composite.aten
        (api,) = composite.apis
        inventory = scan_inventory(ScanOptions(target=str(MODELS / models[api])))
        curated = {c.operator.key: c for c in classify(inventory, kb)}[api]
        derived = {c.operator.key: c for c in classify(inventory, derived_kb)}[api]
        assert derived.category == curated.category == "direct", api
        assert derived.aten_support.get(composite.aten) is True, (api, derived.aten_support)
        assert not {"no-kernel", "not-in-kb"} & codes(derived)
        # A CPU-only decomposition op under the entry op is not judged by the derived rule either.
        sig = _sig(shapes=((1, 2, 4, 8),) * 3, dtypes=("float32",) * 3)
        stray_op = Operator(api, "function", 1, ("",), (sig,), (composite.cpu_only[0],), (), (),
                            entry=(composite.aten.partition(".")[0],))
        (stray,) = classify(_inventory(stray_op), derived_kb)
        assert stray.category == "direct" and "taken-whole" in codes(stray), (api, stray.reasons)


# ------------------------------------------------------------------ a training step (--train)


@pytest.fixture(scope="module")
def trained(kb):
    """Classify one training step of a model file (cached): {operator key: ClassifiedOp}."""
    cache: dict[tuple, dict] = {}

    def run(name: str, dtype: str | None = None) -> dict:
        if (name, dtype) not in cache:
            inventory = scan_inventory(ScanOptions(target=str(MODELS / name), train=True, dtype=dtype))
            cache[(name, dtype)] = {c.operator.key: c for c in classify(inventory, kb)}
        return cache[(name, dtype)]

    return run


def test_backward_without_npu_registration_is_a_binding(trained):
    ops = trained("train_lgamma.py")
    lgamma = ops["torch.lgamma"]
    # npu_aten_ops has no row for digamma, but CANN documents aclnnDigamma: lgamma's backward needs a binding
    assert lgamma.category == "param-converted" and lgamma.backward_support["aten::digamma"] is False
    backward = [r for r in lgamma.reasons if r.code == "binding" and "backward" in r.message]
    assert len(backward) == 1 and "aten::digamma" in backward[0].message and "aclnnDigamma" in backward[0].message
    assert "npu_aten_ops: no row for digamma" in backward[0].evidence
    # Linear's backward (mm, sum) runs on the NPU: stated, and no worse category
    linear = ops["torch.nn.Linear"]
    assert linear.category == "direct" and "backward" in codes(linear) and all(linear.backward_support.values())


def test_backward_ops_covered_by_an_out_variant_or_a_composite_are_not_custom_dev(trained):
    ops = trained("train_select_softplus.py")
    # softplus_backward: no npu_aten_ops row of its own; torch's CompositeExplicitAutogradNonFunctional kernel (the
    # structured functional wrapper) calls softplus_backward.grad_input, which torch_npu registers -> a kernel
    softplus = ops["torch.nn.functional.softplus"]
    assert softplus.category == "direct" and softplus.backward_support == {"aten::softplus_backward": True}
    # select_backward: no NPU kernel; its composite kernel calls zeros, select and copy_, all of which run
    getitem = ops["Tensor.__getitem__"]
    assert getitem.category == "direct" and getitem.backward_support == {"aten::select_backward": True}
    assert "backward-no-kernel" not in codes(getitem) | codes(softplus)
    assert not [k for k, c in ops.items() if c.category == "custom-dev"]


def test_composite_callees_speak_for_the_product(kb):
    # Tensor.new_ones: the API page marks Ascend 950DT ✘ and op-plugin has no new_ones row, but its
    # CompositeExplicitAutograd kernel calls fill_.Scalar, whose aclnn doc (aclnnInplaceFillScalar) lists 950:
    # direct, confidence low, the disagreement said
    inventory = scan_inventory(ScanOptions(target=str(MODELS / "train_select_softplus.py"), dtype="bfloat16"))
    ops = {c.operator.key: c for c in classify(inventory, kb, target="Ascend 950DT")}
    new_ones = ops["Tensor.new_ones"]
    assert new_ones.category == "direct" and new_ones.confidence == "low"
    (said,) = [r for r in new_ones.reasons if r.code == "kernel-product"]
    assert said.message.startswith("the API page marks Ascend 950DT ✘; aclnnInplaceFillScalar's doc lists Ascend 950")
    assert "aten::fill_.Scalar" in next(r.evidence for r in new_ones.reasons if r.code == "view-op")


def test_backward_of_a_replaced_op_comes_with_its_replacement(trained):
    deform = trained("deform_conv.py")["torchvision::deform_conv2d"]
    # no NPU kernel for torchvision::_deform_conv2d_backward; npu_deformable_conv2d replaces forward and backward
    assert deform.backward_support == {"torchvision::_deform_conv2d_backward": False}
    assert deform.category == "param-converted" and codes(deform) == {"replacement", "backward-no-kernel"}
    assert "torch_npu.npu_deformable_conv2d" in next(r.message for r in deform.reasons
                                                     if r.code == "backward-no-kernel")


def test_autograd_function_with_traced_backward_is_direct(trained):
    ste = trained("train_lgamma.py")["train_lgamma.SoftplusSTE"]
    # forward exp, log1p and backward sigmoid, mul all have NPU kernels; the backward was traced, so nothing is
    # left to verify by hand (without --train the same Function is param-converted: "backward not traced")
    assert ste.category == "direct" and codes(ste) == {"autograd-function", "backward"}
    assert ste.backward_support == {"aten::sigmoid": True, "aten::mul.Tensor": True}


def test_optimizer_step_is_judged_and_named_its_fused_route(trained):
    ops = trained("train_lgamma.py")
    adamw = ops["torch.optim.AdamW.step"]
    # torch_npu documents torch.optim.AdamW.step as supported; its _foreach_ ops have kernels; rules.toml fused_step:
    # AdamW(fused=True) dispatches aten::_fused_adamw_, which has an NPU kernel (aclnnFusedAdamw)
    assert adamw.operator.kind == "optimizer" and adamw.category == "direct"
    assert {"api-supported", "fused-step"} <= codes(adamw)
    assert adamw.replacement == "torch.optim.AdamW(fused=True)"
    assert ops["torch.nn.utils.clip_grad_norm_"].category == "direct"


def test_optimizer_step_in_bfloat16_follows_the_kernel_facts_over_the_api_page(trained):
    assert "dtype" not in codes(trained("train_lgamma.py")["torch.optim.AdamW.step"])  # float32 parameters
    adamw = trained("train_lgamma.py", "bfloat16")["torch.optim.AdamW.step"]
    # torch_npu's page documents AdamW.step params in float16 and float32 only, but the aclnn kernels its
    # _foreach_ ops call (aclnnForeachMulScalarV2, ...) list bfloat16 on Atlas A2: the kernel facts decide
    assert adamw.category == "direct" and "dtype" not in codes(adamw)
    kernel = next(r for r in adamw.reasons if r.code == "kernel-dtype")
    assert "bfloat16 runs natively" in kernel.message and "float16, float32" in kernel.message


def test_python_indexing_is_judged_by_what_it_dispatched(kb, model_file):
    # x[:, 0] and x[..., :2] dispatch only select and slice (views). Python indexing names aten::index as its entry
    # op, but torch translates it before any kernel is chosen: aclnnIndex's exclusion of bf16 on Atlas training
    # series (910A) is no reason when index never ran.
    # x[None] dispatches aten::unsqueeze, torch_npu's own kernel: a view by its schema (Tensor(a)), so it reads no
    # data either. Only views ran: direct with the confidence views have (high), on every product.
    path = model_file('''
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                return x[:, 0] * 2, x[..., :2], x[None]
        def build_model():
            return M()
        def example_inputs():
            return (torch.randn(2, 3, 4),)
    ''')
    inventory = scan_inventory(ScanOptions(target=str(path), dtype="bfloat16"))
    for target in ("910A", "A2"):
        ops = {c.operator.key: c for c in classify(inventory, kb, target=target)}
        getitem = ops["Tensor.__getitem__"]
        assert getitem.category == "direct" and getitem.confidence == "high", (target, getitem.reasons)
        assert set(getitem.aten_support) == {"aten::select.int", "aten::slice.Tensor", "aten::unsqueeze"}
    assert ops["Tensor.mul"].category == "direct"  # A2: aclnnMul takes bf16
    ops = {c.operator.key: c for c in classify(inventory, kb, target="910A")}
    assert ops["Tensor.mul"].category == "param-converted"  # aclnnMul excludes bf16 on 910A: the limit is named
    assert any("on Atlas training series" in r.message for r in ops["Tensor.mul"].reasons if r.code == "dtype")


def test_item_of_an_int64_tensor_is_a_host_copy_that_runs(kb, model_file):
    # Tensor.item's API page: `self` only fp32. What ran is aten::_local_scalar_dense, which torch_npu registers as
    # its own kernel (npu_aten_ops: torch_npu native; no op-plugin row, no CANN kernel) and whose schema returns a
    # host number: a device-to-host copy no CANN doc limits. int64 runs: direct, confidence low, the page's list said.
    path = model_file('''
        import torch
        class M(torch.nn.Module):
            def forward(self, x, n):
                return x * n.sum().item(), x.sum().item()
        def build_model():
            return M()
        def example_inputs():
            return (torch.randn(2, 3), torch.tensor([1, 2]))
    ''')
    inventory = scan_inventory(ScanOptions(target=str(path), methods=("dispatch",)))
    for target in ("A2", "910A", "950"):
        item = {c.operator.key: c for c in classify(inventory, kb, target=target)}["Tensor.item"]
        assert item.category == "direct" and item.confidence == "low", (target, item.reasons)
        assert item.aten_support == {"aten::_local_scalar_dense": True}
        assert "dtype" not in codes(item)
        if target == "910A":  # the page marks no product column for it: its fp32 list is no caveat there
            assert "host-copy" not in codes(item)
            continue
        (copy,) = [r for r in item.reasons if r.code == "host-copy"]  # the int64 signature only; float32 is listed
        assert copy.signature is not None and "int64" in copy.message and "(float32)" in copy.message
        assert "npu_aten_ops: _local_scalar_dense [torch_npu native]" in copy.evidence


def test_an_api_pages_dtype_list_holds_only_for_the_products_the_page_marks(kb, model_file):
    # The native-API page lists GroupNorm as float32 only and histc as float16/float32 (issue 37 audit rows 11-12),
    # marking Atlas A2/A3 and 950DT. On A2 the kernel docs overrule both lists (kernel-dtype). The 200I/500 A2
    # (310B) has no column on the page and aclnnGroupNorm/aclnnHistc are not documented there: the page's list was
    # not written for it, so it decides nothing (no "cast to float32", no "compute it in another op")
    path = model_file('''
        import torch
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.gn = torch.nn.GroupNorm(2, 8)
            def forward(self, x, idx):
                return self.gn(x), torch.histc(idx, bins=4, min=0, max=3)
        def build_model():
            return M().half()
        def example_inputs():
            return torch.randn(2, 8, 16, dtype=torch.float16), torch.randint(0, 4, (32,), dtype=torch.int32)
    ''')
    inventory = scan_inventory(ScanOptions(target=str(path)))
    for target in ("310B", "A2"):
        ops = {c.operator.key: c for c in classify(inventory, kb, target=target)}
        for key in ("torch.nn.GroupNorm", "torch.histc"):
            assert ops[key].category == "direct", (target, [r.message for r in ops[key].reasons])
            assert not any(r.code == "dtype" for r in ops[key].reasons)
        if target == "A2":
            assert all(any(r.code == "kernel-dtype" for r in ops[k].reasons)
                       for k in ("torch.nn.GroupNorm", "torch.histc"))
