"""The model files themselves (examples/ and tests/models/): they build, run where they say, and match their docstrings.

Every expected shape, parameter count and operator count below is worked out by hand in the model file's docstring;
these tests check the files against those figures with plain PyTorch (no opassess), so the pipeline tests that
rely on them start from verified facts.
"""
from __future__ import annotations

import collections
import importlib.util
import itertools
import operator
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MODELS = ROOT / "tests" / "models"
BAD = MODELS / "bad"

_counter = itertools.count()


def load(path: Path):
    """Import a model file by path under a fresh module name (registered, as opassess's loader does)."""
    name = f"_test_models_{path.stem}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def run(model: nn.Module, inputs):
    with torch.no_grad():
        return model(**inputs) if isinstance(inputs, dict) else model(*inputs)


def build_and_run(module, device: str):
    """build_model() and example_inputs() under `with torch.device(device)`, then one forward."""
    with torch.device(device):
        model = module.build_model()
        inputs = module.example_inputs()
        return model, run(model, inputs)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())  # a tied weight is counted once


def fx_counts(model: nn.Module, **trace_kwargs) -> collections.Counter:
    """Call nodes of a symbolic trace by what they call: module class name, function/method name."""
    graph_module = torch.fx.symbolic_trace(model, **trace_kwargs)
    counts: collections.Counter = collections.Counter()
    for node in graph_module.graph.nodes:
        if node.op == "call_module":
            counts[type(graph_module.get_submodule(node.target)).__name__] += 1
        elif node.op == "call_method":
            counts[node.target] += 1
        elif node.op == "call_function":
            is_op = isinstance(node.target, (torch._ops.OpOverloadPacket, torch._ops.OpOverload))
            # a library op by its qualified "namespace.name", anything else by its Python name ("add", "gelu")
            counts[str(node.target) if is_op else node.target.__name__] += 1
    return counts


# (file, output shape, parameter count, runs on CPU, runs on meta, output dtype) -- each from the file's docstring
CASES = [
    (EXAMPLES / "resnet_like.py", (1, 1000), 11_689_512, True, True, torch.float32),
    (EXAMPLES / "transformer_lm.py", (2, 64, 8192), 13_891_584, True, True, torch.float32),
    (EXAMPLES / "lstm_tagger.py", (4, 32, 17), 1_135_153, True, True, torch.float32),
    (EXAMPLES / "custom_op_model.py", (2, 10), 814_570, True, True, torch.float32),
    (EXAMPLES / "llama_like.py", (1, 128, 32000), 17_769_728, True, True, torch.float32),
    (MODELS / "traceable.py", (2, 10), 5_362, True, True, torch.float32),
    (MODELS / "data_dependent.py", (4, 8), 1_072, True, False, torch.float32),
    (MODELS / "data_dependent_shape.py", (4, 4), 212, True, True, torch.float32),
    (MODELS / "custom_op.py", (4, 3), 675, True, True, torch.float32),
    (MODELS / "cpu_only.py", (2, 2), 34, True, False, torch.float32),
    (MODELS / "large.py", (1, 16), 8_590_983_184, False, True, torch.float32),
    (MODELS / "float64.py", (8, 1), 1_217, True, True, torch.float64),
    (MODELS / "conv_dilation.py", (1, 8, 32, 32), 808, True, True, torch.float32),
    (MODELS / "lstm_proj.py", (2, 10, 4), 3_620, True, True, torch.float32),
    (MODELS / "lgamma.py", (4, 3), 27, True, True, torch.float32),
    (MODELS / "sdpa.py", (2, 16, 32), 4_224, True, True, torch.float32),
    (MODELS / "deform_conv.py", (1, 5), 6_768, True, True, torch.float32),
]
IDS = [f"{path.parent.name}/{path.stem}" for path, *_ in CASES]


@pytest.fixture(autouse=True)
def _default_llama_config(monkeypatch):
    # llama_like.py reads these; a developer's shell must not change what the tests build
    monkeypatch.delenv("OPASSESS_LLAMA_CONFIG", raising=False)
    monkeypatch.delenv("OPASSESS_LLAMA_LAYERS", raising=False)


