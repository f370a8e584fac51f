"""Trace: each capture path on a purpose-built model, ATen evidence per node, custom ops kept as themselves."""
from __future__ import annotations

import pytest

from opassess.errors import TraceError
from opassess.load import LoadRequest, load_model
from opassess.trace.driver import trace_model
from opassess.trace.methods import capture_order
from tests.support import MODELS, needs_cpp_toolchain

TRACEABLE = '''
    import torch, torch.nn as nn, torch.nn.functional as F
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.fc = nn.Linear(8 * 4 * 4, 10)
        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x)))
            y = F.gelu(y, approximate="tanh")
            y = y.view(y.shape[0], -1)
            return self.fc(y) + 1
    def build_model(): return Net()
    def example_inputs(): return (torch.randn(2, 3, 8, 8),)
'''


def capture_of(path, methods=("fx", "dispatch", "export"), **kw):
    return trace_model(load_model(LoadRequest(str(path), **kw)), methods)


def test_fx_capture_records_modules_functions_methods_with_aten_and_sources(model_file):
    path = model_file(TRACEABLE)
    cap = capture_of(path)
    assert cap.method == "fx" and cap.device == "meta" and cap.device_note is None
    assert [a.method for a in cap.attempts] == ["fx"] and cap.attempts[0].error is None
    ops = [n.key for n in cap.nodes]
    assert ops == ["torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.relu", "torch.nn.functional.gelu",
                   "Tensor.view", "torch.nn.Linear", "Tensor.add"]
    conv = cap.nodes[0]
    assert conv.attrs["stride"] == [2, 2] and conv.attrs["padding"] == [1, 1] and conv.attrs["dilation"] == [1, 1]
    assert conv.attrs["groups"] == 1 and conv.attrs["padding_mode"] == "zeros" and conv.attrs["bias"] is True
    assert [c.qualified for c in conv.aten] == ["aten::convolution"]
    assert conv.input_shapes == ((2, 3, 8, 8),) and conv.output_shapes == ((2, 8, 4, 4),)
    # conv FLOPs from torch's formula: 2 * out elements (2*8*4*4=256) * in_ch*k*k (3*3*3=27) = 13824
    assert conv.flops == 2 * 256 * 27
    gelu = cap.nodes[3]
    assert gelu.attrs == {"approximate": "tanh"} and gelu.entry == ("aten::gelu",)
    assert cap.nodes[4].aten[0].qualified == "aten::view"
    # the file starts with the blank line after the opening quotes, so line numbers are list index + 1
    line_of_fc = TRACEABLE.splitlines().index("            return self.fc(y) + 1") + 1
    assert cap.nodes[-1].source == f"{path}:{line_of_fc}"
    assert ("conv", "bn") in cap.edges and ("fc", "add") in cap.edges


def test_shape_dependent_control_flow_falls_back_to_dispatch_on_meta(model_file):
    path = model_file('''
        import torch, torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(16, 16)
                self.b = nn.Linear(16, 16)
            def forward(self, x):
                if x.shape[0] > 1:   # a Proxy cannot be a bool: torch.fx gives up here
                    return self.a(x)
                return self.b(x)
        def build_model(): return Net()
        def example_inputs(): return (torch.randn(4, 16),)
    ''')
    cap = capture_of(path)
    assert cap.method == "dispatch" and cap.device == "meta"
    assert cap.attempts[0].method == "fx" and "control flow" in cap.attempts[0].error
    assert [(n.key, n.module_path) for n in cap.nodes] == [("torch.nn.Linear", "a")]
    assert cap.nodes[0].source.endswith(":10")


def test_value_dependent_control_flow_falls_back_to_cpu_and_says_so(model_file):
    path = model_file('''
        import torch, torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                if x.sum() > 0:      # needs the values: impossible on the meta device
                    x = x * 2
                return self.fc(x)
        def build_model(): return Net()
        def example_inputs(): return (torch.ones(2, 4),)
    ''')
    cap = capture_of(path)
    assert cap.device == "cpu" and "meta" in cap.device_note
    assert cap.method == "dispatch"
    assert [n.key for n in cap.nodes] == ["Tensor.sum", "Tensor.gt", "Tensor.__bool__", "Tensor.mul",
                                          "torch.nn.Linear"]
    # the bool() of a tensor is a host synchronisation (aten::_local_scalar_dense): reported, not hidden
    assert [c.op for c in cap.nodes[2].aten] == ["aten::_local_scalar_dense"]


