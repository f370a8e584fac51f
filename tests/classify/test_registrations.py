"""A library's torch.library op is registered only in the worker that imported the library: the capture carries its
composite keys (records.Registration) so the parent judges it as the worker saw it (issue 22, item 6: MoE experts
run through transformers::grouped_mm_fallback, a custom op without device_types)."""
from __future__ import annotations

import textwrap

from opassess.isolation.scan import finish_assessment, start_assessment
from opassess.options import ScanOptions
from opassess.report import build_view

LIBRARY_OP = textwrap.dedent('''
    import torch
    from torch import nn

    @torch.library.custom_op("i22lib::scaled_mm", mutates_args=())
    def scaled_mm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.mm(x, w) * 0.5

    @scaled_mm.register_fake
    def _(x, w):
        return x.new_empty(x.shape[0], w.shape[1])

    @torch.library.custom_op("i22lib::scaled_mm_backward", mutates_args=())
    def scaled_mm_backward(x: torch.Tensor, w: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        return torch.mm(x.t(), grad) * 0.5

    @scaled_mm_backward.register_fake
    def _(x, w, grad):
        return w.new_empty(w.shape)

    def _setup(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def _backward(ctx, grad):
        x, w = ctx.saved_tensors
        return None, torch.ops.i22lib.scaled_mm_backward(x, w, grad)

    scaled_mm.register_autograd(_backward, setup_context=_setup)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(8, 4))
        def forward(self, x):
            return torch.ops.i22lib.scaled_mm(x, self.w)

    def build_model():
        return M()

    def example_inputs():
        return (torch.randn(2, 8),)
''')


def test_a_library_op_is_judged_as_the_worker_registered_it(tmp_path):
    path = tmp_path / "library_op.py"
    path.write_text(LIBRARY_OP)
    scan = ScanOptions(target=str(path), train=True)
    document = build_view(finish_assessment(start_assessment(scan, timeout=300, debug=False), scan)).document
    op = next(o for o in document["operators"] if o["op"] == "i22lib::scaled_mm")
    # registered without device_types: a CompositeExplicitAutograd kernel, in the worker; the parent never imported
    # the model file, so without the capture's registrations it would call both ops "kernels for other devices only"
    assert op["category"] == "direct", op["reasons"]
    assert any("registered for every backend" in r["message"] for r in op["reasons"])
    # its backward op is registered for every backend too: recorded with its body's ATen ops
    assert op["backward_support"] == {"aten::t": True, "aten::mm": True, "aten::mul.Tensor": True,
                                      "i22lib::scaled_mm_backward": True}
    assert op["flops"] == 2 * 2 * 8 * 4 and op["backward_flops"] == 2 * 8 * 2 * 4  # x (2, 8) @ w (8, 4); x^T @ grad


def test_a_project_overload_of_an_aten_op_is_a_project_op_not_the_aten_op():
    from tests.support import MODELS

    # aten::relu.myimpl is registered by the model file (torch.library fragment of the aten namespace), CPU only:
    # not the relu the NPU runs, and not a name the kernel tables may match by its base
    scan = ScanOptions(target=str(MODELS / "aten_overload.py"))
    document = build_view(finish_assessment(start_assessment(scan, timeout=300, debug=False), scan)).document
    ops = {o["op"]: o for o in document["operators"]}
    assert "aten::relu" not in ops
    op = ops["aten::relu.myimpl"]
    assert (op["kind"], op["category"], op["origin"]) == ("custom", "custom-dev", "project")
    assert [r["code"] for r in op["reasons"]] == ["custom-op"]


CPU_ONLY_OPS = textwrap.dedent('''
    import torch
    from torch import nn

    @torch.library.custom_op("i40lib::bias_gelu", mutates_args=(), device_types="cpu")
    def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x + bias)

    @bias_gelu.register_fake
    def _(x, bias):
        return torch.empty_like(x)

    @torch.library.custom_op("i40lib::host_sort", mutates_args=(), device_types="cpu")
    def host_sort(x: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(sorted(x.numpy().ravel().tolist()) and x.numpy().copy())

    @host_sort.register_fake
    def _(x):
        return torch.empty_like(x)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.bias = nn.Parameter(torch.zeros(8))
        def forward(self, x):
            return torch.ops.i40lib.host_sort(torch.ops.i40lib.bias_gelu(x, self.bias))

    def build_model():
        return M()

    def example_inputs():
        return (torch.randn(2, 8),)
''')


def test_a_cpu_only_op_whose_reference_runs_npu_ops_is_a_composite_to_register(tmp_path):
    """Composite before custom (issue 40): the worker runs a CPU-only custom op's body once on zeros and records its
    ATen ops; GELU(x + bias) dispatches aten::add and aten::gelu, both with NPU kernels, so the work is registering
    that body for PrivateUse1 (param-converted, about half a day), not an Ascend C kernel. A body that leaves torch
    (numpy) dispatches no ATen op to judge and stays custom-dev."""
    path = tmp_path / "cpu_only.py"
    path.write_text(CPU_ONLY_OPS)
    scan = ScanOptions(target=str(path))
    view = build_view(finish_assessment(start_assessment(scan, timeout=300, debug=False), scan))
    ops = {o["op"]: o for o in view.document["operators"]}
    gelu, host = ops["i40lib::bias_gelu"], ops["i40lib::host_sort"]
    assert (gelu["category"], [r["code"] for r in gelu["reasons"]]) == ("param-converted", ["register-composite"])
    assert gelu["reasons"][0]["evidence"].endswith("dispatched aten::add.Tensor, aten::gelu")
    assert gelu["person_days"]["likely"] < 2.0
    assert host["category"] == "custom-dev" and [r["code"] for r in host["reasons"]] == ["custom-op"]
