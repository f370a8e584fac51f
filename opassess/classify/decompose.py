"""What a composite ATen op decomposes into, as the dispatcher of the torch in use runs it.

`composite_calls`: the ATen ops an op's composite kernel (CompositeImplicitAutograd, CompositeExplicitAutograd or
CompositeExplicitAutogradNonFunctional, whichever torch registers) calls, found by running that kernel once on meta
tensors shaped like a recorded call (torch's own registration, not a curated list). A structured op's functional
kernel calls its out variant (softplus_backward -> softplus_backward.grad_input); a true composite calls what it is
made of (select_backward -> zeros, select, copy_; Tensor.new_ones -> new_empty, fill_).

`decomposition`: the same for `opassess kb show`, traced once on a small example.

Used by `opassess kb show` for an API with no NPU kernel of its own (`torch.nn.Linear` -> aten::linear, which the
NPU never sees): the ops it dispatches are where the kernel facts apply. The example is one float32 [4, 4] tensor
per tensor argument, optional tensors included (Linear with a bias: aten::t, aten::addmm); an op whose required
arguments are not all tensors, or that refuses that example (conv2d wants 4-D input), gives None.
Also the dispatcher questions the classifier asks: which composite keys an op registers, whether it returns only to
the host (`returns_to_host`) or is a view (`is_view`), and the torch version.
"""
from __future__ import annotations

from functools import cache
from typing import Any

from ..trace.registrations import COMPOSITE_KEYS as COMPOSITE_KEYS  # re-exported
from ..trace.registrations import dispatch_kinds as dispatch_kinds  # re-exported
from ..trace.registrations import is_view as is_view  # re-exported

Shape = tuple[int, ...]


# Allocations a composite kernel makes for its result: not work of its own (every backend has empty)
_ALLOCATIONS = ("aten::empty", "aten::empty.memory_format", "aten::empty_strided", "aten::new_empty",
                "aten::new_empty_strided", "aten::empty_like", "aten::resize_")


def torch_version_text() -> str:
    import torch

    return torch.__version__.split("+")[0]