CUSTOM = '''
    import torch, torch.nn as nn
    @torch.library.custom_op("opassess_test::scaled_tanh", mutates_args=())
    def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
        return torch.tanh(x) * scale
    @scaled_tanh.register_fake
    def _(x, scale):
        return torch.empty_like(x)
    class RoundSTE(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, levels, dims, keep):
            return torch.round(x * levels) / levels
        @staticmethod
        def backward(ctx, g):
            return g, None, None, None
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
        def forward(self, x):
            x = torch.ops.opassess_test.scaled_tanh(self.fc(x), 0.5)
            return RoundSTE.apply(x, 4.0, [1, 2], None) + RoundSTE.apply(x, 2.0, list(range(100)), True)
    def build_model(): return Net()
    def example_inputs(): return (torch.randn(3, 8),)
'''


@pytest.mark.parametrize("method", ["fx", "dispatch"])
def test_custom_op_and_autograd_function_appear_as_themselves(model_file, method):
    path = model_file(CUSTOM, name="custom_model.py")
    cap = capture_of(path, (method,))
    by_op = {n.key: n for n in cap.nodes}
    assert set(by_op) == {"torch.nn.Linear", "opassess_test::scaled_tanh", "custom_model.RoundSTE", "Tensor.add"}
    assert by_op["opassess_test::scaled_tanh"].kind == "custom"
    # registered for every backend: run through its own kernel under the recorder, so its body's ATen ops come first
    assert [c.op for c in by_op["opassess_test::scaled_tanh"].aten][-1] == "opassess_test::scaled_tanh"
    assert "aten::tanh" in [c.op for c in by_op["opassess_test::scaled_tanh"].aten]
    ste = by_op["custom_model.RoundSTE"]
    assert ste.kind == "custom" and "aten::round" in [c.op for c in ste.aten]
    # every argument a harness needs to call them again: a torch.ops call's scalars named by its schema, an
    # autograd.Function's by its forward; a list of more than ATTR_ITEMS items is left out (bounded)
    assert by_op["opassess_test::scaled_tanh"].attrs == {"scale": 0.5}
    assert [n.attrs for n in cap.nodes if n.key == "custom_model.RoundSTE"] == [
        {"levels": 4.0, "dims": [1, 2], "keep": None}, {"levels": 2.0, "keep": True}]


def test_model_too_large_for_real_weights_scans_on_meta(model_file):
    # 4 x Linear(32768, 32768): 4 * (32768*32768 + 32768) = 4,295,098,368 parameters = 17.2 GB in float32
    path = model_file('''
        import torch, torch.nn as nn
        def build_model():
            return nn.Sequential(*[nn.Linear(32768, 32768) for _ in range(4)])
        def example_inputs(): return (torch.randn(1, 32768),)
    ''')
    loaded = load_model(LoadRequest(str(path)))
    assert loaded.info.parameters == 4 * (32768 * 32768 + 32768)
    cap = trace_model(loaded)
    assert cap.device == "meta" and [n.key for n in cap.nodes] == ["torch.nn.Linear"] * 4
    # above 1e9 parameters the one-forward dispatch capture goes first (see trace.capture_order)
    assert cap.method == "dispatch" and [a.method for a in cap.attempts] == ["dispatch"]
    assert [n.module_path for n in cap.nodes] == ["0", "1", "2", "3"]


def test_export_capture_leaves_out_the_exporters_own_checks():
    from tests.support import EXAMPLES

    # llama_like upcasts with .to(float32) in RMSNorm: export puts an aten::_assert_tensor_metadata before each
    cap = capture_of(EXAMPLES / "llama_like.py", ("export",))
    ops = {n.key for n in cap.nodes}
    assert "aten::to" in ops and not any("assert" in op for op in ops)


