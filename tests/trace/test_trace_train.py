"""The training-step capture (opassess/trace/train): backward ATen ops per forward operator, optimizer operators,
autocast, and the model-file convention (loss_fn, build_optimizer, max_grad_norm). Expected values are worked out
in each test model's docstring."""
from __future__ import annotations

from pathlib import Path

import pytest

from opassess.errors import TraceError
from opassess.load import LoadRequest, load_model
from opassess.options import ScanOptions
from opassess.pipeline.capture import scan_inventory
from opassess.trace.train import TrainCapture, TrainOptions
from opassess.trace.train.autocast import autocast_mode
from opassess.trace.train.backward import GradOwners, record_backward
from opassess.trace.train.step import plan_step

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "models"
EXAMPLES = ROOT / "examples"
_CACHE: dict = {}


def trained(path: Path, amp: str | None = None):
    """The inventory of one training step of a model file (cached per file and amp)."""
    key = (path, amp)
    if key not in _CACHE:
        _CACHE[key] = scan_inventory(ScanOptions(target=str(path), train=True, amp=amp))
    return _CACHE[key]


def operators(inventory) -> dict:
    return {op.key: op for op in inventory.operators}


def backward_of(node) -> list[str]:
    return [call.qualified for call in node.backward]


def test_lgamma_backward_is_digamma_on_the_learned_term_only():
    inventory = trained(MODELS / "train_lgamma.py")
    assert (inventory.capture.step, inventory.capture.method, inventory.capture.device) == ("train", "dispatch", "meta")
    lgammas = [n for n in inventory.capture.nodes if n.key == "torch.lgamma"]
    # lgamma(shape) is differentiated: digamma, the chain rule's multiplication, and the add that sums this
    # gradient with the other uses of `shape` (made while lgamma's backward node runs); lgamma(counts + 1) is not
    assert [backward_of(n) for n in lgammas] == [["aten::digamma", "aten::mul.Tensor", "aten::add.Tensor"], []]
    assert operators(inventory)["torch.lgamma"].backward_aten[0] == "aten::digamma"


def test_hand_written_autograd_function_backward_is_captured():
    op = operators(trained(MODELS / "train_lgamma.py"))["train_lgamma.SoftplusSTE"]
    assert op.kind == "custom"
    assert op.aten == ("aten::exp", "aten::log1p")  # its forward
    assert op.backward_aten == ("aten::sigmoid", "aten::mul.Tensor")  # grad * torch.sigmoid(x), written by hand


def test_linear_owns_its_matmul_backward():
    op = operators(trained(MODELS / "train_lgamma.py"))["torch.nn.Linear"]
    # addmm's backward: the input gradient is not needed (the features need no grad): the weight's mm, bias's sum
    assert set(op.backward_aten) >= {"aten::mm", "aten::sum.dim_IntList"}


def test_third_party_op_backward_is_its_own_backward_op():
    op = operators(trained(MODELS / "deform_conv.py"))["torchvision::deform_conv2d"]
    assert op.aten == ("torchvision::deform_conv2d",)
    assert op.backward_aten == ("torchvision::_deform_conv2d_backward",)


def test_default_step_is_mean_loss_clipping_and_foreach_adamw():
    inventory = trained(MODELS / "train_lgamma.py")
    ops = operators(inventory)
    keys = [op.key for op in inventory.operators]
    assert keys[-3:] == ["Tensor.backward", "torch.nn.utils.clip_grad_norm_", "torch.optim.AdamW.step"]
    assert "Tensor.mean" in keys  # the default loss, recorded as an operator of the step
    adamw, clip = ops["torch.optim.AdamW.step"], ops["torch.nn.utils.clip_grad_norm_"]
    assert adamw.kind == clip.kind == "optimizer"
    assert {"aten::_foreach_add_.Tensor", "aten::_foreach_addcdiv_.ScalarList", "aten::_foreach_lerp_.Scalar"} \
        <= set(adamw.aten)
    assert adamw.signatures[0].attrs["foreach"] is True and adamw.signatures[0].input_dtypes == ("float32",)
    assert "aten::_foreach_norm.Scalar" in clip.aten and clip.signatures[0].attrs["max_norm"] == 1.0
    note = inventory.capture.step_note
    assert "AdamW(foreach=True)" in note and "clip_grad_norm_(1.0)" in note


def test_model_file_loss_optimizer_and_no_clipping():
    inventory = trained(MODELS / "train_custom_step.py")
    ops = operators(inventory)
    assert ops["torch.nn.functional.cross_entropy"].backward_aten[0] == "aten::nll_loss_backward"
    assert "aten::_log_softmax_backward_data" in ops["torch.nn.functional.cross_entropy"].backward_aten
    assert [op.key for op in inventory.operators if op.kind == "optimizer"] == ["torch.optim.SGD.step"]
    assert "aten::_foreach_add_.List" in ops["torch.optim.SGD.step"].aten
    note = inventory.capture.step_note
    assert "loss_fn(output, inputs) of the model file" in note and "build_optimizer(model) of the model file" in note
    assert "no gradient clipping" in note


