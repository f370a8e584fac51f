"""From the capture to the time model's inputs: one CallWork per captured call (and per backward, with --train).

Which unit runs a call: the cube for the matmul and convolution family (the nodes playing the conv, linear, matmul,
sdpa or mha roles of patterns.toml, or dispatching one of CUBE_ATEN), none for views and host ops (no kernel), the
host for a custom-dev operator (no NPU kernel: torch_npu falls back to the CPU, or the project's CPU code runs), the
vector unit for the rest. FLOPs and bytes are the capture's (findings/compute.node_cost: the trace's counts, or the
FLOP formulas where it left 0); an elementwise call the trace gave no FLOPs counts one op per output element.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from ..dtypes import FLOAT_DTYPES, element_bytes, numel
from ..findings.compute import node_cost
from ..findings.graph import Graph
from ..records import AtenCall, ClassifiedOp, Finding, OpNode
from ..trace.registrations import is_view
from ..vocabulary import Category
from .model import CallWork

CUBE_ROLES = frozenset({"conv", "linear", "matmul", "sdpa", "mha"})
MATMUL_ROLES = frozenset({"linear", "matmul"})
ATTENTION_ROLES = frozenset({"sdpa"})
CUBE_ATEN = frozenset({
    "aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::addbmm", "aten::matmul", "aten::linear",
    "aten::convolution", "aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d",
    "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::convolution_backward",
    "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_flash_attention", "aten::einsum",
    "aten::_grouped_mm"})
NO_KERNEL_REASONS = frozenset({"view-op", "host-op"})
EVIDENCE_CODES = frozenset({"view-op", "host-op", "kernel", "no-kernel", "decomposes"})  # what a call dispatches
HOST_READS = frozenset({"aten::_local_scalar_dense", "aten::item"})  # a value read back to the host


def compute_dtype(dtypes: Sequence[str | None]) -> str | None:
    """The first floating dtype among a call's operands (else the first recorded one)."""
    return next((d for d in dtypes if d in FLOAT_DTYPES), next((d for d in dtypes if d), None))


def _unit(node: OpNode, roles: frozenset[str], classified: ClassifiedOp | None) -> str:
    if roles & CUBE_ROLES or any(c.op in CUBE_ATEN for c in node.aten) or set(node.entry) & CUBE_ATEN:
        return "cube"
    if "view" in roles:
        return "none"
    if node.aten:  # only views and values read back (.item(): the sync is its cost, a penalty): no kernel
        return "none" if all(c.op in HOST_READS or is_view(c.qualified) for c in node.aten) else "vector"
    if classified is not None and classified.category != Category.CUSTOM_DEV and classified.reasons \
            and all(r.code in NO_KERNEL_REASONS for r in classified.reasons if r.code in EVIDENCE_CODES):
        return "none"
    if not node.flops and node.kind in ("method", "function") and not node.output_shapes:
        return "none"
    return "vector"


def runs_on_host(classified: ClassifiedOp | None) -> tuple[bool, str | None]:
    """(the call runs on the host as the model stands, the port it waits for). The time model times the model as it
    is, the NPU time of the ported call as its roofline, the difference at risk: a custom-dev operator falls back to
    the CPU until its kernel is written; a param-converted one whose ATen op has a CANN kernel but no torch_npu
    registration (reason binding: lgamma -> aclnnLgamma) falls back too until the op-plugin binding is written
    (`pending` names it); any other param-converted operator has its NPU kernel and runs on it (its conversion, a
    cast or a parameter change, is the work)."""
    if classified is None or classified.category == Category.DIRECT:
        return False, None
    if classified.category == Category.CUSTOM_DEV:
        return True, None
    binding = next((r for r in classified.reasons if r.code == "binding"), None)
    if binding is None:
        return False, None
    missing = ", ".join(a for a, runs in classified.aten_support.items() if not runs)
    return True, f"no torch_npu registration for {missing} yet (CANN has the kernel): until its op-plugin binding " \
                 f"is written"


def _operand(node: OpNode) -> Sequence[int] | None:
    """The contracted operand of a matmul-like call (baddbmm/addmm take their input first)."""
    shapes = [s for s in node.input_shapes if s]
    if len(node.input_shapes) >= 3 and node.input_shapes[-2]:
        return node.input_shapes[-2]
    return shapes[0] if shapes else None


def _inner_axes(node: OpNode) -> tuple[int, ...]:
    k = node.attrs.get("in_features")
    if isinstance(k, int):
        return (k,)
    operand = _operand(node)
    return (operand[-1],) if operand else ()


def _attention_axes(node: OpNode) -> tuple[int, ...]:
    if len(node.input_shapes) < 2:
        return ()
    q, k = node.input_shapes[:2]
    if q is None or k is None or len(q) < 2 or len(k) < 2:
        return ()
    return tuple(dict.fromkeys((q[-1], q[-2], k[-2])))


