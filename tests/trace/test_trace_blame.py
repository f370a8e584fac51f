"""Blame: a failure on meta is retried on the CPU when a meta kernel raised it (a check of its own, a missing meta
kernel), the report says which op; a bug in opassess's own hooks is an internal error; the model's own error is the
model's, on every device."""
from __future__ import annotations

import re

import pytest

from opassess.errors import InternalError, TraceError
from opassess.load import LoadRequest, load_model
from opassess.trace.blame import call_out, is_internal, is_meta_problem, mark_meta_failure, meta_failure_op
from opassess.trace.driver import trace_model

# A torch.library op whose meta (fake) kernel makes a check its CPU kernel does not, as _grouped_mm's meta kernel
# wants bfloat16 where the CPU kernel takes float32 too.
STRICT_META = '''
    import torch, torch.nn as nn

    @torch.library.custom_op("opassess_blame::scale", mutates_args=())
    def scale(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @scale.register_fake
    def _(x):
        if x.dtype != torch.bfloat16:
            raise RuntimeError(f"Expected x to be BFloat16, got {x.dtype}")
        return torch.empty_like(x)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
        def forward(self, x):
            return torch.ops.opassess_blame.scale(self.fc(x))

    def build_model(): return Net()
    def example_inputs(): return (torch.randn(2, 4),)
'''

# An op with a CPU kernel and no meta kernel at all.
NO_META = '''
    import torch, torch.nn as nn

    lib = torch.library.Library("opassess_nometa", "DEF")
    lib.define("halve(Tensor x) -> Tensor")
    lib.impl("halve", lambda x: x / 2, "CPU")

    class Net(nn.Module):
        def forward(self, x):
            return torch.ops.opassess_nometa.halve(x + 1)

    def build_model(): return Net()
    def example_inputs(): return (torch.randn(2, 4),)
'''


def capture_of(path, methods=("fx", "dispatch", "export")):
    return trace_model(load_model(LoadRequest(str(path))), methods)


@pytest.mark.parametrize("method", ["fx", "dispatch"])
def test_a_meta_kernels_own_check_is_retried_on_the_cpu_and_the_report_names_the_op(model_file, method):
    cap = capture_of(model_file(STRICT_META), (method,))
    assert cap.device == "cpu" and cap.method == method
    assert "the meta kernel of opassess_blame::scale raised RuntimeError: Expected x to be BFloat16" in cap.device_note
    assert "run on the CPU with real weights" in cap.device_note
    assert "opassess_blame::scale" in [n.key for n in cap.nodes]
    assert cap.attempts[0].error and cap.attempts[-1].error is None  # the meta attempt failed, the CPU one ran


def test_a_missing_meta_kernel_is_retried_on_the_cpu(model_file):
    cap = capture_of(model_file(NO_META, "nometa.py"), ("dispatch",))
    assert cap.device == "cpu" and "the meta kernel of opassess_nometa::halve raised NotImplementedError" \
        in cap.device_note
    assert [n.key for n in cap.nodes] == ["Tensor.add", "opassess_nometa::halve"]


def test_the_models_own_error_is_the_models_on_every_device(model_file):
    # torch.mm of mismatched shapes fails in the meta kernel and again on the CPU: the CPU's error is reported,
    # naming the model's line, as an error of the model (not opassess's)
    path = model_file('''
        import torch, torch.nn as nn
        class Net(nn.Module):
            def forward(self, x):
                return torch.mm(x, x)
        def build_model(): return Net()
        def example_inputs(): return (torch.randn(2, 3),)
    ''')
    with pytest.raises(TraceError) as err:
        capture_of(path, ("dispatch",))
    assert not isinstance(err.value, InternalError)
    # (torch 2.15 names the kernel first: "mm: mat1 and mat2 ...")
    assert re.search(r"forward\(\) of Net raised RuntimeError: (mm: )?mat1 and mat2 shapes cannot be multiplied",
                     str(err.value)), str(err.value)
    assert f"{path}:5" in str(err.value)


