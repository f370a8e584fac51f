"""The JSON form of the graph-mode records: top-level `graph_mode` and each operator's `graph_mode`."""
from __future__ import annotations

from typing import Any

from .records import BackendVerdict, GraphBreak, GraphMode


def verdicts_doc(verdicts: tuple[BackendVerdict, ...] | None) -> dict[str, Any] | None:
    """{"inductor": {"verdict", "reason", "evidence", "aten"}, "npugraph_ex": ..., "ge": ...} or None."""
    if not verdicts:
        return None
    return {v.backend: {"verdict": v.verdict, "reason": v.reason, "evidence": list(v.evidence), "aten": list(v.aten)}
            for v in verdicts}


def break_doc(item: GraphBreak) -> dict[str, Any]:
    return {"op": item.op, "reason": item.reason, "source": item.source, "kind": item.kind, "method": item.method,
            "fix": item.fix}


def graph_mode_doc(graph: GraphMode | None) -> dict[str, Any] | None:
    """The model's readiness per back-end, with how the breaks were found and what that method cannot see."""
    if graph is None:
        return None
    dynamo, effort = graph.dynamo, graph.effort
    return {
        "method": graph.method,
        "backend": graph.chosen,
        "effort": None if effort is None else {
            "backend": effort.backend, "basis": effort.basis,
            "person_days": {"low": round(effort.person_days.low, 2), "likely": round(effort.person_days.likely, 2),
                            "high": round(effort.person_days.high, 2)}},
        "unseen": graph.unseen,
        "backends": {b.backend: {"ready": b.ready, "breaks": [break_doc(x) for x in b.breaks],
                                 "capturable_flops_share": (round(b.capturable_flops_share, 4)
                                                            if b.capturable_flops_share is not None else None),
                                 "split_points": list(b.split_points), "notes": list(b.notes)}
                     for b in graph.backends},
        "dynamo": None if dynamo is None else {
            "graphs": dynamo.graphs, "ops": dynamo.ops, "seconds": round(dynamo.seconds, 3), "error": dynamo.error,
            "breaks": [{"reason": item.reason, "source": item.source} for item in dynamo.breaks]},
    }
