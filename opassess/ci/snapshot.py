"""Read a report back: a JSON report (format_version 1), its document, or an Assessment -> a Snapshot record.

Baseline diffs, CI policies and portfolios all work on this one reading of the JSON contract, so a baseline
written by an earlier run and an Assessment made just now are compared field by field in the same terms.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..assessment import Assessment
from ..errors import ReportError
from ..records import Effort
from ..report.parts import EffortPart
from ..report.sections.graph import GraphModePart
from ..report.sections.operators import ModelPart, OperatorPart, SignaturePart, SummaryPart
from ..report.sections.reach import ReachPart
from ..report.sections.source import SitePart, is_work
from ..score.cost import SOURCE_FINDING  # an operator's cost basis when a source site carries it
from ..vocabulary import CATEGORIES

SUPPORTED_FORMAT_VERSIONS = (1,)


@dataclass(frozen=True)
class SignatureState:
    """One attribute/shape/dtype signature of an operator: a canonical key, its category and its call count."""

    key: str  # canonical JSON of attrs, input shapes and input dtypes: equal keys are the same port
    category: str | None
    count: int


@dataclass(frozen=True)
class OpState:
    """One operator type as a report states it: what diffs, policies and portfolios look at."""

    op: str
    kind: str
    category: str | None  # None when the report was written before classification
    known: bool | None
    count: int
    person_days: Effort | None
    stars: int | None
    composite: float | None
    sources: tuple[str, ...]
    signatures: tuple[SignatureState, ...]
    replacement: str | None = None
    cost: str | None = None  # its cost basis (score.cost): "validation-block" is a share of the validation line

    @property
    def first_source(self) -> str | None:
        return self.sources[0] if self.sources else None


@dataclass(frozen=True)
class Snapshot:
    """The parts of one model's report that later comparisons need, operators in report order."""

    source: str  # model.source, "examples/resnet_like.py"
    class_name: str
    total: Effort | None  # summary.person_days
    operators: tuple[OpState, ...]
    origin: str  # where it was read from: a file name, or "assessment"
    entry: str = ""  # model.entry, the factory's name ("build_model")
    label: str | None = None  # model.label (--label), absent in reports written before it existed
    band: tuple[float, float, float] | None = None  # summary p10, p50, p90; absent in older reports
    # graph_mode: per back-end its breaks (op, kind, source, reason); None when the report has no graph analysis
    graph_breaks: Mapping[str, tuple[tuple[str, str, str | None, str], ...]] | None = None
    # reach.present: each operator present but not reached by the run, not captured elsewhere and not direct, as
    # (op, category, first source); gated only by --fail-on unreached
    unreached: tuple[tuple[str, str, str], ...] = ()
    # summary.activities as (name, person-days); None in a report written before they were listed
    activities: tuple[tuple[str, Effort], ...] | None = None
    decisions: tuple[tuple[str, str, Effort], ...] = ()  # summary.decisions as (name, cause, what it costs once)
    target: str | None = None  # the product the report was written for ("Atlas A2")

    @property
    def gated(self) -> float | None:
        """The figure --max-person-days compares: P50 (the headline), or the likely sum in a report without one."""
        return self.gated_at("P50")

    def gated_at(self, percentile: str) -> float | None:
        """The simulated total's P10, P50 or P90 (--max-person-days-at), or the likely sum in a report without a
        band (written before the simulation)."""
        if self.band is not None:
            return self.band[("P10", "P50", "P90").index(percentile)]
        return self.total.likely if self.total is not None else None

    @property
    def name(self) -> str:
        """How a report names this model: 'net (Net)' with a label, else 'models/net.py:build_model (Net)'."""
        return f"{self.label} ({self.class_name})" if self.label else f"{self.source}:{self.entry} ({self.class_name})"

    def operator(self, op: str) -> OpState | None:
        return next((o for o in self.operators if o.op == op), None)


def read_snapshot(source: Assessment | Mapping[str, Any] | str | Path) -> Snapshot:
    """A Snapshot from an Assessment, a JSON report document, or the path of a JSON report."""
    if isinstance(source, Assessment):
        from ..report.document import build_document  # the JSON document is the one contract: read it through it

        return _from_document(build_document(source), "assessment")
    if isinstance(source, Mapping):
        return _from_document(source, "document")
    path = Path(source)
    from ..datafile import read_text

    if not path.exists() and not path.is_symlink():
        raise ReportError(f"{path}: no such report")
    text = read_text(path, "report", ReportError)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}:{exc.lineno}: not a JSON report: {exc.msg}") from exc
    except RecursionError as exc:
        raise ReportError(f"{path}: the report is nested too deep to read") from exc
    return _from_document(document, str(path))


def signature_key(signature: SignaturePart) -> str:
    """'{"attrs":{"stride":[2,2]},"dtypes":["float32"],"shapes":[[1,3,8,8]]}' for one signature of the JSON report."""
    return json.dumps({"attrs": signature.attrs, "shapes": signature.input_shapes, "dtypes": signature.input_dtypes},
                      sort_keys=True, separators=(",", ":"))


def _effort(value: EffortPart | None) -> Effort | None:
    return None if value is None else Effort(float(value.low), float(value.likely), float(value.high))


