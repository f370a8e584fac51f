"""Trace stage: run a loaded model once and record every operator call as an OpNode with its ATen evidence.

Capture methods, tried in order (the Capture records every attempt and why it failed):
  fx        torch.fx symbolic tracing, then a node-by-node run under an ATen dispatch recorder. Gives the
            graph as users wrote it: leaf modules (nn.Conv2d with its attributes), functions, methods, edges.
  export    torch.export (non-strict), for models FX cannot trace. Costly on large models (8.5 s for a
            Llama-2-7B shape against 0.5 s for one recorded forward), so it is skipped above a size limit.
  dispatch  one eager forward with module hooks, a torch-function mode (the user-level call) and a
            dispatch mode (the ATen ops it reaches). Works for any model that runs; keeps module paths,
            attributes and source lines.
Everything runs on the meta device unless the model cannot, in which case it is rebuilt on the CPU.
An FX Node never leaves this module.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .errors import TraceError
from .load import LoadedModel, _describe, display_module, display_path, is_library_file, on_device, user_frame
from .records import AtenCall, Capture, CaptureAttempt, OpNode

# Order: fx gives the true graph; dispatch keeps user-level names, module paths, attributes and source lines
# at the cost of one eager forward; dispatch-compiling is the same with torch.compiler.is_compiling() true, for
# code that reads tensor values unless it is being compiled (tried on meta only); export is the last resort
# (slow on large models, names ATen-level ops).
METHODS = ("fx", "dispatch", "dispatch-compiling", "export")
# Large models: the dispatch capture first. On a Llama-2-7B shape on meta (benchmarks/bench_scan.py) one recorded
# forward costs ~0.4 s, symbolic tracing plus a node-by-node run ~1.3 s when it works at all (slicing a buffer by
# the sequence length already breaks it, after 0.2 s), torch.export ~3.5 s. Above this size a failed or slow fx
# attempt would cost more than the rest of the scan, so the default order becomes dispatch, fx, export.
LARGE_MODEL_PARAMETERS = 1_000_000_000
# torch.export is skipped above this many parameters (it would cost more than the whole scan budget).
EXPORT_MAX_PARAMETERS = 1_000_000_000


def capture_order(parameters: int) -> tuple[str, ...]:
    """The default order of capture methods for a model of this size."""
    if parameters > LARGE_MODEL_PARAMETERS:
        return ("dispatch", "dispatch-compiling", "fx", "export")
    return METHODS

# `x + y` in FX is operator.add, in eager code Tensor.add: both are reported as the Tensor method.
_OPERATOR_METHODS = {
    "add": "add", "iadd": "add_", "sub": "sub", "isub": "sub_", "mul": "mul", "imul": "mul_",
    "truediv": "div", "itruediv": "div_", "floordiv": "floor_divide", "mod": "remainder", "pow": "pow",
    "matmul": "matmul", "neg": "neg", "pos": "positive", "abs": "abs", "invert": "bitwise_not",
    "and_": "bitwise_and", "or_": "bitwise_or", "xor": "bitwise_xor", "lshift": "__lshift__",
    "rshift": "__rshift__", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "getitem": "__getitem__", "setitem": "__setitem__",
}
_DUNDER_METHODS = {f"__{k.rstrip('_')}__": v for k, v in _OPERATOR_METHODS.items()}
_DUNDER_METHODS.update({"__radd__": "add", "__rsub__": "sub", "__rmul__": "mul", "__rtruediv__": "div",
                        "__rmatmul__": "matmul", "__rpow__": "pow", "__iadd__": "add_", "__imul__": "mul_",
                        "__getitem__": "__getitem__", "__setitem__": "__setitem__", "__and__": "bitwise_and",
                        "__or__": "bitwise_or", "__div__": "div"})
# Tensor attributes that compute a view (`w.T`): operators users write as attributes. The torch-function mode sees
# every attribute read as a `__get__` call; all others (shape, dtype, device, ...) are metadata, not operators.
_OPERATOR_PROPERTIES = frozenset({"T", "mT", "H", "mH", "real", "imag"})
# Property getters and metadata queries that are not operators.
_NOT_OPERATORS = {"__get__", "size", "dim", "numel", "element_size", "is_contiguous", "stride", "storage_offset",
                  "data_ptr", "__len__", "__format__", "__repr__", "__index__",
                  "is_floating_point", "is_complex", "get_device", "__iter__", "__hash__", "__eq_meta__"}


# ------------------------------------------------------------------ naming


def module_key(cls: type) -> str:
    """torch.nn.modules.conv.Conv2d -> 'torch.nn.Conv2d'; other classes by module and qualified name."""
    import torch

    if getattr(torch.nn, cls.__name__, None) is cls:
        return f"torch.nn.{cls.__name__}"
    return f"{display_module(cls.__module__)}.{cls.__qualname__}"


def module_op(module: Any) -> str:
    """The operator key of a module call: its class, or for a TorchScript module the class it was scripted from."""
    import torch

    if isinstance(module, torch.jit.ScriptModule):
        cls = _scripted_class(module._c._type().qualified_name())
        return module_key(cls) if cls is not None else f"torchscript.{module.original_name}"
    return module_key(type(module))


@functools.cache
def _scripted_class(qualified: str) -> type | None:
    """'__torch__.torch.nn.modules.linear.___torch_mangle_0.Linear' -> the Python class torch.jit.script compiled
    (torch.nn.Linear), found again by its qualified name; None when it cannot be found."""
    parts = [p for p in qualified.removeprefix("__torch__.").split(".") if not p.startswith("___torch_mangle")]
    cls = getattr(sys.modules.get(".".join(parts[:-1])), parts[-1], None)
    return cls if isinstance(cls, type) else None


def _memo_by_callable(impl: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Cache a function of a callable (called for every operator call of a forward; the callables repeat)."""
    cache: dict[Any, Any] = {}

    @functools.wraps(impl)
    def wrapper(fn: Any) -> Any:
        try:
            return cache[fn]
        except KeyError:
            value = cache[fn] = impl(fn)
            return value
        except TypeError:  # an unhashable callable
            return impl(fn)

    return wrapper


