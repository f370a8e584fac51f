"""ATen evidence: a dispatch mode recording every ATen op an operator call reaches, with FLOPs and bytes moved,
and the meta-device stand-ins for calls whose meta kernel would not behave as the real one does."""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

from ..records import AtenCall
from .blame import call_out, mark_meta_failure
from .values import describe, describe_tensors, tensor_type, tensors_in
from .witness import SEEN, unwitnessed


class AtenRecorder:
    """A dispatch mode that appends an AtenCall for every ATen op reaching the backend while a sink is set."""

    def __init__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils.flop_counter import flop_registry

        recorder = self
        stand_ins = meta_stand_ins()
        self.sink: list | None = None  # the current operator's ATen calls
        self.loose: list | None = None  # ATen calls made outside any recorded operator (dispatch capture)
        self.flops = 0
        self.bytes = 0
        self.last: tuple = ((), 0, 0)

        bodies = Bodies()

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                SEEN.add(func._schema.name)  # recorded or not: the witness (witness.py) asks what reached the mode
                decomposed = bodies.decompose(self, func, args, kwargs)
                if decomposed is not NotImplemented:
                    return decomposed
                mark = (len(recorder.sink), recorder.flops, recorder.bytes) if recorder.sink is not None else None
                stand_in = stand_ins.get(func._overloadpacket)
                try:
                    out = bodies.run(self, func, args, kwargs) if mark is not None else NotImplemented
                    if out is NotImplemented and mark is not None:  # no body, or it failed: its calls are not the op's
                        del recorder.sink[mark[0]:]
                        recorder.flops, recorder.bytes = mark[1], mark[2]
                    if out is NotImplemented:
                        out = stand_in(func, args, kwargs) if stand_in is not None else call_out(func, *args, **kwargs)
                        mark = None
                except Exception as exc:
                    if any(t.device.type == "meta" for t in tensors_in((args, kwargs))):
                        mark_meta_failure(exc, _op_name(func)[0])
                    raise
                if recorder.sink is not None:
                    ins, outs = tensors_in((args, kwargs)), tensors_in(out)
                    recorder.sink.append(aten_call(func, ins, outs))
                    if mark is None:  # a body's ATen calls carry the op's FLOPs and bytes
                        recorder.flops += call_flops(func, args, kwargs, out, flop_registry)
                        recorder.bytes += _nbytes(ins) + _nbytes(outs)
                elif recorder.loose is not None:
                    recorder.loose.append(aten_call(func, tensors_in((args, kwargs)), tensors_in(out)))
                return out

        self.mode = Mode()

    def start(self) -> None:
        """Begin collecting one operator call's ATen calls (a fresh sink, counters at zero)."""
        self.sink, self.flops, self.bytes = [], 0, 0

    def stop(self) -> None:
        """End the collection begun by start(): self.last = (calls, flops, bytes)."""
        self.last = (tuple(self.sink or ()), self.flops, self.bytes)
        self.sink = None

    @contextlib.contextmanager
    def collect(self) -> Iterator[list]:
        """Collect the ATen calls made inside the block into self.last = (calls, flops, bytes)."""
        self.start()
        assert self.sink is not None  # start() made it
        try:
            yield self.sink
        finally:
            self.stop()


def call_flops(func: Any, args: tuple, kwargs: dict, out: Any, registry: dict) -> int:
    """The FLOPs of one dispatched call by its formula (torch's, else opassess's); 0 without one."""
    formula = _flop_formula(func._overloadpacket, registry)
    if formula is None:
        return 0
    try:
        return int(formula(*_shapes_of(args), out_shape=_shapes_of(out), **_shapes_of(kwargs)))
    except Exception:  # noqa: BLE001 - a formula that does not fit this call counts nothing
        return 0


class Bodies:
    """The Python bodies of a project's or a library's own ops (torch.library ops registered for every backend: a
    Python CompositeExplicitAutograd kernel), run under a dispatch mode so the ATen ops they run are recorded with
    their FLOPs: a model's own grouped matmul op is the mm calls of its body, not an op of unknown work. A dispatch
    mode never sees inside such a kernel otherwise. Inside a body autograd is below, so a CompositeImplicitAutograd op
    (matmul) reaches the mode undecomposed: it is decomposed there, as it would be outside."""

    def __init__(self) -> None:
        self.depth = 0

    def run(self, mode: Any, func: Any, args: tuple, kwargs: dict) -> Any:
        """The op's result with its body's ATen calls dispatched through `mode`; NotImplemented when it has no
        body of its own or the body refused the call (on meta, a body that reads values): the caller runs it."""
        key = _body_key(func)
        if key is None:
            return NotImplemented
        if _on_meta(args, kwargs) and _has_meta_kernel(func):
            try:  # the op's own meta (fake) kernel decides on meta: its checks run, and its result is the op's
                func._op_dk(_meta_key(), *args, **kwargs)
            except Exception:  # noqa: BLE001 - the caller runs the op again and reports its meta kernel's error
                return NotImplemented
        self.depth += 1
        try:
            with mode:
                return func._op_dk(key, *args, **kwargs)
        except Exception:
            if not _has_backend_kernel(func, _device_of(args, kwargs)):
                raise  # the body is the op's kernel on this device: running it again would repeat its effects
            return NotImplemented  # the op's own kernel for the device (its fake kernel on meta) runs: the caller
        finally:
            self.depth -= 1

    def decompose(self, mode: Any, func: Any, args: tuple, kwargs: dict) -> Any:
        """Inside a body: a CompositeImplicitAutograd op's decomposition run through `mode`; else NotImplemented."""
        if not self.depth or not _implicit(func):
            return NotImplemented
        with mode:
            return func.decompose(*args, **kwargs)


