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


def test_below_ascend910b1_sdpa_is_judged_by_the_math_decomposition_it_runs_there(kb, model_file):
    # rules.toml: op-plugin's SDPA kernel calls the fused attention only from Ascend910B1 on, PyTorch's math
    # decomposition below (910, 310P). Grouped-query shapes (8 query heads, 2 key/value heads) in bfloat16: the
    # decomposition is run with the key/value heads matched, and only its first cast reads bf16 data, so bmm's and
    # softmax's bf16 exclusions on the 910 are no limit this call crosses
    path = model_file('''
        import torch
        import torch.nn.functional as F
        class M(torch.nn.Module):
            def forward(self, q, k, v):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        def build_model():
            return M()
        def example_inputs():
            q = torch.randn(1, 8, 16, 32, dtype=torch.bfloat16)
            return q, torch.randn(1, 2, 16, 32, dtype=torch.bfloat16), torch.randn(1, 2, 16, 32, dtype=torch.bfloat16)
    ''')
    inventory = scan_inventory(ScanOptions(target=str(path)))
    key = "torch.nn.functional.scaled_dot_product_attention"
    on_910 = {c.operator.key: c for c in classify(inventory, kb, target="910A")}[key]
    on_a2 = {c.operator.key: c for c in classify(inventory, kb, target="A2")}[key]
    kernel = next(r for r in on_910.reasons if r.code == "kernel")
    assert "its NPU kernel runs aten::_scaled_dot_product_attention_math" in kernel.evidence
    assert "calling aten::_to_copy" in kernel.evidence and "aten::bmm" in kernel.evidence
    assert any(r.code == "composite" and "runs no fused NPU kernel" in r.message for r in on_910.reasons)
    assert not any(r.code == "dtype" for r in on_910.reasons), [r.message for r in on_910.reasons]
    assert not any("aclnnFlashAttention" in r.message for r in on_910.reasons)
    assert on_a2.category == "direct"
    assert not any("_scaled_dot_product_attention_math" in r.evidence for r in on_a2.reasons)