@_memo_by_callable
def function_key(fn: Any) -> tuple[str, str]:
    """The operator key and kind of a called function: ('torch.nn.functional.gelu', 'function')."""
    import torch
    import torch.nn.functional as F

    if isinstance(fn, AutogradFunctionCall):
        return fn.key, "custom"
    if isinstance(fn, ExtensionCall):
        return fn.key, "extension"
    if isinstance(fn, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        ns, _, name = (fn._qualified_op_name if isinstance(fn, torch._ops.OpOverloadPacket)
                       else fn._schema.name).partition("::")
        return f"{ns}::{name}", ("aten" if ns in ("aten", "prims") else "custom")
    name = getattr(fn, "__name__", None) or type(fn).__name__
    if name == "__get__" and getattr(fn, "__self__", None) is not None:  # a Tensor attribute read (x.T)
        return method_key(fn.__self__.__name__), "method"
    module = getattr(fn, "__module__", None) or ""
    if module in ("_operator", "operator"):
        method = _OPERATOR_METHODS.get(name)
        return (f"Tensor.{method}", "method") if method else (f"operator.{name}", "function")
    objclass = getattr(fn, "__objclass__", None)
    if objclass is not None and objclass.__name__ in ("TensorBase", "Tensor"):
        return method_key(name), "method"
    qualname = getattr(fn, "__qualname__", name) or name
    if module in ("torch.nn.functional", "torch._C._nn") and getattr(F, name, None) is not None:
        return f"torch.nn.functional.{name}", "function"
    if module.startswith("torch.nn.functional"):
        return f"torch.nn.functional.{name}", "function"
    if (module == "torch" or module.startswith("torch._C") or qualname.startswith("_VariableFunctionsClass")) and \
            getattr(torch, name, None) is not None:
        return f"torch.{name}", "function"
    if qualname.startswith("Tensor.") or qualname.startswith("TensorBase."):
        return method_key(name), "method"
    if module.startswith("torch") and getattr(torch, name, None) is fn:  # torch.unique (a boolean_dispatch wrapper)
        return f"torch.{name}", "function"
    return f"{display_module(module)}.{qualname}" if module else qualname, "function"


def method_key(name: str) -> str:
    """'__add__' -> 'Tensor.add'; 'view' -> 'Tensor.view'."""
    return f"Tensor.{_DUNDER_METHODS.get(name, name)}"


@functools.lru_cache(maxsize=4096)
def _aten_exists(name: str) -> bool:
    import torch

    return hasattr(torch.ops.aten, name)


@_memo_by_callable
def entry_op(fn: Any) -> str | None:
    """The ATen op a user-level call names before decomposition: F.scaled_dot_product_attention ->
    'aten::scaled_dot_product_attention', _VF.lstm -> 'aten::lstm'; None when no ATen op has that name."""
    key, kind = function_key(fn)
    if kind in ("aten", "custom") and "::" in key:
        return key
    name = key.rsplit(".", 1)[-1]
    name = {"__getitem__": "index", "__setitem__": "index_put"}.get(name, name)
    if name in _NOT_OPERATORS:
        return None
    return f"aten::{name}" if name and not name.startswith("_") and _aten_exists(name) else None


def _is_operator_property(getter: Any) -> bool:
    """A `__get__` of a Tensor attribute that computes a view (w.T), not of metadata (x.shape)."""
    return getattr(getattr(getter, "__self__", None), "__name__", None) in _OPERATOR_PROPERTIES


def is_leaf_module(module: Any) -> bool:
    """torch.nn's own layers are operators; containers and user modules are walked into. A TorchScript module is
    one operator too: neither FX nor the torch-function mode can see inside it (only its ATen ops)."""
    import torch

    cls = type(module)
    if isinstance(module, torch.jit.ScriptModule):
        return True
    return cls.__module__.startswith("torch.nn") and not isinstance(
        module, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)) and cls is not torch.nn.Module


def module_attrs(module: Any) -> dict[str, Any]:
    """Public non-tensor attributes of a layer (Conv2d stride/padding/dilation/..., LSTM proj_size/dropout/...)."""
    import torch

    attrs: dict[str, Any] = {}
    if isinstance(module, torch.jit.ScriptModule):  # its attributes live in TorchScript: read its class's constants
        names = getattr(_scripted_class(module._c._type().qualified_name()), "__constants__", ())
        source = {name: getattr(module, name) for name in names if hasattr(module, name)}
    else:
        source = vars(module)
    for name, value in source.items():
        if name.startswith("_") or name == "training":
            continue
        plain = jsonable(value)
        if plain is not _SKIP:
            attrs[name] = plain
    params = getattr(module, "_parameters", {})
    if "bias" in params or hasattr(module, "bias"):
        attrs["bias"] = getattr(module, "bias", None) is not None
    return dict(sorted(attrs.items()))


_SKIP = object()


def jsonable(value: Any) -> Any:
    """A JSON-able copy of a plain attribute value, or _SKIP for tensors, modules and other objects."""
    import torch

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    if isinstance(value, (torch.device, torch.memory_format, torch.layout)):
        return str(value)
    if isinstance(value, (tuple, list, torch.Size)):
        items = [jsonable(v) for v in value]
        return _SKIP if any(v is _SKIP for v in items) else items
    return _SKIP


# ------------------------------------------------------------------ values


def tensors_in(value: Any) -> list:
    """The tensors inside a value (nested tuples, lists and dicts), in order. A hand-written walk: this runs
    for every operator call and every ATen op, where torch's general pytree cost a third of the capture."""
    tensor = _tensor_type()
    if isinstance(value, tensor):
        return [value]
    out, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, tensor):
            out.append(item)
        elif isinstance(item, (tuple, list)):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
    return out