@functools.cache
def _body_key(func: Any) -> Any:
    """The dispatch key of a non-ATen op's own Python composite kernel (CompositeExplicitAutograd registered through
    torch.library, which lists it in torch.library._impls), or None. torch's own C++ composites
    (_c10d_functional::all_reduce) are not run apart: their work is the op's."""
    import torch

    if func.namespace in ("aten", "prims"):
        return None
    namespace, _, name = func.name().partition("::")
    impls = getattr(torch.library, "_impls", None)
    if impls is not None and f"{namespace}/{name}/CompositeExplicitAutograd" not in impls:
        return None
    try:
        if torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeExplicitAutograd"):
            return torch._C.DispatchKey.CompositeExplicitAutograd
    except RuntimeError:
        pass
    return None


def _on_meta(args: tuple, kwargs: dict) -> bool:
    return any(t.device.type == "meta" for t in tensors_in((args, kwargs)))


def _has_meta_kernel(func: Any) -> bool:
    return _has_backend_kernel(func, "meta")


def _device_of(args: tuple, kwargs: dict) -> str:
    return next((t.device.type for t in tensors_in((args, kwargs))), "cpu")


@functools.cache
def _has_backend_kernel(func: Any, device: str) -> bool:
    """Whether the op has a kernel of its own for the device's dispatch key (Meta, CPU), so that the dispatcher
    would not run its CompositeExplicitAutograd body there."""
    import torch

    key = {"meta": "Meta", "cpu": "CPU", "cuda": "CUDA"}.get(device)
    try:
        return key is not None and bool(torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), key))
    except RuntimeError:
        return False


def _meta_key() -> Any:
    import torch

    return torch._C.DispatchKey.Meta


@functools.cache
def _implicit(func: Any) -> bool:
    import torch

    return torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd")


def _flop_formula(packet: Any, registry: dict) -> Callable | None:
    """torch's FLOP formula for an op, unwrapped to take shapes (its own wrapper maps tensors to shapes with
    pytree, which cost as much as the rest of the capture on a 70B-shaped model); else opassess's own (_FORMULAS)."""
    formula = registry.get(packet)
    if formula is None:
        return _FORMULAS.get(getattr(packet, "__name__", ""))
    return getattr(formula, "__wrapped__", None)


def _grouped_mm_flops(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """aten::_grouped_mm (MoE experts): 2 * M * K * N summed over the groups. 2-D x 3-D (tokens grouped by offs):
    2 * tokens * K * N; 3-D x 3-D: 2 * G * M * K * N; 2-D x 2-D (K grouped by offs): 2 * M * K_total * N."""
    if len(a_shape) == 2 and len(b_shape) == 2:
        return 2 * a_shape[0] * a_shape[1] * b_shape[1]
    out = 1
    for size in out_shape:
        out *= size
    return 2 * out * a_shape[-1]


def _grouped_mm_backward_flops(a_shape, b_shape, offs_shape, grad_shape, *args, **kwargs) -> int:
    """The input and weight gradients of a 2-D x 3-D grouped matmul: two matmuls of the forward's size,
    2 * (2 * tokens * K * N) (grad (tokens, N) x weight^T, input^T x grad)."""
    return 4 * a_shape[0] * a_shape[1] * grad_shape[-1]


# FLOP formulas torch.utils.flop_counter does not have, by op packet name (shapes in, FLOPs out). transformers'
# MoE experts fall back to its own custom op `transformers::grouped_mm_fallback` (integrations/moe.py: input (S, K)
# x weight (E, K, N) grouped by offs, one torch.mm per expert) where torch._grouped_mm cannot be used (non-bfloat16
# weights while compiling): the same arithmetic as _grouped_mm's 2-D x 3-D case.
_FORMULAS: dict[str, Callable] = {"_grouped_mm": _grouped_mm_flops, "grouped_mm_fallback": _grouped_mm_flops,
                                  "grouped_mm_fallback_backward": _grouped_mm_backward_flops}


def _shapes_of(value: Any) -> Any:
    """value with every tensor replaced by its shape (tuples, lists and dicts walked)."""
    tensor = tensor_type()
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


def aten_call(func: Any, ins: list, outs: list) -> AtenCall:
    op, overload = _op_name(func)
    in_shapes, in_dtypes = describe_tensors(ins)
    out_shapes, out_dtypes = describe_tensors(outs)
    return AtenCall(op=op, overload=overload, input_shapes=in_shapes, input_dtypes=in_dtypes,
                    output_shapes=out_shapes, output_dtypes=out_dtypes)


# ------------------------------------------------- meta-device substitutes


def _meta_sdpa(recorder: AtenRecorder, query, key, value, *args, **kwargs):
    """F.scaled_dot_product_attention on meta: torch_npu takes the op whole, so record it as one ATen call and
    return an output laid out as the CPU kernel lays it out: like the query (torch.empty_like). The meta
    backend decomposes it into math with a contiguous output instead, so the common
    `q = x.view(B, L, H, E).transpose(1, 2)` ... `y.transpose(1, 2).view(B, L, H * E)` fails on meta although it
    runs on a CPU."""
    import torch
    from torch.utils.flop_counter import sdpa_flop_count

    # allocating the stand-in output is not the model's work: neither this call's ATen op nor a loose one
    sink, loose, recorder.sink, recorder.loose = recorder.sink, recorder.loose, None, None
    with unwitnessed(True):  # nor one for the second witness (trace/witness.py)
        if torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value)):
            out = _sdpa_stand_in().apply(query, key, value)  # a training step: gradients flow back to q, k, v
        else:
            out = _sdpa_output(query, value)
    recorder.sink, recorder.loose = sink, loose
    if recorder.sink is not None:
        tensors = [t for t in (query, key, value, *args, *kwargs.values()) if isinstance(t, torch.Tensor)]
        recorder.sink.append(AtenCall("aten::scaled_dot_product_attention", "default", *describe(tensors),
                                      *describe(out)))
        with contextlib.suppress(Exception):
            recorder.flops += int(sdpa_flop_count(query.shape, key.shape, value.shape))
        recorder.bytes += _nbytes(tensors) + _nbytes([out])
    return out


