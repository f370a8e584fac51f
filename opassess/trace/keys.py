"""Operator naming: the key and kind a report gives a module, function, method or ATen call."""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from ..load import display_module
from .patches import AutogradFunctionCall, ExtensionCall

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
OPERATOR_PROPERTIES = frozenset({"T", "mT", "H", "mH", "real", "imag"})
# Property getters and metadata queries that are not operators.
NOT_OPERATORS = {"__get__", "size", "dim", "numel", "element_size", "is_contiguous", "stride", "storage_offset",
                 "data_ptr", "__len__", "__format__", "__repr__", "__index__",
                 "is_floating_point", "is_complex", "get_device", "__iter__", "__hash__", "__eq_meta__"}


def module_key(cls: type) -> str:
    """torch.nn.modules.conv.Conv2d -> 'torch.nn.Conv2d'; other classes by module and qualified name."""
    import torch

    return class_key(cls, torch.nn, "torch.nn")


def class_key(cls: type, namespace: Any, prefix: str) -> str:
    """'<prefix>.<name>' when `namespace` (torch.nn, torch.optim) exports the class under its name, as torch_npu's
    API lists name it; other classes by module and qualified name."""
    if getattr(namespace, cls.__name__, None) is cls:
        return f"{prefix}.{cls.__name__}"
    return f"{display_module(cls.__module__)}.{cls.__qualname__}"


def module_op(module: Any) -> str:
    """The operator key of a module call: its class, or for a TorchScript module the class it was scripted from."""
    import torch

    if isinstance(module, torch.jit.ScriptModule):
        cls = scripted_class(module._c._type().qualified_name())
        return module_key(cls) if cls is not None else f"torchscript.{module.original_name}"
    return module_key(type(module))


@functools.cache
def scripted_class(qualified: str) -> type | None:
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
        return fn.key, fn.kind
    if isinstance(fn, ExtensionCall):
        return fn.key, "extension"
    if isinstance(fn, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        ns, _, name = (fn._qualified_op_name if isinstance(fn, torch._ops.OpOverloadPacket)
                       else fn._schema.name).partition("::")
        if isinstance(fn, torch._ops.OpOverload) and ns == "aten" and project_overload(fn._schema.name,
                                                                                      fn._overloadname):
            return f"aten::{name}.{fn._overloadname}", "custom"  # a project's kernel posing as an ATen overload
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


@functools.lru_cache(maxsize=1024)
def project_overload(name: str, overload: str) -> bool:
    """An ATen overload a project registered (torch.library.Library("aten", "FRAGMENT"), TORCH_LIBRARY_FRAGMENT(aten)):
    its schema was registered outside PyTorch's own ATen sources ('aten::relu.myimpl', registered at model.py:5).
    PyTorch registers every one of its own from aten/src/ATen (RegisterSchema.cpp, a few native/*.cpp)."""
    import torch

    qualified = name if overload in ("", "default") else f"{name}.{overload}"
    debug = next((line for line in torch._C._dispatch_dump(qualified).splitlines() if line.startswith("debug:")), "")
    return "registered at" in debug and "aten/src/ATen/" not in debug


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
    if name in NOT_OPERATORS:
        return None
    # torch._weight_norm names aten::_weight_norm; dunders and private helpers without an ATen op name none
    return f"aten::{name}" if name and not name.startswith("__") and _aten_exists(name) else None


@functools.lru_cache(maxsize=4096)
def _overloads(entry: str) -> tuple[str, ...]:
    import torch

    return tuple(getattr(torch.ops.aten, entry.partition("::")[2]).overloads())


def entry_overload(fn: Any, args: tuple, kwargs: dict) -> str | None:
    """`entry_op` with the overload the dispatcher takes for these arguments: torch.repeat_interleave(x, 2) ->
    'aten::repeat_interleave.self_int' (the tensor-repeats overload is another kernel, with other support), x.add(1,
    out=y) -> 'aten::add.out'; the bare name when the schemas cannot tell (Python-level arguments the ATen op does not
    take, e.g. F.dropout's inplace) or when the op has one overload."""
    entry = entry_op(fn)
    if entry is None or not entry.startswith("aten::") or "." in entry or entry in ("aten::index", "aten::index_put") \
            or len(_overloads(entry)) < 2:
        return entry
    import torch

    try:
        overload = torch._C._jit_resolve_packet(entry, *args, **kwargs)
    except Exception:  # noqa: BLE001 - no schema takes these arguments as given: the name alone is known
        return entry
    return entry if overload in ("", "default") else f"{entry}.{overload}"


def is_operator_property(getter: Any) -> bool:
    """A `__get__` of a Tensor attribute that computes a view (w.T), not of metadata (x.shape)."""
    return getattr(getattr(getter, "__self__", None), "__name__", None) in OPERATOR_PROPERTIES


def is_leaf_module(module: Any) -> bool:
    """torch.nn's own layers are operators; containers and user modules are walked into. A TorchScript module is
    one operator too: neither FX nor the torch-function mode can see inside it (only its ATen ops)."""
    import torch

    cls = type(module)
    if isinstance(module, torch.jit.ScriptModule):
        return True
    return cls.__module__.startswith("torch.nn") and not isinstance(
        module, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)) and cls is not torch.nn.Module