@functools.cache
def _tensor_type() -> type:
    import torch

    return torch.Tensor


def describe(value: Any) -> tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]:
    """Shapes and dtypes of the tensors in a value (flattened); non-tensor leaves are skipped."""
    return describe_tensors(tensors_in(value))


def describe_tensors(tensors: list) -> tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]:
    return tuple(tuple(t.shape) for t in tensors), tuple(_dtype_name(t.dtype) for t in tensors)


@functools.cache
def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def _is_operator_call(calls: tuple, args: tuple, result: Any) -> bool:
    """A call is an operator when it dispatched ATen ops, or takes a tensor first and returns one (a view that
    dispatched nothing on this backend). x.size(1) and indexing into a returned tuple are not."""
    import torch

    return bool(calls) or (bool(args) and isinstance(args[0], torch.Tensor) and _has_tensor(result))


def _has_tensor(value: Any) -> bool:
    return bool(tensors_in(value))


@functools.cache
def _signature(fn: Any):
    import inspect

    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def call_attrs(fn: Any, args: tuple, kwargs: dict, skip_first: bool = False) -> dict[str, Any]:
    """The non-tensor arguments of a call, named by the function's signature when Python can tell."""
    if isinstance(fn, ExtensionCall):
        fn = fn.fn
    sig = None
    try:
        sig = _signature(fn)
    except TypeError:  # unhashable callable
        sig = None
    named: dict[str, Any] = {}
    if sig is not None:
        try:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()  # F.interpolate(x, size=...) also records scale_factor=None, mode="nearest"
            named = dict(bound.arguments)
            for pname, param in sig.parameters.items():
                if param.kind is param.VAR_KEYWORD and pname in named:
                    named.update(named.pop(pname))
        except TypeError:
            sig = None
    if sig is None:
        named = {f"arg{i}": a for i, a in enumerate(args)}
        named.update(kwargs)
    attrs = {}
    for i, (name, value) in enumerate(named.items()):
        if skip_first and i == 0:
            continue
        plain = jsonable(value)
        if plain is not _SKIP:
            attrs[name] = plain
    return attrs


# ------------------------------------------------------------- ATen evidence


class _AtenRecorder:
    """A dispatch mode that appends an AtenCall for every ATen op reaching the backend while a sink is set."""

    def __init__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils.flop_counter import flop_registry

        recorder = self
        self.sink: list | None = None  # the current operator's ATen calls
        self.loose: list | None = None  # ATen calls made outside any recorded operator (dispatch capture)
        self.flops = 0
        self.bytes = 0
        self.last: tuple = ((), 0, 0)

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                if recorder.sink is not None:
                    ins, outs = tensors_in((args, kwargs)), tensors_in(out)
                    recorder.sink.append(_aten_call(func, ins, outs))
                    formula = _flop_formula(func._overloadpacket, flop_registry)
                    if formula is not None:
                        with contextlib.suppress(Exception):
                            recorder.flops += int(formula(*_shapes_of(args), out_shape=_shapes_of(out),
                                                          **_shapes_of(kwargs)))
                    recorder.bytes += _nbytes(ins) + _nbytes(outs)
                elif recorder.loose is not None:
                    recorder.loose.append(_aten_call(func, tensors_in((args, kwargs)), tensors_in(out)))
                return out

        self.mode = Mode()

    @contextlib.contextmanager
    def collect(self) -> Iterable[list]:
        """Collect the ATen calls made inside the block into self.last = (calls, flops, bytes)."""
        self.sink, self.flops, self.bytes = [], 0, 0
        try:
            yield self.sink
        finally:
            self.last = (tuple(self.sink), self.flops, self.bytes)
            self.sink = None


def _flop_formula(packet: Any, registry: dict) -> Callable | None:
    """torch's FLOP formula for an op, unwrapped to take shapes (its own wrapper maps tensors to shapes with
    pytree, which cost as much as the rest of the capture on a 70B-shaped model)."""
    formula = registry.get(packet)
    return getattr(formula, "__wrapped__", None) if formula is not None else None


def _shapes_of(value: Any) -> Any:
    """value with every tensor replaced by its shape (tuples, lists and dicts walked)."""
    tensor = _tensor_type()
    if isinstance(value, tensor):
        return value.shape
    if isinstance(value, tuple):
        return tuple(_shapes_of(v) for v in value)
    if isinstance(value, list):
        return [_shapes_of(v) for v in value]
    if isinstance(value, dict):
        return {k: _shapes_of(v) for k, v in value.items()}
    return value


def _nbytes(tensors: list) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


@functools.cache
def _op_name(func: Any) -> tuple[str, str]:
    ns, _, name = func._schema.name.partition("::")
    return f"{ns}::{name}", func._overloadname


def _aten_call(func: Any, ins: list, outs: list) -> AtenCall:
    op, overload = _op_name(func)
    in_shapes, in_dtypes = describe_tensors(ins)
    out_shapes, out_dtypes = describe_tensors(outs)
    return AtenCall(op=op, overload=overload, input_shapes=in_shapes, input_dtypes=in_dtypes,
                    output_shapes=out_shapes, output_dtypes=out_dtypes)


# ------------------------------------------------- meta-device substitutes


