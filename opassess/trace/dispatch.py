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
from collections.abc import Mapping
from typing import Any

from ..load import LoadedModel
from ..records import AtenCall
from .blame import call_out
from .keys import NOT_OPERATORS, entry_overload, function_key, is_leaf_module, is_operator_property, module_op
from .nodes import NodeBuild
from .patches import autograd_call, compiling, patched_extensions, patched_function_apply, routed_stand_ins
from .recorder import AtenRecorder, meta_substitute
from .registry import PROGRESS_EVERY, CaptureMethod, Graph, Progress, Skipped, no_progress, register_capture
from .sources import sources_from_frames
from .values import SKIP, call_attrs, describe_tensors, is_operator_call, jsonable, module_attrs, tensors_in
from .witness import unwitnessed as _unwitnessed


@register_capture("dispatch", small=2, large=1)
class DispatchCapture(CaptureMethod):
    """One eager forward under module hooks, a torch-function mode and an ATen dispatch mode."""

    eager = True

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

    recording = _Recording(loaded.module, progress, step or ForwardStep())
    # Global module hooks (torch's handles, removed in `finally`) see every module call, also of modules the
    # forward creates on the fly; the pre-hook goes first among a module's hooks.
    hooks = [register_module_forward_pre_hook(recording.before_module),
             register_module_forward_hook(recording.after_module, with_kwargs=True, always_call=True)]
    try:
        with recording.step.context(), patched_function_apply(recording.on_apply), \
                patched_extensions(loaded.module, recording.on_extension), routed_stand_ins(recording.on_library), \
                recording.recorder.mode, _function_mode(recording):
            recording.recorder.loose = recording.loose
            recording.step.run(loaded.module, loaded.args, loaded.kwargs)
            recording.recorder.loose = None
    finally:
        for hook in hooks:
            hook.remove()
    return recording.graph()


