"""A second witness of what the forward dispatched, one the model's own code cannot switch off, and the checks that
the model left the capture's hooks in place and ran no model code in a thread of its own.

The dispatch recorder sees an op through its TorchDispatchMode and global module hooks: an op the model calls with the
Python dispatch key excluded (`torch._C._ExcludeDispatchKeyGuard`), or after it popped the modes, never reaches it.
The witness is torch's legacy profiler (RecordFunction, at the dispatcher, below any Python key), started when the
forward builds a guard that takes ops past the mode (_ExcludeDispatchKeyGuard, _DisableTorchDispatch, ...) and
stopped when the forward returns (an ordinary model pays nothing): an outermost ATen op it saw whose name, and
whose callees' names, the recorder's dispatch mode never saw (recorded or not) was called outside the recorder;
ops on 0-dim tensors alone (host-side scalars) are left out. Each op it finds becomes an operator of its own (kind
"aten"), with its shapes as the profiler recorded them, so its verdict counts and --fail-on sees it.

The forward's own checks: it must not shrink the global module-hook tables or the dispatch / function mode stacks it
was given (a model that removes opassess's hooks fails the capture with one line, not a report of what was left); and
model code that ran in another thread (trace/reach.py sees every thread the forward starts) is an error naming the
thread: dispatch modes are per thread, so its operators were not recorded.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..records import AtenCall, OpNode

STAND_IN = "opassess::stand-in"  # a stand-in's own allocations: not the model's ops, deliberately not recorded
_LIMIT = 16  # witness-only ops reported at most (each one an operator)
# the guards that take an op past the recorder's dispatch mode: built by the model, they make the witness speak
_BYPASSES = ("_ExcludeDispatchKeyGuard", "_DisableTorchDispatch", "_ForceDispatchKeyGuard", "_PreserveDispatchKeyGuard")
SEEN: set[str] = set()  # every op name ("aten::lt") that reached the recorder's dispatch mode (recorder.py adds)


def _hook_state() -> tuple[int, int, int, int]:
    import torch
    from torch.nn.modules import module

    return (len(module._global_forward_hooks), len(module._global_forward_pre_hooks),
            torch._C._len_torch_dispatch_stack(), torch._C._len_torch_function_stack())


class Witness:
    """The profiler around one capture attempt and the root forward's checks; use `witnessing`."""

    def __init__(self) -> None:
        self.profile: Any = None
        self.tampered: str | None = None
        self.bypassed = False  # the forward built a guard that excludes dispatch keys or disables the modes
        self._running: Any = None  # the profiler, while it runs

    def wrap(self, module: Any) -> Any:
        """`module.forward` with the hook tables and mode stacks checked around it (and the profiler stopped)."""

        original = module.forward

        def forward(*args: Any, **kwargs: Any) -> Any:
            before = _hook_state()
            try:
                out = original(*args, **kwargs)
            finally:
                self.stop()
            after = _hook_state()
            lost = [name for name, b, a in zip(("global forward hooks", "global forward pre-hooks",
                                                 "dispatch modes", "function modes"), before, after, strict=True)
                    if a < b]
            if lost and self.tampered is None:
                self.tampered = ", ".join(lost)
            return out

        return forward

    def start(self) -> None:
        """The forward built a guard that takes ops past the recorder: the profiler watches from here on."""
        self.bypassed = True
        if self._running is None and self.profile is None:
            from torch.autograd import profiler_legacy  # kineto's start costs seconds and writes to stderr

            self._running = profiler_legacy.profile(record_shapes=True)
            self._running.__enter__()

    def stop(self) -> None:
        if self._running is not None:
            running, self._running = self._running, None
            running.__exit__(None, None, None)
            self.profile = running

    def unrecorded(self, nodes: Sequence[OpNode]) -> tuple[OpNode, ...]:
        """The outermost ops the profiler saw that neither the recorder nor any of their callees' records name (only
        when the forward set a guard that takes ops past the recorder: torch's own kernels' bookkeeping is not
        asked about)."""
        if self.profile is None or not self.bypassed:
            return ()
        seen = {call.op for node in nodes for call in (*node.aten, *node.backward)} | SEEN
        seen |= {entry.partition(".")[0] for node in nodes for entry in node.entry}
        found: dict[str, Any] = {}
        for event in self.profile.function_events:
            # the profiler ran inside the forward only: its outermost ops are the model's
            if event.cpu_parent is not None or not event.name.startswith("aten::"):
                continue
            if not any(shape for shape in (event.input_shapes or ())):
                continue  # host-side scalar bookkeeping (0-dim comparisons, ceil, detach_): no device operator
            below = list(_below(event))
            if event.name in seen or any(name in seen for name in below):
                continue
            if not below and _implicit(event.name):  # a composite that dispatched nothing (resolve_conj): no work
                continue
            found.setdefault(event.name, event)
        out = []
        for index, (name, event) in enumerate(list(found.items())[:_LIMIT]):
            shapes = tuple(tuple(s) if s else None for s in (event.input_shapes or ()))
            tensors = tuple(s for s in shapes if s is not None)
            call = AtenCall(name, "default", tensors, tuple("float32" for _ in tensors), (), ())
            out.append(OpNode(f"unrecorded_{index}", name, "aten", "", {"witness": "profiler"}, tensors,
                              tuple("float32" for _ in tensors), (), (), (call,), None))
        return tuple(out)


def _implicit(name: str) -> bool:
    import torch

    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd")
    except RuntimeError:
        return False


def _below(event: Any) -> Iterator[str]:
    stack = list(event.cpu_children)
    while stack:
        child = stack.pop()
        yield child.name
        stack.extend(child.cpu_children)


@contextmanager
def witnessing(witness: Witness, module: Any, on: bool) -> Iterator[Witness]:
    """Run the block (one capture attempt) with the root module's forward wrapped and the guards that bypass the
    recorder watched (`on`: an eager attempt, whose recorder the model's code can bypass; symbolic captures run no
    ops of the model's). The profiler starts only when the forward builds such a guard, and stops when the forward
    returns: an ordinary model pays nothing for it."""
    if not on:
        yield witness
        return
    import torch

    had = "forward" in vars(module)
    previous = vars(module).get("forward")
    module.forward = witness.wrap(module)
    SEEN.clear()
    guards = {name: getattr(torch._C, name) for name in _BYPASSES if hasattr(torch._C, name)}

    def noted(real: Any) -> Any:
        def guard(*args: Any, **kwargs: Any) -> Any:
            witness.start()
            return real(*args, **kwargs)
        return guard

    for name, real in guards.items():
        setattr(torch._C, name, noted(real))
    try:
        yield witness
    finally:
        witness.stop()
        for name, real in guards.items():
            setattr(torch._C, name, real)
        if had:
            module.forward = previous
        else:
            del module.forward


def unwitnessed(on: bool) -> Any:
    """A marker around a stand-in's run, so the witness does not count its allocations (not the model's ops)."""
    import contextlib

    import torch

    if not on or not torch.autograd._profiler_enabled():  # the witness is not watching: nothing to mark
        return contextlib.nullcontext()
    return torch._C._profiler._RecordFunctionFast(STAND_IN)
