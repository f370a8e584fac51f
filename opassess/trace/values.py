"""Values seen by a capture: the tensors inside them, their shapes and dtypes, and plain attributes as JSON."""
from __future__ import annotations

import functools
from typing import Any

from .keys import scripted_class
from .patches import ExtensionCall

SKIP = object()  # jsonable()'s answer for a value that is not a plain attribute


def jsonable(value: Any) -> Any:
    """A JSON-able copy of a plain attribute value, or SKIP for tensors, modules and other objects."""
    import torch

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    if isinstance(value, (torch.device, torch.memory_format, torch.layout)):
        return str(value)
    if isinstance(value, (tuple, list, torch.Size)):
        items = [jsonable(v) for v in value]
        return SKIP if any(v is SKIP for v in items) else items
    return SKIP


def tensors_in(value: Any) -> list:
    """The tensors inside a value (nested tuples, lists and dicts), in order. A hand-written walk: this runs
    for every operator call and every ATen op, where torch's general pytree cost a third of the capture."""
    tensor = tensor_type()
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
def tensor_type() -> Any:
    """torch.Tensor, imported once (torch is imported lazily so that `opassess --help` stays fast)."""
    import torch

    return torch.Tensor


def describe(value: Any) -> tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]:
    """Shapes and dtypes of the tensors in a value (flattened); non-tensor leaves are skipped."""
    return describe_tensors(tensors_in(value))


def describe_tensors(tensors: list) -> tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]:
    """Shapes and dtype names ('float32') of a list of tensors."""
    return tuple(tuple(t.shape) for t in tensors), tuple(dtype_name(t.dtype) for t in tensors)


@functools.cache
def dtype_name(dtype: Any) -> str:
    """'float32' for torch.float32."""
    return str(dtype).removeprefix("torch.")


def is_operator_call(calls: tuple, args: tuple, result: Any) -> bool:
    """A call is an operator when it dispatched ATen ops, or takes a tensor first and returns one (a view that
    dispatched nothing on this backend). x.size(1) and indexing into a returned tuple are not."""
    import torch

    return bool(calls) or (bool(args) and isinstance(args[0], torch.Tensor) and bool(tensors_in(result)))


@functools.cache
def _signature(fn: Any):
    import inspect

    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


ATTR_ITEMS = 64  # a list argument of more items is left out of a signature (an index list, not a setting)
ATTR_CHARS = 256  # likewise a longer string


def call_attrs(fn: Any, args: tuple, kwargs: dict, skip_first: bool = False) -> dict[str, Any]:
    """The non-tensor arguments of a call (scalars, lists, bools, None, dtypes), named by the function's signature
    when Python can tell, by the operator's schema for a torch.ops call, else arg0, arg1, ...; a value over
    ATTR_ITEMS items or ATTR_CHARS characters is left out (the signature stays bounded)."""
    if isinstance(fn, ExtensionCall):
        fn = fn.fn
    cls = getattr(fn, "cls", None)  # trace.patches.AutogradFunctionCall (the fx capture's target): its forward
    if cls is not None and hasattr(cls, "forward") and hasattr(cls, "apply"):
        fn, args, skip_first = cls.forward, (None, *args), True
    named = _schema_bound(fn, args, kwargs)
    sig = None
    if named is None:
        try:
            sig = _signature(fn)
        except TypeError:  # unhashable callable
            sig = None
    if sig is not None:
        try:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()  # F.interpolate(x, size=...) also records scale_factor=None, mode="nearest"
            named = dict(bound.arguments)
            for pname, param in sig.parameters.items():
                if param.kind is param.VAR_KEYWORD and pname in named:
                    named.update(named.pop(pname))
                elif param.kind is param.VAR_POSITIONAL and pname in named:  # (*args): arg0, arg1, ... as passed
                    named.update({f"arg{i}": v for i, v in enumerate(named.pop(pname))})
        except TypeError:
            sig = None
    if named is None:
        named = {f"arg{i}": a for i, a in enumerate(args)}
        named.update(kwargs)
    attrs = {}
    for i, (name, value) in enumerate(named.items()):
        if skip_first and i == 0:
            continue
        plain = jsonable(value)
        if plain is not SKIP and _bounded(plain):
            attrs[name] = plain
    return attrs


def _bounded(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= ATTR_CHARS
    if isinstance(value, list):
        return len(value) <= ATTR_ITEMS and all(_bounded(v) for v in value)
    return True


def _schema_bound(fn: Any, args: tuple, kwargs: dict) -> dict[str, Any] | None:
    """A torch.ops call's arguments named by its schema (defaults filled in), or None for any other callable: the
    packet `torch.ops.torchvision.roi_align` takes the first overload whose schema the call fits."""
    schemas = [getattr(fn, "_schema", None)]
    if schemas[0] is None and hasattr(fn, "overloads") and hasattr(fn, "_qualified_op_name"):
        try:
            schemas = [getattr(fn, name)._schema for name in fn.overloads()]
        except (AttributeError, RuntimeError):
            return None
    for schema in schemas:
        if schema is None:
            continue
        params = [a for a in schema.arguments if not a.is_out]
        if len(args) > len(params) or not set(kwargs) <= {p.name for p in params}:
            continue
        named = {}
        for index, param in enumerate(params):
            if index < len(args):
                named[param.name] = args[index]
            elif param.name in kwargs:
                named[param.name] = kwargs[param.name]
            elif param.has_default_value():
                named[param.name] = param.default_value
            else:
                break
        else:
            return named
    return None


def module_attrs(module: Any) -> dict[str, Any]:
    """Public non-tensor attributes of a layer (Conv2d stride/padding/dilation/..., LSTM proj_size/dropout/...)."""
    import torch

    attrs: dict[str, Any] = {}
    if isinstance(module, torch.jit.ScriptModule):  # its attributes live in TorchScript: read its class's constants
        names = getattr(scripted_class(module._c._type().qualified_name()), "__constants__", ())
        source = {name: getattr(module, name) for name in names if hasattr(module, name)}
    else:
        source = vars(module)
    for name, value in source.items():
        if name.startswith("_") or name == "training":
            continue
        plain = jsonable(value)
        if plain is not SKIP:
            attrs[name] = plain
    params = getattr(module, "_parameters", {})
    if "bias" in params or hasattr(module, "bias"):
        attrs["bias"] = getattr(module, "bias", None) is not None
    return dict(sorted(attrs.items()))
