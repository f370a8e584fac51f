"""Backward attribution: which forward operator created each autograd node, and the ATen ops each node dispatched.

While the forward runs, every operator node's outputs are walked back through their grad_fn graph; the autograd
nodes reached that no earlier operator owns were created by this one (nn.Linear owns its AddmmBackward0 and the
TBackward0 of its weight). During backward() a dispatch mode asks torch which autograd node is running
(torch._C._current_autograd_node(), the same Python object as the tensor's grad_fn while we hold it) and files each
ATen call under that node's operator. A hand-written autograd.Function backward is a node like any other.
Calls made outside any owned node (seeding the loss gradient, AccumulateGrad writing .grad) are the engine's own.
"""
from __future__ import annotations

from typing import Any

from ...records import AtenCall
from ..recorder import aten_call, meta_stand_ins
from ..values import tensors_in


class GradOwners:
    """Autograd node -> the forward operator node that created it."""

    def __init__(self) -> None:
        self.owner: dict[int, str] = {}
        self._alive: list[Any] = []  # the grad_fn objects, kept so their ids stay theirs

    def claim(self, name: str, outputs: list) -> None:
        """Own, for operator node `name`, every autograd node behind `outputs` that nobody owns yet."""
        stack = [t.grad_fn for t in outputs if getattr(t, "grad_fn", None) is not None]
        while stack:
            node = stack.pop()
            if node is None or id(node) in self.owner or type(node).__name__ == "AccumulateGrad":
                continue
            self.owner[id(node)] = name
            self._alive.append(node)
            stack.extend(next_node for next_node, _ in node.next_functions)


def record_backward(owners: GradOwners, run: Any) -> tuple[dict[str, list[AtenCall]], list[AtenCall]]:
    """Run `run()` (the backward call) and return the ATen calls per owning operator node, and the engine's own."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    per_node: dict[str, list[AtenCall]] = {}
    engine: list[AtenCall] = []
    stand_ins = meta_stand_ins()  # the forward's meta stand-ins: a backward calls the same ops (_grouped_mm)

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            stand_in = stand_ins.get(func._overloadpacket)
            out = stand_in(func, args, kwargs) if stand_in is not None else func(*args, **kwargs)
            node = torch._C._current_autograd_node()
            owner = owners.owner.get(id(node)) if node is not None else None
            call = aten_call(func, tensors_in((args, kwargs)), tensors_in(out))
            (per_node.setdefault(owner, []) if owner is not None else engine).append(call)
            return out

    with Mode():
        run()
    return per_node, engine