def _meta_sdpa(recorder: _AtenRecorder, query, key, value, *args, **kwargs):
    """F.scaled_dot_product_attention on meta: torch_npu takes the op whole, so record it as one ATen call and
    return an output laid out as the CPU kernel lays it out: like the query (torch.empty_like). The meta
    backend decomposes it into math with a contiguous output instead, so the common
    `q = x.view(B, L, H, E).transpose(1, 2)` ... `y.transpose(1, 2).view(B, L, H * E)` fails on meta although it
    runs on a CPU."""
    import torch
    from torch.utils.flop_counter import sdpa_flop_count

    # allocating the stand-in output is not the model's work: neither this call's ATen op nor a loose one
    sink, loose, recorder.sink, recorder.loose = recorder.sink, recorder.loose, None, None
    if value.shape[-1] == query.shape[-1]:
        out = torch.empty_like(query)
    else:
        out = query.new_empty((*query.shape[:-1], value.shape[-1]))
    recorder.sink, recorder.loose = sink, loose
    if recorder.sink is not None:
        tensors = [t for t in (query, key, value, *args, *kwargs.values()) if isinstance(t, torch.Tensor)]
        recorder.sink.append(AtenCall("aten::scaled_dot_product_attention", "default", *describe(tensors),
                                      *describe(out)))
        with contextlib.suppress(Exception):
            recorder.flops += int(sdpa_flop_count(query.shape, key.shape, value.shape))
        recorder.bytes += _nbytes(tensors) + _nbytes([out])
    return out


def _meta_substitute(fn: Any, args: tuple, kwargs: dict) -> Callable | None:
    """A meta-device stand-in for fn when one is needed and every tensor argument is on meta."""
    import torch
    import torch.nn.functional as F

    if fn is not F.scaled_dot_product_attention and getattr(fn, "__name__", "") != "scaled_dot_product_attention":
        return None
    if not args or not isinstance(args[0], torch.Tensor) or args[0].device.type != "meta":
        return None
    return _meta_sdpa


# ------------------------------------------------------- autograd Functions


class AutogradFunctionCall:
    """A callable standing for `SomeFunction.apply` so that the Function appears as one operator."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.key = f"{display_module(cls.__module__)}.{cls.__qualname__}"
        self.__name__ = cls.__name__
        self.__qualname__ = cls.__qualname__
        self.__module__ = __name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.cls.apply(*args, **kwargs)


@functools.cache
def _autograd_call(cls: type) -> AutogradFunctionCall:
    return AutogradFunctionCall(cls)


@contextlib.contextmanager
def _patched_function_apply(on_apply: Callable[[type, Callable, tuple, dict], Any]):
    """Route every autograd.Function.apply through on_apply(cls, original_apply, args, kwargs)."""
    import torch

    original = torch.autograd.Function.__dict__["apply"]

    def apply(cls, *args, **kwargs):
        return on_apply(cls, functools.partial(original.__func__, cls), args, kwargs)

    torch.autograd.Function.apply = classmethod(apply)
    try:
        yield
    finally:
        torch.autograd.Function.apply = original


# ------------------------------------------------------ compiled extensions


class ExtensionCall:
    """A callable standing for a function of a compiled extension module (a C++/CUDA extension built with
    torch.utils.cpp_extension or pybind11), so that the call appears as one operator of kind 'extension'."""

    def __init__(self, fn: Callable, module_name: str) -> None:
        self.fn = fn
        self.key = f"{module_name}.{fn.__name__}"
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__name__
        self.__module__ = __name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _is_extension_module(module: Any) -> bool:
    """A compiled module that is neither torch's nor the standard library's (where user C++ code lives)."""
    import sysconfig
    import types

    filename = getattr(module, "__file__", None) or ""
    if not isinstance(module, types.ModuleType) or not filename.endswith((".so", ".pyd")):
        return False
    stdlib = tuple(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib"))
    return not filename.startswith(stdlib) and not is_library_file(filename) and \
        module.__name__.split(".")[0] not in ("torch", "numpy", "_operator")


def _extension_functions(model: Any) -> list[tuple[Any, str, ExtensionCall]]:
    """(owner, attribute, call) for every compiled-extension function the model's code can reach: extension
    modules and functions bound in the globals of the modules that define the model's classes."""
    found: dict[tuple[int, str], tuple[Any, str, ExtensionCall]] = {}
    code_modules = {sys.modules.get(type(m).__module__) for m in model.modules()}
    for code in code_modules:
        if code is None or code.__name__.startswith("torch"):
            continue
        for name, value in list(vars(code).items()):
            if _is_extension_module(value):
                for fname, fn in list(vars(value).items()):
                    if not fname.startswith("_") and type(fn).__name__ == "builtin_function_or_method":
                        found[(id(value), fname)] = (value, fname, ExtensionCall(fn, value.__name__))
            elif type(value).__name__ == "builtin_function_or_method" and \
                    _is_extension_module(sys.modules.get(getattr(value, "__module__", None) or "")):
                found[(id(code), name)] = (code, name, ExtensionCall(value, value.__module__))
    return list(found.values())


@contextlib.contextmanager
def _patched_extensions(model: Any, on_call: Callable[[ExtensionCall, tuple, dict], Any]):
    """Route every reachable compiled-extension function through on_call(call, args, kwargs) while capturing."""
    patches = _extension_functions(model)
    for owner, name, call in patches:
        setattr(owner, name, functools.partial(on_call, call))
    try:
        yield
    finally:
        for owner, name, call in patches:
            setattr(owner, name, call.fn)


# -------------------------------------------------------------- source lines


def _source_from_stack_trace(stack_trace: str | None) -> str | None:
    if not stack_trace:
        return None
    frames = []
    for line in stack_trace.splitlines():
        line = line.strip()
        if line.startswith('File "'):
            filename, _, rest = line[6:].partition('", line ')
            lineno = rest.split(",")[0]
            if lineno.isdigit():
                frames.append(traceback.FrameSummary(filename, int(lineno), ""))
    return user_frame(frames)


