"""The JSON document (format_version 1): the one contract every consumer of an assessment reads.

`build_document` turns an Assessment into a plain dict of raw numbers, lists and strings: what `-f json` writes,
what assessment.schema.json describes, what CSV flattens, and what opassess.ci.snapshot reads back (from a file or
in-process). It is built once per assessment; report/display/build.py formats the same facts for people.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..assessment import Assessment
from ..records import ClassifiedOp, Effort, Operator, Signature
from ..score.cost import COST_BASES
from ..score.records import OpEstimate
from ..source.records import SourceEstimate, SourceFinding, SourceScan
from ..vocabulary import CATEGORIES
from .i18n import N_
from .paths import portable, roots_of, scrub, scrub_in_place
from .sections.graph import graph_mode_doc, verdicts_doc
from .sections.reach import reach_doc
from .sections.routes import routes_doc
from .sections.time import finding_gains, finding_time_doc, operator_time_doc, performance_doc
from .sections.versions import versions_doc
from .text import days, share

FORMAT_VERSION = 1
TOOL_NAME = "opassess"
BAND_MEANING = N_("P50 is the median of the simulated total; the P10-P90 band holds 8 in 10 simulated outcomes "
                   "(1 in 10 comes in under P10, 1 in 10 over P90)")
ASSUMPTIONS = N_("figures are assumptions until calibrated: nobody publishes measured per-operator migration effort; "
                 "record your actuals and run `opassess calibrate` to write a profile of your own")


def headline(p10: float, p50: float, p90: float) -> str:
    """'4.3 person-days (P10-P90 3.4-5.6)': the one number a report leads with, with its band."""
    return f"{days(p50)} person-days (P10-P90 {days(p10)}-{days(p90)})"


def _round(value: float, digits: int = 2) -> float:
    return round(float(value), digits)


def effort_doc(effort: Effort) -> dict[str, float]:
    """{low, likely, high} person-days rounded to two decimals."""
    return {"low": _round(effort.low), "likely": _round(effort.likely), "high": _round(effort.high)}


def jsonable(value: Any) -> Any:
    """Attribute values are meant to be JSON-able already; anything else is shown by its str()."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return str(value)


# ------------------------------------------------------------------ joined rows


class Row:
    """One operator with whatever later stages know about it (classification and estimate may be missing)."""

    __slots__ = ("operator", "classified", "estimate", "rank")

    def __init__(self, operator: Operator, classified: ClassifiedOp | None, estimate: OpEstimate | None, rank: int):
        self.operator = operator
        self.classified = classified
        self.estimate = estimate
        self.rank = rank


def join_rows(assessment: Assessment) -> list[Row]:
    """Operators in report order: by likely effort (the estimate's order), else in order of first occurrence."""
    classified = {c.operator.key: c for c in assessment.classified}
    estimates = {e.score.classified.operator.key: e for e in assessment.estimate.ops} if assessment.estimate else {}
    order = {op: i for i, op in enumerate(estimates)}
    operators = sorted(assessment.inventory.operators, key=lambda o: order.get(o.key, len(order)))  # stable
    return [Row(o, classified.get(o.key), estimates.get(o.key), i + 1) for i, o in enumerate(operators)]




def _signature_doc(signature: Signature, category: str | None, roots: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "attrs": jsonable(signature.attrs),
        "input_shapes": jsonable(signature.input_shapes),
        "input_dtypes": list(signature.input_dtypes),
        "count": signature.count,
        "modules": list(signature.modules),
        "sources": [portable(s, roots) for s in signature.sources],
        "category": category,
    }