SOURCE_KIND = "source"  # OpState.kind of a source finding (a site in the code, not a captured operator)


@dataclass(frozen=True)
class _Report:
    """What a snapshot reads of a report document (the parts as the report's sections declare them)."""

    model: ModelPart
    operators: tuple[OperatorPart, ...]
    summary: SummaryPart | None = None
    source_findings: tuple[SitePart, ...] | None = None
    graph_mode: GraphModePart | None = None
    reach: ReachPart | None = None
    target: Any = None


def _source_states(findings: Iterable[SitePart], origin: str) -> list[OpState]:
    """Source findings as the states diffs, gates and portfolios compare: one per site, named by its line-free key,
    notes (precision notes, no-ops) left out."""
    states = []
    for index, finding in enumerate(findings):
        if not is_work(finding) or finding.covered_by:  # notes (not compared, never gated); sites an operator carries
            continue
        if finding.reached is False:  # present, not reached by this model: not in its total nor its gates
            continue
        if finding.category not in CATEGORIES:
            raise ReportError(f"{origin}: source_findings[{index}]: unknown category {finding.category!r}")
        states.append(OpState(
            op=finding.key or f"{finding.file}:{finding.line} {finding.subject}",
            kind=SOURCE_KIND, category=finding.category, known=True, count=1,
            person_days=_effort(finding.person_days), stars=finding.risk.stars if finding.risk else None,
            composite=None, sources=(f"{finding.file}:{finding.line}",), signatures=(),
            replacement=finding.npu_route or None))
    return states


def _operator_state(op: OperatorPart, where: str) -> OpState:
    if op.category is not None and op.category not in CATEGORIES:
        raise ReportError(f"{where}: unknown category {op.category!r}")
    return OpState(
        op=op.op, kind=op.kind, category=op.category, known=op.known, count=int(op.count),
        person_days=_effort(op.person_days), stars=op.risk.stars if op.risk else None,
        composite=op.scores.composite if op.scores else None, sources=op.source,
        signatures=tuple(SignatureState(key=signature_key(s), category=s.category, count=int(s.count))
                         for s in op.signatures),
        replacement=op.replacement, cost=op.cost)


def _from_document(document: Any, origin: str) -> Snapshot:
    from ..report.parts import decode  # the report's records load with a report read, not at start-up

    if not isinstance(document, Mapping):
        raise ReportError(f"{origin}: not an opassess JSON report (expected an object)")
    version = document.get("format_version")
    if version not in SUPPORTED_FORMAT_VERSIONS:
        raise ReportError(f"{origin}: format_version {version!r} is not one this opassess reads "
                          f"({', '.join(map(str, SUPPORTED_FORMAT_VERSIONS))}); is it an opassess JSON report?")
    try:
        report = decode(_Report, document)
        summary = report.summary or SummaryPart()
        operators = [_operator_state(op, f"{origin}: operators[{index}] ({op.op})")
                     for index, op in enumerate(report.operators)
                     if op.cost != SOURCE_FINDING]  # the same call as a source site: compared and gated as that site
        operators += _source_states(report.source_findings or (), origin)
        model = report.model
        return Snapshot(source=model.source, class_name=model.class_name, total=_effort(summary.person_days),
                        operators=tuple(operators), origin=origin, entry=str(model.entry or ""),
                        label=model.label, band=_band(summary), graph_breaks=_graph_breaks(report.graph_mode),
                        unreached=_unreached(report.reach),
                        activities=None if summary.activities is None else tuple(
                            (str(a.name), _effort(a.person_days) or _NONE) for a in summary.activities),
                        decisions=tuple((str(d.name), str(d.cause or ""), _effort(d.once) or _NONE)
                                        for d in summary.decisions or ()),
                        target=report.target if isinstance(report.target, str) else None)
    except ReportError:
        raise
    except (TypeError, ValueError, AttributeError) as exc:
        raise ReportError(f"{origin}: not an opassess JSON report: missing or malformed {exc}") from exc


_NONE = Effort(0.0, 0.0, 0.0)


def _graph_breaks(graph: GraphModePart | None) -> Mapping[str, tuple[tuple[str, str, str | None, str], ...]] | None:
    """graph_mode.backends -> {back-end: ((op, kind, source, reason), ...)}; None without a graph analysis."""
    if not graph:
        return None
    return {name: tuple((b.op, b.kind, b.source, b.reason) for b in backend.breaks)
            for name, backend in graph.backends.items()}


def _band(summary: SummaryPart) -> tuple[float, float, float] | None:
    """(p10, p50, p90) of a report's summary, or None when it has none (not estimated, or written before P10)."""
    values = [summary.p10, summary.p50, summary.p90]
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) != 3:
        return None
    return numbers[0], numbers[1], numbers[2]


def _unreached(reach: ReachPart | None) -> tuple[tuple[str, str, str], ...]:
    """(op, category, first source) of each uncaptured non-direct operator a report's reach block lists."""
    if reach is None:
        return ()
    out: dict[str, tuple[str, str, str]] = {}
    for site in reach.present:
        if not site.captured and site.category != "direct":
            out.setdefault(site.operator, (site.operator, str(site.category), str(site.source)))
    return tuple(out.values())