def _source_from_frames() -> str | None:
    """'file:line' of the innermost caller outside torch and opassess (walked for every operator call)."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _is_library_filename(filename):
            return f"{display_path(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


@functools.lru_cache(maxsize=4096)
def _is_library_filename(filename: str) -> bool:
    return is_library_file(filename)


# ---------------------------------------------------------------- fx capture


@dataclass
class _NodeBuild:
    """Mutable scratch while a capture runs; frozen into OpNode at the end."""

    name: str
    op: str
    kind: str
    module_path: str
    attrs: dict
    inputs: tuple
    outputs: tuple
    aten: tuple
    source: str | None
    flops: int
    bytes_moved: int
    entry: tuple = ()

    def freeze(self) -> OpNode:
        return OpNode(name=self.name, op=self.op, kind=self.kind, module_path=self.module_path, attrs=self.attrs,
                      input_shapes=self.inputs[0], input_dtypes=self.inputs[1], output_shapes=self.outputs[0],
                      output_dtypes=self.outputs[1], aten=self.aten, source=self.source, flops=self.flops,
                      bytes_moved=self.bytes_moved, entry=self.entry)


class NodeFailure(Exception):
    """A graph node raised while running; carries the node's name and source line."""

    def __init__(self, node: str, source: str | None, cause: BaseException) -> None:
        super().__init__(f"node {node}" + (f" ({source})" if source else "") + f": {_describe(cause)}")
        self.cause = cause


Progress = Callable[[str], None]
PROGRESS_EVERY = 250  # operator calls between two progress messages during a capture


def _no_progress(_: str) -> None:
    return None


def _capture_fx(loaded: LoadedModel,
                progress: Progress = _no_progress) -> tuple[list[OpNode], list[tuple[str, str]]]:
    import torch
    import torch.fx as fx

    model = loaded.module

    class Tracer(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return is_leaf_module(m)

    tracer = Tracer()
    tracer.record_stack_traces = True

    def on_apply(cls, original, args, kwargs):
        from torch.utils import _pytree as pytree

        if any(isinstance(a, fx.Proxy) for a in pytree.tree_leaves((args, kwargs))):
            return tracer.create_proxy("call_function", _autograd_call(cls), args, kwargs)
        return original(*args, **kwargs)

    def on_extension(call, *args, **kwargs):
        from torch.utils import _pytree as pytree

        if any(isinstance(a, fx.Proxy) for a in pytree.tree_leaves((args, kwargs))):
            return tracer.create_proxy("call_function", call, args, kwargs)
        return call(*args, **kwargs)

    concrete = _concrete_kwargs(model, loaded.kwargs)
    with _patched_function_apply(on_apply), _patched_extensions(model, on_extension):
        graph = tracer.trace(model, concrete_args=concrete or None)

    recorder = _AtenRecorder()
    built: list[_NodeBuild] = []
    by_fx_name: dict[str, _NodeBuild] = {}

    class Runner(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            substitute = _meta_substitute(target, args, kwargs)
            if substitute is not None:
                return substitute(recorder, *args, **kwargs)
            return super().call_function(target, args, kwargs)

        def run_node(self, n):
            if n.op not in ("call_module", "call_function", "call_method"):
                return super().run_node(n)
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            source = _source_from_stack_trace(n.stack_trace)
            entries: list[str] = []
            with recorder.collect(), (_EntryRecorder(entries) if n.op == "call_module" else contextlib.nullcontext()):
                try:
                    result = super().run_node(n)
                except Exception as exc:
                    raise NodeFailure(n.name, source, exc) from exc
            calls, flops, nbytes = recorder.last
            if not _is_operator_call(calls, args, result) or _is_container_type(n.target):
                return result
            stack = n.meta.get("nn_module_stack") or {}
            owner = next(reversed(stack.values()))[0] if stack else ""
            called = None  # the user-level callable, for its entry ATen op (a leaf module's are in `entries`)
            if n.op == "call_module":
                sub = self.fetch_attr(n.target)
                op, kind, path, attrs = module_op(sub), "module", str(n.target), module_attrs(sub)
            elif n.op == "call_method":
                op, kind, path = method_key(str(n.target)), "method", owner
                attrs = call_attrs(getattr(torch.Tensor, str(n.target), None), args, kwargs, skip_first=True)
                called = getattr(torch.Tensor, str(n.target), None) or n.target
            elif n.target is getattr and len(args) == 2 and args[1] in _OPERATOR_PROPERTIES:  # w.T
                op, kind, path, attrs = method_key(args[1]), "method", owner, {}
                called = getattr(torch.Tensor, args[1]).__get__
            else:
                (op, kind), path = function_key(n.target), owner
                attrs = call_attrs(n.target, args, kwargs)
                called = n.target
            if called is not None:
                entries = [e for e in (entry_op(called),) if e]
            node = _NodeBuild(n.name, op, kind, path, attrs, describe((args, kwargs)), describe(result),
                              calls, source, flops, nbytes, tuple(dict.fromkeys(entries)))
            built.append(node)
            by_fx_name[n.name] = node
            if len(built) % PROGRESS_EVERY == 0:
                progress(f"capturing with fx: {len(built)} operator calls")
            return result

    inputs = _placeholder_values(model, loaded.args, loaded.kwargs)
    with torch.no_grad(), recorder.mode:
        Runner(model, graph=graph).run(*inputs)
    edges = []
    for n in graph.nodes:
        if n.name in by_fx_name:
            for producer in _producers(n, by_fx_name):
                edges.append((producer, n.name))
    return [b.freeze() for b in built], edges


def _is_container_type(target: Any) -> bool:
    """A namedtuple (or other tuple, list or dict class) that FX records when forward() packs its outputs."""
    return isinstance(target, type) and issubclass(target, (tuple, list, dict))


def _EntryRecorder(sink: list[str]):  # noqa: N802 - a mode factory, used like a class
    """A torch-function mode noting the first-level calls a leaf module makes (F.conv2d, _VF.lstm)."""
    from torch.overrides import TorchFunctionMode

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            entry = entry_op(func)
            if entry:
                sink.append(entry)
            return func(*args, **(kwargs or {}))

    return Mode()


def _producers(n, recorded: dict) -> set[str]:
    """Recorded nodes feeding n, looking through unrecorded ones (tuple indexing, size queries)."""
    found, stack, seen = set(), list(n.all_input_nodes), set()
    while stack:
        p = stack.pop()
        if p.name in seen:
            continue
        seen.add(p.name)
        if p.name in recorded:
            found.add(p.name)
        else:
            stack.extend(p.all_input_nodes)
    return found


def _placeholder_values(model: Any, args: tuple, kwargs: dict) -> list:
    """The example inputs in the order of the traced graph's placeholders. FX runs a graph positionally, with one
    placeholder per forward parameter (positional ones, keyword-only ones, then *args), including the plain values
    fixed for tracing (use_cache=False: its placeholder asserts the value); a dict of example inputs need not follow
    the forward's order or name every parameter, so each value is bound by name."""
    import inspect

    signature = inspect.signature(model.forward)
    bound = signature.bind(*args, **kwargs).arguments
    params = list(signature.parameters.values())
    ordered = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)] + \
        [p for p in params if p.kind is p.KEYWORD_ONLY] + [p for p in params if p.kind is p.VAR_POSITIONAL]
    values: list = []
    for p in ordered:
        if p.kind is p.VAR_POSITIONAL:
            values.extend(bound.get(p.name, ()))
        else:
            values.append(bound.get(p.name, p.default))
    return values


