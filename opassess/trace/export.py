"""The export capture: torch.export (non-strict), the last resort for models neither FX nor an eager forward can
capture.

Captures: the exported ATen graph, with the consecutive ATen nodes of one torch.nn layer call folded back into one
module node (its inputs are what the layer received, not its weights); other nodes are named as ATen ops, so the
report reads less like the user's code than the fx or dispatch captures. Source lines come from export's own
stack traces. No FLOPs or bytes moved are measured (nothing runs).
Fails: when torch.export does (graph breaks it cannot trace through), or when a size computed from the data
stays symbolic under fake tensors (a run on real data is needed to measure it).
Costs: ~13x one recorded forward (3.5 s against 0.4 s on a Llama-2-7B shape), so it is skipped above
EXPORT_MAX_PARAMETERS parameters.
"""
from __future__ import annotations

import contextlib
from typing import Any

from ..errors import TraceError
from ..load import LoadedModel
from ..records import AtenCall
from .keys import function_key, is_leaf_module, module_op
from .nodes import NodeBuild
from .registry import CaptureMethod, Graph, Progress, Skipped, no_progress, register_capture
from .sources import is_installed, project_from_stack_trace, source_from_stack_trace
from .values import SKIP, describe, jsonable, module_attrs

# torch.export is skipped above this many parameters (it would cost more than the whole scan budget).
EXPORT_MAX_PARAMETERS = 1_000_000_000
# Checks torch.export inserts into its graph (dtype/device asserts before a .to(), size constraints): they are the
# exporter's, not the model's, and nothing of them runs on a device.
_EXPORT_CHECKS = {"_assert_tensor_metadata", "_assert_scalar", "_assert_async", "sym_constrain_range",
                  "sym_constrain_range_for_size"}


@register_capture("export", small=4, large=4)
class ExportCapture(CaptureMethod):
    """torch.export, its ATen graph folded back into layer calls where it can be."""

    def capture(self, loaded: LoadedModel, progress: Progress = no_progress) -> Graph:
        return capture_export(loaded, progress)


def capture_export(loaded: LoadedModel, progress: Progress = no_progress) -> Graph:
    """Export loaded.module and read one NodeBuild per operator out of the exported graph."""
    import torch

    model = loaded.module
    if loaded.info.parameters > EXPORT_MAX_PARAMETERS:
        raise Skipped(f"skipped: {loaded.info.parameters:,} parameters is over the export limit of "
                      f"{EXPORT_MAX_PARAMETERS:,} (torch.export costs ~13x one recorded forward)")
    with _quiet_torch_logs():  # a failed export logs the whole graph; the attempt's one-line error is enough
        exported = torch.export.export(model, loaded.args, loaded.kwargs, strict=False)
    modules = dict(model.named_modules())
    signature = exported.graph_signature
    weights = {*signature.inputs_to_parameters, *signature.inputs_to_buffers,
               *signature.inputs_to_lifted_tensor_constants}  # placeholders export lifts out of the modules
    nodes: list[NodeBuild] = []
    by_name: dict[str, NodeBuild] = {}
    # id(leaf module build) -> (the call's nn_module_stack key, graph values the call got from outside)
    module_calls: dict[int, tuple[str, dict[str, Any]]] = {}
    for n in exported.graph.nodes:
        if n.op != "call_function" or getattr(n.target, "__name__", "").split(".")[0] in _EXPORT_CHECKS:
            continue
        stack = n.meta.get("nn_module_stack") or {}
        path = next(reversed(stack.values()))[0] if stack else ""
        path = _export_path(path)
        call_key = next(reversed(stack)) if stack else ""  # "L__self___fc", then "L__self___fc@1" for a 2nd call
        target = n.target
        schema = getattr(target, "_schema", None)
        vals = [a.meta.get("val") for a in n.all_input_nodes]
        out = n.meta.get("val")
        call = None
        if schema is not None:
            ns, _, name = schema.name.partition("::")
            call = AtenCall(f"{ns}::{name}", target._overloadname, *describe(vals), *describe(out))
        source = source_from_stack_trace(n.meta.get("stack_trace"))
        sub = modules.get(path)
        if sub is not None and is_leaf_module(sub):
            # consecutive ATen nodes of one leaf module call form one operator node, whose inputs are what the
            # module's forward() received (as in the other captures), not its weights nor its own intermediates
            last = nodes[-1] if nodes else None
            previous = module_calls.get(id(last)) if last is not None else None
            if previous is None or last is None or previous[0] != call_key or last.source != source:
                last = None
            inputs = module_calls[id(last)][1] if last is not None else {}
            inputs.update((a.name, a.meta.get("val")) for a in n.all_input_nodes
                          if a.name not in weights and (last is None or by_name.get(a.name) is not last))
            if last is not None:
                last.aten = last.aten + ((call,) if call else ())
                last.inputs = describe(list(inputs.values()))
                last.outputs = describe(out)
                by_name[n.name] = last
                continue
            build = NodeBuild(n.name, module_op(sub), "module", path, module_attrs(sub),
                              describe(list(inputs.values())), describe(out), (call,) if call else (), source, 0, 0)
            module_calls[id(build)] = (call_key, inputs)
        else:
            op, kind = function_key(target)
            attrs = {}
            if schema is not None:
                for arg, value in zip(schema.arguments, n.args, strict=False):
                    plain = jsonable(value)
                    if plain is not SKIP:
                        attrs[arg.name] = plain
            build = NodeBuild(n.name, op, kind, path, attrs, describe(vals), describe(out),
                              (call,) if call else (), source, 0, 0)
        if is_installed(source):
            build.project_source = project_from_stack_trace(n.meta.get("stack_trace"))
        nodes.append(build)
        by_name[n.name] = build
    for build in nodes:  # export traces with fake tensors: a size computed from the data stays a symbol (u0)
        if any(type(d) is not int for shape in build.inputs[0] + build.outputs[0] for d in shape):
            raise TraceError(f"node {build.name}: a data-dependent size ({build.key}) has no value in torch.export; "
                             "a run on real data measures it")
    edges = set()
    for n in exported.graph.nodes:
        if n.name in by_name:
            for p in n.all_input_nodes:
                if p.name in by_name and by_name[p.name] is not by_name[n.name]:
                    edges.add((by_name[p.name].name, by_name[n.name].name))
    return [b.freeze() for b in nodes], sorted(edges)


@contextlib.contextmanager
def _quiet_torch_logs():
    import io
    import logging

    logger = logging.getLogger("torch")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        # torch.export prints the partial graph of a failed export to stderr
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)


def _export_path(path: str) -> str:
    # export names submodules "L['self'].layer1" or "layer1.0.conv1" depending on the torch version
    return path.replace("L['self'].", "").replace("L['self']", "")
