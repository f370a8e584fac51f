"""Per model, per back-end: the breaks, the FLOPs inside capturable regions, the split points, from the capture."""
from __future__ import annotations

import os
from collections.abc import Mapping

from ..kb.graph_facts import GraphFacts, data_dependent, host_sync
from ..messages import N_, Message
from ..records import Capture, OpNode
from .records import BACKENDS, BackendReadiness, BackendVerdict, GraphBreak
from .verdicts import functional

# The cheap fix of each break kind found in the dispatched calls (action items in the reports).
FIXES = {
    "host-sync": N_("keep the value on the device (torch.where instead of a Python branch) or move {op} out of "
                    "forward"),
    "data-dependent": N_("use a fixed-size form (a mask multiply, nonzero_static with a bound) or move {op} out of the "
                         "compiled region"),
    "dynamo": N_("rewrite the construct torch._dynamo cannot trace, or move it out of the compiled region"),
}
CAPTURE_UNSEEN = N_("Python-level breaks (side effects such as print or list appends, unsupported builtins, "
                    "data-dependent Python control flow that dispatches no ATen op) are not seen by the capture alone: "
                    "scan with --graph-mode dynamo to run torch._dynamo on the model")
DYNAMO_UNSEEN = N_("torch._dynamo ran on the forward with the example inputs only (on the capture's device): a branch "
                   "those inputs did not take, the backward pass and re-compiles for other shapes are not seen")


def _break(op: str, source: str | None, kind: str, reason: Message, fix: Message | None = None,
           method: str = "capture") -> GraphBreak:
    """A break whose reason and fix are catalog messages (the record keeps their English text too)."""
    return GraphBreak(op, reason.text(), source, kind, method=method, fix=fix.text() if fix else None,
                      message=reason, fix_message=fix)


def node_breaks(node: OpNode) -> list[GraphBreak]:
    """The breaks every back-end shares at one node: a host read, a data-dependent output size (torch._dynamo
    breaks the graph at both unless told to capture them)."""
    out = []
    for call in node.aten:
        if host_sync(call):
            out.append(_break(node.key, node.source, "host-sync",
                              Message.of(N_("host sync: {aten} reads a device value on the host"), aten=call.qualified),
                              Message.of(FIXES["host-sync"], op=node.key)))
        elif data_dependent(call):
            out.append(_break(node.key, node.source, "data-dependent",
                              Message.of(N_("data-dependent output shape: {aten}"), aten=call.qualified),
                              Message.of(FIXES["data-dependent"], op=node.key)))
    return out[:1]


def _line_key(source: str) -> tuple[str, str]:
    path, _, line = source.rpartition(":")
    return os.path.realpath(path), line


def _decided_here(verdict: BackendVerdict, node: OpNode) -> bool:
    """Whether an operator's verdict comes from this node's own calls (an operator such as Tensor.__getitem__ is a
    boolean-mask index in one place and a plain slice in another)."""
    if not verdict.aten:
        return True
    own = {c.qualified for c in node.aten} | {functional(c.qualified) for c in node.aten} | set(node.entry)
    return bool(own & set(verdict.aten))


def dynamo_breaks(capture: Capture, seen: set[str]) -> tuple[GraphBreak, ...]:
    """The breaks torch._dynamo reported at lines the capture's own breaks do not already name, each source spelt
    as the capture spells that file."""
    if capture.dynamo is None:
        return ()
    if not capture.dynamo.graphs and any(node.aten for node in capture.nodes if node.kind != "optimizer"):
        why = Message(capture.dynamo.breaks[0].reason) if capture.dynamo.breaks else Message(N_("it gave no reason"))
        return (_break("forward", None, "dynamo", Message.of(N_("torch._dynamo built no graph of the forward (it all "
                                                                "runs eager): {why}"), why=why),
                       Message(FIXES["dynamo"]), method="dynamo"),)
    spelling = {_line_key(s)[0]: s.rpartition(":")[0] for s in (n.source for n in capture.nodes) if s}
    taken = {_line_key(s) for s in seen}
    out = []
    for item in capture.dynamo.breaks:
        key = _line_key(item.source) if item.source else None
        if key in taken:
            continue
        source = f"{spelling.get(key[0], item.source.rpartition(':')[0])}:{key[1]}" if item.source and key else None
        out.append(_break(item.reason.split(":")[0][:120], source, "dynamo",
                          Message.of("torch._dynamo: {reason}", reason=item.reason), Message(FIXES["dynamo"]),
                          method="dynamo"))
    return tuple(dict.fromkeys(out))


def model_readiness(capture: Capture, verdicts: Mapping[str, tuple[BackendVerdict, ...]], facts: GraphFacts,
                    inputs: tuple[str, ...] = ()) -> tuple[BackendReadiness, ...]:
    """One BackendReadiness per back-end: ready when nothing breaks its graph. `inputs` (ModelInfo.inputs, e.g.
    'float32[1,16]') are named in the re-capture note: aclgraph captures per input shape."""
    shared = {node.name: node_breaks(node) for node in capture.nodes}
    python = dynamo_breaks(capture, {b.source for found in shared.values() for b in found if b.source})
    total = sum(node.flops for node in capture.nodes)
    train = capture.training
    out = []
    for index, backend in enumerate(BACKENDS):
        breaks: list[GraphBreak] = []
        split: list[str] = []
        inside = 0
        for node in capture.nodes:
            if node.kind == "optimizer":  # the optimizer step is not part of the model's compiled graph
                continue
            found = list(shared[node.name])
            verdict = verdicts.get(node.key, ())[index] if node.key in verdicts else None
            if not found and verdict is not None and verdict.blocking and _decided_here(verdict, node):
                found.append(_break(node.key, node.source, "operator", Message.of(
                    "{verdict}: {reason}", verdict=verdict.verdict, reason=verdict.message or verdict.reason)))
            if found:
                split.append(node.key)
                breaks += found
            else:
                inside += node.flops
        notes: list[Message] = []
        if backend == "npugraph_ex":
            if train:
                breaks.append(_break("backward pass", None, "backward", Message.of(
                    N_("npugraph_ex does not capture the backward pass (the training step's backward runs eager; "
                       "{cite})"), cite=facts.capture_cite("no_backward"))))
            limit, cite = facts.recapture_limit, facts.capture_cite("recapture_limit")
            if any(b.kind == "data-dependent" for b in breaks):
                notes.append(Message.of(N_("each new data-dependent size is a new capture; after {limit} captures of a "
                                           "graph it runs eager ({cite})"), limit=limit, cite=cite))
            if inputs:
                notes.append(Message.of(N_("captured per input shape ({inputs} here): every other batch size or "
                                           "sequence length is a new capture, and past {limit} per graph it runs "
                                           "eager; pad the inputs to at most {limit} shape buckets ({cite})"),
                                        inputs=", ".join(inputs), limit=limit, cite=cite))
        if backend == "ge" and train:
            notes.append(Message.of(N_("torchair GE is documented as inference-focused ({cite})"),
                                    cite=facts.capture_cite("ge_no_fallback")))
        breaks += python
        unique = tuple(dict.fromkeys(breaks))
        if any(b.op == "forward" and b.kind == "dynamo" for b in python):
            inside = 0  # dynamo built no graph: nothing is captured
        share = inside / total if total else None  # the forward's FLOPs: a training step's backward is not counted
        out.append(BackendReadiness(backend, not unique, unique, share, tuple(dict.fromkeys(split)),
                                    tuple(n.text() for n in notes), tuple(notes)))
    return tuple(out)