def _concrete_kwargs(model: Any, kwargs: dict) -> dict:
    """Plain (non-tensor) keyword inputs such as use_cache=False are fixed for tracing, as the user passed them."""
    import torch

    return {k: v for k, v in kwargs.items() if not isinstance(v, torch.Tensor)}


# ------------------------------------------------------------ export capture


# Checks torch.export inserts into its graph (dtype/device asserts before a .to(), size constraints): they are the
# exporter's, not the model's, and nothing of them runs on a device.
_EXPORT_CHECKS = {"_assert_tensor_metadata", "_assert_scalar", "_assert_async", "sym_constrain_range",
                  "sym_constrain_range_for_size"}


def _capture_export(loaded: LoadedModel,
                    progress: Progress = _no_progress) -> tuple[list[OpNode], list[tuple[str, str]]]:
    import torch

    model = loaded.module
    if loaded.info.parameters > EXPORT_MAX_PARAMETERS:
        raise _Skipped(f"skipped: {loaded.info.parameters:,} parameters is over the export limit of "
                       f"{EXPORT_MAX_PARAMETERS:,} (torch.export costs ~13x one recorded forward)")
    with _quiet_torch_logs():  # a failed export logs the whole graph; the attempt's one-line error is enough
        exported = torch.export.export(model, loaded.args, loaded.kwargs, strict=False)
    modules = dict(model.named_modules())
    signature = exported.graph_signature
    weights = {*signature.inputs_to_parameters, *signature.inputs_to_buffers,
               *signature.inputs_to_lifted_tensor_constants}  # placeholders export lifts out of the modules
    nodes: list[_NodeBuild] = []
    by_name: dict[str, _NodeBuild] = {}
    # id(leaf module build) -> (the call's nn_module_stack key, graph values the call got from outside)
    module_calls: dict[int, tuple[str, dict[str, Any]]] = {}
    for n in exported.graph.nodes:
        if n.op != "call_function" or getattr(n.target, "__name__", "").split(".")[0] in _EXPORT_CHECKS:
            continue
        stack = n.meta.get("nn_module_stack") or {}
        path = next(reversed(stack.values()))[0] if stack else ""
        path = _export_path(path)
        call_key = next(reversed(stack)) if stack else ""  # "L__self___fc", then "L__self___fc@1" for a 2nd call
        target = n.target
        schema = getattr(target, "_schema", None)
        vals = [a.meta.get("val") for a in n.all_input_nodes]
        out = n.meta.get("val")
        call = None
        if schema is not None:
            ns, _, name = schema.name.partition("::")
            call = AtenCall(f"{ns}::{name}", target._overloadname, *describe(vals), *describe(out))
        source = _source_from_stack_trace(n.meta.get("stack_trace"))
        sub = modules.get(path)
        if sub is not None and is_leaf_module(sub):
            # consecutive ATen nodes of one leaf module call form one operator node, whose inputs are what the
            # module's forward() received (as in the other captures), not its weights nor its own intermediates
            last = nodes[-1] if nodes else None
            previous = module_calls.get(id(last)) if last is not None else None
            if previous is None or previous[0] != call_key or last.source != source:
                last = None
            inputs = module_calls[id(last)][1] if last is not None else {}
            inputs.update((a.name, a.meta.get("val")) for a in n.all_input_nodes
                          if a.name not in weights and (last is None or by_name.get(a.name) is not last))
            if last is not None:
                last.aten = last.aten + ((call,) if call else ())
                last.inputs = describe(list(inputs.values()))
                last.outputs = describe(out)
                by_name[n.name] = last
                continue
            build = _NodeBuild(n.name, module_op(sub), "module", path, module_attrs(sub),
                               describe(list(inputs.values())), describe(out), (call,) if call else (), source, 0, 0)
            module_calls[id(build)] = (call_key, inputs)
        else:
            op, kind = function_key(target)
            attrs = {}
            if schema is not None:
                for arg, value in zip(schema.arguments, n.args, strict=False):
                    plain = jsonable(value)
                    if plain is not _SKIP:
                        attrs[arg.name] = plain
            build = _NodeBuild(n.name, op, kind, path, attrs, describe(vals), describe(out),
                               (call,) if call else (), source, 0, 0)
        nodes.append(build)
        by_name[n.name] = build
    for build in nodes:  # export traces with fake tensors: a size computed from the data stays a symbol (u0)
        if any(type(d) is not int for shape in build.inputs[0] + build.outputs[0] for d in shape):
            raise TraceError(f"node {build.name}: a data-dependent size ({build.op}) has no value in torch.export; "
                             "a run on real data measures it")
    edges = set()
    for n in exported.graph.nodes:
        if n.name in by_name:
            for p in n.all_input_nodes:
                if p.name in by_name and by_name[p.name] is not by_name[n.name]:
                    edges.add((by_name[p.name].name, by_name[n.name].name))
    return [b.freeze() for b in nodes], sorted(edges)


