"""Compute weight: the operators carrying the largest shares of the model's FLOPs and bytes moved, with FLOP
formulas for the nodes the trace left at 0 (export captures, attention on the CPU)."""
from __future__ import annotations

import math

from ..dtypes import node_bytes, numel
from ..messages import Message
from ..records import Finding, OpNode
from .families import Survey, family
from .graph import Graph
from .registry import FLOP_FORMULAS, flop_formula


@flop_formula("conv")
def conv_flops(node: OpNode) -> int | None:
    """2 * output elements * (input channels per group * kernel elements); the kernel from the layer's attributes,
    or from the weight operand (out, in/groups, *kernel) when the capture recorded it."""
    if not node.output_shapes or node.output_shapes[0] is None:
        return None
    attrs = node.attrs
    if "in_channels" in attrs and "kernel_size" in attrs:
        kernel = attrs["kernel_size"] if isinstance(attrs["kernel_size"], list) else [attrs["kernel_size"]]
        per_output = attrs["in_channels"] // max(1, attrs.get("groups", 1) or 1) * math.prod(kernel)
    elif len(node.input_shapes) >= 2 and node.input_shapes[1]:
        per_output = math.prod(node.input_shapes[1][1:])
    else:
        return None
    return 2 * numel(node.output_shapes[0]) * per_output


@flop_formula("linear")
def linear_flops(node: OpNode) -> int | None:
    """2 * output elements * in_features (Linear 4 -> 8 on (1, 4): 2 * 8 * 4 = 64)."""
    if not node.output_shapes or node.output_shapes[0] is None or not node.input_shapes:
        return None
    k = node.attrs.get("in_features") or (node.input_shapes[0][-1] if node.input_shapes[0] else None)
    return 2 * numel(node.output_shapes[0]) * int(k) if k else None


@flop_formula("matmul")
def matmul_flops(node: OpNode) -> int | None:
    """2 * output elements * the contracted size (the first operand's last dimension); baddbmm adds its input
    first, so the contracted operand is the second."""
    if not node.output_shapes or node.output_shapes[0] is None or len(node.input_shapes) < 2:
        return None
    operand = node.input_shapes[-2] if len(node.input_shapes) >= 3 else node.input_shapes[0]
    if not operand:
        return None
    return 2 * numel(node.output_shapes[0]) * operand[-1]


@flop_formula("sdpa")
def attention_flops(node: OpNode) -> int | None:
    """Two batched matmuls: q @ k^T (2 * B * Sq * Sk * D) and p @ v (2 * B * Sq * Sk * Dv), B = all leading dims.
    The trace's flop counter has no formula for SDPA's CPU kernel and sees nothing on export."""
    if len(node.input_shapes) < 3 or any(s is None or len(s) < 2 for s in node.input_shapes[:3]):
        return None
    q, k, v = node.input_shapes[:3]
    assert q is not None and k is not None and v is not None  # checked above
    batch = math.prod(q[:-2])
    return 2 * batch * q[-2] * k[-2] * q[-1] + 2 * batch * q[-2] * k[-2] * v[-1]


def node_cost(graph: Graph, node: OpNode) -> tuple[int, int, bool]:
    """(FLOPs, bytes moved, estimated here): the trace's counts, or the formulas above where it left 0."""
    flops, estimated = node.flops, False
    if not flops:
        for role in graph.roles[node.name]:
            formula = FLOP_FORMULAS.get(role)
            value = formula(node) if formula else None
            if value:
                flops, estimated = value, True
                break
    nbytes = node.bytes_moved or node_bytes(node)
    return flops, nbytes, estimated or (not node.bytes_moved and nbytes > 0)


@family("compute", order=50, kinds=("compute",))
def compute_findings(survey: Survey) -> list[Finding]:
    """The top `compute.top` operators by FLOPs and by bytes moved, each above `compute.min_share` of the total."""
    graph = survey.graph
    inventory = survey.inventory
    book = graph.book
    totals: dict[str, list[int]] = {}
    for operator in inventory.operators:
        row = totals.setdefault(operator.key, [0, 0, 0])
        for node in operator.nodes:
            node_flops, node_bytes, node_estimated = node_cost(graph, node)
            row[0] += node_flops
            row[1] += node_bytes
            row[2] += int(node_estimated)
    all_flops = sum(r[0] for r in totals.values())
    all_bytes = sum(r[1] for r in totals.values())
    chosen: list[str] = []
    for index, total in ((0, all_flops), (1, all_bytes)):
        if total <= 0:
            continue
        ranked = sorted(totals, key=lambda op: -totals[op][index])
        chosen += [op for op in ranked[:book.compute_top]
                   if totals[op][index] / total >= book.compute_min_share and op not in chosen]
    operators = {o.key: o for o in inventory.operators}
    findings = []
    for op in chosen:
        flops, nbytes, estimated = totals[op]
        names = tuple(n.name for n in operators[op].nodes)
        metrics = {"flops": flops, "bytes_moved": nbytes,
                   "flops_share": flops / all_flops if all_flops else 0.0,
                   "bytes_share": nbytes / all_bytes if all_bytes else 0.0,
                   "estimated_nodes": estimated, "occurrences": len(names)}
        title = Message.of(book.compute_title, op=op, flops=flops, flops_share=metrics["flops_share"], bytes=nbytes,
                           bytes_share=metrics["bytes_share"], count=len(names))
        findings.append(Finding(kind="compute", title=title.text(), message=title, nodes=names, ops=(op,),
                                source=graph.first_source(names), npu_api=None, effect=book.effects["compute"],
                                metrics=metrics))
    return findings