def test_every_example_is_covered():
    # tests/models/ also holds other engineers' purpose-built models (findings_*.py), tested by their own tests
    assert set(EXAMPLES.glob("*.py")) <= {path for path, *_ in CASES}
    assert all(path.is_file() for path, *_ in CASES)


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("path, shape, params, on_cpu, on_meta, dtype", CASES, ids=IDS)
def test_runs_on_meta(path, shape, params, on_cpu, on_meta, dtype):
    module = load(path)
    if not on_meta:
        # the documented reason these need the CPU: .item() on a meta tensor
        with pytest.raises(RuntimeError, match="meta tensors"):
            build_and_run(module, "meta")
        return
    model, out = build_and_run(module, "meta")
    assert out.device.type == "meta"
    assert tuple(out.shape) == shape
    assert out.dtype == dtype
    assert parameter_count(model) == params


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("path, shape, params, on_cpu, on_meta, dtype", CASES, ids=IDS)
def test_runs_on_cpu(path, shape, params, on_cpu, on_meta, dtype):
    module = load(path)
    if not on_cpu:
        with pytest.raises(RuntimeError, match="meta"):  # refuses to allocate, before allocating
            module.build_model()
        return
    model, out = build_and_run(module, "cpu")
    assert tuple(out.shape) == shape
    assert out.dtype == dtype
    assert torch.isfinite(out).all()
    assert parameter_count(model) == params


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.stem)
def test_examples_build_and_run_on_cpu(path):
    # How fast they run is measured by benchmarks/, not asserted here: a shared CI machine makes timings flaky.
    module = load(path)
    output = run(module.build_model(), module.example_inputs())
    assert output is not None


# ------------------------------------------------------------------ examples


def test_resnet_operator_counts_match_the_docstring():
    module = load(EXAMPLES / "resnet_like.py")
    with torch.device("meta"):
        counts = fx_counts(module.build_model())
    # 20 convs = stem 1 + 8 blocks * 2 + 3 downsample; a BN after each; ReLU = stem 1 + 8 blocks * 2; 8 residual adds
    assert counts == {
        "Conv2d": 20,
        "BatchNorm2d": 20,
        "ReLU": 17,
        "add": 8,
        "MaxPool2d": 1,
        "AdaptiveAvgPool2d": 1,
        "flatten": 1,
        "Linear": 1,
    }


def test_resnet_has_eleven_distinct_conv_signatures():
    module = load(EXAMPLES / "resnet_like.py")
    model = module.build_model()
    seen: collections.Counter = collections.Counter()

    def record(mod, args, _out):
        seen[(mod.kernel_size, mod.stride, mod.padding, mod.in_channels, mod.out_channels, args[0].shape[-1])] += 1

    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            m.register_forward_hook(record)
    with torch.device("meta"):
        run(model.to("meta"), module.example_inputs())
    assert len(seen) == 11 and sum(seen.values()) == 20
    assert seen[((3, 3), (1, 1), (1, 1), 64, 64, 56)] == 4  # layer1: 2 blocks * 2 convs
    assert seen[((1, 1), (2, 2), (0, 0), 256, 512, 14)] == 1  # layer4's downsample


def test_transformer_lm_operator_counts_match_the_docstring():
    module = load(EXAMPLES / "transformer_lm.py")
    with torch.device("meta"):
        model = module.build_model()
    # plain symbolic_trace stops at `if use_cache:`; the plain value has to be given as a concrete arg
    with pytest.raises(torch.fx.proxy.TraceError):
        torch.fx.symbolic_trace(model)
    counts = fx_counts(model, concrete_args={"use_cache": False})
    expected = {"Embedding": 2, "LayerNorm": 13, "Linear": 25, "scaled_dot_product_attention": 6, "GELU": 6,
                "Dropout": 13, "add": 13, "view": 24, "transpose": 24, "split": 6, "contiguous": 6, "size": 7,
                "arange": 1}
    assert {k: counts[k] for k in expected} == expected


def test_transformer_lm_head_is_tied_and_cache_returns_keys_and_values():
    module = load(EXAMPLES / "transformer_lm.py")
    model = module.build_model()
    assert model.lm_head.weight is model.wte.weight
    inputs = dict(module.example_inputs(), use_cache=True)
    logits, presents = run(model, inputs)
    assert tuple(logits.shape) == (2, 64, 8192)
    assert len(presents) == 6
    assert all(tuple(k.shape) == tuple(v.shape) == (2, 6, 64, 64) for k, v in presents)  # (b, heads, t, 384/6)


def test_lstm_tagger_returns_log_probabilities():
    module = load(EXAMPLES / "lstm_tagger.py")
    out = run(module.build_model(), module.example_inputs())
    torch.testing.assert_close(out.exp().sum(-1), torch.ones(4, 32))
    lstm = module.build_model().lstm
    shape = (lstm.num_layers, lstm.bidirectional, lstm.hidden_size, lstm.proj_size, lstm.dropout)
    assert shape == (2, True, 128, 0, 0.0)