@contextlib.contextmanager
def _quiet_torch_logs():
    import io
    import logging

    logger = logging.getLogger("torch")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        # torch.export prints the partial graph of a failed export to stderr
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)


def _export_path(path: str) -> str:
    # export names submodules "L['self'].layer1" or "layer1.0.conv1" depending on the torch version
    return path.replace("L['self'].", "").replace("L['self']", "")


class _Skipped(Exception):
    """A capture method was not attempted (size limit)."""


# ---------------------------------------------------------- dispatch capture


def _capture_dispatch(loaded: LoadedModel,
                      progress: Progress = _no_progress) -> tuple[list[OpNode], list[tuple[str, str]]]:
    import torch
    from torch.overrides import TorchFunctionMode

    model = loaded.module
    paths = {id(m): name for name, m in model.named_modules()}
    recorder = _AtenRecorder()
    built: list[_NodeBuild] = []
    producer: dict[int, str] = {}  # id(tensor) -> node name; tensors are kept alive in `keep`
    keep: list[Any] = []
    edges: set[tuple[str, str]] = set()
    module_stack: list[str] = [""]
    depth = {"leaf": 0, "fn": 0}
    leaf_entries: list[list[str]] = []  # first-level calls made inside the running leaf module
    counter = itertools.count()

    def new_node(op, kind, path, attrs, args, kwargs, result, source, calls, flops, nbytes, entry=()):
        name = f"{op.rsplit('.', 1)[-1].rsplit('::', 1)[-1].lower()}_{next(counter)}"
        ins, outs = tensors_in((args, kwargs)), tensors_in(result)
        node = _NodeBuild(name, op, kind, path, attrs, describe_tensors(ins), describe_tensors(outs), calls,
                          source, flops, nbytes, tuple(dict.fromkeys(entry)))
        built.append(node)
        if len(built) % PROGRESS_EVERY == 0:
            progress(f"capturing with dispatch: {len(built)} operator calls")
        for t in ins:
            if id(t) in producer:
                edges.add((producer[id(t)], name))
        for t in outs:
            producer[id(t)] = name
            keep.append(t)

    def call_leaf(module, args, kwargs, run):
        path = paths.get(id(module), type(module).__name__)
        source = _source_from_frames()
        depth["leaf"] += 1
        leaf_entries.append([])
        try:
            with recorder.collect():
                result = run()
        finally:
            depth["leaf"] -= 1
            entry = leaf_entries.pop()
        calls, flops, nbytes = recorder.last
        new_node(module_op(module), "module", path, module_attrs(module), args, kwargs, result, source,
                 calls, flops, nbytes, entry)
        return result

    original_call = torch.nn.Module.__call__

    def patched_call(module, *args, **kwargs):
        if depth["leaf"] or depth["fn"]:
            return original_call(module, *args, **kwargs)
        if is_leaf_module(module):
            return call_leaf(module, args, kwargs, lambda: original_call(module, *args, **kwargs))
        module_stack.append(paths.get(id(module), module_stack[-1]))
        try:
            return original_call(module, *args, **kwargs)
        finally:
            module_stack.pop()

    def record_call(op, kind, attrs, args, kwargs, run, entry=()):
        source = _source_from_frames()
        depth["fn"] += 1
        try:
            with recorder.collect():
                result = run()
        finally:
            depth["fn"] -= 1
        calls, flops, nbytes = recorder.last
        if _is_operator_call(calls, args, result):
            new_node(op, kind, module_stack[-1], attrs, args, kwargs, result, source, calls, flops, nbytes, entry)
        return result

    class FunctionMode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if depth["leaf"] and not depth["fn"] and leaf_entries:
                entry = entry_op(func)  # F.conv2d inside nn.Conv2d, _VF.lstm inside nn.LSTM
                if entry:
                    leaf_entries[-1].append(entry)
                return func(*args, **kwargs)
            if depth["leaf"] or depth["fn"]:
                return func(*args, **kwargs)
            name = getattr(func, "__name__", "")
            if name in _NOT_OPERATORS and not (name == "__get__" and _is_operator_property(func)):
                return func(*args, **kwargs)
            op, kind = function_key(func)
            attrs = {} if name == "__get__" else call_attrs(func, args, kwargs, skip_first=(kind == "method"))
            entry = entry_op(func)
            substitute = _meta_substitute(func, args, kwargs)
            run = (lambda: substitute(recorder, *args, **kwargs)) if substitute else (lambda: func(*args, **kwargs))
            return record_call(op, kind, attrs, args, kwargs, run, (entry,) if entry else ())

    def on_apply(cls, original, args, kwargs):
        if depth["leaf"] or depth["fn"]:
            return original(*args, **kwargs)
        call = _autograd_call(cls)
        return record_call(call.key, "custom", call_attrs(cls.forward, (None,) + args, kwargs, skip_first=True),
                           args, kwargs, lambda: original(*args, **kwargs))

    def on_extension(call, *args, **kwargs):
        if depth["leaf"] or depth["fn"]:
            return call(*args, **kwargs)
        return record_call(call.key, "extension", call_attrs(call.fn, args, kwargs), args, kwargs,
                           lambda: call(*args, **kwargs))

    # Custom ops called outside any recorded function (torch.ops.ns.op does not always pass through the
    # torch-function mode) are caught at the dispatch level by the sink below.
    loose: list[AtenCall] = []
    torch.nn.Module.__call__ = patched_call
    try:
        with torch.no_grad(), _patched_function_apply(on_apply), _patched_extensions(model, on_extension), \
                recorder.mode, FunctionMode():
            recorder.loose = loose
            model(*loaded.args, **loaded.kwargs)
            recorder.loose = None
    finally:
        torch.nn.Module.__call__ = original_call
    for call in loose:  # ATen or custom ops that no user-level call owned
        ns = call.op.partition("::")[0]
        built.append(_NodeBuild(f"{call.op.rsplit('::', 1)[-1]}_{next(counter)}", call.op,
                                "aten" if ns in ("aten", "prims") else "custom", "", {},
                                (call.input_shapes, call.input_dtypes), (call.output_shapes, call.output_dtypes),
                                (call,), None, 0, 0))
    return [b.freeze() for b in built], sorted(edges)


