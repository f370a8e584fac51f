"""The verification harness hand-off: `test_<op>.py` (pytest) per operator with non-direct signatures.

Each captured non-direct signature (shapes, dtypes, attributes) becomes two test cases: `test_cpu_reference` runs it
on the CPU twice with the same inputs and weights (CPU vs CPU: checks the harness itself, records the CPU latency)
and `test_device` runs it on the NPU (OPASSESS_VERIFY_DEVICE, default npu) against the CPU reference, skipped
cleanly when torch_npu cannot be imported. Tolerances are torch.testing.assert_close's defaults for the output dtype
(the standard PyTorch's own tests use); OPASSESS_VERIFY_RTOL / OPASSESS_VERIFY_ATOL override both. Every case records
JUnit properties (opassess_op, opassess_signature, device, latency_us, opassess_stage) that `opassess calibrate
--verified` reads: a device case that failed while still at stage 'reference' (the call or its CPU reference could
not be built) never reached the device and records no verdict.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..kb.verified import signature_key
from ..vocabulary import Category
from .escape import one_line

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


def verification_harness(op: Mapping[str, Any], document: Mapping[str, Any]) -> str:
    """The text of test_<op>.py."""
    # model-derived text enters the code as repr() literals and the docstring as escaped single lines (escape.py)
    return _HARNESS.format(op=op["op"], kind=op["kind"], target=document["target"],
                           model=document["model"]["source"], category=op.get("category"),
                           op_line=one_line(op["op"]), kind_line=one_line(op["kind"]),
                           category_line=one_line(op.get("category")), target_line=one_line(document["target"]),
                           signatures=json.dumps(harness_signatures(op), indent=1), loading=MODEL_LOADING)


# The model's import, the operator's lookup and its arguments in schema order, which the reproduction script
# (handoff.py) carries too: every generated file stands alone, so the text is spliced into both templates ({loading})
# rather than imported.
MODEL_LOADING = '''def load_model_module():
    """Import the model file (or module) once, so that project-defined operators are registered."""
    path = Path(MODEL_SOURCE.split(":")[0])
    if path.suffix == ".py" and path.exists():
        loaded = sys.modules.get(path.stem)
        if loaded is not None and Path(getattr(loaded, "__file__", None) or "").resolve() == path.resolve():
            return loaded  # imported already (the harness builds every case from it)
        sys.path.insert(0, str(path.parent.resolve()))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(MODEL_SOURCE.split(":")[0])


def resolve(model):
    """The callable behind the operator key: torch.ops for 'ns::name', else a dotted path or a model attribute."""
    if "::" in OPERATOR:
        namespace, name = OPERATOR.split("::", 1)
        return getattr(getattr(torch.ops, namespace), name)
    head, _, rest = OPERATOR.partition(".")
    if head == "Tensor":
        return lambda first, *args, **kwargs: getattr(first, rest)(*args, **kwargs)
    if head == model.__name__.rpartition(".")[2] and hasattr(model, rest.split(".")[0]):
        target = model
        for part in rest.split("."):
            target = getattr(target, part)
        return getattr(target, "apply", target)
    module_name, _, attribute = OPERATOR.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute)


PLACEHOLDERS = {"float": 1.0, "int": 1, "bool": False, "SymInt": 1}


def schema_arguments(call, inputs, attrs):
    """For a torch.ops operator: the arguments in schema order, tensors from the captured inputs, the rest from the
    captured attributes; a scalar the capture did not record gets its default or a placeholder (said on stderr)."""
    schema = getattr(getattr(call, "default", call), "_schema", None)
    if schema is None:
        return inputs, attrs
    tensors, args = iter(inputs), []
    for argument in schema.arguments:
        kind = str(argument.type)
        if kind.startswith("Tensor"):
            args.append(next(tensors, None))
        elif argument.name in attrs:
            args.append(attrs[argument.name])
        elif argument.has_default_value():
            args.append(argument.default_value)
        else:
            value = PLACEHOLDERS.get(kind.rstrip("?"))
            print(f"note: argument {argument.name} ({kind}) was not captured; using {value!r}: set the "
                  f"model's value", file=sys.stderr)
            args.append(value)
    return args, {}
'''


_HARNESS = '''"""Verification harness for {op_line} ({kind_line}, {category_line} on {target_line}): written by
`opassess scan --handoff`.

