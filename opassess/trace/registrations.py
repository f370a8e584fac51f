"""Which composite kernels torch registers for an op, and whether its schema makes it a view, asked of the dispatcher
of this process.

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


# Views the schema does not mark as aliasing (they move no memory either)
NO_COPY_ATEN = frozenset({"aten::_unsafe_view", "aten::_reshape_alias", "aten::lift_fresh", "aten::detach_"})


@cache
def is_view(qualified: str) -> bool:
    """Whether an ATen overload returns an alias of its input (a view: no memory moved), from its schema's alias
    annotations ('t(Tensor(a) self) -> Tensor(a)'); in-place ops write, so they count."""
    op = qualified.split(".")[0]
    if op in NO_COPY_ATEN:
        return True
    namespace, _, rest = qualified.partition("::")
    name, _, overload = rest.partition(".")
    try:
        import torch

        schema = getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")._schema
    except (AttributeError, RuntimeError, ImportError):
        return False
    return bool(schema.returns) and all(r.alias_info is not None and not r.alias_info.is_write
                                        for r in schema.returns)
