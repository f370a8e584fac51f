"""The graph-mode section: its JSON part (top-level `graph_mode` and each operator's `graph_mode`, from the
graphmode records) and its display part (one line per NPU graph back-end, the breaks, the effort item and the cheap
fixes, built once from the JSON document for every format)."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from ...graphmode.records import BackendVerdict, GraphBreak, GraphMode
from ..display.records import ActionItem, Record
from ..i18n import N_
from ..parts import EffortPart
from ..text import days, percent

FIRST_BLOCKERS = 2  # breaks a back-end's line names; the table lists every one
# How the reports name each back-end (the JSON keys stay the short names).
TITLES = {"inductor": N_("inductor (torch.compile, torch_npu's inductor)"),
          "npugraph_ex": N_("npugraph_ex (aclgraph capture; npugraphs alike)"),
          "ge": N_("GE (torchair max-autotune graph)")}
Translate = Callable[[str], str]


# ------------------------------------------------------------------ the JSON part's shape (tests/test_vocabulary.py
# ties each TypedDict's keys to the schema's properties: $defs/graph_mode, graph_backend, graph_break, graph_verdict)


class EffortDoc(TypedDict):
    low: float
    likely: float
    high: float


class GraphEffortDoc(TypedDict):
    backend: str
    basis: str
    person_days: EffortDoc


class GraphBreakDoc(TypedDict):
    op: str
    reason: str
    source: str | None
    kind: str
    method: str
    fix: str | None


class GraphBackendDoc(TypedDict):
    ready: bool
    breaks: list[GraphBreakDoc]
    capturable_flops_share: float | None
    split_points: list[str]
    notes: list[str]


class DynamoBreakDoc(TypedDict):
    reason: str
    source: str | None


class DynamoDoc(TypedDict):
    graphs: int
    ops: int
    seconds: float
    error: str | None
    breaks: list[DynamoBreakDoc]


class GraphModeDoc(TypedDict):
    method: str
    backend: str
    effort: GraphEffortDoc | None
    unseen: str
    backends: dict[str, GraphBackendDoc]
    dynamo: DynamoDoc | None


class GraphVerdictDoc(TypedDict):
    verdict: str
    reason: str
    evidence: list[str]
    aten: list[str]


# ------------------------------------------------------------------ the JSON part as the display reads it back
# (report/parts.py decodes it once; tests/test_vocabulary.py ties each part's fields to the same schema nodes)


@dataclass(frozen=True)
class GraphEffortPart:
    backend: str
    basis: str
    person_days: EffortPart


@dataclass(frozen=True)
class GraphBreakPart:
    op: str
    reason: str
    kind: str
    method: str = ""
    source: str | None = None
    fix: str | None = None


@dataclass(frozen=True)
class GraphBackendPart:
    ready: bool
    breaks: tuple[GraphBreakPart, ...]
    capturable_flops_share: float | None = None
    split_points: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class DynamoBreakPart:
    reason: str = ""
    source: str | None = None


@dataclass(frozen=True)
class DynamoPart:
    graphs: int = 0
    ops: int = 0
    seconds: float = 0.0
    error: str | None = None
    breaks: tuple[DynamoBreakPart, ...] = ()


@dataclass(frozen=True)
class GraphModePart:
    """`graph_mode`: the model's readiness per NPU graph back-end, the chosen one, and how the breaks were found."""

    method: str
    backend: str
    unseen: str
    backends: Mapping[str, GraphBackendPart]
    effort: GraphEffortPart | None = None
    dynamo: DynamoPart | None = None


@dataclass(frozen=True)
class GraphVerdictPart:
    """An operator's verdict under one back-end."""

    verdict: str
    reason: str = ""
    evidence: tuple[str, ...] = ()
    aten: tuple[str, ...] = ()


# ------------------------------------------------------------------ the display part
# the names a break gives where no operator breaks the graph (GraphBreak.op): said in the reader's language
PLACES = {"backward": N_("backward pass"), "dynamo": N_("forward")}


def _op(item: GraphBreakPart, gettext: Translate) -> str:
    """A break's operator, or the place it names ('backward pass', 'forward') in the reader's language."""
    place = PLACES.get(item.kind)
    return gettext(place) if place is not None and item.op == place else item.op


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


def _where(item: GraphBreakPart, shorten: Callable[[str], str], gettext: Translate) -> str:
    source = item.source
    return gettext(" at %(source)s") % {"source": shorten(source)} if source else ""


def _said(item: GraphBreak | None, doc: GraphBreakPart, gettext: Translate) -> tuple[str, str]:
    """A break's reason and fix in the reader's language, from its record's messages (the document's English text
    when there is no record)."""
    reason = item.message.text(gettext) if item is not None and item.message else doc.reason
    fix = item.fix_message.text(gettext) if item is not None and item.fix_message else doc.fix or ""
    return reason, fix


def _breaks(record: GraphMode | None, name: str, count: int) -> tuple[GraphBreak | None, ...]:
    """One back-end's break records, in the document's order (None for each when there is no record)."""
    found = next((b.breaks for b in record.backends if b.backend == name), ()) if record is not None else ()
    return found if len(found) == count else (None,) * count


