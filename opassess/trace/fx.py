"""The fx capture: torch.fx symbolic tracing, then a node-by-node run of the graph under the ATen recorder.

Captures: the graph as the user wrote it: torch.nn layers as leaf modules (nn.Conv2d with its attributes), torch
functions, Tensor methods (operator.add reported as Tensor.add), custom autograd Functions and compiled-extension
functions as one node each, and the edges between them, each node with its source line and the ATen ops it ran.
Fails: when symbolic tracing does (Python control flow on tensor values, slicing a buffer by a traced size, calls
FX cannot proxy), or when a node raises while running (NodeFailure names the node and its source line).
Costs: one symbolic trace plus one interpreted run; ~1.3 s on a Llama-2-7B shape on meta against ~0.4 s for one
recorded eager forward, which is why large models try the dispatch capture first.
"""
from __future__ import annotations

import contextlib
from typing import Any

from ..load import LoadedModel
from .blame import call_out
from .keys import OPERATOR_PROPERTIES, entry_overload, function_key, is_leaf_module, method_key, module_op
from .nodes import NodeBuild, NodeFailure
from .patches import autograd_call, patched_extensions, patched_function_apply
from .recorder import AtenRecorder, meta_substitute
from .registry import PROGRESS_EVERY, CaptureMethod, Graph, Progress, no_progress, register_capture
from .sources import forward_stack_trace, is_installed, project_from_stack_trace, source_from_stack_trace
from .values import call_attrs, describe, is_operator_call, module_attrs


@register_capture("fx", small=1, large=3)
class FxCapture(CaptureMethod):
    """Symbolic tracing, then an interpreted run recording every node's ATen ops."""

    def capture(self, loaded: LoadedModel, progress: Progress = no_progress) -> Graph:
        return capture_fx(loaded, progress)


