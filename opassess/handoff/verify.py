"""The verification harness hand-off: `test_<op>.py` (pytest) per operator with non-direct signatures.

Each captured non-direct signature (shapes, dtypes and every captured argument) becomes two test cases:
`test_cpu_reference` runs the original call on the CPU twice with the same inputs and weights (CPU vs CPU: checks the
harness itself, records the CPU latency) and `test_device` runs what the report recommends on the NPU
(OPASSESS_VERIFY_DEVICE, default npu) against the original call on the CPU: the replacement through its adapter
(routes.py: npu_deformable_conv2d with offset and mask concatenated, npu_roi_align with the model's scale,
ratio and alignment), else the original operator (property opassess_route says which), forward and, for an
autograd.Function or a training scan, backward (the gradients of the inputs and the module's weights for one seeded
output gradient). Tolerances are torch.testing.assert_close's defaults for the output dtype (the standard PyTorch's
own tests use); OPASSESS_VERIFY_RTOL / OPASSESS_VERIFY_ATOL override both. Every case records JUnit properties
(opassess_op, opassess_signature, opassess_route, opassess_arguments, device, latency_us, opassess_stage, and on the
NPU torch_npu, cann and product) that `opassess calibrate --verified` reads: a device case that failed while still at
stage 'reference' (the call or its CPU reference could not be built) never reached the device, and one whose
arguments hold placeholders (an argument the capture did not record) tested another signature: neither records a
verdict. Test ids are the JSON report's signature numbers (sig0 is "signature": 0).
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..kb.verified import signature_key
from ..vocabulary import Category
from .escape import one_line
from .routes import MODEL_LOADING, route_source

SKIPPED_KINDS = ("optimizer", "library")  # an optimizer step or a GPU-only library call: nothing to call on the CPU


def harness_signatures(op: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The operator's non-direct signatures, each with its key (kb/verified.signature_key) and index."""
    out = []
    for index, sig in enumerate(op.get("signatures") or ()):
        if sig.get("category") in (None, Category.DIRECT):
            continue
        out.append({"index": index, "category": sig["category"], "attrs": sig["attrs"],
                    "input_shapes": sig["input_shapes"], "input_dtypes": sig["input_dtypes"], "count": sig["count"],
                    "key": signature_key(sig["attrs"], sig["input_shapes"], sig["input_dtypes"])})
    return out


def wants_harness(op: Mapping[str, Any]) -> bool:
    return op.get("kind") not in SKIPPED_KINDS and bool(harness_signatures(op))


def model_from_here(document: Mapping[str, Any], directory: Path | None, model_file: Path | None = None) -> str | None:
    """The model file's path relative to the folder the hand-off is written to (the generated files find it from
    wherever pytest runs), or None when the model is a module name or no such file is here."""
    source = model_file or Path(document["model"]["source"].split(":")[0])
    if directory is None or source.suffix != ".py" or not source.is_file():
        return None
    return Path(os.path.relpath(source.resolve(), directory.resolve())).as_posix()


def verification_harness(op: Mapping[str, Any], document: Mapping[str, Any], here: str | None = None) -> str:
    """The text of test_<op>.py."""
    route, routes = route_source(op)
    training = (document["model"].get("capture") or {}).get("step") == "train"
    # model-derived text enters the code as repr() literals and the docstring as escaped single lines (escape.py)
    return _HARNESS.format(op=op["op"], kind=op["kind"], target=document["target"],
                           op_line=one_line(op["op"]), kind_line=one_line(op["kind"]),
                           category_line=one_line(op.get("category")), target_line=one_line(document["target"]),
                           model=document["model"]["source"], here=here,
                           category=op.get("category"), route=route, training=training, routes=routes,
                           signatures=json.dumps(harness_signatures(op), indent=1), loading=MODEL_LOADING)