def test_fp16_autocast_casts_and_the_grad_scaler_is_recorded():
    inventory = trained(EXAMPLES / "resnet_like.py", amp="fp16")
    ops = operators(inventory)
    conv = next(n for n in inventory.capture.nodes if n.key == "torch.nn.Conv2d")
    assert conv.output_dtypes == ("float16",) and "aten::_to_copy" in ops["torch.nn.Conv2d"].aten
    assert [op.key for op in inventory.operators if op.kind == "optimizer"] == [
        "torch.amp.GradScaler.scale", "torch.amp.GradScaler.unscale_", "torch.nn.utils.clip_grad_norm_",
        "torch.optim.AdamW.step", "torch.amp.GradScaler.update"]
    assert "aten::_amp_foreach_non_finite_check_and_unscale_" in ops["torch.amp.GradScaler.unscale_"].aten
    assert ops["torch.amp.GradScaler.update"].aten == ("aten::_amp_update_scale_",)
    bn = next(n for n in inventory.capture.nodes if n.key == "torch.nn.BatchNorm2d")
    assert bn.input_dtypes[0] == "float16"  # autocast leaves batch norm alone: it takes the conv's float16 output


def test_attention_stand_in_lets_gradients_reach_every_projection():
    inventory = trained(EXAMPLES / "transformer_lm.py", amp="bf16")
    ops = operators(inventory)
    sdpa = ops["torch.nn.functional.scaled_dot_product_attention"]
    assert sdpa.aten == ("aten::scaled_dot_product_attention",) and sdpa.backward_aten == ()
    linears = [n for n in inventory.capture.nodes if n.key == "torch.nn.Linear"]
    assert linears and all("aten::mm" in backward_of(n) for n in linears)
    assert all(n.output_dtypes == ("bfloat16",) for n in linears)


def test_a_forward_scan_has_no_backward_and_says_so():
    inventory = scan_inventory(ScanOptions(target=str(MODELS / "train_lgamma.py")))
    assert (inventory.capture.step, inventory.capture.step_note) == ("forward", None)
    assert all(not n.backward for n in inventory.capture.nodes)
    assert all(op.kind != "optimizer" for op in inventory.operators)


def test_grad_owners_attribute_nodes_to_the_call_that_created_them():
    import torch

    linear = torch.nn.Linear(3, 2)
    owners = GradOwners()
    y = linear(torch.randn(4, 3))
    owners.claim("linear", [y])  # AddmmBackward0 and the weight's TBackward0
    z = y.exp()
    owners.claim("exp", [z])  # ExpBackward0 only: the Linear's nodes are owned already
    loss = z.sum()
    owners.claim("sum", [loss])
    seen = record_backward(owners, loss.backward)
    ops = {name: [c.qualified for c in calls] for name, calls in seen.calls.items()}
    assert ops["sum"] == ["aten::expand"]
    assert ops["exp"] == ["aten::detach", "aten::mul.Tensor"]  # grad * exp(x), the saved result
    assert {"aten::mm", "aten::sum.dim_IntList"} <= set(ops["linear"])
    # the weight's gradient: mm of grad (4, 2)^T and the input (4, 3): 2 x 2 x 4 x 3 FLOPs (the input needs none)
    assert seen.flops == {"sum": 0, "exp": 0, "linear": 48}
    # the engine's own: seeding the loss gradient, AccumulateGrad writing .grad
    assert [c.qualified for c in seen.engine] == ["aten::ones_like", "aten::detach", "aten::detach"]


def test_autocast_mode_casts_by_autocast_lists():
    import torch
    import torch.nn.functional as F

    x, w = torch.randn(2, 4, device="meta"), torch.randn(3, 4, device="meta")
    with autocast_mode("bf16"):
        assert F.linear(x, w).dtype == torch.bfloat16  # lower-precision list
        assert F.softmax(x.to(torch.bfloat16), dim=-1).dtype == torch.float32  # float32 list
        assert torch.relu(x).dtype == torch.float32  # on neither list: as it comes


def test_bad_max_grad_norm_and_loss_are_refused(model_file):
    path = model_file("""
        import torch
        max_grad_norm = "one"
        def build_model():
            return torch.nn.Linear(2, 2)
        def example_inputs():
            return (torch.randn(1, 2),)
    """)
    loaded = load_model(LoadRequest(target=str(path)))
    with pytest.raises(TraceError, match="max_grad_norm must be a positive number or None"):
        plan_step(loaded.namespace, TrainOptions(), loaded.info.source)
    path = model_file("""
        import torch
        def build_model():
            return torch.nn.Linear(2, 2)
        def example_inputs():
            return (torch.randn(1, 2),)
        def loss_fn(output, inputs):
            return output
    """, name="vector_loss.py")
    with pytest.raises(TraceError, match="the loss is not a scalar tensor"):
        TrainCapture(TrainOptions()).capture(load_model(LoadRequest(target=str(path))))