def test_a_bug_in_a_capture_hook_is_an_internal_error_not_the_models(model_file, monkeypatch):
    import opassess.trace.dispatch as dispatch

    # a hook of the dispatch capture now calls None: a TypeError raised by opassess's own line, inside the forward
    monkeypatch.setattr(dispatch, "call_attrs", None)
    path = model_file('''
        import torch, torch.nn as nn
        class Net(nn.Module):
            def forward(self, x):
                return torch.relu(x)
        def build_model(): return Net()
        def example_inputs(): return (torch.randn(2, 3),)
    ''')
    with pytest.raises(InternalError, match=r"forward\(\) of Net could not be captured: a capture hook of opassess "
                                            r"raised TypeError: 'NoneType' object is not callable \(a bug in opassess, "
                                            r"not in the model\)"):
        capture_of(path, ("dispatch",))


def test_an_error_raised_by_the_code_a_hook_calls_is_not_internal():
    import torch

    with pytest.raises(RuntimeError) as from_torch:
        call_out(torch.mm, torch.ones(2, 3), torch.ones(2, 3))  # raised in C++, called from opassess's call_out
    assert not is_internal(from_torch.value)
    from opassess.trace.recorder import _grouped_mm_flops

    with pytest.raises(TypeError) as from_opassess:
        call_out(_grouped_mm_flops, (4, 8), (2, 8, 3), out_shape=None)  # opassess's own line iterates None
    assert is_internal(from_opassess.value)


def test_meta_marks_travel_through_the_chain_of_causes():
    inner = RuntimeError("Expected mat_a to be BFloat16")
    mark_meta_failure(inner, "aten::_grouped_mm")
    try:
        try:
            raise inner
        except RuntimeError as exc:
            raise ValueError("wrapped") from exc
    except ValueError as outer:
        assert meta_failure_op(outer) == "aten::_grouped_mm" and is_meta_problem(outer)
    assert not is_meta_problem(ValueError("unsupported config")) and meta_failure_op(None) is None


def test_a_failed_export_leaves_torchs_dispatcher_as_it_found_it():
    # reads_value_op.py: torch.export ends in a RecursionError inside torch that leaves 27 dispatch keys excluded
    # (Python among them); the CPU attempt after it recorded no ATen op (nn.Linear: 0 FLOPs, no kernel evidence)
    import torch

    from tests.support import MODELS

    before = torch._C._dispatch_tls_local_exclude_set()
    cap = capture_of(MODELS / "reads_value_op.py", ("export", "fx"))
    assert cap.attempts[0].error.startswith("RecursionError") and (cap.method, cap.device) == ("fx", "cpu")
    linear = next(n for n in cap.nodes if n.key == "torch.nn.Linear")
    assert [c.op for c in linear.aten] == ["aten::t", "aten::addmm"] and linear.flops == 2 * 4 * 8 * 8
    assert torch._C._dispatch_tls_local_exclude_set() == before


@pytest.mark.parametrize("method", ["fx", "dispatch"])
def test_an_ops_body_that_fails_on_meta_runs_once_not_again_as_its_kernel(method):
    # reads_value_op.py's op has no meta kernel: its CompositeExplicitAutograd body is its kernel on meta too. The
    # recorder runs the body to record its ATen ops; when it fails (.item() on meta) the op's kernel is that same
    # body, so running the op again ran the body's effects twice (BODY_RUNS: meta, meta, cpu)
    import sys

    from tests.support import MODELS

    loaded = load_model(LoadRequest(str(MODELS / "reads_value_op.py")))
    runs = sys.modules[type(loaded.module).__module__].BODY_RUNS
    runs.clear()
    cap = trace_model(loaded, (method,))
    assert (cap.device, runs) == ("cpu", ["meta", "cpu"])
    assert "reads_value::scaled" in cap.device_note and "Tensor.item() cannot be called on meta" in cap.device_note
    node = next(n for n in cap.nodes if n.key == "reads_value::scaled")
    assert "aten::_local_scalar_dense" in [c.op for c in node.aten]
