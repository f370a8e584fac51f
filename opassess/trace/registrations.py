"""Which composite kernels torch registers for an op, asked of the dispatcher of this process.

The classifier asks it for ATen ops (classify/decompose.py); the capture asks it, in the worker that imported the
model's libraries, for the non-ATen ops the model ran (a library's torch.library ops), because the parent that
classifies never imports those libraries and would find them unregistered.
"""
from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from ..records import OpNode, Registration

COMPOSITE_KEYS = ("CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")


@cache
def dispatch_kinds(qualified: str) -> tuple[str, ...]:
    """Composite dispatch keys PyTorch registers for an op ('aten::zeros' -> ('CompositeExplicitAutograd',))."""
    import torch

    kinds = []
    for key in COMPOSITE_KEYS:
        try:
            if torch._C._dispatch_has_kernel_for_dispatch_key(qualified, key):
                kinds.append(key)
        except RuntimeError:  # the op is not registered in this process
            return ()
    return tuple(kinds)


def registrations(nodes: Iterable[OpNode]) -> tuple[Registration, ...]:
    """The composite keys of every non-ATen op the nodes (and their backward) dispatched, in first-seen order."""
    seen: dict[str, None] = {}
    for node in nodes:
        if node.kind == "custom" and "::" in node.key:
            seen.setdefault(node.key)
        for call in (*node.aten, *node.backward):
            if call.op.partition("::")[0] not in ("aten", "prims"):
                seen.setdefault(call.op)
    return tuple(Registration(op, dispatch_kinds(op)) for op in seen)