def _operator_doc(row: Row, graph: Any = None, performance: Any = None, roots: tuple[str, ...] = ()
                  ) -> dict[str, Any]:
    operator, classified, estimate = row.operator, row.classified, row.estimate
    categories = classified.signature_categories if classified else ()
    doc: dict[str, Any] = {
        "op": operator.key,
        "kind": operator.kind,
        "aten": list(operator.aten),
        "entry": list(operator.entry),
        "count": operator.count,
        "modules": list(operator.modules),
        "signatures": [_signature_doc(s, categories[i] if i < len(categories) else None, roots)
                       for i, s in enumerate(operator.signatures)],
        "source": [portable(s, roots) for s in operator.sources],
        "project_source": [portable(s, roots) for s in operator.project_sources],
        "flops": operator.flops,
        "bytes_moved": operator.bytes_moved,
        "category": classified.category if classified else None,
        "known": classified.known if classified else None,
        "reasons": [{"code": r.code, "message": r.message, "evidence": r.evidence, "signature": r.signature}
                    for r in classified.reasons] if classified else [],
        "replacement": classified.replacement if classified else None,
        "replacement_deprecated": ({"successor": classified.replacement_successor}
                                   if classified and classified.replacement_deprecated else None),
        "cann_op": classified.cann_op if classified else None,
        "aten_support": dict(classified.aten_support) if classified else {},
        "confidence": classified.confidence if classified else None,
        "exclusions": [{"code": r.code, "message": r.message, "evidence": r.evidence}
                       for r in classified.exclusions] if classified else [],
        "backward_aten": list(operator.backward_aten),
        "backward_support": dict(classified.backward_support) if classified else {},
        "backward_flops": operator.backward_flops,
        "scores": None,
        "person_days": None,
        "risk": None,
        "pareto": None,
        "cost": None,
        "origin": None,
        "cost_note": None,
        "decisions": [],
        "graph_mode": verdicts_doc(graph.operators.get(operator.key)) if graph is not None else None,
        "estimated_time": operator_time_doc(performance, operator.key),
    }
    if estimate is not None:
        doc["cost"] = estimate.cost
        doc["origin"] = estimate.origin
        doc["cost_note"] = estimate.basis or None
        doc["decisions"] = list(estimate.decisions)
        score = estimate.score
        doc["scores"] = {
            "functional": _round(score.functional, 4),
            "performance": _round(score.performance, 4),
            "ecosystem": _round(score.ecosystem, 4),
            "composite": _round(score.composite, 4),
            "subscores": [{"dimension": s.dimension, "criterion": s.criterion, "value": _round(s.value, 4),
                           "weight": _round(s.weight, 4), "signal": s.signal} for s in score.subscores],
        }
        doc["person_days"] = effort_doc(estimate.person_days)
        doc["risk"] = {"likelihood": estimate.risk.likelihood, "impact": estimate.risk.impact,
                       "stars": estimate.risk.stars, "signals": list(estimate.risk.signals)}
        doc["pareto"] = estimate.pareto
    return doc


def document_of(assessment: Assessment, rows: list[Row]) -> dict[str, Any]:
    """The JSON document of `assessment` over its joined rows."""
    # no absolute path of this machine: library files from their site-packages, project files from the scanned root
    roots = roots_of(assessment.model.source, assessment.source_scan.root if assessment.source_scan else None)
    model, capture, est = assessment.model, assessment.capture, assessment.estimate
    classified = [r.classified for r in rows if r.classified is not None]
    category_counts = {c: sum(1 for op in classified if op.category == c) for c in CATEGORIES}
    unknown = [op for op in classified if not op.known]
    summary: dict[str, Any] = {
        "operator_types": len(rows),
        "occurrences": sum(r.operator.count for r in rows),
        "categories": category_counts,
        "unknown": len(unknown),
        "person_days": None, "p50": None, "p90": None, "method": None, "pareto": None, "by_category": None,
        "p10": None, "headline": None, "band": None, "profile": None, "assumptions": None, "by_origin": None,
        "activities": None, "cost_bases": None, "decisions": None, "present": None,
    }
    risk_matrix = None
    by_module = None
    if est is not None:
        pareto_names = set(est.pareto_ops)
        pareto_likely = sum(e.person_days.likely for e in est.ops if e.score.classified.operator.key in pareto_names)
        summary.update({
            "person_days": effort_doc(est.total),
            "p50": _round(est.p50),
            "p90": _round(est.p90),
            "method": est.method,
            "pareto": {"ops": list(est.pareto_ops), "share_of_types": _round(est.pareto_share_of_types, 4),
                       # of the operators' own effort (the model-level activities belong to no operator)
                       "share_of_effort": _round(share(pareto_likely, sum(e.person_days.likely for e in est.ops)), 4)},
            "by_category": {c: effort_doc(est.by_category.get(c, Effort(0.0, 0.0, 0.0))) for c in CATEGORIES},
            "p10": _round(est.p10),
            "headline": headline(_round(est.p10), _round(est.p50), _round(est.p90)),  # as the numbers read
            "band": BAND_MEANING,
            "profile": est.profile,
            "assumptions": ASSUMPTIONS,
            "by_origin": {origin: effort_doc(effort) for origin, effort in est.by_origin.items()},
            "activities": [{"name": a.name, "title": a.title, "person_days": effort_doc(a.person_days),
                            "basis": a.basis} for a in est.activities],
            "cost_bases": {basis: [e.score.classified.operator.key for e in est.ops if e.cost == basis]
                           for basis in COST_BASES},
            "present": {"sites": sum(1 for item in est.source if not item.reached),
                        "person_days": effort_doc(est.present)} if any(not i.reached for i in est.source) else None,
            "decisions": [{"name": d.name, "title": d.title, "cause": d.cause, "operators": list(d.operators),
                           "person_days": effort_doc(d.person_days), "once": effort_doc(d.once), "basis": d.basis,
                           "plan": list(d.plan), "sites": list(d.sites)} for d in est.decisions],
        })
        risk_matrix = [[list(cell) for cell in row] for row in est.risk_matrix]
        by_module = {path: effort_doc(effort) for path, effort in est.by_module.items()}
    source_findings = source_findings_doc(assessment)  # most of a source scan's document: scrubbed in place, below
    document = scrub({
        "format_version": FORMAT_VERSION,
        "tool": {"name": TOOL_NAME, "version": assessment.tool_version},
        "model": {
            "source": portable(model.source, roots),
            "entry": model.entry,
            "class": model.class_name,
            "parameters": model.parameters,
            "dtype": model.dtype,
            "inputs": list(model.inputs),
            "label": model.label,
            "capture": {
                "method": capture.method,
                "device": capture.device,
                "device_note": capture.device_note,
                "step": capture.step,
                "step_note": capture.step_note,
                "stand_ins": [{"library": s.library, "symbols": list(s.symbols), "why": s.why,
                               **({"built_by": s.built_by} if s.built_by else {})} for s in capture.stand_ins],
                "attempts": [{"method": a.method, "error": a.error, "seconds": _round(a.seconds, 3)}
                             for a in capture.attempts],
            },
        },
        "target": assessment.target,
        "torch_npu": assessment.torch_version,
        "kb_version": assessment.kb_version,
        "weights_source": portable(assessment.weights_source),
        "sandbox": assessment.sandbox,
        "inputs": {"overlay": assessment.kb_overlay,
                   "files": [{"path": f.path, "sha256": f.sha256} for f in assessment.inputs]},
        "operators": [_operator_doc(r, assessment.graph_mode, assessment.performance, roots) for r in rows],
        "summary": summary,
        "risk_matrix": risk_matrix,
        "by_module": by_module,
        "findings": [{"kind": f.kind, "title": f.title, "nodes": list(f.nodes), "ops": list(f.ops),
                      "source": portable(f.source, roots) if f.source else None, "npu_api": f.npu_api,
                      "effect": f.effect, **({"call": f.call, "call_notes": list(f.call_notes)} if f.call else {}),
                      "time": finding_time_doc(assessment.performance, f, gain)}
                     for f, gain in zip(assessment.findings, finding_gains(assessment.performance,
                                                                          assessment.findings), strict=True)],
        "performance": performance_doc(assessment.performance),
        "source_findings": [],
        "source": _source_scan_doc(assessment.source_scan),
        "unknown_operators": [{"op": r.operator.key, "kind": r.operator.kind, "count": r.operator.count,
                               "modules": list(r.operator.modules),
                               "source": [portable(s, roots) for s in r.operator.sources]}
                              for r in unknown],
        "graph_mode": graph_mode_doc(assessment.graph_mode),
        "reach": reach_doc(assessment, roots),
        "versions": versions_doc(assessment),
        "seconds": {stage: _round(value, 3) for stage, value in assessment.seconds.items()},
        **routes_doc(assessment),
    }, roots)  # and no absolute path left in any message (capture errors, graph-mode breaks, ...)
    document["source_findings"] = scrub_in_place(source_findings, roots)
    return document




