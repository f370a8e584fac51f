"""Graph-mode readiness formatted for people: one line per NPU graph back-end, the breaks, the effort item and the
cheap fixes, built once from the JSON document for every format."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .display_records import ActionItem, Record
from .text import days, percent

FIRST_BLOCKERS = 2  # breaks a back-end's line names; the table lists every one
# How the reports name each back-end (the JSON keys stay the short names).
TITLES = {"inductor": "inductor (torch.compile, torch_npu's inductor)",
          "npugraph_ex": "npugraph_ex (aclgraph capture; npugraphs alike)",
          "ge": "GE (torchair max-autotune graph)"}


@dataclass(frozen=True)
class BackendLine(Record):
    backend: str
    title: str
    ready: bool
    text: str  # "ready, 100% of the FLOPs in capturable regions" / "not ready, 2 break(s): Tensor.item at ..."
    chosen: bool  # the --graph-backend one


@dataclass(frozen=True)
class BreakRow(Record):
    backends: str  # "inductor, npugraph_ex, ge"
    op: str
    kind: str
    source: str
    reason: str
    method: str
    fix: str


@dataclass(frozen=True)
class GraphSection(Record):
    method_text: str  # which analysis found the breaks
    unseen: str  # what it cannot see
    lines: tuple[BackendLine, ...]
    breaks: tuple[BreakRow, ...]
    notes: tuple[str, ...]
    effort_text: str  # "npugraph_ex: 1.5 person-days (0.35-3), apart from the eager migration: ..."


def _where(item: Mapping[str, Any], shorten: Callable[[str], str]) -> str:
    return f" at {shorten(item['source'])}" if item.get("source") else ""


def graph_section(document: Mapping[str, Any], gettext: Callable[[str], str],
                  shorten: Callable[[str], str] = str) -> GraphSection | None:
    """The section, or None when the analysis was switched off (--no-graph-mode)."""
    graph = document.get("graph_mode")
    if not graph:
        return None
    lines: list[BackendLine] = []
    rows: dict[tuple[str, str, str, str], tuple[Mapping[str, Any], list[str]]] = {}  # break -> (it, back-ends)
    for name, backend in graph["backends"].items():
        share = backend["capturable_flops_share"]
        flops = gettext("%s of the FLOPs in capturable regions") % percent(share) if share is not None else ""
        if backend["ready"]:
            text = gettext("ready") + (f", {flops}" if flops else "")
        else:
            shown = "; ".join(f"{b['op']}{_where(b, shorten)} ({b['kind']})"
                              for b in backend["breaks"][:FIRST_BLOCKERS])
            more = len(backend["breaks"]) - FIRST_BLOCKERS
            text = (gettext("not ready, %(n)d break(s): %(shown)s") % {"n": len(backend["breaks"]), "shown": shown}
                    + (gettext(" and %d more") % more if more > 0 else "") + (f"; {flops}" if flops else ""))
        lines.append(BackendLine(name, TITLES.get(name, name), backend["ready"], text, name == graph["backend"]))
        for b in backend["breaks"]:
            key = (b["op"], b["kind"], b.get("source") or "", b["reason"])
            rows.setdefault(key, (b, []))[1].append(name)
    breaks = tuple(BreakRow(", ".join(names), b["op"], b["kind"], shorten(b.get("source") or ""), b["reason"],
                            b["method"], b.get("fix") or "") for b, names in rows.values())
    notes = tuple(dict.fromkeys(f"{name}: {n}" for name, backend in graph["backends"].items()
                                for n in backend["notes"]))
    method = (gettext("Breaks found by torch._dynamo run on the model and in the captured ATen calls")
              if graph["method"] == "dynamo" else gettext("Breaks found in the captured ATen calls"))
    effort = graph.get("effort")
    effort_text = ""
    if effort is not None and effort["basis"]:
        pd = effort["person_days"]
        effort_text = (gettext("%(backend)s: %(likely)s person-days (%(low)s-%(high)s) to make it work, apart from "
                               "the eager migration and not in its total") % {
            "backend": effort["backend"], "likely": days(pd["likely"]), "low": days(pd["low"]),
            "high": days(pd["high"])}) + (f": {effort['basis']}" if effort["basis"] else "")
    return GraphSection(method, graph["unseen"], tuple(lines), breaks, notes, effort_text)


def graph_actions(document: Mapping[str, Any], shorten: Callable[[str], str] = str) -> tuple[ActionItem, ...]:
    """The cheap fixes of the chosen back-end's breaks, one item per operator and fix."""
    graph = document.get("graph_mode")
    if not graph:
        return ()
    items: dict[tuple[str, str], list[str]] = {}
    for b in graph["backends"][graph["backend"]]["breaks"]:
        if b.get("fix"):
            items.setdefault((b["op"], b["fix"]), []).append(shorten(b["source"]) if b.get("source") else "")
    return tuple(ActionItem(kind="graph-break", subject=op,
                            action=f"{fix} ({', '.join(s for s in sources if s)})" if any(sources) else fix,
                            days_text="") for (op, fix), sources in items.items())
