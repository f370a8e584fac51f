"""Backward attribution: which forward operator created each autograd node, and the ATen ops each node dispatched.

While the forward runs, every operator node's outputs are walked back through their grad_fn graph; the autograd
nodes reached that no earlier operator owns were created by this one (nn.Linear owns its AddmmBackward0 and the
TBackward0 of its weight). During backward() a dispatch mode asks torch which autograd node is running
(torch._C._current_autograd_node(), the same Python object as the tensor's grad_fn while we hold it) and files each
ATen call under that node's operator. A hand-written autograd.Function backward is a node like any other.
Calls made outside any owned node (seeding the loss gradient, AccumulateGrad writing .grad) are the engine's own.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...records import AtenCall
from ..recorder import Bodies, aten_call, call_flops, meta_stand_ins
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


@dataclass
class Backward:
    """What backward() dispatched: the ATen calls and their FLOPs per owning operator node, and the engine's own."""

    calls: dict[str, list[AtenCall]] = field(default_factory=dict)
    flops: dict[str, int] = field(default_factory=dict)
    engine: list[AtenCall] = field(default_factory=list)


def record_backward(owners: GradOwners, run: Any) -> Backward:
    """Run `run()` (the backward call) and return the ATen calls and FLOPs per owning operator node (a project's
    or library's own op run as its body's ATen calls, as in the forward: trace/recorder.Bodies), and the engine's
    own calls."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry

    seen = Backward()
    stand_ins = meta_stand_ins()  # the forward's meta stand-ins: a backward calls the same ops (_grouped_mm)
    bodies = Bodies()

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            decomposed = bodies.decompose(self, func, args, kwargs)
            if decomposed is not NotImplemented:
                return decomposed
            node = torch._C._current_autograd_node()
            owner = owners.owner.get(id(node)) if node is not None else None
            calls = seen.calls.setdefault(owner, []) if owner is not None else seen.engine
            key = owner or ""  # "": the engine's own calls (seeding the gradient, AccumulateGrad)
            mark = (len(calls), seen.flops.get(key, 0))
            out = bodies.run(self, func, args, kwargs)
            if out is NotImplemented:  # no body, or it failed: its calls are not the op's
                del calls[mark[0]:]
                stand_in = stand_ins.get(func._overloadpacket)
                out = stand_in(func, args, kwargs) if stand_in is not None else func(*args, **kwargs)
                seen.flops[key] = mark[1] + call_flops(func, args, kwargs, out, flop_registry)
            calls.append(aten_call(func, tensors_in((args, kwargs)), tensors_in(out)))
            return out

    with Mode():
        run()
    seen.flops.pop("", None)
    return seen