def source_findings_doc(assessment: Assessment) -> list[dict[str, Any]]:
    """One entry per source finding (file relative to the scanned root): where, what, route, evidence, effort, risk."""
    est = assessment.estimate
    estimated = est.source if est is not None else ()
    items: list[tuple[SourceFinding, SourceEstimate | None]]
    if not estimated and assessment.source_scan is not None:  # scanned but not estimated: the facts without effort
        items = [(f, None) for f in assessment.source_scan.findings]
    else:
        items = [(item.finding, item) for item in estimated]
    out = []
    for finding, item in items:
        doc: dict[str, Any] = {
            "file": finding.file, "line": finding.line, "code": finding.code, "kind": finding.kind,
            "category": str(finding.category), "subject": finding.subject, "npu_route": finding.npu_route,
            "evidence": list(finding.evidence), "confidence": finding.confidence,
            "person_days": effort_doc(item.person_days) if item else None,
            "key": item.key if item else None,
            "basis": item.basis if item else None,
            "risk": {"likelihood": item.risk.likelihood, "impact": item.risk.impact, "stars": item.risk.stars,
                     "signals": list(item.risk.signals)} if item else None,
            "operators": list(item.operators) if item else [],
            "covered_by": item.covered_by if item else None,
            "reached": item.reached if item else None,
        }
        if finding.size is not None:
            doc["size"] = {"lines": finding.size.lines, "kernels": finding.size.kernels,
                           "apis": list(finding.size.apis)}
        if finding.notes:
            doc["notes"] = list(finding.notes)
        out.append(doc)
    return out


def _source_scan_doc(scan: SourceScan | None) -> dict[str, Any] | None:
    if scan is None:
        return None
    reach = scan.reach
    return {"root": portable(scan.root), "files": list(scan.files), "lines": scan.lines,
            "skipped": [{"file": s.file, "reason": s.reason} for s in scan.skipped],
            "configuration": {"config": reach.config, "roots": list(reach.roots), "dtype": reach.dtype,
                              "variants": list(reach.variants)} if reach else None}


def build_document(assessment: Assessment) -> dict[str, Any]:
    """The JSON document (format_version 1) of an assessment."""
    return document_of(assessment, join_rows(assessment))