def test_export_capture_keeps_module_paths_and_attributes(model_file):
    cap = capture_of(model_file(TRACEABLE), ("export",))
    assert cap.method == "export"
    conv = next(n for n in cap.nodes if n.key == "torch.nn.Conv2d")
    assert conv.module_path == "conv" and conv.attrs["stride"] == [2, 2]


def test_sdpa_records_the_composite_entry_op_not_only_its_decomposition(model_file):
    path = model_file('''
        import torch, torch.nn as nn, torch.nn.functional as F
        class Attn(nn.Module):
            def forward(self, x):
                q = x.view(1, 16, 4, 32).transpose(1, 2)  # heads split as (B, H, L, E) views of (B, L, H, E)
                y = F.scaled_dot_product_attention(q, q, q, is_causal=True)
                return y.transpose(1, 2).view(1, 16, 128)  # runs on the CPU, so it must run on meta too
        def build_model(): return Attn()
        def example_inputs(): return (torch.randn(1, 16, 128),)
    ''')
    cap = capture_of(path)
    assert cap.device == "meta" and cap.method == "fx"
    assert [n.key for n in cap.nodes] == ["Tensor.view", "Tensor.transpose",
                                         "torch.nn.functional.scaled_dot_product_attention", "Tensor.transpose",
                                         "Tensor.view"]
    node = cap.nodes[2]
    assert node.key == "torch.nn.functional.scaled_dot_product_attention"
    assert node.entry == ("aten::scaled_dot_product_attention",)
    assert node.attrs["is_causal"] is True
    # recorded whole, as torch_npu sees it, not as the meta backend's CPU math decomposition
    assert [c.qualified for c in node.aten] == ["aten::scaled_dot_product_attention"]
    assert node.output_shapes == ((1, 4, 16, 32),)
    # torch's formula: 2 matmuls of B*H*L*S*E multiply-adds, 2 flops each = 4 * 1*4*16*16*32
    assert node.flops == 4 * 4 * 16 * 16 * 32


def test_sdpa_stand_in_output_is_not_an_operator_of_the_dispatch_capture(model_file):
    # On meta the attention's output is allocated by opassess (empty_like); the dispatch capture, which keeps
    # ATen ops no user-level call owned, must not report that allocation as the model's own aten::empty_like.
    path = model_file('''
        import torch, torch.nn as nn, torch.nn.functional as F
        class Attn(nn.Module):
            def forward(self, q):
                return F.scaled_dot_product_attention(q, q, q)
        def build_model(): return Attn()
        def example_inputs(): return (torch.randn(1, 4, 16, 32),)
    ''')
    cap = capture_of(path, ("dispatch",))
    assert cap.device == "meta"
    assert [n.key for n in cap.nodes] == ["torch.nn.functional.scaled_dot_product_attention"]
    assert [c.qualified for c in cap.nodes[0].aten] == ["aten::scaled_dot_product_attention"]


def test_forward_that_raises_names_file_function_and_cause(model_file):
    path = model_file('''
        import torch, torch.nn as nn
        class Net(nn.Module):
            def forward(self, x):
                raise ValueError("unsupported config")
        def build_model(): return Net()
        def example_inputs(): return (torch.randn(2),)
    ''')
    with pytest.raises(TraceError) as err:
        capture_of(path)
    message = str(err.value)
    assert "forward() of Net raised ValueError: unsupported config" in message and f"{path}:5" in message


def test_forward_calling_sys_exit_is_a_trace_error_not_an_exit(model_file):
    path = model_file('''
        import sys, torch, torch.nn as nn
        class Net(nn.Module):
            def forward(self, x):
                sys.exit("batch too small")
        def build_model(): return Net()
        def example_inputs(): return (torch.randn(2),)
    ''')
    with pytest.raises(TraceError, match="forward\\(\\) of Net raised SystemExit: batch too small"):
        capture_of(path)


def test_inputs_of_the_wrong_shape_are_reported(model_file):
    path = model_file('''
        import torch, torch.nn as nn
        def build_model(): return nn.Sequential(nn.Linear(10, 5))
        def example_inputs(): return (torch.randn(2, 7),)
    ''')
    # the meta kernel's refusal is retried on the CPU (the meta backend may be the one at fault), whose kernel
    # refuses too: its message is the one reported, as the model's error
    # (torch 2.15 names the kernel first: "addmm: mat1 and mat2 ...")
    with pytest.raises(TraceError, match=r"forward\(\) of Sequential raised RuntimeError: (addmm: )?mat1 and mat2 "
                                         r"shapes cannot be multiplied \(2x7 and 10x5\)"):
        capture_of(path)