class _Recording:
    """The state of one dispatch capture and what each hook, mode and patch does with a call.

    Three sources report calls: the module hooks (before_module / after_module), the torch-function mode
    (on_function) and the patches for autograd Functions, compiled extensions and stand-ins (on_apply, on_extension,
    on_library). A call made while another is being recorded (`inside`) runs through untouched: it belongs to the
    outer one, whose ATen ops the recorder collects."""

    def __init__(self, model: Any, progress: Progress, step: ForwardStep) -> None:
        self.progress = progress
        self.step = step
        self.paths = {id(m): name for name, m in model.named_modules()}
        self.recorder = AtenRecorder()
        self.built: list[NodeBuild] = []
        self.producer: dict[int, str] = {}  # id(tensor) -> node name; tensors are kept alive in `keep`
        self.keep: list[Any] = []
        self.edges: set[tuple[str, str]] = set()
        self.module_stack: list[str] = [""]
        self.leaf_depth = 0  # leaf modules running (recorded as one operator each)
        self.fn_depth = 0  # user-level calls being recorded (functions, autograd Functions, extensions, stand-ins)
        self.leaf_entries: list[list[str]] = []  # first-level calls made inside the running leaf module
        # One entry per running module call, pushed by its pre-hook: (module, role, source); role "leaf" records the
        # call as an operator, "container" lends its path to what runs inside, "inner" (inside an operator) neither.
        self.calls_running: list[tuple[Any, str, Any]] = []  # the source: sources_from_frames() or None
        self.counter = itertools.count()
        # Custom ops called outside any recorded function (torch.ops.ns.op does not always pass through the
        # torch-function mode) are caught at the dispatch level by the recorder's sink.
        self.loose: list[AtenCall] = []

    @property
    def inside(self) -> bool:
        """A leaf module or a recorded call is running: what is called now is part of it."""
        return self.leaf_depth > 0 or self.fn_depth > 0

    # ------------------------------------------------------------------ nodes

    def new_node(self, op, kind, path, attrs, args, kwargs, result, source, calls, flops, nbytes, entry=()) -> None:
        name = f"{op.rsplit('.', 1)[-1].rsplit('::', 1)[-1].lower()}_{next(self.counter)}"
        ins, outs = tensors_in((args, kwargs)), tensors_in(result)
        source, project = source if isinstance(source, tuple) else (source, None)
        node = NodeBuild(name, op, kind, path, attrs, describe_tensors(ins), describe_tensors(outs), calls,
                         source, flops, nbytes, tuple(dict.fromkeys(entry)), project)
        self.built.append(node)
        if len(self.built) % PROGRESS_EVERY == 0:
            self.progress(f"capturing with dispatch: {len(self.built)} operator calls")
        for t in ins:
            if id(t) in self.producer:
                self.edges.add((self.producer[id(t)], name))
        for t in outs:
            self.producer[id(t)] = name
            self.keep.append(t)
        self.step.created(name, outs)

    def graph(self) -> Graph:
        """The frozen nodes, with the ATen or custom ops no user-level call owned as nodes of their own."""
        for call in self.loose:
            ns = call.op.partition("::")[0]
            self.built.append(NodeBuild(f"{call.op.rsplit('::', 1)[-1]}_{next(self.counter)}", call.op,
                                        "aten" if ns in ("aten", "prims") else "custom", "", {},
                                        (call.input_shapes, call.input_dtypes),
                                        (call.output_shapes, call.output_dtypes), (call,), None, 0, 0))
        return [b.freeze() for b in self.built], sorted(self.edges)

    # ------------------------------------------------------------------ module hooks

    def before_module(self, module, args) -> None:
        if self.inside:
            self.calls_running.append((module, "inner", None))
        elif is_leaf_module(module):
            self.calls_running.append((module, "leaf", sources_from_frames()))
            self.leaf_depth += 1
            self.leaf_entries.append([])
            self.recorder.start()
        else:
            self.module_stack.append(self.paths.get(id(module), self.module_stack[-1]))
            self.calls_running.append((module, "container", None))

    def _end_module_call(self, role: str) -> list[str]:
        if role == "container":
            self.module_stack.pop()
        elif role == "leaf":
            self.recorder.stop()
            self.leaf_depth -= 1
            return self.leaf_entries.pop()
        return []

    def after_module(self, module, args, *rest) -> None:
        # torch calls (module, args, kwargs, result) after forward() returned, and (module, args, result) when it
        # raised (always_call=True): the call then records no node.
        raised = len(rest) == 1
        # A call whose forward() raised without this hook running (torch skips always_call hooks while
        # is_compiling() is true) is ended here, by its caller, as a try/finally would have ended it.
        while self.calls_running and self.calls_running[-1][0] is not module:
            self._end_module_call(self.calls_running.pop()[1])
        if not self.calls_running:
            return None
        _, role, source = self.calls_running.pop()
        entry = self._end_module_call(role)
        if role == "leaf" and not raised:
            kwargs, result = rest
            calls, flops, nbytes = self.recorder.last
            path = self.paths.get(id(module), type(module).__name__)
            self.new_node(module_op(module), "module", path, module_attrs(module), args, kwargs, result, source,
                          calls, flops, nbytes, entry)
        return None

    # ------------------------------------------------------------------ user-level calls

    def record_call(self, op, kind, attrs, args, kwargs, run, entry=(), stand_in=False):
        source = sources_from_frames()
        self.fn_depth += 1
        try:
            with self.recorder.collect(), _unwitnessed(stand_in):
                result = run()
        finally:
            self.fn_depth -= 1
        calls, flops, nbytes = self.recorder.last
        if stand_in:  # a stand-in's own allocations are not the library's ATen ops; a launch returns nothing
            self.new_node(op, kind, self.module_stack[-1], attrs, args, kwargs, result, source, (), 0, 0)
        elif is_operator_call(calls, args, result):
            self.new_node(op, kind, self.module_stack[-1], attrs, args, kwargs, result, source, calls, flops, nbytes,
                          entry)
        return result

    def on_function(self, func, args, kwargs):
        """A call the torch-function mode saw: F.gelu, x.view, w.T."""
        if self.leaf_depth and not self.fn_depth and self.leaf_entries:
            entry = entry_overload(func, args, kwargs)  # F.conv2d inside nn.Conv2d, _VF.lstm inside nn.LSTM
            if entry:
                self.leaf_entries[-1].append(entry)
            return call_out(func, *args, **kwargs)
        if self.inside:
            return call_out(func, *args, **kwargs)
        name = getattr(func, "__name__", "")
        if name in NOT_OPERATORS and not (name == "__get__" and is_operator_property(func)):
            return call_out(func, *args, **kwargs)
        op, kind = function_key(func)
        attrs = {} if name == "__get__" else call_attrs(func, args, kwargs, skip_first=(kind == "method"))
        entry = entry_overload(func, args, kwargs)
        substitute = meta_substitute(func, args, kwargs)
        recorder = self.recorder
        run = (lambda: substitute(recorder, *args, **kwargs)) if substitute else \
            (lambda: call_out(func, *args, **kwargs))
        return self.record_call(op, kind, attrs, args, kwargs, run, (entry,) if entry else ())

    def on_apply(self, cls, original, args, kwargs):
        """An autograd.Function's apply (patched: no hook sees it as one call)."""
        if self.inside:
            return call_out(original, *args, **kwargs)
        call = autograd_call(cls)
        return self.record_call(call.key, call.kind, call_attrs(cls.forward, (None,) + args, kwargs, skip_first=True),
                                args, kwargs, lambda: call_out(original, *args, **kwargs))

    def on_extension(self, call, *args, **kwargs):
        """A compiled extension's function (patched on the model's extension modules)."""
        if self.inside:
            return call_out(call, *args, **kwargs)
        return self.record_call(call.key, "extension", call_attrs(call.fn, args, kwargs), args, kwargs,
                                lambda: call_out(call, *args, **kwargs))

    def on_library(self, call, args, kwargs):
        """A stand-in's call of a GPU-only library or a Triton launch."""
        if self.inside and call.kind == "extension":
            return self._nested_extension(call, args, kwargs)
        if self.inside:
            return call.run(args, kwargs)
        return self.record_call(call.key, call.kind, library_attrs(call, args, kwargs), args, kwargs,
                                lambda: call.run(args, kwargs), stand_in=True)


    def _nested_extension(self, call, args, kwargs):
        """A function of the project's own extension, not built here, called inside another recorded call (an
        autograd.Function's forward, as Deformable DETR's MSDeformAttnFunction calls MultiScaleDeformableAttention):
        an operator of its own, and its stand-in's allocation is not counted as the outer call's ATen op (else that
        call would be judged by an empty_like alone)."""
        recorder = self.recorder
        mark = (len(recorder.sink), recorder.flops, recorder.bytes) if recorder.sink is not None else None
        with _unwitnessed(True):
            result = call.run(args, kwargs)
        if mark is not None and recorder.sink is not None:
            del recorder.sink[mark[0]:]
            recorder.flops, recorder.bytes = mark[1], mark[2]
        self.new_node(call.key, call.kind, self.module_stack[-1], library_attrs(call, args, kwargs), args, kwargs,
                      result, sources_from_frames(), (), 0, 0)
        return result


def _function_mode(recording: _Recording) -> Any:
    """The torch-function mode that hands every call to `recording.on_function`."""
    from torch.overrides import TorchFunctionMode

    class FunctionMode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return recording.on_function(func, args, kwargs or {})

    return FunctionMode()


def library_attrs(call: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The non-tensor arguments of a stand-in call (named by the Triton kernel's signature when there is one),
    with a Triton launch's grid."""
    from ..standins.calls import TritonLaunch

    if not isinstance(call, TritonLaunch):
        return call_attrs(None, args, kwargs)
    attrs = call_attrs(call.kernel, args, kwargs)
    if any(name.startswith("arg") for name in attrs):  # autotuned: the tuned constexprs are not passed
        import inspect

        named: Mapping[str, Any] = {}  # a launch without its kernel (or one inspect cannot read) names none
        try:
            if call.kernel is not None:
                named = inspect.signature(call.kernel).bind_partial(*args, **kwargs).arguments
        except (TypeError, ValueError):
            named = {}
        attrs = {k: v for k, v in ((k, jsonable(v)) for k, v in named.items()) if v is not SKIP} or attrs
    grid = call.grid_text()
    if grid is not None:
        attrs["grid"] = grid
    return attrs