@cache
def decomposition(base: str) -> tuple[str, ...] | None:
    """'linear' -> ('aten::t', 'aten::addmm'); None when the op is not CompositeImplicitAutograd or the example
    does not fit its schema."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    packet = getattr(torch.ops.aten, base, None)
    if packet is None:
        return None
    overloads = packet.overloads()
    op = getattr(packet, "default" if "default" in overloads else overloads[0])
    if not torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd"):
        return None
    args = []
    for argument in op._schema.arguments:
        kind = str(argument.type)
        if kind in ("Tensor", "Optional[Tensor]"):
            args.append(torch.empty(4, 4))
        elif argument.has_default_value() or argument.kwarg_only:
            break
        else:
            return None
    try:
        graph = make_fx(lambda *xs: op(*xs))(*args)
    except Exception:  # noqa: BLE001 - any refusal of the example means "cannot tell", not an error
        return None
    calls = [n.target for n in graph.graph.nodes if n.op == "call_function"]
    return tuple(dict.fromkeys(f"aten::{c.name().split('::')[-1].removesuffix('.default')}"
                               for c in calls if hasattr(c, "name")))


Tensors = tuple[tuple[Shape, str], ...]  # (shape, dtype) of each tensor argument, in order


@cache
def composite_calls(qualified: str, inputs: Tensors = (),
                    output: Shape | None = None) -> CompositeCalls | None:
    """What the composite kernel of `qualified` ('aten::select_backward') calls when given meta tensors shaped like
    `inputs` ((shape, dtype) of a recorded call's tensors, in order), int lists shaped like `output` and defaults
    elsewhere: ((callee, its inputs, its output shape), ...) without allocations; None when torch registers no
    composite kernel or the example does not fit the schema."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    kinds = dispatch_kinds(qualified)
    op = _overload(qualified)
    if not kinds or op is None:
        return None
    seen: list[tuple[str, Tensors, Shape | None]] = []

    class Calls(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = _qualified(func)
            args = _wrapped_numbers(func, args)
            try:
                out = func(*args, **(kwargs or {}))
            except Exception as error:  # a callee with no meta kernel (aten::_logcumsumexp): it is still called
                if name not in _ALLOCATIONS:
                    seen.append((name, _described(args, kwargs), None))
                raise _CalleeStopped from error
            if name not in _ALLOCATIONS:
                seen.append((name, _described(args, kwargs), _first_shape(out)))
            return out

    key = getattr(torch._C.DispatchKey, kinds[0])
    stopped: CompositeCalls | None = None
    for number in (0, 1):  # an int argument is a dim or an index (0), or a count or a step (1)
        args = _example_args(op, inputs, output, number)
        if args is None:
            return None
        seen.clear()
        try:
            with Calls():
                op._op_dk(key, *args)
        except _CalleeStopped:
            stopped = stopped or CompositeCalls(seen, complete=False)
            continue
        except Exception:  # noqa: BLE001 - the example does not fit: "cannot tell", not an error
            continue
        return CompositeCalls(seen)
    return stopped


class CompositeCalls(tuple):
    """composite_calls' answer: (callee, its inputs, its output shape) in order; `complete` False when a callee
    could not run on meta (no meta kernel: aten::logcumsumexp -> aten::_logcumsumexp), so the calls end there:
    those seen are called all the same, but what came after is not known."""

    complete: bool

    def __new__(cls, calls, complete: bool = True) -> CompositeCalls:
        made = super().__new__(cls, calls)
        made.complete = complete
        return made


class _CalleeStopped(Exception):
    """A composite's callee refused the meta example: the calls recorded so far are the known part."""


def _wrapped_numbers(func: Any, args: tuple) -> tuple:
    """A composite that wraps a Scalar into a tensor (special_chebyshev_polynomial_t.n_scalar calls the Tensor
    overload) passes the mode a plain number where its callee's schema wants a Tensor: give the callee the 0-dim
    tensor the C++ side made, so it runs (and is recorded) as dispatched."""
    import torch

    schema = getattr(func, "_schema", None)
    if schema is None or not any(isinstance(a, (bool, int, float)) for a in args):
        return args
    wrapped = list(args)
    for i, (value, argument) in enumerate(zip(args, schema.arguments, strict=False)):
        if isinstance(value, (bool, int, float)) and str(argument.type) == "Tensor":
            wrapped[i] = torch.scalar_tensor(value, dtype=torch.float64 if isinstance(value, float) else
                                             torch.bool if isinstance(value, bool) else torch.int64)
    return tuple(wrapped)


def _overload(qualified: str) -> Any:
    import torch

    namespace, _, name = qualified.partition("::")
    base, _, overload = name.partition(".")
    packet = getattr(getattr(torch.ops, namespace, None), base, None)
    return getattr(packet, overload or "default", None) if packet is not None else None


def _qualified(func: Any) -> str:
    name = func.name()
    return name.removesuffix(".default")


def _described(args: Any, kwargs: Any) -> Tensors:
    import torch

    flat = [*args, *(kwargs or {}).values()]
    out = []
    for value in flat:
        for t in (value if isinstance(value, (list, tuple)) else (value,)):
            if isinstance(t, torch.Tensor):
                out.append((tuple(t.shape), str(t.dtype).removeprefix("torch.")))
    return tuple(out)


def _first_shape(value: Any) -> Shape | None:
    import torch

    for t in (value if isinstance(value, (list, tuple)) else (value,)):
        if isinstance(t, torch.Tensor):
            return tuple(t.shape)
    return None


def _example_args(op: Any, inputs: Tensors, output: Shape | None, number: int) -> list | None:
    """(args, kwargs) for one call of `op` on meta: tensors from `inputs` in order, int lists shaped like the
    output (a backward's input_sizes, new_ones' size), defaults where the schema has them, 0 / 1 / False else."""
    import torch

    tensors = iter(inputs)
    args: list[Any] = []
    for argument in op._schema.arguments:
        kind = str(argument.type)
        if argument.kwarg_only and argument.has_default_value():
            break
        if kind in ("Tensor", "Optional[Tensor]"):
            spec = next(tensors, None)
            if spec is None:
                if kind == "Tensor":
                    return None
                args.append(None)
                continue
            shape, dtype = spec
            args.append(torch.empty(shape, dtype=getattr(torch, dtype or "float32"), device="meta"))
        elif argument.has_default_value():
            args.append(argument.default_value)
        elif kind in ("List[int]", "List[SymInt]") and (output is not None or inputs):
            args.append(list(output if output is not None else inputs[0][0]))
        elif kind in ("int", "SymInt"):
            args.append(number)
        elif kind in ("float", "number", "Scalar"):
            args.append(1)
        elif kind == "bool":
            args.append(False)
        elif kind.startswith("Optional["):
            args.append(None)
        else:
            return None
    return args


@cache
def returns_to_host(qualified: str) -> bool:
    """The op's schema returns values but no tensor ('aten::_local_scalar_dense' -> Scalar): its result is read to
    the host (a device-to-host copy), no device output."""
    op = _overload(qualified)
    returns = op._schema.returns if op is not None else ()
    return bool(returns) and not any("Tensor" in str(r.type) for r in returns)


@cache
def has_backend_kernel(qualified: str) -> bool:
    """torch registers a CPU or CUDA kernel of the op's own (a structured op's functional variant has one beside its
    CompositeExplicitAutogradNonFunctional wrapper, which calls the out variant on other backends)."""
    import torch

    try:
        return any(torch._C._dispatch_has_kernel_for_dispatch_key(qualified, key) for key in ("CPU", "CUDA"))
    except RuntimeError:
        return False