def test_capture_order_puts_dispatch_first_for_large_models():
    assert capture_order(11_689_512) == ("fx", "dispatch", "dispatch-compiling", "export")  # ResNet-18
    assert capture_order(6_738_415_616) == ("dispatch", "dispatch-compiling", "fx", "export")  # Llama-2-7B


@needs_cpp_toolchain
@pytest.mark.parametrize("method", ["fx", "dispatch"])
def test_cpp_extension_call_appears_as_itself(method):

    # tests/models/cpp_extension.py: fc1 -> scaled_gelu_ext.scaled_gelu(x, 0.5) -> fc2 (its docstring)
    cap = capture_of(MODELS / "cpp_extension.py", (method,))
    assert [(n.key, n.kind) for n in cap.nodes] == [
        ("torch.nn.Linear", "module"), ("opassess_scaled_gelu_ext.scaled_gelu", "extension"),
        ("torch.nn.Linear", "module")]
    ext = cap.nodes[1]
    assert [c.qualified for c in ext.aten] == ["aten::gelu", "aten::mul.Scalar"]
    assert ext.attrs == {"arg1": 0.5} and ext.source.endswith("cpp_extension.py:31")
    # the extension module is restored after the capture
    import sys
    model_module = next(m for m in list(sys.modules.values()) if "scaled_gelu_ext" in getattr(m, "__dict__", {}))
    assert type(model_module.scaled_gelu_ext.scaled_gelu).__name__ == "builtin_function_or_method"


def test_fx_binds_keyword_inputs_by_name_and_keeps_plain_values(model_file):
    # The dict lists mask before ids and skips `bias`; use_cache=False is fixed for tracing. FX runs a graph
    # positionally, so the inputs must be bound to the forward's parameters by name, not by dict order.
    path = model_file('''
        import torch, torch.nn as nn
        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(10, 4)
            def forward(self, input_ids, bias=None, mask=None, use_cache=True):
                h = self.emb(input_ids)
                if use_cache:
                    h = h + 1
                return h * mask.unsqueeze(-1)
        def build_model(): return LM()
        def example_inputs():
            return {"mask": torch.ones(2, 5), "input_ids": torch.zeros(2, 5, dtype=torch.long), "use_cache": False}
    ''')
    cap = capture_of(path)
    assert cap.method == "fx" and [a.error for a in cap.attempts] == [None]
    assert [n.key for n in cap.nodes] == ["torch.nn.Embedding", "Tensor.unsqueeze", "Tensor.mul"]  # no `h + 1`
    assert cap.nodes[0].input_shapes == ((2, 5),) and cap.nodes[0].input_dtypes == ("int64",)
    assert cap.nodes[1].input_dtypes == ("float32",)  # the mask, not the ids


def test_data_dependent_sizes_are_measured_on_the_cpu_not_left_symbolic():

    # tests/models/findings_dynamic.py: torch.nonzero / masked_select / h[h > 0] size their output by the data.
    # On meta, fx and dispatch fail and torch.export succeeds only with symbolic sizes (u0), which are no shape:
    # the CPU run gives the real ones.
    cap = capture_of(MODELS / "findings_dynamic.py")
    assert cap.device == "cpu" and "meta" in cap.device_note
    assert cap.method == "fx" and [a.method for a in cap.attempts] == ["fx", "dispatch", "export", "fx@cpu"]
    shapes = [s for n in cap.nodes for s in n.input_shapes + n.output_shapes]
    assert all(type(d) is int for s in shapes for d in s)


