"""The model-level item for making the chosen graph back-end work: per break, from the [graph_mode] weights."""
from __future__ import annotations

from collections.abc import Mapping

from ..messages import N_, Message
from ..records import Effort
from .records import BREAK_KINDS, BackendReadiness, GraphEffort

# What one unit of work is per break kind: an edit per source line, a converter or split per operator type.
_UNIT_BY_SOURCE = frozenset({"host-sync", "data-dependent", "dynamo"})


def graph_effort(readiness: BackendReadiness, rates: Mapping[str, tuple[float, float, float]]) -> GraphEffort:
    """Person-days for `readiness`'s back-end: host syncs, data-dependent sizes and dynamo breaks count once per
    source line, an operator the back-end cannot take once per operator type, the backward pass once.
    Worked example (the shipped rates): 1 host-sync + 1 data-dependent = [0.1+0.25, 0.25+0.5, 1+2] = [0.35, 0.75, 3]."""
    units: dict[str, set] = {kind: set() for kind in BREAK_KINDS}
    for item in readiness.breaks:
        units[item.kind].add((item.source or item.op) if item.kind in _UNIT_BY_SOURCE else item.op)
    parts: list[Message] = []
    total = Effort(0.0, 0.0, 0.0)
    for kind in BREAK_KINDS:
        count = len(units[kind])
        if not count or kind not in rates:
            continue
        low, likely, high = rates[kind]
        total = total + Effort(count * low, count * likely, count * high)
        parts.append(Message.of(N_("{count} {kind} x [{low:g}-{likely:g}-{high:g}]"), count=count, kind=kind, low=low,
                                likely=likely, high=high))
    basis = Message.join(parts, " + ")
    return GraphEffort(readiness.backend, total, basis.text(), basis)
