"""What a CompositeImplicitAutograd ATen op decomposes into, found by tracing it once on a small example.

Used by `opassess kb show` for an API with no NPU kernel of its own (`torch.nn.Linear` -> aten::linear, which the
NPU never sees): the ops it dispatches are where the kernel facts apply. The example is one float32 [4, 4] tensor
per tensor argument, optional tensors included (Linear with a bias: aten::t, aten::addmm); an op whose required
arguments are not all tensors, or that refuses that example (conv2d wants 4-D input), gives None.
Also the dispatcher questions the classifier asks: which composite keys an op registers, and the torch version.
"""
from __future__ import annotations

from functools import cache


@cache
def dispatch_kinds(qualified: str) -> tuple[str, ...]:
    """Composite dispatch keys PyTorch registers for an op ('aten::zeros' -> ('CompositeExplicitAutograd',))."""
    import torch

    kinds = []
    for key in ("CompositeExplicitAutograd", "CompositeImplicitAutograd"):
        try:
            if torch._C._dispatch_has_kernel_for_dispatch_key(qualified, key):
                kinds.append(key)
        except RuntimeError:  # the op is not registered in this process
            return ()
    return tuple(kinds)


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