def test_a_batch_of_one_is_doubled_and_a_value_read_retried_as_compiled():
    inventory = trained(MODELS / "train_batch_one.py")
    capture = inventory.capture
    # .item() on meta fails the plain step; the retry with is_compiling() true runs on meta, not on the CPU
    assert (capture.device, capture.method) == ("meta", "dispatch-compiling")
    assert [a.method for a in capture.attempts] == ["train", "train-compiling"]
    assert "Tensor.item() cannot be called on meta tensors" in capture.attempts[0].error
    # BatchNorm1d in train mode refuses (1, 8): the batch was doubled, and the note says so
    assert "the example batch of 1 was doubled to 2" in capture.step_note
    norm = next(n for n in capture.nodes if n.key == "torch.nn.BatchNorm1d")
    assert norm.input_shapes == ((2, 8),) and norm.backward


def test_grouped_mm_trains_on_meta_in_float32():
    # the meta kernel refuses float32 in the forward and in the backward's own _grouped_mm calls: both stood in
    inventory = trained(MODELS / "train_grouped_mm.py")
    assert (inventory.capture.device, inventory.capture.method) == ("meta", "dispatch")
    experts = operators(inventory)["torch._grouped_mm"]
    assert experts.flops == 2 * 8 * 16 * 32
    assert "aten::_grouped_mm" in experts.backward_aten
    grads = [c for n in experts.nodes for c in n.backward if c.op == "aten::_grouped_mm"]
    assert grads and all(d == "float32" for c in grads for d in c.output_dtypes)


def test_a_models_own_grouped_matmul_op_is_the_work_of_its_body(tmp_path):
    # own_grouped_mm.py's torch.library op (every backend): its body's ATen ops are recorded with their FLOPs,
    # forward and backward (worked out in the model's docstring), not an op of unknown work
    from opassess.classify import classify
    from opassess.kb.store import load_kb

    forward = operators(scan_inventory(ScanOptions(target=str(MODELS / "own_grouped_mm.py"))))["own_moe::grouped_mm"]
    assert forward.flops == 1_048_576 and forward.backward_flops == 0
    assert {"aten::mm", "aten::cat"} <= set(forward.aten)
    inventory = trained(MODELS / "own_grouped_mm.py")
    experts = operators(inventory)["own_moe::grouped_mm"]
    assert experts.flops == 1_048_576 and experts.backward_flops == 2 * 1_048_576
    assert {"aten::mm", "aten::stack", "own_moe::grouped_mm"} <= set(experts.backward_aten)
    verdict = next(c for c in classify(inventory, load_kb(tmp_path)) if c.operator.key == "own_moe::grouped_mm")
    assert verdict.category == "direct" and all(verdict.aten_support.values()) and all(
        verdict.backward_support.values())
    assert any("the ATen ops it runs all have NPU kernels" in r.message for r in verdict.reasons)


def test_torchs_own_autograd_functions_are_not_the_projects():
    # dtensor_mlp.py on meta, in a worker (it initialises a process group): DTensor's Redistribute and _ToTorchTensor
    # are torch's autograd Functions, judged by the ops they run (direct, no "custom autograd.Function" to verify);
    # the model's own ClampSTE stays a project op whose traced backward is judged
    from opassess.isolation.scan import finish_assessment, start_assessment
    from opassess.report import build_view

    scan = ScanOptions(target=str(MODELS / "dtensor_mlp.py"), train=True)
    document = build_view(finish_assessment(start_assessment(scan, timeout=300, debug=False), scan)).document
    assert (document["model"]["capture"]["device"], document["model"]["capture"]["step"]) == ("meta", "train")
    ops = {o["op"]: o for o in document["operators"]}
    torch_own = [key for key in ops if key.startswith("torch.distributed.tensor.")]
    assert {"torch.distributed.tensor._redistribute.Redistribute", "torch.distributed.tensor._api._ToTorchTensor"} \
        <= set(torch_own)
    for key in torch_own:
        assert ops[key]["kind"] == "function" and ops[key]["category"] == "direct", ops[key]["reasons"]
        assert not {"autograd-function", "custom-op"} & {r["code"] for r in ops[key]["reasons"]}
    # RowwiseParallel's output is a partial sum: Redistribute runs _c10d_functional::all_reduce, judged by the HCCL
    # facts as a collective the model called itself
    redistribute = ops["torch.distributed.tensor._redistribute.Redistribute"]
    assert any(r["code"] == "hccl" and r["message"].startswith("all_reduce: HCCL runs it")
               for r in redistribute["reasons"])
    ste = ops["dtensor_mlp.ClampSTE"]
    assert ste["kind"] == "custom" and "autograd-function" in {r["code"] for r in ste["reasons"]}
