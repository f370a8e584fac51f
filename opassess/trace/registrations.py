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
    """The composite keys of every non-ATen op the nodes (and their backward) dispatched, in first-seen order, and
    for a project's custom op with no composite kernel the ATen ops its CPU reference implementation runs."""
    seen: dict[str, OpNode | None] = {}
    for node in nodes:
        if node.kind == "custom" and "::" in node.key and seen.get(node.key) is None:
            seen[node.key] = node
        for call in (*node.aten, *node.backward):
            if call.op.partition("::")[0] not in ("aten", "prims"):
                seen.setdefault(call.op)
    found = []
    for op, first in seen.items():
        kinds = dispatch_kinds(op)
        found.append(Registration(op, kinds, () if kinds or first is None else reference_ops(first)))
    return tuple(found)


REFERENCE_LIMIT = 2**20  # elements over all inputs: a reference implementation is run on zeros this large at most


def reference_ops(node: OpNode) -> tuple[str, ...]:
    """The ATen ops (in first-seen order) the CPU implementation of a torch.library.custom_op runs, called once on
    CPU zeros of the node's input shapes and dtypes with a dispatch recorder on; () when the op is not such an op,
    takes other than tensors, is larger than REFERENCE_LIMIT, fails or runs only views (a body that left torch for
    numpy). A body that leaves torch part way (numpy, then an add) is not told apart. Example:
    opassess_examples::fused_bias_gelu (F.gelu(x + bias)) -> ('aten::add.Tensor', 'aten::gelu')."""
    try:
        import torch
        from torch._library.custom_ops import OPDEFS
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError:
        return ()
    definition = OPDEFS.get(node.key)
    if definition is None:
        return ()
    body = definition._backend_fns.get("cpu")  # the CPU kernel is the reference; a CUDA-only op has none here
    if body is None:
        return ()
    shapes = node.input_shapes
    if not shapes or any(s is None for s in shapes) or len(node.input_dtypes) != len(shapes):
        return ()
    if sum(_elements(s) for s in shapes if s is not None) > REFERENCE_LIMIT:
        return ()
    try:
        inputs = [torch.zeros(tuple(s or ()), dtype=getattr(torch, d or "float32"))
                  for s, d in zip(shapes, node.input_dtypes, strict=True)]
    except (TypeError, RuntimeError, AttributeError):
        return ()
    seen: dict[str, None] = {}

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            seen.setdefault(str(func.name()))
            return func(*args, **(kwargs or {}))

    try:
        with torch.no_grad(), Recorder():
            body(*inputs)
    except Exception:  # noqa: BLE001 - the project's code: a failure only means the reference is not known
        return ()
    ops = tuple(op for op in seen if op.startswith(("aten::", "prims::")))
    # only views (detach, lift_fresh): the body computed its result elsewhere (numpy, the host), nothing to judge
    return ops if any(not is_view(op) for op in ops) else ()


def _elements(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


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
