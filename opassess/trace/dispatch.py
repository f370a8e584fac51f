"""The dispatch captures: one eager forward, recorded at three levels at once.

Captures: module hooks (global forward pre-/post-hooks) see every nn.Module call, so torch.nn layers become
operator nodes with their module paths and attributes, and containers give the path of what runs inside them;
a torch-function mode sees every user-level call (F.gelu, x.view, w.T) and names it as the user wrote it; the ATen
dispatch mode records what each reached. Custom autograd Functions and compiled-extension functions are routed
through patches (no hook sees them as one call). Edges follow tensors from the node that produced them. Each node
has its source line from the live stack. ATen or custom ops no user-level call owned are kept as their own nodes.
Fails: only when the forward itself fails on this device (a value read on meta: .item(), data-dependent Python
control flow); `dispatch-compiling` then retries on meta with torch.compiler.is_compiling() true, for libraries
that skip such reads while compiled (Hugging Face transformers' mask helpers).
Costs: one forward plus per-call bookkeeping (~0.4 s on a Llama-2-7B shape on meta), the cheapest capture.
"""
from __future__ import annotations

import itertools
from typing import Any

from ..load import LoadedModel
from ..records import AtenCall
from .blame import call_out
from .keys import NOT_OPERATORS, entry_op, function_key, is_leaf_module, is_operator_property, module_op
from .nodes import NodeBuild
from .patches import autograd_call, compiling, patched_extensions, patched_function_apply, routed_stand_ins
from .recorder import AtenRecorder, meta_substitute
from .registry import PROGRESS_EVERY, CaptureMethod, Graph, Progress, Skipped, no_progress, register_capture
from .sources import sources_from_frames
from .values import SKIP, call_attrs, describe_tensors, is_operator_call, jsonable, module_attrs, tensors_in


@register_capture("dispatch", small=2, large=1)
class DispatchCapture(CaptureMethod):
    """One eager forward under module hooks, a torch-function mode and an ATen dispatch mode."""

    def capture(self, loaded: LoadedModel, progress: Progress = no_progress) -> Graph:
        return capture_dispatch(loaded, progress)


@register_capture("dispatch-compiling", small=3, large=2)
class DispatchCompilingCapture(CaptureMethod):
    """The dispatch capture with torch.compiler.is_compiling() answering True, tried on meta after a plain dispatch
    capture failed on a value. Libraries skip their data-dependent fast paths while being compiled or exported
    (Hugging Face transformers' mask helpers call `.all()` on the attention mask unless they are), and the meta
    device has no values: this takes the graph-safe path, the one torch.compile or an NPU graph would run."""

    def capture(self, loaded: LoadedModel, progress: Progress = no_progress) -> Graph:
        if loaded.device != "meta":
            raise Skipped("skipped: only needed on the meta device")
        with compiling():
            return capture_dispatch(loaded, progress)


class ForwardStep:
    """What the dispatch capture runs inside its hooks and modes: by default one forward pass without gradients.
    A training step (trace/train) runs the forward with gradients and its loss, and learns which operator
    created each tensor."""

    def context(self) -> Any:
        """Entered outside the capture's modes for the run (torch.no_grad for a forward pass)."""
        import torch

        return torch.no_grad()

    def created(self, name: str, outputs: list) -> None:
        """Operator node `name` returned these tensors."""

    def run(self, model: Any, args: tuple, kwargs: dict) -> Any:
        """What runs under the capture: the model's forward."""
        return model(*args, **kwargs)