def test_custom_op_model_keeps_the_custom_op_in_fx_but_loses_the_function():
    module = load(EXAMPLES / "custom_op_model.py")
    with torch.device("meta"):
        counts = fx_counts(module.build_model())
    assert counts["opassess_examples.fused_bias_gelu"] == 1
    # FX traces through FakeQuantizeSTE.apply: its body appears 3 times (once per stage), the Function never
    assert counts["round"] == 3 and counts["clamp"] == 3
    assert not any("FakeQuantize" in str(key) for key in counts)


def test_custom_ops_pass_opcheck():
    # fake impl, schema and autograd registration checked by PyTorch's own op tester
    load(EXAMPLES / "custom_op_model.py")
    load(MODELS / "custom_op.py")
    x, bias = torch.randn(3, 5, requires_grad=True), torch.randn(5, requires_grad=True)
    torch.library.opcheck(torch.ops.opassess_examples.fused_bias_gelu.default, (x, bias))
    torch.library.opcheck(torch.ops.opassess_tests.scale_shift.default, (torch.randn(3, 5), torch.randn(5), 0.5),
                          test_utils=("test_schema", "test_faketensor"))


def test_fused_bias_gelu_value_and_gradient():
    load(EXAMPLES / "custom_op_model.py")
    x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(6, dtype=torch.float64, requires_grad=True)
    fused = torch.ops.opassess_examples.fused_bias_gelu
    torch.testing.assert_close(fused(x, bias), F.gelu(x + bias))
    assert torch.autograd.gradcheck(fused, (x, bias))


def test_fake_quantize_rounds_to_int8_levels_and_passes_gradients_straight_through():
    module = load(EXAMPLES / "custom_op_model.py")
    x = torch.tensor([0.26, -0.74, 100.0, -100.0], requires_grad=True)
    y = module.FakeQuantizeSTE.apply(x, 0.5)
    # 0.26/0.5 = 0.52 -> 1 -> 0.5; -0.74/0.5 = -1.48 -> -1 -> -0.5; 200 -> clamp 127 -> 63.5; -200 -> -128 -> -64
    assert y.tolist() == [0.5, -0.5, 63.5, -64.0]
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_model_files_with_custom_ops_can_be_imported_twice():
    for path in (EXAMPLES / "custom_op_model.py", MODELS / "custom_op.py", MODELS / "deform_conv.py"):
        first, second = load(path), load(path)
        assert tuple(run(second.build_model(), first.example_inputs()).shape) == tuple(
            run(first.build_model(), second.example_inputs()).shape
        )


# ------------------------------------------------------------------ llama_like


@pytest.mark.parametrize(
    "factory, params",
    [
        ("build_model_7b", 6_738_415_616),  # Llama-2-7B's published count; derivation in the docstring
        ("build_model_70b", 68_976_648_192),  # Llama-2-70B's
    ],
)
def test_llama_full_size_configs_build_on_meta_with_published_parameter_counts(factory, params):
    module = load(EXAMPLES / "llama_like.py")
    with torch.device("meta"):
        model = getattr(module, factory)()
    assert parameter_count(model) == params
    assert module.CONFIGS[factory.removeprefix("build_model_")].parameter_count() == params


def test_llama_7b_shape_runs_on_meta_when_shortened():
    module = load(EXAMPLES / "llama_like.py")
    with torch.device("meta"):
        model = module.build_model_7b(num_layers=2)
        out = run(model, module.example_inputs())
    assert len(model.layers) == 2 and model.config.hidden_size == 4096
    assert tuple(out.shape) == (1, 128, 32000)


def test_llama_refuses_full_size_off_meta():
    module = load(EXAMPLES / "llama_like.py")
    with pytest.raises(RuntimeError, match=r"6,738,415,616 parameters"):
        module.build_model_7b()


def test_llama_environment_picks_the_config(monkeypatch):
    module = load(EXAMPLES / "llama_like.py")
    monkeypatch.setenv("OPASSESS_LLAMA_CONFIG", "70b")
    monkeypatch.setenv("OPASSESS_LLAMA_LAYERS", "3")
    config = module.config_from_env()
    assert (config.num_hidden_layers, config.hidden_size, config.num_key_value_heads) == (3, 8192, 8)
    monkeypatch.setenv("OPASSESS_LLAMA_CONFIG", "13b")
    with pytest.raises(ValueError, match="OPASSESS_LLAMA_CONFIG"):
        module.config_from_env()