def capture_fx(loaded: LoadedModel, progress: Progress = no_progress) -> Graph:
    """Trace loaded.module symbolically and run the graph once, one NodeBuild per operator node."""
    import torch
    import torch.fx as fx

    model = loaded.module

    class Tracer(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return is_leaf_module(m)

        def create_node(self, *args, **kwargs):
            # Each node's stack trace, as record_stack_traces=True gives it, but from Python's own frames: torch's
            # way (a CapturedTraceback symbolised in C++, then filtered by symbolic_shapes.uninteresting_files)
            # imports torch._inductor and torch._dynamo, seconds of start-up a capture that compiles nothing
            # has no use for.
            node = super().create_node(*args, **kwargs)
            if not node.stack_trace:
                node.stack_trace = forward_stack_trace()
            return node

    tracer = Tracer()

    def on_apply(cls, original, args, kwargs):
        from torch.utils import _pytree as pytree

        if any(isinstance(a, fx.Proxy) for a in pytree.tree_leaves((args, kwargs))):
            return tracer.create_proxy("call_function", autograd_call(cls), args, kwargs)
        return call_out(original, *args, **kwargs)

    def on_extension(call, *args, **kwargs):
        from torch.utils import _pytree as pytree

        if any(isinstance(a, fx.Proxy) for a in pytree.tree_leaves((args, kwargs))):
            return tracer.create_proxy("call_function", call, args, kwargs)
        return call_out(call, *args, **kwargs)

    concrete = _concrete_kwargs(model, loaded.kwargs)
    with patched_function_apply(on_apply), patched_extensions(model, on_extension):
        graph = tracer.trace(model, concrete_args=concrete or None)

    recorder = AtenRecorder()
    built: list[NodeBuild] = []
    by_fx_name: dict[str, NodeBuild] = {}

    class Runner(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            substitute = meta_substitute(target, args, kwargs)
            if substitute is not None:
                return substitute(recorder, *args, **kwargs)
            return super().call_function(target, args, kwargs)

        def run_node(self, n):
            if n.op not in ("call_module", "call_function", "call_method"):
                return super().run_node(n)
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            source = source_from_stack_trace(n.stack_trace)
            entries: list[str] = []
            with recorder.collect(), (_EntryRecorder(entries) if n.op == "call_module" else contextlib.nullcontext()):
                try:
                    result = super().run_node(n)
                except Exception as exc:
                    raise NodeFailure(n.name, source, exc) from exc
            calls, flops, nbytes = recorder.last
            if not is_operator_call(calls, args, result) or _is_container_type(n.target):
                return result
            stack = n.meta.get("nn_module_stack") or {}
            owner = next(reversed(stack.values()))[0] if stack else ""
            called = None  # the user-level callable, for its entry ATen op (a leaf module's are in `entries`)
            if n.op == "call_module":
                sub = self.fetch_attr(n.target)
                op, kind, path, attrs = module_op(sub), "module", str(n.target), module_attrs(sub)
            elif n.op == "call_method":
                op, kind, path = method_key(str(n.target)), "method", owner
                attrs = call_attrs(getattr(torch.Tensor, str(n.target), None), args, kwargs, skip_first=True)
                called = getattr(torch.Tensor, str(n.target), None) or n.target
            elif n.target is getattr and len(args) == 2 and args[1] in OPERATOR_PROPERTIES:  # w.T
                op, kind, path, attrs = method_key(args[1]), "method", owner, {}
                called = getattr(torch.Tensor, args[1]).__get__
            else:
                (op, kind), path = function_key(n.target), owner
                attrs = call_attrs(n.target, args, kwargs)
                called = n.target
            if called is not None:
                entries = [e for e in (entry_overload(called, args, kwargs),) if e]
            project = project_from_stack_trace(n.stack_trace) if is_installed(source) else None
            node = NodeBuild(n.name, op, kind, path, attrs, describe((args, kwargs)), describe(result),
                             calls, source, flops, nbytes, tuple(dict.fromkeys(entries)), project)
            built.append(node)
            by_fx_name[n.name] = node
            if len(built) % PROGRESS_EVERY == 0:
                progress(f"capturing with fx: {len(built)} operator calls")
            return result

    inputs = _placeholder_values(model, loaded.args, loaded.kwargs)
    with torch.no_grad(), recorder.mode:
        Runner(model, graph=graph).run(*inputs)
    edges = []
    for n in graph.nodes:
        if n.name in by_fx_name:
            for producer in _producers(n, by_fx_name):
                edges.append((producer, n.name))
    return [b.freeze() for b in built], edges


def _is_container_type(target: Any) -> bool:
    """A namedtuple (or other tuple, list or dict class) that FX records when forward() packs its outputs."""
    return isinstance(target, type) and issubclass(target, (tuple, list, dict))


def _EntryRecorder(sink: list[str]):  # noqa: N802 - a mode factory, used like a class
    """A torch-function mode noting the first-level calls a leaf module makes (F.conv2d, _VF.lstm)."""
    from torch.overrides import TorchFunctionMode

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            entry = entry_overload(func, args, kwargs or {})
            if entry:
                sink.append(entry)
            return call_out(func, *args, **(kwargs or {}))

    return Mode()


def _producers(n, recorded: dict) -> set[str]:
    """Recorded nodes feeding n, looking through unrecorded ones (tuple indexing, size queries)."""
    found, stack, seen = set(), list(n.all_input_nodes), set()
    while stack:
        p = stack.pop()
        if p.name in seen:
            continue
        seen.add(p.name)
        if p.name in recorded:
            found.add(p.name)
        else:
            stack.extend(p.all_input_nodes)
    return found


def _placeholder_values(model: Any, args: tuple, kwargs: dict) -> list:
    """The example inputs in the order of the traced graph's placeholders. FX runs a graph positionally, with one
    placeholder per forward parameter (positional ones, keyword-only ones, then *args), including the plain values
    fixed for tracing (use_cache=False: its placeholder asserts the value); a dict of example inputs need not follow
    the forward's order or name every parameter, so each value is bound by name."""
    import inspect

    signature = inspect.signature(model.forward)
    bound = signature.bind(*args, **kwargs).arguments
    params = list(signature.parameters.values())
    ordered = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)] + \
        [p for p in params if p.kind is p.KEYWORD_ONLY] + [p for p in params if p.kind is p.VAR_POSITIONAL]
    values: list = []
    for p in ordered:
        if p.kind is p.VAR_POSITIONAL:
            values.extend(bound.get(p.name, ()))
        else:
            values.append(bound.get(p.name, p.default))
    return values


def _concrete_kwargs(model: Any, kwargs: dict) -> dict:
    """Plain (non-tensor) keyword inputs such as use_cache=False are fixed for tracing, as the user passed them."""
    import torch

    return {k: v for k, v in kwargs.items() if not isinstance(v, torch.Tensor)}