def _sdpa_output(query, value):
    """An uninitialised attention output laid out as the CPU kernel lays it out: like the query, with the value's
    last dimension."""
    import torch

    if value.shape[-1] == query.shape[-1]:
        return torch.empty_like(query)
    return query.new_empty((*query.shape[:-1], value.shape[-1]))


@functools.cache
def _sdpa_stand_in() -> Any:
    """The meta stand-in of scaled_dot_product_attention as an autograd.Function, for a training step. torch_npu
    takes the op whole, its backward included (rules.toml: composite), so neither direction records ATen work of
    its own: allocations run with the dispatch modes set aside."""
    import torch
    from torch.utils._python_dispatch import _disable_current_modes

    class ScaledDotProductAttentionStandIn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, query, key, value):
            ctx.save_for_backward(query, key, value)
            with _disable_current_modes():
                return _sdpa_output(query, value)

        @staticmethod
        def backward(ctx, grad):
            with _disable_current_modes():
                return tuple(torch.empty_like(t) for t in ctx.saved_tensors)

    return ScaledDotProductAttentionStandIn


def meta_substitute(fn: Any, args: tuple, kwargs: dict) -> Callable | None:
    """A meta-device stand-in for fn when one is needed and every tensor argument is on meta; it is called as
    substitute(recorder, *args, **kwargs)."""
    import torch
    import torch.nn.functional as F

    if fn is not F.scaled_dot_product_attention and getattr(fn, "__name__", "") != "scaled_dot_product_attention":
        return None
    if not args or not isinstance(args[0], torch.Tensor) or args[0].device.type != "meta":
        return None
    return _meta_sdpa


def _meta_grouped_mm(func: Any, args: tuple, kwargs: dict) -> Any:
    """aten::_grouped_mm on meta for any dtype. Its meta kernel accepts bfloat16 only ("Expected mat_a to be
    BFloat16 ... got torch.float32"), while the CPU kernel takes float32 too and torch_npu's npu_grouped_matmul float16,
    bfloat16 and float32: the shapes come from the meta kernel run on bfloat16 stand-ins, the dtype from the CPU
    kernel's rule (out_dtype, else mat_a's)."""
    import torch

    mat_a, mat_b = args[0], args[1]
    if mat_a.device.type != "meta" or (mat_a.dtype == torch.bfloat16 and mat_b.dtype == torch.bfloat16):
        return func(*args, **kwargs)
    # _grouped_mm(self, mat2, offs=None, bias=None, out_dtype=None)
    out_dtype = kwargs.get("out_dtype", args[4] if len(args) > 4 else None) or mat_a.dtype
    rest = {k: v for k, v in kwargs.items() if k != "out_dtype"}
    shaped = func(mat_a.to(torch.bfloat16), mat_b.to(torch.bfloat16), *args[2:4], **rest)
    return torch.empty(shaped.shape, dtype=out_dtype, device="meta")


@functools.cache
def meta_stand_ins() -> dict:
    """ATen op packet -> stand-in(func, args, kwargs), for ops whose meta kernel refuses what the CPU kernel runs."""
    import torch

    found = {}
    packet = getattr(torch.ops.aten, "_grouped_mm", None)  # torch 2.8 and newer
    if packet is not None:
        found[packet] = _meta_grouped_mm
    return found