def test_llama_breaks_fx_by_slicing_buffers_with_the_sequence_length():
    module = load(EXAMPLES / "llama_like.py")
    with torch.device("meta"):
        model = module.build_model()
    with pytest.raises(TypeError, match="slice indices"):
        torch.fx.symbolic_trace(model)


def test_llama_rmsnorm_and_rotary_by_hand():
    module = load(EXAMPLES / "llama_like.py")
    norm = module.RMSNorm(4, eps=0.0)
    # x = (1, 1, 1, 1) * 2: mean(x^2) = 4, rsqrt = 0.5, so every output is 1
    torch.testing.assert_close(norm(torch.full((1, 4), 2.0)), torch.ones(1, 4))
    assert module.rotate_half(torch.tensor([1.0, 2.0, 3.0, 4.0])).tolist() == [-3.0, -4.0, 1.0, 2.0]
    cos, sin = module.RotaryEmbedding(4, 8, 10000.0)(3)
    assert tuple(cos.shape) == (3, 4) and cos[0].tolist() == [1.0] * 4 and sin[0].tolist() == [0.0] * 4


# ------------------------------------------------------------- tests/models


def test_traceable_traces_whole_with_the_documented_nodes():
    module = load(MODELS / "traceable.py")
    counts = fx_counts(module.build_model())
    assert counts == {"Conv2d": 1, "BatchNorm2d": 1, "ReLU": 1, "gelu": 1, "add": 1, "view": 1, "flatten": 1,
                      "Linear": 1}
    graph = torch.fx.symbolic_trace(module.build_model()).graph
    gelu = next(n for n in graph.nodes if n.target is F.gelu)
    assert gelu.kwargs == {"approximate": "tanh"}
    conv = module.build_model().conv
    assert (conv.stride, conv.padding) == ((2, 2), (1, 1))


@pytest.mark.parametrize("name", ["data_dependent.py", "data_dependent_shape.py", "cpu_only.py"])
def test_control_flow_models_do_not_trace_with_fx(name):
    module = load(MODELS / name)
    with pytest.raises(torch.fx.proxy.TraceError, match="control flow"):
        torch.fx.symbolic_trace(module.build_model())


def test_data_dependent_takes_the_positive_branch_for_its_example():
    module = load(MODELS / "data_dependent.py")
    model = module.build_model()
    (x,) = module.example_inputs()  # all ones: sum 64 > 0
    torch.testing.assert_close(run(model, (x,)), model.positive(model.relu(model.encoder(x))))


def test_custom_op_model_traces_to_its_op_and_the_functions_body():
    module = load(MODELS / "custom_op.py")
    counts = fx_counts(module.build_model())
    assert counts == {"Linear": 2, "opassess_tests.scale_shift": 1, "sign": 1}
    x = torch.tensor([-2.0, -0.5, 0.5, 2.0], requires_grad=True)
    module.SignSTE.apply(x).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0, 0.0]  # straight through only where |x| <= 1


def test_large_model_would_need_32_gib():
    module = load(MODELS / "large.py")
    with torch.device("meta"):
        model = module.build_model()
    assert parameter_count(model) * 4 > 32 * 2**30  # 8,590,983,184 * 4 bytes


@pytest.mark.parametrize("dilation", [2, 3])
def test_conv_dilation_is_configurable_and_keeps_the_size(dilation):
    module = load(MODELS / "conv_dilation.py")
    model = module.build_model(dilation=dilation)
    assert (model.conv.dilation, model.atrous.dilation) == ((1, 1), (dilation, dilation))
    assert tuple(run(model, module.example_inputs()).shape) == (1, 8, 32, 32)
    assert module.DILATION == 2


def test_lstm_proj_has_a_projection():
    module = load(MODELS / "lstm_proj.py")
    lstm = module.build_model().lstm
    assert (lstm.proj_size, lstm.hidden_size) == (8, 32)


def test_lgamma_is_the_poisson_log_likelihood():
    module = load(MODELS / "lgamma.py")
    model = module.build_model()
    features, counts = module.example_inputs()
    rate = F.softplus(model.rate(features))
    expected = torch.distributions.Poisson(rate).log_prob(counts)
    torch.testing.assert_close(run(model, (features, counts)), expected)


def test_sdpa_matches_attention_written_out():
    module = load(MODELS / "sdpa.py")
    model = module.build_model()
    (x,) = module.example_inputs()
    heads = lambda t: t.view(2, 16, 4, 8).transpose(1, 2)  # noqa: E731
    q, k, v = heads(model.q(x)), heads(model.k(x)), heads(model.v(x))
    weights = torch.softmax(q @ k.transpose(-1, -2) / 8**0.5, dim=-1)
    expected = model.out((weights @ v).transpose(1, 2).reshape(2, 16, 32))
    torch.testing.assert_close(run(model, (x,)), expected)