def _notes(record: GraphMode | None, name: str, written: Sequence[str], gettext: Translate) -> list[str]:
    said = next((b.note_messages for b in record.backends if b.backend == name), ()) if record is not None else ()
    return [m.text(gettext) for m in said] if len(said) == len(written) else list(written)


def graph_section(graph: GraphModePart | None, gettext: Translate, shorten: Callable[[str], str] = str,
                  record: GraphMode | None = None) -> GraphSection | None:
    """The section, or None when the analysis was switched off (--no-graph-mode). `record`, the assessment's
    GraphMode, gives the reasons, fixes and notes as catalog messages (else they read as the document has them)."""
    if not graph:
        return None
    lines: list[BackendLine] = []
    # break -> (it, back-ends, (reason, fix) said)
    rows: dict[tuple[str, str, str, str], tuple[GraphBreakPart, list[str], tuple[str, str]]] = {}
    notes: list[str] = []
    for name, backend in graph.backends.items():
        share = backend.capturable_flops_share
        flops = gettext("%s of the FLOPs in capturable regions") % percent(share) if share is not None else ""
        if backend.ready:
            text = gettext("ready") + (f", {flops}" if flops else "")
        else:
            shown = "; ".join(f"{_op(b, gettext)}{_where(b, shorten, gettext)} ({b.kind})"
                              for b in backend.breaks[:FIRST_BLOCKERS])
            more = len(backend.breaks) - FIRST_BLOCKERS
            text = (gettext("not ready, %(n)d break(s): %(shown)s") % {"n": len(backend.breaks), "shown": shown}
                    + (gettext(" and %d more") % more if more > 0 else "") + (f"; {flops}" if flops else ""))
        lines.append(BackendLine(name, gettext(TITLES[name]) if name in TITLES else name, backend.ready, text,
                                 name == graph.backend))
        for b, item in zip(backend.breaks, _breaks(record, name, len(backend.breaks)), strict=True):
            key = (b.op, b.kind, b.source or "", b.reason)
            rows.setdefault(key, (b, [], _said(item, b, gettext)))[1].append(name)
        notes += [f"{name}: {n}" for n in _notes(record, name, backend.notes, gettext)]
    breaks = tuple(BreakRow(", ".join(names), _op(b, gettext), b.kind, shorten(b.source or ""), reason,
                            b.method, fix) for b, names, (reason, fix) in rows.values())
    method = (gettext("Breaks found by torch._dynamo run on the model and in the captured ATen calls")
              if graph.method == "dynamo" else gettext("Breaks found in the captured ATen calls"))
    effort = graph.effort
    effort_text = ""
    if effort is not None and effort.basis:
        pd = effort.person_days
        said_basis = record.effort.basis_message.text(gettext) if record is not None and record.effort is not None \
            and record.effort.basis_message else effort.basis
        effort_text = (gettext("%(backend)s: %(likely)s person-days (%(low)s-%(high)s) to make it work, apart from "
                               "the eager migration and not in its total") % {
            "backend": effort.backend, "likely": days(pd.likely), "low": days(pd.low),
            "high": days(pd.high)}) + f": {said_basis}"
    return GraphSection(method, gettext(graph.unseen), tuple(lines), breaks, tuple(dict.fromkeys(notes)),
                        effort_text)


def graph_actions(graph: GraphModePart | None, shorten: Callable[[str], str] = str, gettext: Translate = str,
                  record: GraphMode | None = None) -> tuple[ActionItem, ...]:
    """The cheap fixes of the chosen back-end's breaks, one item per operator and fix (said in the reader's language
    when `record` gives them as messages)."""
    if not graph:
        return ()
    breaks = graph.backends[graph.backend].breaks
    items: dict[tuple[str, str], list[str]] = {}
    for b, item in zip(breaks, _breaks(record, graph.backend, len(breaks)), strict=True):
        if b.fix:
            fix = _said(item, b, gettext)[1]
            items.setdefault((b.op, fix), []).append(shorten(b.source) if b.source else "")
    return tuple(ActionItem(kind="graph-break", subject=op,
                            action=f"{fix} ({', '.join(s for s in sources if s)})" if any(sources) else fix,
                            days_text="") for (op, fix), sources in items.items())


# ------------------------------------------------------------------ the JSON part: built from the records


def verdicts_doc(verdicts: tuple[BackendVerdict, ...] | None) -> dict[str, GraphVerdictDoc] | None:
    """{"inductor": {"verdict", "reason", "evidence", "aten"}, "npugraph_ex": ..., "ge": ...} or None."""
    if not verdicts:
        return None
    return {v.backend: {"verdict": v.verdict, "reason": v.reason, "evidence": list(v.evidence), "aten": list(v.aten)}
            for v in verdicts}


def break_doc(item: GraphBreak) -> GraphBreakDoc:
    return {"op": item.op, "reason": item.reason, "source": item.source, "kind": item.kind, "method": item.method,
            "fix": item.fix}


def graph_mode_doc(graph: GraphMode | None) -> GraphModeDoc | None:
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
