"""The parent's half of `scan --route onnx`: each ONNX op type of the worker's export judged against the ONNX -> CANN
map (msit's map_conf/onnx.yaml, kb/route_facts.json) at the model's opset.

Verdicts: `supported` (the map names a CANN operator at this opset; PartitionedCall = ATC lowers it as a subgraph),
`opset-dependent` (the map names it only at other opsets: re-export at one of those), `no CANN mapping` (the map
never names it). ATC itself is not run: a supported node can still fail its conversion on a shape or attribute.
"""
from __future__ import annotations

from ..errors import UsageError
from ..kb.routes import ONNX_TABLE, RouteFacts
from .records import OnnxExport, OnnxNode, OnnxRoute

# ATC (CANN's model converter) takes ONNX models of opset 11 or later (the seed's four-layer mapping); the map lists
# opsets up to 18 (RouteFacts.onnx_opsets). The default is the newest opset both exporters of torch 2.13 write.
MIN_OPSET = 11
MAX_OPSET = 18
DEFAULT_OPSET = 17


def check_opset(opset: int) -> int:
    """The opset, or UsageError (exit 2) with the reason when ATC or the map does not take it."""
    if opset < MIN_OPSET:
        raise UsageError(f"--opset {opset}: ATC (CANN's model converter) takes ONNX models of opset {MIN_OPSET} or "
                         f"later; choose {MIN_OPSET}..{MAX_OPSET}")
    if opset > MAX_OPSET:
        raise UsageError(f"--opset {opset}: the ONNX -> CANN map lists opsets up to {MAX_OPSET}; choose "
                         f"{MIN_OPSET}..{MAX_OPSET}")
    return opset


def _ranges(opsets: tuple[int, ...]) -> str:
    """(8, 9, 10, 11, 16) -> '8-11, 16'."""
    parts, start = [], None
    for i, value in enumerate(opsets):
        if start is None:
            start = value
        if i + 1 == len(opsets) or opsets[i + 1] != value + 1:
            parts.append(str(start) if start == value else f"{start}-{value}")
            start = None
    return ", ".join(parts)


def judge_node(domain: str, op_type: str, count: int, opset: int, facts: RouteFacts) -> OnnxNode:
    """One op type's verdict, CANN operator and evidence at `opset`."""
    if domain:
        return OnnxNode(f"{domain}::{op_type}", count, "", "no CANN mapping",
                        f"{ONNX_TABLE}: no row for domain {domain}")
    mapping = facts.onnx_op(op_type, opset)
    if mapping is not None:
        return OnnxNode(op_type, count, mapping.cann_op, "supported", mapping.cite)
    elsewhere = facts.onnx_opsets_of(op_type)
    if elsewhere:
        nearest = min(elsewhere, key=lambda o: (abs(o - opset), -o))
        other = facts.onnx_op(op_type, nearest)
        assert other is not None  # `nearest` is one of the opsets that list op_type
        return OnnxNode(op_type, count, "", "opset-dependent",
                        f"{other.cite}; listed at opsets {_ranges(elsewhere)}, not {opset}")
    return OnnxNode(op_type, count, "", "no CANN mapping", f"{ONNX_TABLE}: {op_type} not listed at any opset")


def judge_onnx(export: OnnxExport, facts: RouteFacts) -> OnnxRoute:
    """The route record: every exported op type judged (gaps first, then by count), the export's failures kept."""
    # Identity nodes are not operators: the exporters emit them for renamed outputs and initializers (98-141 in a
    # transformer), and ATC folds them away
    nodes = [judge_node(domain, op, count, export.opset, facts) for domain, op, count in export.ops
             if (domain, op) != ("", "Identity")]
    rank = {"no CANN mapping": 0, "opset-dependent": 1, "supported": 2}
    nodes.sort(key=lambda n: (rank[n.verdict], -n.count, n.op_type))
    return OnnxRoute(opset=export.opset, requested_opset=export.requested_opset, exporter=export.exporter,
                     nodes=tuple(nodes), failures=export.failures)