# ------------------------------------------------------------------- driver


def _capture_dispatch_compiling(loaded: LoadedModel,
                                progress: Progress = _no_progress) -> tuple[list[OpNode], list[tuple[str, str]]]:
    """The dispatch capture with torch.compiler.is_compiling() answering True, tried on meta after a plain dispatch
    capture failed on a value. Libraries skip their data-dependent fast paths while being compiled or exported
    (Hugging Face transformers' mask helpers call `.all()` on the attention mask unless they are), and the meta
    device has no values: this takes the graph-safe path, the one torch.compile or an NPU graph would run."""
    import torch

    if loaded.device != "meta":
        raise _Skipped("skipped: only needed on the meta device")
    original = torch.compiler.is_compiling
    torch.compiler.is_compiling = lambda: True
    try:
        return _capture_dispatch(loaded, progress)
    finally:
        torch.compiler.is_compiling = original


_CAPTURES: dict[str, Callable[[LoadedModel, Progress], tuple[list[OpNode], list[tuple[str, str]]]]] = {
    "fx": _capture_fx,
    "export": _capture_export,
    "dispatch": _capture_dispatch,
    "dispatch-compiling": _capture_dispatch_compiling,
}


def _is_meta_problem(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}".lower()
    cause = getattr(exc, "cause", None)
    if cause is not None:
        text += f" {type(cause).__name__}: {cause}".lower()
    return "meta" in text or "data-dependent" in text or "item()" in text or "cannot copy out" in text


def check_methods(methods: tuple[str, ...]) -> None:
    """Raise TraceError naming the first capture method that does not exist."""
    unknown = [m for m in methods if m not in _CAPTURES]
    if unknown:
        raise TraceError(f"unknown capture method {unknown[0]!r}; expected one of {', '.join(_CAPTURES)}")


# The CPU fallback allocates real weights: it is refused when they would take more than this share of the
# machine's memory (activations and the interpreter need the rest).
CPU_FALLBACK_MEMORY_SHARE = 0.5


def _check_fits_in_memory(loaded: LoadedModel, why: BaseException | None) -> None:
    """Refuse the CPU fallback for a model whose weights would not fit, instead of running the machine out of memory."""
    import os

    needed = sum(p.numel() * p.element_size() for p in loaded.module.parameters()) + \
        sum(b.numel() * b.element_size() for b in loaded.module.buffers())
    try:
        available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system: let the allocation decide
        return
    if needed > CPU_FALLBACK_MEMORY_SHARE * available:
        raise TraceError(
            f"{loaded.info.source}: forward() of {loaded.info.class_name} does not run on the meta device "
            f"({_first_line(why)}), and the CPU fallback would need {needed / 2**30:.1f} GiB of real weights on a "
            f"machine with {available / 2**30:.1f} GiB: make forward() run on meta (no .item(), no data-dependent "
            "Python control flow) or scan a smaller configuration")


def trace_model(loaded: LoadedModel, methods: tuple[str, ...] | None = None,
                progress: Callable[[str], None] | None = None) -> Capture:
    """Capture the model's operators by the first method in `methods` that works (meta device first, then CPU).

    methods=None picks the order by model size (capture_order)."""
    methods = methods or capture_order(loaded.info.parameters)
    check_methods(methods)
    attempts: list[CaptureAttempt] = []
    device_note = None
    current = loaded
    forward_error: BaseException | None = None
    for device in (loaded.device, "cpu") if loaded.device != "cpu" else ("cpu",):
        if device != current.device:
            _check_fits_in_memory(loaded, forward_error)
            device_note = f"the model does not run on the {loaded.device} device ({_first_line(forward_error)}); " \
                          "it was built and run on the CPU with real weights"
            current = on_device(loaded, device)
        forward_error = None
        for method in methods:
            if progress:
                progress(f"capturing with {method} on {device}")
            started = time.perf_counter()
            try:
                nodes, edges = _CAPTURES[method](current, progress or _no_progress)
            except _Skipped as exc:
                attempts.append(CaptureAttempt(method, str(exc), 0.0))
                continue
            except (Exception, SystemExit) as exc:  # every failure is recorded; the next method gets its chance
                attempts.append(CaptureAttempt(f"{method}@{device}" if device != loaded.device else method,
                                               _first_line(exc), time.perf_counter() - started))
                # the plain eager forward's error explains best why a model does not run on this device
                if method == "dispatch" or (forward_error is None and
                                            (method.startswith("dispatch") or isinstance(exc, NodeFailure))):
                    forward_error = exc
                if method == "dispatch" and not _is_meta_problem(exc):
                    break  # the eager forward itself fails: no other capture can succeed on this device
                continue
            attempts.append(CaptureAttempt(f"{method}@{device}" if device != loaded.device else method, None,
                                           time.perf_counter() - started))
            types = {name: type(m).__name__ for name, m in current.module.named_modules()}
            return Capture(method=method, device=device, device_note=device_note, attempts=tuple(attempts),
                           nodes=tuple(nodes), edges=tuple(edges), module_types=types)
        if forward_error is None or not _is_meta_problem(forward_error):
            break
    cause = forward_error or (attempts[-1].error if attempts else "no capture method")
    where = f"{loaded.info.source}: forward() of {loaded.info.class_name}"
    if isinstance(cause, BaseException):
        raise TraceError(f"{where} raised {_first_line(cause)}") from cause
    raise TraceError(f"{where} could not be captured: {cause}")


def _first_line(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    if isinstance(exc, NodeFailure):
        return str(exc).splitlines()[0]
    return _describe(exc)