@pytest.mark.parametrize("method", ["fx", "dispatch", "export"])
def test_a_namedtuple_output_is_not_an_operator(model_file, method):
    # FX records `Out(y, z)` as a call of the namedtuple class; packing tensors into a tuple is no operator.
    path = model_file('''
        import collections, torch, torch.nn as nn
        Out = collections.namedtuple("Out", "logits hidden")
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                y = self.fc(x)
                return Out(y, y.relu())
        def build_model(): return Net()
        def example_inputs(): return (torch.randn(2, 4),)
    ''')
    cap = capture_of(path, (method,))
    relu = "aten::relu" if method == "export" else "Tensor.relu"  # export names ATen ops
    assert [n.key for n in cap.nodes] == ["torch.nn.Linear", relu]


def test_export_module_inputs_are_the_forward_inputs_not_its_weights(model_file):
    # aten::embedding(weight, indices) takes the weight first: a module's inputs in the export capture must be
    # what its forward() received (the int64 ids), as in the fx and dispatch captures, not its parameters.
    path = model_file('''
        import torch, torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(10, 4)
                self.fc = nn.Linear(4, 3)
            def forward(self, ids):
                return self.fc(self.emb(ids))
        def build_model(): return Net()
        def example_inputs(): return (torch.zeros(2, 5, dtype=torch.long),)
    ''')
    by_method = {m: capture_of(path, (m,)).nodes for m in ("fx", "export")}
    for method, nodes in by_method.items():
        assert [(n.key, n.input_shapes, n.input_dtypes) for n in nodes] == [
            ("torch.nn.Embedding", ((2, 5),), ("int64",)), ("torch.nn.Linear", ((2, 5, 4),), ("float32",))], method


@pytest.mark.parametrize("method", ["fx", "dispatch"])
def test_tensor_properties_that_compute_are_named_as_written(model_file, method):
    # `w.T` and `y.mT` are views users write as attributes: FX records them as getattr calls and the dispatch
    # capture saw them only as loose ATen ops; both must read Tensor.T / Tensor.mT, like Tensor.transpose.
    path = model_file('''
        import torch, torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.randn(4, 4))
            def forward(self, x):
                y = x @ self.w.T
                return y.mT * x.shape[0]
        def build_model(): return Net()
        def example_inputs(): return (torch.randn(4, 4),)
    ''')
    nodes = capture_of(path, (method,)).nodes
    assert [(n.key, n.kind) for n in nodes] == [("Tensor.T", "method"), ("Tensor.matmul", "method"),
                                               ("Tensor.mT", "method"), ("Tensor.mul", "method")]
    assert [c.op for c in nodes[0].aten] == ["aten::permute"] and nodes[0].attrs == {}
    assert nodes[2].entry == ("aten::mT",)
    assert nodes[0].input_shapes == ((4, 4),) and nodes[0].source.endswith(":8")


def test_export_keeps_two_calls_of_one_module_on_one_line_apart(model_file):
    # self.fc(self.fc(x)): two calls of the same Linear from the same source line are two operator calls.
    path = model_file('''
        import torch, torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                return self.fc(self.fc(x))
        def build_model(): return Net()
        def example_inputs(): return (torch.randn(2, 4),)
    ''')
    for method in ("fx", "export"):
        assert [(n.key, n.module_path) for n in capture_of(path, (method,)).nodes] == [("torch.nn.Linear", "fc")] * 2


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("method", ["fx", "dispatch"])
def test_torchscript_submodules_appear_as_the_modules_they_were_scripted_from(model_file, method):
    # torch.jit.script(nn.Linear(...)) runs TorchScript, which neither FX (a call of `forward` on `fc._c`,
    # once reported as "Tensor.forward") nor the torch-function mode can look into: each scripted module is
    # one operator, keyed by the class it was scripted from, with its constants as attributes.
    path = model_file('''
        import torch, torch.nn as nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = nn.Linear(8, 8)
            def forward(self, x):
                return torch.relu(self.inner(x))
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.jit.script(nn.Linear(8, 8))
                self.block = torch.jit.script(Block())
            def forward(self, x):
                return self.block(self.fc(x))
        def build_model(): return Net()
        def example_inputs(): return (torch.randn(2, 8),)
    ''', name="scripted.py")
    nodes = capture_of(path, (method,)).nodes
    assert [(n.key, n.kind, n.module_path) for n in nodes] == [
        ("torch.nn.Linear", "module", "fc"), ("scripted.Block", "module", "block")]
    assert nodes[0].attrs == {"bias": True, "in_features": 8, "out_features": 8}
    assert nodes[0].input_shapes == ((2, 8),) and "aten::addmm" in [c.op for c in nodes[0].aten]
    assert [c.op for c in nodes[1].aten][-1] == "aten::relu"