def test_deform_conv_stand_in_has_torchvisions_schema():
    module = load(MODELS / "deform_conv.py")
    schema = str(torch.ops.torchvision.deform_conv2d.default._schema)
    assert schema == "torchvision::" + module.SCHEMA


@pytest.mark.parametrize("stride, pad, dilation, groups", [(1, 1, 1, 1), (2, 1, 1, 2), (1, 2, 2, 1)])
def test_deform_conv_with_zero_offsets_and_unit_mask_is_a_convolution(stride, pad, dilation, groups):
    load(MODELS / "deform_conv.py")
    x, bias = torch.randn(2, 4, 9, 11), torch.randn(6)
    weight = torch.randn(6, 4 // groups, 3, 3)
    expected = F.conv2d(x, weight, bias, stride, pad, dilation, groups)
    h_out, w_out = expected.shape[-2:]
    offset_groups = 2
    offset = torch.zeros(2, offset_groups * 2 * 9, h_out, w_out)
    mask = torch.ones(2, offset_groups * 9, h_out, w_out)
    out = torch.ops.torchvision.deform_conv2d(
        x, weight, offset, mask, bias, stride, stride, pad, pad, dilation, dilation, groups, offset_groups, True
    )
    torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)


def test_deform_conv_offsets_move_the_sampling_point():
    load(MODELS / "deform_conv.py")
    x = torch.arange(25.0).view(1, 1, 5, 5)
    offset = torch.zeros(1, 2, 5, 5)
    offset[:, 1] = 1.0  # dx = +1: a 1x1 kernel reads the pixel to the right, zero past the edge
    out = torch.ops.torchvision.deform_conv2d(
        x, torch.ones(1, 1, 1, 1), offset, torch.ones(1, 1, 5, 5), torch.zeros(1), 1, 1, 0, 0, 1, 1, 1, 1, True
    )
    expected = torch.zeros_like(x)
    expected[..., :4] = x[..., 1:]
    torch.testing.assert_close(out, expected)


def test_deform_conv_fake_impl_gives_the_output_shape():
    load(MODELS / "deform_conv.py")
    with torch.device("meta"):
        out = torch.ops.torchvision.deform_conv2d(
            torch.empty(2, 4, 9, 11), torch.empty(6, 4, 3, 3), torch.empty(2, 18, 5, 6), torch.empty(2, 9, 5, 6),
            torch.empty(6), 2, 2, 1, 1, 1, 1, 1, 1, True,
        )
    assert tuple(out.shape) == (2, 6, 5, 6)  # (9 + 2 - 2 - 1) // 2 + 1 = 5, (11 + 2 - 2 - 1) // 2 + 1 = 6


# --------------------------------------------------------------------- bad/


def test_bad_syntax_error_fails_on_import():
    with pytest.raises(SyntaxError) as info:
        load(BAD / "syntax_error.py")
    assert info.value.lineno == 12


def test_bad_no_build_model_has_no_factory():
    module = load(BAD / "no_build_model.py")
    assert not hasattr(module, "build_model")
    assert hasattr(module, "make_model") and hasattr(module, "example_inputs")


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_bad_forward_raises(device):
    module = load(BAD / "forward_raises.py")
    with pytest.raises(ValueError, match=module.MESSAGE):
        build_and_run(module, device)


@pytest.mark.parametrize("device, message", [("cpu", "cannot be multiplied"), ("meta", "same reduction dim")])
def test_bad_wrong_shape_fails_in_the_forward(device, message):
    module = load(BAD / "wrong_shape.py")
    with torch.device(device):
        model = module.build_model()  # building works
    with pytest.raises(RuntimeError, match=message):
        build_and_run(module, device)
    assert isinstance(model, nn.Module)


def test_bad_build_raises_a_key_error():
    module = load(BAD / "build_raises.py")
    assert tuple(module.example_inputs()[0].shape) == (1, 8)
    with pytest.raises(KeyError, match="large"):
        module.build_model()


def test_fx_counts_helper_sees_operator_add():
    # guards the helper the count tests rely on: `x + y` is recorded under operator.add's __name__
    class AddOnly(nn.Module):
        def forward(self, x):
            return x + x

    assert fx_counts(AddOnly()) == {operator.add.__name__: 1}