_HARNESS = '''"""Verification harness for {op_line} ({kind_line}, {category_line} on {target_line}): written by
`opassess scan --handoff`.

Run it from anywhere on the NPU host (it finds the model relative to itself, or at $OPASSESS_MODEL), then read the
results back into opassess:
    python -m pytest THIS_FILE --junitxml=results.xml
    opassess calibrate --verified results.xml

Per captured non-direct signature (test ids are the JSON report's signature numbers):
- test_cpu_reference: the operator on the CPU twice, same inputs and weights (CPU vs CPU): checks this harness and
  records the CPU latency;
- test_device: on DEVICE (env OPASSESS_VERIFY_DEVICE, default "npu") what the report recommends: ROUTE through its
  adapter when there is one, else the operator itself; against the operator on the CPU, forward and (for an
  autograd.Function or a training scan) backward; skipped when torch_npu cannot be imported. With DEVICE "cpu" the
  replacement runs as its documented semantics on the CPU (CpuRoutes): a check of the harness, no verdict.
Tolerance standard: torch.testing.assert_close's defaults for the output dtype (PyTorch's own test standard:
float32 rtol 1.3e-6 / atol 1e-5, float16 1e-3 / 1e-5, bfloat16 1.6e-2 / 1e-5, float64 1e-7 / 1e-7, integers and
bool exact); set OPASSESS_VERIFY_RTOL and OPASSESS_VERIFY_ATOL to override both. Latency: the median of
REPEATS calls after one warm-up, synchronised on the NPU. A case whose arguments hold placeholders (not captured)
says so (opassess_arguments) and records no verdict.
"""
from __future__ import annotations  # the adapters' annotations are not evaluated

import copy
import importlib
import importlib.util
import inspect
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

import pytest
import torch

OPERATOR = {op!r}
KIND = {kind!r}
MODEL_SOURCE = {model!r}
MODEL_FROM_HERE = {here!r}
ROUTE = {route!r}  # the replacement the report recommends, tested through ROUTE_CALL; None: the operator itself
TRAINING = {training!r}  # a training scan: the backward is tested too
SIGNATURES = json.loads(r"""{signatures}""")
DEVICE = os.environ.get("OPASSESS_VERIFY_DEVICE", "npu")
REPEATS = 5
SEED = 1234
# JUnit properties are what opassess reads back; pytest's default xunit2 family still writes them, with a warning.
pytestmark = pytest.mark.filterwarnings("ignore:record_property is incompatible:pytest.PytestWarning")


def tolerances():
    rtol, atol = os.environ.get("OPASSESS_VERIFY_RTOL"), os.environ.get("OPASSESS_VERIFY_ATOL")
    if rtol is None or atol is None:
        return {{}}  # torch.testing.assert_close picks rtol/atol by dtype
    return {{"rtol": float(rtol), "atol": float(atol)}}


{loading}

{routes}

def make_input(shape, dtype):
    if shape is None:
        return None
    dtype = getattr(torch, dtype or "float32")
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, dtype=dtype)
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    return torch.randint(0, 8, shape, dtype=dtype)


class Case:
    """One signature: the original call (`reference`), what the device runs (`routed`), the CPU inputs, the
    module's weights per device, the arguments that are placeholders."""

    def __init__(self, signature):
        torch.manual_seed(SEED + signature["index"])
        self.call = resolve(load_model_module())
        self.inputs = [make_input(s, d) for s, d in zip(signature["input_shapes"], signature["input_dtypes"])]
        self.attrs, self.module, self.placeholders = signature["attrs"], None, []
        self.function = isinstance(getattr(self.call, "__self__", None), type) and issubclass(
            self.call.__self__, torch.autograd.Function)
        if KIND == "module":
            self.module = construct(self.call, self.attrs).eval()
            floating = next((x for x in self.inputs if isinstance(x, torch.Tensor) and x.is_floating_point()), None)
            if floating is not None:
                self.module = self.module.to(floating.dtype)  # the captured dtype (float16 runs float16 weights)
            return
        named, self.placeholders = schema_named(self.call, self.inputs, self.attrs)
        if named is not None:
            names = [n for n, v in named.items() if isinstance(v, torch.Tensor)]
            named = PREPARE(named)
            self.inputs = [named[n] for n in names]
        else:
            _, _, self.placeholders = python_arguments(self.call, self.inputs, self.attrs)

    def reference(self, device, *xs):
        if self.module is not None:
            return module_on(self.module, device)(*xs)
        args, kwargs = schema_arguments(self.call, list(xs), self.attrs)
        return self.call(*args, **kwargs)

    def routed(self, device, *xs):
        if ROUTE_CALL is None:
            return self.reference(device, *xs)
        named, _ = schema_named(self.call, list(xs), self.attrs)
        return ROUTE_CALL(npu_namespace(device), **named)

    def weights(self, device):
        return [] if self.module is None else list(module_on(self.module, device).parameters())

    def backward(self):
        return self.function or TRAINING


def npu_namespace(device):
    """Where the replacement lives: torch_npu on the NPU, its documented semantics on the CPU."""
    if device.split(":")[0] == "cpu":
        return CpuRoutes
    return importlib.import_module("torch_npu")


def construct(cls, attrs):
    """The module built from its captured fields: those its constructor names (all, when it takes **kwargs); a
    field the constructor refuses by name (LSTM's `mode`, set by the class itself) is dropped and the call retried."""
    accepted = inspect.signature(cls).parameters
    takes_any = any(p.kind == p.VAR_KEYWORD for p in accepted.values())
    attrs = {{k: v for k, v in attrs.items() if takes_any or k in accepted}}
    while True:
        try:
            return cls(**attrs)
        except TypeError as exc:
            named = re.search(r"argument '(\\w+)'", str(exc))
            if not named or named.group(1) not in attrs:
                raise
            attrs.pop(named.group(1))


_MODULES = {{}}


def module_on(module, device):
    key = (id(module), device)
    if key not in _MODULES:
        _MODULES[key] = module if device == "cpu" else copy.deepcopy(module).to(device)
    return _MODULES[key]


def tensors(output):
    items = output if isinstance(output, (tuple, list)) else [output]
    return [t for t in items if isinstance(t, torch.Tensor)]


def timed(function, device, inputs):
    """The output of one call, and the median latency in microseconds of REPEATS more."""
    sync = getattr(getattr(torch, device.split(":")[0], None), "synchronize", None) if device != "cpu" else None
    with torch.no_grad():
        output = function(device, *inputs)
        times = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            function(device, *inputs)
            if sync is not None:
                sync()
            times.append((time.perf_counter() - started) * 1e6)
    return output, statistics.median(times)


def gradients(case, function, device, inputs):
    """The gradients of the floating-point inputs and the module's weights for one seeded output gradient (None for
    those the output does not depend on); None when the output has no gradient at all."""
    xs = [x.detach().clone().requires_grad_(True) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
          for x in inputs]
    with torch.enable_grad():
        outputs = [t for t in tensors(function(device, *xs)) if t.requires_grad]
        if not outputs:
            return None
        generator = torch.Generator().manual_seed(SEED)
        seeds = [torch.randn(t.shape, generator=generator, dtype=torch.float32).to(t.dtype).to(t.device)
                 for t in outputs]
        wrt = [x for x in xs if isinstance(x, torch.Tensor) and x.requires_grad] + case.weights(device)
        return torch.autograd.grad(outputs, wrt, seeds, allow_unused=True)


def compare(actual, expected):
    actual, expected = tensors(actual), tensors(expected)
    assert len(actual) == len(expected), f"{{len(actual)}} output tensors, the CPU gives {{len(expected)}}"
    for got, want in zip(actual, expected):
        torch.testing.assert_close(got.detach().cpu(), want.detach(), equal_nan=True, **tolerances())


def compare_gradients(actual, expected):
    assert (actual is None) == (expected is None), "a gradient on one side only"
    for got, want in zip(actual or (), expected or ()):
        assert (got is None) == (want is None), "a gradient on one side only"
        if got is not None:
            torch.testing.assert_close(got.detach().cpu(), want.detach(), equal_nan=True, **tolerances())


def identify(record_property, signature, device, case=None):
    """The JUnit properties `opassess calibrate --verified` reads (recorded first: a skipped case carries them too)."""
    record_property("opassess_op", OPERATOR)
    record_property("opassess_signature", signature["key"])
    record_property("device", device)
    record_property("opassess_route", ROUTE or "original")
    record_property("opassess_stage", "reference")  # building the call and the CPU reference


def record_case(record_property, case):
    arguments = "captured" if not case.placeholders else "placeholder: " + ", ".join(case.placeholders)
    record_property("opassess_arguments", arguments)


def record_device(record_property, device):
    """What the device case ran on: torch_npu's and CANN's versions and the chip, where they can be read."""
    if device.split(":")[0] != "npu":
        return
    torch_npu = importlib.import_module("torch_npu")
    record_property("torch_npu", getattr(torch_npu, "__version__", "unknown"))
    for read in (lambda: torch_npu.npu.utils.get_cann_version(), lambda: torch_npu.version.cann):
        try:
            record_property("cann", str(read()))
            break
        except Exception:  # noqa: BLE001 - an older torch_npu: the version is not recorded
            continue
    try:
        record_property("product", torch.npu.get_device_name())
    except Exception:  # noqa: BLE001
        pass


def record_latency(record_property, signature, device, latency):
    record_property("latency_us", f"{{latency:.3f}}")
    print(f"{{OPERATOR}} signature {{signature['index']}} on {{device}}: {{latency:.1f}} us")


IDS = [f"sig{{s['index']}}" for s in SIGNATURES]


@pytest.mark.parametrize("signature", SIGNATURES, ids=IDS)
def test_cpu_reference(signature, record_property):
    identify(record_property, signature, "cpu")
    case = Case(signature)
    record_case(record_property, case)
    first, latency = timed(case.reference, "cpu", case.inputs)
    second, _ = timed(case.reference, "cpu", case.inputs)
    record_latency(record_property, signature, "cpu", latency)
    compare(second, first)
    if case.backward():
        compare_gradients(gradients(case, case.reference, "cpu", case.inputs),
                          gradients(case, case.reference, "cpu", case.inputs))


@pytest.mark.parametrize("signature", SIGNATURES, ids=IDS)
def test_device(signature, record_property):
    identify(record_property, signature, DEVICE)
    if DEVICE.split(":")[0] == "npu":
        pytest.importorskip("torch_npu", reason="torch_npu is not importable: no NPU to verify on")
    case = Case(signature)
    record_case(record_property, case)
    expected, _ = timed(case.reference, "cpu", case.inputs)
    expected_grads = gradients(case, case.reference, "cpu", case.inputs) if case.backward() else None
    record_property("opassess_stage", "device")  # a failure from here on is the device's, not the harness's
    record_device(record_property, DEVICE)
    inputs = [x.to(DEVICE) if isinstance(x, torch.Tensor) else x for x in case.inputs]
    actual, latency = timed(case.routed, DEVICE, inputs)
    record_latency(record_property, signature, DEVICE, latency)
    compare(actual, expected)
    if case.backward():
        compare_gradients(gradients(case, case.routed, DEVICE, inputs), expected_grads)
        record_property("opassess_backward", "tested")
'''