def test_cpu_fallback_is_refused_when_the_weights_would_not_fit(model_file, monkeypatch):
    # forward reads a value (.item()), so the model cannot run on meta; its 1024x1024 Linear holds 4 MiB of real
    # weights. With the fallback allowed only 1e-6 of the machine's memory (~25 KiB on 24 GiB), opassess must
    # refuse with one line instead of allocating (a 7B model with .item() would otherwise exhaust the machine).
    import opassess.trace.driver as driver

    monkeypatch.setattr(driver, "CPU_FALLBACK_MEMORY_SHARE", 1e-6)
    path = model_file('''
        import torch, torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(1024, 1024)
            def forward(self, x):
                if x.abs().max().item() > 100:
                    x = x / 100
                return self.fc(x)
        def build_model(): return Net()
        def example_inputs(): return (torch.randn(1, 1024),)
    ''')
    with pytest.raises(TraceError, match=r"does not run on the meta device .*CPU fallback would need 0\.0 GiB"):
        capture_of(path)


def test_progress_reports_operator_counts_while_capturing(model_file):
    # 600 Linear calls: a message at 250 and 500 operator calls (PROGRESS_EVERY), for each capture method
    path = model_file('''
        import torch, torch.nn as nn
        def build_model(): return nn.Sequential(*[nn.Linear(4, 4) for _ in range(600)])
        def example_inputs(): return (torch.randn(1, 4),)
    ''')
    for method in ("fx", "dispatch"):
        messages = []
        trace_model(load_model(LoadRequest(str(path))), (method,), messages.append)
        assert messages == [f"capturing with {method} on meta", f"capturing with {method}: 250 operator calls",
                            f"capturing with {method}: 500 operator calls"]


def test_code_that_reads_values_unless_compiling_takes_its_graph_safe_path_on_meta():
    # Hugging Face's mask helpers do `if not is_compiling() and mask.all(): skip the mask`; on meta `.all()` has no
    # value, so the plain dispatch capture fails and dispatch-compiling (is_compiling() true) takes the other path.
    path = MODELS / "masked_unless_compiling.py"
    cap = capture_of(path, ("dispatch", "dispatch-compiling", "export"))
    assert cap.device == "meta" and cap.method == "dispatch-compiling"
    assert [a.method for a in cap.attempts] == ["dispatch", "dispatch-compiling"]
    assert "meta" in cap.attempts[0].error
    assert [n.key for n in cap.nodes] == ["torch.nn.Linear", "Tensor.unsqueeze", "Tensor.mul"]
    import torch
    assert torch.compiler.is_compiling() is False  # restored


@pytest.mark.parametrize("method", ["fx", "dispatch"])
def test_a_call_inside_an_installed_library_keeps_the_nearest_project_frame(model_file, monkeypatch, method):
    # A library in a folder named site-packages (as pip installs it), called from the model's own forward: the
    # source line is the library's, the project_source the model file's line that called into it.
    library = model_file("").parent / "site-packages" / "fakelib"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text("import torch\n\n\ndef double_relu(x):\n    return torch.relu(x) * 2\n")
    monkeypatch.syspath_prepend(str(library.parent))
    path = model_file("""
        import torch
        import fakelib


        class Net(torch.nn.Module):
            def forward(self, x):
                return fakelib.double_relu(x)


        def build_model():
            return Net()


        def example_inputs():
            return (torch.randn(2, 3),)
    """)
    cap = capture_of(path, (method,))
    relu = next(n for n in cap.nodes if n.key == "torch.relu")
    assert "site-packages/fakelib/__init__.py:5" in relu.source
    assert relu.project_source == f"{path}:8"  # fx from the recorded stack trace, dispatch from the live frames


