"""Read a report back: a JSON report (format_version 1), its document, or an Assessment -> a Snapshot record.

Baseline diffs, CI policies and portfolios all work on this one reading of the JSON contract, so a baseline
written by an earlier run and an Assessment made just now are compared field by field in the same terms.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..assessment import Assessment
from ..errors import ReportError
from ..records import Effort
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


def signature_key(signature: Mapping[str, Any]) -> str:
    """'{"attrs":{"stride":[2,2]},"dtypes":["float32"],"shapes":[[1,3,8,8]]}' for one signature of the JSON report."""
    return json.dumps({"attrs": signature.get("attrs", {}), "shapes": signature.get("input_shapes", []),
                       "dtypes": signature.get("input_dtypes", [])}, sort_keys=True, separators=(",", ":"))


def _effort(value: Any, where: str) -> Effort | None:
    if value is None:
        return None
    try:
        return Effort(float(value["low"]), float(value["likely"]), float(value["high"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"{where}: expected {{low, likely, high}} person-days, got {value!r}") from exc


SOURCE_KIND = "source"  # OpState.kind of a source finding (a site in the code, not a captured operator)
NOTE_KINDS = ("precision-note", "no-op")  # source findings that are notes, not work: not compared, never gated


def _source_states(findings: Any, origin: str) -> list[OpState]:
    """Source findings as the states diffs, gates and portfolios compare: one per site, named by its line-free key,
    notes (precision notes, no-ops) left out."""
    states = []
    for index, finding in enumerate(findings):
        where = f"{origin}: source_findings[{index}]"
        if finding.get("kind") in NOTE_KINDS or finding.get("covered_by"):  # notes; sites an operator carries
            continue
        if finding.get("reached") is False:  # present, not reached by this model: not in its total nor its gates
            continue
        category = finding.get("category")
        if category not in CATEGORIES:
            raise ReportError(f"{where}: unknown category {category!r}")
        states.append(OpState(
            op=finding.get("key") or f"{finding['file']}:{finding['line']} {finding.get('subject', '')}",
            kind=SOURCE_KIND, category=category, known=True, count=1,
            person_days=_effort(finding.get("person_days"), where), stars=(finding.get("risk") or {}).get("stars"),
            composite=None, sources=(f"{finding['file']}:{finding['line']}",), signatures=(),
            replacement=finding.get("npu_route") or None))
    return states


def _from_document(document: Any, origin: str) -> Snapshot:
    if not isinstance(document, Mapping):
        raise ReportError(f"{origin}: not an opassess JSON report (expected an object)")
    version = document.get("format_version")
    if version not in SUPPORTED_FORMAT_VERSIONS:
        raise ReportError(f"{origin}: format_version {version!r} is not one this opassess reads "
                          f"({', '.join(map(str, SUPPORTED_FORMAT_VERSIONS))}); is it an opassess JSON report?")
    try:
        model = document["model"]
        summary = document.get("summary") or {}
        operators = []
        for index, op in enumerate(document["operators"]):
            where = f"{origin}: operators[{index}] ({op.get('op', '?')})"
            if op.get("cost") == SOURCE_FINDING:  # the same call as a source site: compared and gated as that site
                continue
            category = op.get("category")
            if category is not None and category not in CATEGORIES:
                raise ReportError(f"{where}: unknown category {category!r}")
            operators.append(OpState(
                op=op["op"],
                kind=op.get("kind", ""),
                category=category,
                known=op.get("known"),
                count=int(op.get("count", 0)),
                person_days=_effort(op.get("person_days"), where),
                stars=(op.get("risk") or {}).get("stars"),
                composite=(op.get("scores") or {}).get("composite"),
                sources=tuple(op.get("source") or ()),
                signatures=tuple(SignatureState(key=signature_key(s), category=s.get("category"),
                                                count=int(s.get("count", 0)))
                                 for s in op.get("signatures") or ()),
                replacement=op.get("replacement"),
                cost=op.get("cost"),
            ))
        operators += _source_states(document.get("source_findings") or (), origin)
        return Snapshot(source=model["source"], class_name=model.get("class", ""),
                        total=_effort(summary.get("person_days"), f"{origin}: summary"),
                        operators=tuple(operators), origin=origin, entry=str(model.get("entry") or ""),
                        label=model.get("label"), band=_band(summary),
                        graph_breaks=_graph_breaks(document.get("graph_mode")),
                        unreached=_unreached(document.get("reach")),
                        activities=_activities(summary.get("activities"), origin),
                        decisions=tuple((str(d["name"]), str(d.get("cause") or ""),
                                         _effort(d.get("once"), f"{origin}: summary.decisions") or _NONE)
                                        for d in summary.get("decisions") or ()),
                        target=document.get("target") if isinstance(document.get("target"), str) else None)
    except ReportError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ReportError(f"{origin}: not an opassess JSON report: missing or malformed {exc}") from exc


_NONE = Effort(0.0, 0.0, 0.0)


def _activities(lines: Any, origin: str) -> tuple[tuple[str, Effort], ...] | None:
    """summary.activities -> ((name, person-days), ...); None when the report does not list them."""
    if lines is None:
        return None
    return tuple((str(line["name"]), _effort(line.get("person_days"), f"{origin}: summary.activities") or _NONE)
                 for line in lines)


def _graph_breaks(graph: Any) -> Mapping[str, tuple[tuple[str, str, str | None, str], ...]] | None:
    """graph_mode.backends -> {back-end: ((op, kind, source, reason), ...)}; None without a graph analysis."""
    if not graph:
        return None
    return {name: tuple((b["op"], b["kind"], b.get("source"), b["reason"]) for b in backend["breaks"])
            for name, backend in graph["backends"].items()}


def _band(summary: dict) -> tuple[float, float, float] | None:
    """(p10, p50, p90) of a report's summary, or None when it has none (not estimated, or written before P10)."""
    values = [summary.get(key) for key in ("p10", "p50", "p90")]
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) != 3:
        return None
    return numbers[0], numbers[1], numbers[2]


def _unreached(reach: Any) -> tuple[tuple[str, str, str], ...]:
    """(op, category, first source) of each uncaptured non-direct operator a report's reach block lists."""
    if not isinstance(reach, Mapping):
        return ()
    out: dict[str, tuple[str, str, str]] = {}
    for site in reach.get("present") or ():
        if isinstance(site, Mapping) and not site.get("captured") and site.get("category") != "direct":
            op = str(site.get("operator"))
            out.setdefault(op, (op, str(site.get("category")), str(site.get("source"))))
    return tuple(out.values())
