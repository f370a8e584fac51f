"""A composite kernel is judged by the ops it calls: CompositeExplicitAutograd is never direct by itself."""
from __future__ import annotations

from opassess.classify import classify
from opassess.classify.decompose import composite_calls
from opassess.options import ScanOptions
from opassess.pipeline.capture import scan_inventory


def test_a_scalar_wrapped_into_a_tensor_reaches_the_tensor_overload():
    # chebyshev_polynomial_t(x, 3): the n_scalar overload's kernel wraps 3 into a 0-dim tensor and calls the Tensor
    # overload; the mode sees a plain number there, which the callee's schema refuses unless it is wrapped back.
    calls = composite_calls("aten::special_chebyshev_polynomial_t.n_scalar", (((4, 4), "float32"),), (4, 4))
    assert calls is not None and calls.complete
    assert [name for name, _, _ in calls] == ["aten::special_chebyshev_polynomial_t"]
    assert calls[0][1] == (((4, 4), "float32"), ((), "int64"))


def test_a_callee_without_a_meta_kernel_is_still_a_callee():
    # logcumsumexp's kernel calls _logcumsumexp, which has CPU and CUDA kernels but none for meta: the call is seen
    # before it fails, and the list is marked incomplete (what came after it is not known).
    calls = composite_calls("aten::logcumsumexp", (((4, 4), "float32"),), (4, 4))
    assert calls is not None and not calls.complete
    assert [name for name, _, _ in calls] == ["aten::_logcumsumexp"]


def test_composites_whose_callees_lack_an_npu_kernel_are_not_direct(kb, model_file):
    path = model_file('''
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                return torch.special.chebyshev_polynomial_t(x, 3), torch.logcumsumexp(x, 0), x.new_ones(2, 2)
        def build_model():
            return M()
        def example_inputs():
            return (torch.randn(4, 4),)
    ''')
    ops = {c.operator.key: c for c in classify(scan_inventory(ScanOptions(target=str(path))), kb, target="A2")}
    chebyshev = next(c for k, c in ops.items() if "chebyshev_polynomial_t" in k)
    logcumsumexp = ops["torch.logcumsumexp"]
    for op, called in ((chebyshev, "aten::special_chebyshev_polynomial_t"), (logcumsumexp, "aten::_logcumsumexp")):
        assert op.category == "custom-dev", op.reasons
        (reason,) = [r for r in op.reasons if r.code == "no-kernel"]
        assert f"calls {called}, which has none" in reason.message
        assert "view-op" not in {r.code for r in op.reasons}
    # A composite whose callees all have kernels stays direct (new_ones -> fill_.Scalar).
    assert ops["Tensor.new_ones"].category == "direct"