GROUPED_MM = '''
    import torch, torch.nn as nn
    class Experts(nn.Module):  # an MoE layer's experts: tokens sorted by expert, one matrix per expert
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 64, 256))
        def forward(self, x):
            offs = torch.tensor([8, 16, 24, 32], dtype=torch.int32)
            return torch._grouped_mm(x, self.w, offs=offs)
    def build_model(): return Experts()
    def example_inputs(): return (torch.randn(32, 64),)
'''


@pytest.mark.parametrize("dtype", [None, "bfloat16"])
@pytest.mark.parametrize("method", ["fx", "dispatch"])
def test_grouped_mm_runs_on_meta_in_every_dtype_with_its_flops(model_file, method, dtype):
    # _grouped_mm's meta kernel accepts bfloat16 only; the CPU kernel (and torch_npu's npu_grouped_matmul) take
    # float32 too: the stand-in gives the CPU kernel's output on meta, so the scan stays on meta
    cap = capture_of(model_file(GROUPED_MM), (method,), dtype=dtype)
    assert cap.device == "meta" and cap.device_note is None
    [node] = [n for n in cap.nodes if n.key == "torch._grouped_mm"]
    assert [c.op for c in node.aten] == ["aten::_grouped_mm"]
    expected = dtype or "float32"
    assert node.output_shapes == ((32, 256),) or list(map(list, node.output_shapes)) == [[32, 256]]
    assert node.output_dtypes[0] == expected and node.aten[0].output_dtypes[0] == expected
    # 32 tokens x (64 -> 256) through one expert each: 2 x 32 x 64 x 256
    assert node.flops == 2 * 32 * 64 * 256 == 1_048_576


def test_entry_ops_name_the_overload_the_dispatcher_takes():
    import torch

    from opassess.trace.keys import entry_overload

    x = torch.randn(4, 3, device="meta")
    assert entry_overload(torch.repeat_interleave, (x, 2), {"dim": 0}) == "aten::repeat_interleave.self_int"
    assert entry_overload(torch.Tensor.repeat_interleave, (x, torch.tensor([1, 2, 1, 1])), {"dim": 0}) == \
        "aten::repeat_interleave.self_Tensor"
    assert entry_overload(torch.add, (x, x), {"out": x}) == "aten::add.out"
    assert entry_overload(torch.special.chebyshev_polynomial_t, (x, 3), {}) == \
        "aten::special_chebyshev_polynomial_t.n_scalar"
    # arguments no schema takes (F.dropout's inplace): the name alone; one overload: the name
    assert entry_overload(torch.dropout, (x, 0.1, False, "?"), {}) == "aten::dropout"
    assert entry_overload(torch.nn.functional.linear, (x, torch.randn(2, 3, device="meta")), {}) == "aten::linear"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_half_precision_cpu_fallback_runs_what_the_cpu_refuses_in_float32_and_records_the_asked_dtype(dtype):
    cap = capture_of(MODELS / "dirichlet_mixture.py", ("dispatch",), dtype=dtype)
    assert cap.device == "cpu"
    sample = next(n for n in cap.nodes if any(c.op == "aten::_sample_dirichlet" for c in n.aten))
    call = next(c for c in sample.aten if c.op == "aten::_sample_dirichlet")
    assert call.input_dtypes == (dtype,) and call.output_dtypes == (dtype,)
    assert cap.device_note.splitlines()[-1] == (f"on the CPU, aten::_sample_dirichlet refused {dtype}: run in float32 "
                                                f"there, and judged in {dtype} as the model asked")
    # the ops the CPU runs in half precision are left alone
    assert {c.input_dtypes[0] for n in cap.nodes for c in n.aten if c.op == "aten::addmm"} == {dtype}
    assert cap.refused == ()  # the meta kernel takes a half-precision Dirichlet: the refusal is the CPU's alone


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_dtype_the_meta_and_cpu_kernels_both_refuse_is_refused_everywhere(dtype):
    # Glow's invertible 1x1 conv: torch.slogdet of its weight; linalg refuses half precision before any backend runs
    cap = capture_of(MODELS / "glow_invconv.py", ("dispatch",), dtype=dtype)
    assert cap.device == "cpu" and cap.refused == ("aten::_linalg_slogdet",)
    assert capture_of(MODELS / "glow_invconv.py", ("dispatch",)).refused == ()  # float32: nothing refused