def _gemm(node: OpNode, k: int | None) -> tuple[int, int, int] | None:
    """A matmul's (m, n, k) from its output C[..., n] (leading axes folded into m) and its contracted size."""
    out = node.output_shapes[0] if node.output_shapes else None
    if not out or not k:
        return None
    n = out[-1]
    m = numel(out) // n if n else 0
    return (m, n, k) if m and n else None


def node_work(graph: Graph, node: OpNode, classified: ClassifiedOp | None, flags: frozenset[str]) -> CallWork:
    """The CallWork of one captured call."""
    roles = graph.roles[node.name]
    unit = _unit(node, roles, classified)
    flops, nbytes, _ = node_cost(graph, node)
    if node.aten:  # memory traffic of the calls that move memory (the trace's count adds views' in and out)
        nbytes = call_bytes(node.aten)
    if "transdata" in flags:
        unit = "vector"
    if unit == "vector" and not flops and node.output_shapes:
        flops = numel(node.output_shapes[0])  # elementwise: one op per output element
    fallback, pending = runs_on_host(classified)
    if fallback and unit == "none":
        unit = "vector"
    matmul = unit == "cube" and bool(roles & MATMUL_ROLES or {c.op for c in node.aten} & {
        "aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::matmul", "aten::linear"})
    attention = unit == "cube" and bool(roles & ATTENTION_ROLES)
    inner = _inner_axes(node) if matmul and not attention else ()
    return CallWork(node=node.name, op=node.key, unit=unit, dtype=compute_dtype(node.input_dtypes),
                    flops=float(flops), bytes=float(nbytes), fallback=fallback, pending=pending,
                    matmul=matmul and not attention,
                    inner_axes=inner, attention_axes=_attention_axes(node) if attention else (), flags=flags,
                    gemm=_gemm(node, inner[0]) if inner else None)


def call_bytes(calls: Iterable[AtenCall]) -> int:
    """Bytes the calls read and write, views left out: the trace's own count adds a view's input and output (a
    Linear's weight three times over aten::t and aten::mm), the time model counts memory traffic."""
    return sum(numel(s) * element_bytes(d) for c in calls if not is_view(c.qualified)
               for shapes, dtypes in ((c.input_shapes, c.input_dtypes), (c.output_shapes, c.output_dtypes))
               for s, d in zip(shapes, dtypes, strict=False))


def backward_work(forward: CallWork, node: OpNode) -> CallWork | None:
    """The backward of a call (--train): the FLOPs its backward ATen calls count by their formulas, else cube work
    twice the forward FLOPs (input and weight gradients); the bytes its backward ATen calls read and write, one
    launch per backward call."""
    if not node.backward:
        return None
    flops = node.backward_flops or (2 * forward.flops if forward.unit == "cube" else forward.flops)
    return replace(forward, node=f"{node.name}.backward", flops=flops, bytes=float(call_bytes(node.backward)),
                   launches=max(1, len(node.backward)), flags=forward.flags - {"host-sync", "transdata"})


def flag_nodes(findings: Sequence[Finding], graph: Graph, aclop_only: Callable[[str], bool] | None) -> dict[str, set]:
    """node name -> flags read from the findings: layout churn (transdata), dynamic shapes feeding an aclop-only
    kernel (online-compile), host syncs."""
    flags: dict[str, set[str]] = {}
    for finding in findings:
        if finding.kind == "layout-churn":
            for name in finding.nodes:
                if graph.plays(name, ("transpose",)) or name in graph.node and \
                        any("channels_last" in str(v) for v in graph.node[name].attrs.values()):
                    flags.setdefault(name, set()).add("transdata")
        elif finding.kind == "dynamic-shape" and aclop_only is not None:
            for name in finding.nodes:
                node = graph.node.get(name)
                if node is not None and any(aclop_only(a) for a in dict.fromkeys((*node.entry,
                                                                                   *(c.op for c in node.aten)))):
                    flags.setdefault(name, set()).add("online-compile")
    for node in graph.nodes:
        if graph.plays(node.name, ("host_sync",)):
            flags.setdefault(node.name, set()).add("host-sync")
    return flags


def unfused_nodes(findings: Sequence[Finding], node_us: Mapping[str, float], graph: Graph) -> dict[str, str]:
    """node name -> the fused torch_npu API that would absorb it: in each finding naming a fused API, the operator
    carrying the most time is the anchor the fused op keeps; the other members' time is at risk."""
    out: dict[str, str] = {}
    for finding in findings:
        if finding.kind not in graph.book.fused_kinds or not finding.npu_api:
            continue
        by_op: dict[str, float] = {}
        for name in finding.nodes:
            if name in graph.node:
                by_op[graph.node[name].key] = by_op.get(graph.node[name].key, 0.0) + node_us.get(name, 0.0)
        if len(by_op) < 2:
            continue
        anchor = max(by_op, key=by_op.__getitem__)
        for name in finding.nodes:
            if name in graph.node and graph.node[name].key != anchor:
                out.setdefault(name, finding.npu_api)
    return out