Run it from the project root on the NPU host, then read the results back into opassess:
    python -m pytest THIS_FILE --junitxml=results.xml
    opassess calibrate --verified results.xml

Per captured non-direct signature:
- test_cpu_reference: the operator on the CPU twice, same inputs and weights (CPU vs CPU): checks this harness and
  records the CPU latency;
- test_device: the operator on DEVICE (env OPASSESS_VERIFY_DEVICE, default "npu") against the CPU reference;
  skipped when torch_npu cannot be imported.
Tolerance standard: torch.testing.assert_close's defaults for the output dtype (PyTorch's own test standard:
float32 rtol 1.3e-6 / atol 1e-5, float16 1e-3 / 1e-5, bfloat16 1.6e-2 / 1e-5, float64 1e-7 / 1e-7, integers and
bool exact); set OPASSESS_VERIFY_RTOL and OPASSESS_VERIFY_ATOL to override both. Latency: the median of
REPEATS calls after one warm-up, synchronised on the NPU. Each case records the JUnit properties opassess_op,
opassess_signature, device and latency_us.
"""
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

def make_input(shape, dtype):
    if shape is None:
        return None
    dtype = getattr(torch, dtype or "float32")
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, dtype=dtype)
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    return torch.randint(0, 8, shape, dtype=dtype)


def build(signature):
    """(a function of the inputs, the CPU inputs); a module is built once on the CPU, seeded, so every device runs
    the same weights."""
    torch.manual_seed(SEED + signature["index"])
    call = resolve(load_model_module())
    inputs = [make_input(s, d) for s, d in zip(signature["input_shapes"], signature["input_dtypes"])]
    if KIND == "module":
        module = construct(call, signature["attrs"]).eval()
        floating = next((x for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()), None)
        if floating is not None:
            module = module.to(floating.dtype)  # the captured dtype (a float16 signature runs float16 weights)
        return (lambda device, *xs: module_on(module, device)(*xs)), inputs

    def run(device, *xs):
        args, kwargs = schema_arguments(call, list(xs), signature["attrs"])
        return call(*args, **kwargs)

    return run, inputs


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
    sync = getattr(getattr(torch, device, None), "synchronize", None) if device != "cpu" else None
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


def compare(actual, expected):
    actual, expected = tensors(actual), tensors(expected)
    assert len(actual) == len(expected), f"{{len(actual)}} output tensors, the CPU gives {{len(expected)}}"
    for got, want in zip(actual, expected):
        torch.testing.assert_close(got.detach().cpu(), want.detach(), equal_nan=True, **tolerances())


def identify(record_property, signature, device):
    """The JUnit properties `opassess calibrate --verified` reads (recorded first: a skipped case carries them too)."""
    record_property("opassess_op", OPERATOR)
    record_property("opassess_signature", signature["key"])
    record_property("device", device)
    record_property("opassess_stage", "reference")  # building the call and the CPU reference


def record_latency(record_property, signature, device, latency):
    record_property("latency_us", f"{{latency:.3f}}")
    print(f"{{OPERATOR}} signature {{signature['index'] + 1}} on {{device}}: {{latency:.1f}} us")


IDS = [f"sig{{s['index'] + 1}}" for s in SIGNATURES]


@pytest.mark.parametrize("signature", SIGNATURES, ids=IDS)
def test_cpu_reference(signature, record_property):
    identify(record_property, signature, "cpu")
    function, inputs = build(signature)
    first, latency = timed(function, "cpu", inputs)
    second, _ = timed(function, "cpu", inputs)
    record_latency(record_property, signature, "cpu", latency)
    compare(second, first)


@pytest.mark.parametrize("signature", SIGNATURES, ids=IDS)
def test_device(signature, record_property):
    identify(record_property, signature, DEVICE)
    if DEVICE == "npu":
        pytest.importorskip("torch_npu", reason="torch_npu is not importable: no NPU to verify on")
    function, inputs = build(signature)
    expected, _ = timed(function, "cpu", inputs)
    record_property("opassess_stage", "device")  # a failure from here on is the device's, not the harness's
    actual, latency = timed(function, DEVICE, [x.to(DEVICE) if isinstance(x, torch.Tensor) else x for x in inputs])
    record_latency(record_property, signature, DEVICE, latency)
    compare(actual, expected)
'''