def capture_dispatch(loaded: LoadedModel, progress: Progress = no_progress, step: ForwardStep | None = None) -> Graph:
    """Run loaded.module's forward once (or `step`), one NodeBuild per user-level operator call."""
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
    from torch.overrides import TorchFunctionMode

    model = loaded.module
    step = step or ForwardStep()
    paths = {id(m): name for name, m in model.named_modules()}
    recorder = AtenRecorder()
    built: list[NodeBuild] = []
    producer: dict[int, str] = {}  # id(tensor) -> node name; tensors are kept alive in `keep`
    keep: list[Any] = []
    edges: set[tuple[str, str]] = set()
    module_stack: list[str] = [""]
    depth = {"leaf": 0, "fn": 0}
    leaf_entries: list[list[str]] = []  # first-level calls made inside the running leaf module
    # One entry per running module call, pushed by its pre-hook: (module, role, source); role "leaf" records the
    # call as an operator, "container" lends its path to what runs inside, "inner" (inside an operator) does neither.
    calls_running: list[tuple[Any, str, str | None]] = []
    counter = itertools.count()

    def new_node(op, kind, path, attrs, args, kwargs, result, source, calls, flops, nbytes, entry=()):
        name = f"{op.rsplit('.', 1)[-1].rsplit('::', 1)[-1].lower()}_{next(counter)}"
        ins, outs = tensors_in((args, kwargs)), tensors_in(result)
        source, project = source if isinstance(source, tuple) else (source, None)
        node = NodeBuild(name, op, kind, path, attrs, describe_tensors(ins), describe_tensors(outs), calls,
                         source, flops, nbytes, tuple(dict.fromkeys(entry)), project)
        built.append(node)
        if len(built) % PROGRESS_EVERY == 0:
            progress(f"capturing with dispatch: {len(built)} operator calls")
        for t in ins:
            if id(t) in producer:
                edges.add((producer[id(t)], name))
        for t in outs:
            producer[id(t)] = name
            keep.append(t)
        step.created(name, outs)

    def before_module(module, args):
        if depth["leaf"] or depth["fn"]:
            calls_running.append((module, "inner", None))
        elif is_leaf_module(module):
            calls_running.append((module, "leaf", sources_from_frames()))
            depth["leaf"] += 1
            leaf_entries.append([])
            recorder.start()
        else:
            module_stack.append(paths.get(id(module), module_stack[-1]))
            calls_running.append((module, "container", None))

    def end_module_call(role: str) -> list[str]:
        if role == "container":
            module_stack.pop()
        elif role == "leaf":
            recorder.stop()
            depth["leaf"] -= 1
            return leaf_entries.pop()
        return []

    def after_module(module, args, *rest):
        # torch calls (module, args, kwargs, result) after forward() returned, and (module, args, result) when it
        # raised (always_call=True): the call then records no node.
        raised = len(rest) == 1
        # A call whose forward() raised without this hook running (torch skips always_call hooks while
        # is_compiling() is true) is ended here, by its caller, as a try/finally would have ended it.
        while calls_running and calls_running[-1][0] is not module:
            end_module_call(calls_running.pop()[1])
        if not calls_running:
            return None
        _, role, source = calls_running.pop()
        entry = end_module_call(role)
        if role == "leaf" and not raised:
            kwargs, result = rest
            calls, flops, nbytes = recorder.last
            path = paths.get(id(module), type(module).__name__)
            new_node(module_op(module), "module", path, module_attrs(module), args, kwargs, result, source,
                     calls, flops, nbytes, entry)
        return None

    def record_call(op, kind, attrs, args, kwargs, run, entry=(), stand_in=False):
        source = sources_from_frames()
        depth["fn"] += 1
        try:
            with recorder.collect():
                result = run()
        finally:
            depth["fn"] -= 1
        calls, flops, nbytes = recorder.last
        if stand_in:  # a stand-in's own allocations are not the library's ATen ops; a launch returns nothing
            new_node(op, kind, module_stack[-1], attrs, args, kwargs, result, source, (), 0, 0)
        elif is_operator_call(calls, args, result):
            new_node(op, kind, module_stack[-1], attrs, args, kwargs, result, source, calls, flops, nbytes, entry)
        return result

    class FunctionMode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if depth["leaf"] and not depth["fn"] and leaf_entries:
                entry = entry_op(func)  # F.conv2d inside nn.Conv2d, _VF.lstm inside nn.LSTM
                if entry:
                    leaf_entries[-1].append(entry)
                return call_out(func, *args, **kwargs)
            if depth["leaf"] or depth["fn"]:
                return call_out(func, *args, **kwargs)
            name = getattr(func, "__name__", "")
            if name in NOT_OPERATORS and not (name == "__get__" and is_operator_property(func)):
                return call_out(func, *args, **kwargs)
            op, kind = function_key(func)
            attrs = {} if name == "__get__" else call_attrs(func, args, kwargs, skip_first=(kind == "method"))
            entry = entry_op(func)
            substitute = meta_substitute(func, args, kwargs)
            run = (lambda: substitute(recorder, *args, **kwargs)) if substitute else \
                (lambda: call_out(func, *args, **kwargs))
            return record_call(op, kind, attrs, args, kwargs, run, (entry,) if entry else ())

    def on_apply(cls, original, args, kwargs):
        if depth["leaf"] or depth["fn"]:
            return call_out(original, *args, **kwargs)
        call = autograd_call(cls)
        return record_call(call.key, "custom", call_attrs(cls.forward, (None,) + args, kwargs, skip_first=True),
                           args, kwargs, lambda: call_out(original, *args, **kwargs))

    def on_extension(call, *args, **kwargs):
        if depth["leaf"] or depth["fn"]:
            return call_out(call, *args, **kwargs)
        return record_call(call.key, "extension", call_attrs(call.fn, args, kwargs), args, kwargs,
                           lambda: call_out(call, *args, **kwargs))

    def on_library(call, args, kwargs):
        if depth["leaf"] or depth["fn"]:
            return call.run(args, kwargs)
        return record_call(call.key, "library", library_attrs(call, args, kwargs), args, kwargs,
                           lambda: call.run(args, kwargs), stand_in=True)

    # Custom ops called outside any recorded function (torch.ops.ns.op does not always pass through the
    # torch-function mode) are caught at the dispatch level by the sink below.
    loose: list[AtenCall] = []
    # Global module hooks (torch's handles, removed in `finally`) see every module call, also of modules the
    # forward creates on the fly; the pre-hook goes first among a module's hooks.
    hooks = [register_module_forward_pre_hook(before_module),
             register_module_forward_hook(after_module, with_kwargs=True, always_call=True)]
    try:
        with step.context(), patched_function_apply(on_apply), patched_extensions(model, on_extension), \
                routed_stand_ins(on_library), recorder.mode, FunctionMode():
            recorder.loose = loose
            step.run(model, loaded.args, loaded.kwargs)
            recorder.loose = None
    finally:
        for hook in hooks:
            hook.remove()
    for call in loose:  # ATen or custom ops that no user-level call owned
        ns = call.op.partition("::")[0]
        built.append(NodeBuild(f"{call.op.rsplit('::', 1)[-1]}_{next(counter)}", call.op,
                               "aten" if ns in ("aten", "prims") else "custom", "", {},
                               (call.input_shapes, call.input_dtypes), (call.output_shapes, call.output_dtypes),
                               (call,), None, 0, 0))
    return [b.freeze() for b in built], sorted(edges)


def library_attrs(call: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The non-tensor arguments of a stand-in call (named by the Triton kernel's signature when there is one),
    with a Triton launch's grid."""
    from ..standins.calls import TritonLaunch

    if not isinstance(call, TritonLaunch):
        return call_attrs(None, args, kwargs)
    attrs = call_attrs(call.kernel, args, kwargs)
    if any(name.startswith("arg") for name in attrs):  # autotuned: the tuned constexprs are not passed
        import inspect

        try:
            named = inspect.signature(call.kernel).bind_partial(*args, **kwargs).arguments
        except (TypeError, ValueError):
            named = {}
        attrs = {k: v for k, v in ((k, jsonable(v)) for k, v in named.items()) if v is not SKIP} or attrs
    grid = call.grid_text()
    if grid is not None:
        attrs["grid"] = grid
    return attrs
