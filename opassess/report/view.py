"""The view model: everything a report shows, computed and formatted once from an Assessment.

`build_view` returns a dict with two parts:
  document  the JSON report (format_version 1): raw numbers, lists and strings, what `-f json` writes and
            what assessment.schema.json describes; CSV flattens its operators.
  display   the same facts shaped for templates and the terminal: numbers already formatted ("4.5",
            "3.0–6.0", "38%"), bar widths and the Pareto chart's SVG geometry already computed, so templates
            only place values. Strings that came from the model (op keys, module paths, file names, class
            names) stay plain strings: the HTML environment autoescapes them, the Markdown one escapes them.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from ..records import CATEGORIES, Assessment, ClassifiedOp, Effort, Operator, OpEstimate, Signature

FORMAT_VERSION = 1
TOOL_NAME = "opassess"
DASH = "\u2013"  # en dash for ranges: "3.0–6.0"
TOP_OPERATORS = 10  # operators listed as "top by effort" in the summary views
PARETO_BARS = 20  # bars in the Pareto chart before the rest are grouped into one "others" bar
PARETO_LABEL = 30  # characters of a bar label: what fits in the 120 px under the axis, rotated by 40 degrees
MODULE_ROWS = 40  # module rows shown in HTML/Markdown (all of them are in the JSON)
MODULES_PER_OP = 12  # module paths listed per operator in the evidence (all of them are in the JSON)
CELL_OPS = 30  # operators named in one risk-matrix cell of the HTML/Markdown grid (all of them are in the JSON)
CATEGORY_RANK = {category: rank for rank, category in enumerate(CATEGORIES)}  # sort order: direct < custom-dev
MODULE_MIN_SHARE = 0.01  # modules carrying less than 1% of the effort are left to the JSON
LIKELIHOOD_LABELS = {1: "rare", 2: "unlikely", 3: "possible", 4: "likely", 5: "almost certain"}
HEAT_MARKS = {"low": "\U0001F7E9", "moderate": "\U0001F7E8", "high": "\U0001F7E7", "critical": "\U0001F7E5"}  # squares
IMPACT_LABELS = {1: "negligible", 2: "minor", 3: "moderate", 4: "major", 5: "severe"}


# ------------------------------------------------------------------ formatting


def _days(value: float) -> str:
    return f"{value:.1f}"


def _range(effort: Effort) -> str:
    return f"{effort.low:.1f}{DASH}{effort.high:.1f}"


def _pct(share: float) -> str:
    return f"{share * 100:.0f}%"


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def _num(value: float) -> str:
    """An SVG coordinate or a CSS width: one decimal is plenty and keeps golden files stable."""
    return f"{value:.1f}"


def _stars(stars: int) -> str:
    return "\u2605" * stars + "\u2606" * (5 - stars)


def _round(value: float, digits: int = 2) -> float:
    return round(float(value), digits)


def _effort_doc(effort: Effort) -> dict[str, float]:
    return {"low": _round(effort.low), "likely": _round(effort.likely), "high": _round(effort.high)}


def _jsonable(value: Any) -> Any:
    """Attribute values are meant to be JSON-able already; anything else is shown by its str()."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


def _tensor_text(shape: tuple[int, ...] | None, dtype: str | None) -> str:
    dims = ",".join(str(d) for d in shape) if shape is not None else ""
    return f"{dtype or '?'}[{dims}]"


def _inputs_text(shapes: Iterable, dtypes: Iterable) -> str:
    parts = [_tensor_text(shape, dtype) for shape, dtype in zip(shapes, dtypes, strict=False) if shape is not None]
    return ", ".join(parts) if parts else "no tensor inputs"


def _attrs_text(attrs: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={_jsonable(value)}" for key, value in attrs.items())


def short_name(op: str) -> str:
    """A compact label for charts: 'torch.nn.Conv2d' -> 'nn.Conv2d', 'torch.nn.functional.gelu' -> 'F.gelu'."""
    for prefix, replacement in (("torch.nn.functional.", "F."), ("torch.nn.", "nn.")):
        if op.startswith(prefix):
            return replacement + op[len(prefix):]
    return op


def heat(likelihood: int, impact: int) -> str:
    """The heat-map band of a risk cell by likelihood x impact: 1-4 low, 5-9 moderate, 10-14 high, 15-25 critical."""
    product = likelihood * impact
    if product <= 4:
        return "low"
    if product <= 9:
        return "moderate"
    if product <= 14:
        return "high"
    return "critical"


def _nice_step(maximum: float, ticks: int = 4) -> float:
    """Axis step from 1, 2, 5 x 10^k giving at most `ticks` intervals: max 37.5 -> step 10 (0, 10, 20, 30, 40)."""
    if maximum <= 0:
        return 1.0
    raw = maximum / ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 5, 10):
        if multiple * magnitude >= raw:
            return multiple * magnitude
    return 10 * magnitude  # pragma: no cover - the loop always returns


def _support_text(classified: ClassifiedOp | None, aten: str) -> str:
    if classified is None or aten not in classified.aten_support:
        return "not checked"
    return "NPU kernel" if classified.aten_support[aten] else "no NPU kernel"


# ------------------------------------------------------------------ joined rows


class _Row:
    """One operator with whatever later stages know about it (classification and estimate may be missing)."""

    __slots__ = ("operator", "classified", "estimate", "rank")

    def __init__(self, operator: Operator, classified: ClassifiedOp | None, estimate: OpEstimate | None, rank: int):
        self.operator = operator
        self.classified = classified
        self.estimate = estimate
        self.rank = rank


def _rows(assessment: Assessment) -> list[_Row]:
    """Operators in report order: by likely effort (the estimate's order), else in order of first occurrence."""
    classified = {c.operator.op: c for c in assessment.classified}
    estimates = {e.score.op.operator.op: e for e in assessment.estimate.ops} if assessment.estimate else {}
    order = {op: i for i, op in enumerate(estimates)}
    operators = sorted(assessment.inventory.operators, key=lambda o: order.get(o.op, len(order)))  # stable
    return [_Row(o, classified.get(o.op), estimates.get(o.op), i + 1) for i, o in enumerate(operators)]


# ------------------------------------------------------------------ JSON document


def _signature_doc(signature: Signature, category: str | None) -> dict[str, Any]:
    return {
        "attrs": _jsonable(signature.attrs),
        "input_shapes": _jsonable(signature.input_shapes),
        "input_dtypes": list(signature.input_dtypes),
        "count": signature.count,
        "modules": list(signature.modules),
        "sources": list(signature.sources),
        "category": category,
    }


def _operator_doc(row: _Row) -> dict[str, Any]:
    operator, classified, estimate = row.operator, row.classified, row.estimate
    categories = classified.signature_categories if classified else ()
    doc: dict[str, Any] = {
        "op": operator.op,
        "kind": operator.kind,
        "aten": list(operator.aten),
        "entry": list(operator.entry),
        "count": operator.count,
        "modules": list(operator.modules),
        "signatures": [_signature_doc(s, categories[i] if i < len(categories) else None)
                       for i, s in enumerate(operator.signatures)],
        "source": list(operator.sources),
        "flops": operator.flops,
        "bytes_moved": operator.bytes_moved,
        "category": classified.category if classified else None,
        "known": classified.known if classified else None,
        "reasons": [{"code": r.code, "message": r.message, "evidence": r.evidence, "signature": r.signature}
                    for r in classified.reasons] if classified else [],
        "replacement": classified.replacement if classified else None,
        "cann_op": classified.cann_op if classified else None,
        "aten_support": dict(classified.aten_support) if classified else {},
        "scores": None,
        "person_days": None,
        "risk": None,
        "pareto": None,
    }
    if estimate is not None:
        score = estimate.score
        doc["scores"] = {
            "functional": _round(score.functional, 4),
            "performance": _round(score.performance, 4),
            "ecosystem": _round(score.ecosystem, 4),
            "composite": _round(score.composite, 4),
            "subscores": [{"dimension": s.dimension, "criterion": s.criterion, "value": _round(s.value, 4),
                           "weight": _round(s.weight, 4), "signal": s.signal} for s in score.subscores],
        }
        doc["person_days"] = _effort_doc(estimate.person_days)
        doc["risk"] = {"likelihood": estimate.risk.likelihood, "impact": estimate.risk.impact,
                       "stars": estimate.risk.stars, "signals": list(estimate.risk.signals)}
        doc["pareto"] = estimate.pareto
    return doc


def _document(assessment: Assessment, rows: list[_Row]) -> dict[str, Any]:
    model, capture, est = assessment.model, assessment.capture, assessment.estimate
    classified = [r for r in rows if r.classified is not None]
    category_counts = {c: sum(1 for r in classified if r.classified.category == c) for c in CATEGORIES}
    unknown = [r for r in classified if not r.classified.known]
    summary: dict[str, Any] = {
        "operator_types": len(rows),
        "occurrences": sum(r.operator.count for r in rows),
        "categories": category_counts,
        "unknown": len(unknown),
        "person_days": None, "p50": None, "p90": None, "method": None, "pareto": None, "by_category": None,
    }
    risk_matrix = None
    by_module = None
    if est is not None:
        pareto_names = set(est.pareto_ops)
        pareto_likely = sum(e.person_days.likely for e in est.ops if e.score.op.operator.op in pareto_names)
        summary.update({
            "person_days": _effort_doc(est.total),
            "p50": _round(est.p50),
            "p90": _round(est.p90),
            "method": est.method,
            "pareto": {"ops": list(est.pareto_ops), "share_of_types": _round(est.pareto_share_of_types, 4),
                       "share_of_effort": _round(_share(pareto_likely, est.total.likely), 4)},
            "by_category": {c: _effort_doc(est.by_category.get(c, Effort(0.0, 0.0, 0.0))) for c in CATEGORIES},
        })
        risk_matrix = [[list(cell) for cell in row] for row in est.risk_matrix]
        by_module = {path: _effort_doc(effort) for path, effort in est.by_module.items()}
    return {
        "format_version": FORMAT_VERSION,
        "tool": {"name": TOOL_NAME, "version": assessment.tool_version},
        "model": {
            "source": model.source,
            "entry": model.entry,
            "class": model.class_name,
            "parameters": model.parameters,
            "dtype": model.dtype,
            "inputs": list(model.inputs),
            "capture": {
                "method": capture.method,
                "device": capture.device,
                "device_note": capture.device_note,
                "attempts": [{"method": a.method, "error": a.error, "seconds": _round(a.seconds, 3)}
                             for a in capture.attempts],
            },
        },
        "target": assessment.target,
        "torch_npu": assessment.torch_version,
        "kb_version": assessment.kb_version,
        "weights_source": assessment.weights_source,
        "operators": [_operator_doc(r) for r in rows],
        "summary": summary,
        "risk_matrix": risk_matrix,
        "by_module": by_module,
        "findings": [{"kind": f.kind, "title": f.title, "nodes": list(f.nodes), "ops": list(f.ops),
                      "source": f.source, "npu_api": f.npu_api, "effect": f.effect} for f in assessment.findings],
        "unknown_operators": [{"op": r.operator.op, "kind": r.operator.kind, "count": r.operator.count,
                               "modules": list(r.operator.modules), "source": list(r.operator.sources)}
                              for r in unknown],
        "seconds": {stage: _round(value, 3) for stage, value in assessment.seconds.items()},
    }


# ------------------------------------------------------------------ display


def _operator_display(row: _Row, total_likely: float) -> dict[str, Any]:
    operator, classified, estimate = row.operator, row.classified, row.estimate
    category = classified.category if classified else "unclassified"
    categories = classified.signature_categories if classified else ()
    item: dict[str, Any] = {
        "rank": row.rank,
        "op": operator.op,
        "short": short_name(operator.op),
        "kind": operator.kind,
        "category": category,
        "known": classified.known if classified else True,
        "count": operator.count,
        "signature_count": len(operator.signatures),
        "aten": list(operator.aten),
        "aten_rows": [{"name": a, "support": _support_text(classified, a)} for a in operator.aten],
        "category_rank": CATEGORY_RANK.get(category, -1),
        "reasons": [{"code": r.code, "message": r.message, "evidence": r.evidence} for r in classified.reasons]
        if classified else [],
        "replacement": classified.replacement if classified else None,
        "cann_op": classified.cann_op if classified else None,
        "sources": list(operator.sources),
        "modules": list(operator.modules),
        "modules_text": ", ".join(m or "(model)" for m in operator.modules),
        "modules_shown": [m or "(model)" for m in operator.modules[:MODULES_PER_OP]],
        "modules_more": max(0, len(operator.modules) - MODULES_PER_OP),
        "signatures": [{"text": "; ".join(p for p in (_attrs_text(s.attrs),
                                                        _inputs_text(s.input_shapes, s.input_dtypes)) if p),
                        "count": s.count,
                        "category": categories[i] if i < len(categories) else ""}
                       for i, s in enumerate(operator.signatures)],
        "estimated": estimate is not None,
        "search": " ".join([operator.op, operator.kind, category, *operator.modules]).lower(),
    }
    if estimate is not None:
        score, days, risk = estimate.score, estimate.person_days, estimate.risk
        item.update({
            "composite": _round(score.composite, 4),
            "composite_text": f"{score.composite:.2f}",
            "functional_text": f"{score.functional:.2f}",
            "performance_text": f"{score.performance:.2f}",
            "ecosystem_text": f"{score.ecosystem:.2f}",
            "subscores": [{"dimension": s.dimension, "criterion": s.criterion, "value_text": f"{s.value:.2f}",
                           "weight_text": f"{s.weight:.2f}", "signal": s.signal} for s in score.subscores],
            "likely": _round(days.likely),
            "likely_text": _days(days.likely),
            "range_text": _range(days),
            "share_text": _pct(_share(days.likely, total_likely)),
            "stars": risk.stars,
            "stars_text": _stars(risk.stars),
            "likelihood": risk.likelihood,
            "impact": risk.impact,
            "risk_text": f"L{risk.likelihood} \u00d7 I{risk.impact}",
            "risk_signals": list(risk.signals),
            "heat": heat(risk.likelihood, risk.impact),
            "pareto": estimate.pareto,
        })
    else:
        item.update({"composite": -1, "composite_text": "", "functional_text": "", "performance_text": "",
                     "ecosystem_text": "", "subscores": [], "likely": -1, "likely_text": "", "range_text": "",
                     "share_text": "", "stars": 0, "stars_text": "", "likelihood": 0, "impact": 0, "risk_text": "",
                     "risk_signals": [], "heat": "none", "pareto": False})
    return item


def _risk_grid(matrix: tuple[tuple[tuple[str, ...], ...], ...]) -> dict[str, Any]:
    """Rows from likelihood 5 (top) down to 1, columns impact 1..5, as on a printed risk matrix."""
    rows = []
    for likelihood in range(5, 0, -1):
        cells = []
        for impact in range(1, 6):
            ops = list(matrix[likelihood - 1][impact - 1]) if len(matrix) >= likelihood else []
            cells.append({
                "likelihood": likelihood,
                "impact": impact,
                "ops": ops,
                "shorts": [short_name(op) for op in ops],
                "shown": [{"op": op, "short": short_name(op)} for op in ops[:CELL_OPS]],
                "more": max(0, len(ops) - CELL_OPS),
                "more_title": ", ".join(ops[CELL_OPS:]),
                "count": len(ops),
                "heat": heat(likelihood, impact),
                "mark": HEAT_MARKS[heat(likelihood, impact)],
                "title": f"likelihood {likelihood} ({LIKELIHOOD_LABELS[likelihood]}), "
                         f"impact {impact} ({IMPACT_LABELS[impact]}): {len(ops)} operator(s)",
            })
        rows.append({"likelihood": likelihood, "label": LIKELIHOOD_LABELS[likelihood], "cells": cells})
    return {"rows": rows, "impacts": [{"impact": i, "label": IMPACT_LABELS[i]} for i in range(1, 6)]}


def _pareto_chart(ops: list[dict[str, Any]], total_likely: float) -> dict[str, Any] | None:
    """Inline-SVG geometry of the Pareto chart: effort bars (largest first) and the cumulative-share line.

    Worked example: bars of 10, 6, 4 person-days (total 20) give cumulative shares 50%, 80%, 100%; with a plot
    200 px high starting at y=20, the line passes through y = 20 + 200 * (1 - 0.5) = 120, then 60, then 20.
    """
    estimated = [op for op in ops if op["estimated"]]
    if not estimated or total_likely <= 0:
        return None
    bars = [(op["short"], op["op"], op["likely"], op["category"]) for op in estimated[:PARETO_BARS]]
    rest = estimated[PARETO_BARS:]
    if rest:
        bars.append((f"{len(rest)} others", f"{len(rest)} other operators", sum(op["likely"] for op in rest),
                     "others"))
    width, height = 760.0, 330.0
    left, right, top, bottom = 56.0, 56.0, 16.0, 120.0
    plot_w, plot_h = width - left - right, height - top - bottom
    step = _nice_step(max(b[2] for b in bars))
    axis_max = step * math.ceil(max(b[2] for b in bars) / step)
    slot = plot_w / len(bars)
    bar_w = slot * 0.7
    baseline = top + plot_h
    cumulative = 0.0
    bar_items, points = [], []
    for i, (label, full, likely, category) in enumerate(bars):
        cumulative += likely
        h = plot_h * likely / axis_max
        cx = left + slot * (i + 0.5)
        cy = top + plot_h * (1 - min(cumulative / total_likely, 1.0))
        points.append(f"{_num(cx)},{_num(cy)}")
        bar_items.append({
            "x": _num(cx - bar_w / 2), "y": _num(baseline - h), "width": _num(bar_w), "height": _num(h),
            "label": label if len(label) <= PARETO_LABEL else label[:PARETO_LABEL - 1] + "\u2026",
            "title": f"{full}: {_days(likely)} person-days, cumulative "
                                     f"{_pct(cumulative / total_likely)}",
            "category": category, "label_x": _num(cx), "label_y": _num(baseline + 10),
            "cx": _num(cx), "cy": _num(cy),
        })
    left_ticks = []
    for k in range(int(round(axis_max / step)) + 1):
        value = k * step
        left_ticks.append({"y": _num(baseline - plot_h * value / axis_max), "text": f"{value:g}"})
    right_ticks = [{"y": _num(baseline - plot_h * share), "text": _pct(share)} for share in (0, 0.25, 0.5, 0.75, 1)]
    return {
        "width": _num(width), "height": _num(height), "view_box": f"0 0 {_num(width)} {_num(height)}",
        "left": _num(left), "right": _num(width - right), "top": _num(top), "baseline": _num(baseline),
        "bars": bar_items, "line": " ".join(points), "left_ticks": left_ticks, "right_ticks": right_ticks,
        "ref_y": _num(top + plot_h * 0.2), "ref_label_x": _num(width - right - 4),
        "left_label_x": _num(14), "right_label_x": _num(width - 14), "mid_y": _num(top + plot_h / 2),
        "tick_left_x": _num(left - 6), "tick_right_x": _num(width - right + 6),
    }


def _module_rows(by_module: Mapping[str, Effort], module_types: Mapping[str, str], class_name: str,
                 total_likely: float) -> tuple[list[dict[str, Any]], int, int]:
    """The MODULE_ROWS largest modules of at least MODULE_MIN_SHARE, in tree order (children by effort, largest
    first), and how many were left out for being small and for being past the rows shown.

    The rows are chosen by effort, not by tree order: in a 32-layer decoder the first layers' sub-modules must not
    push the later layers, the embedding and the head off the table. A parent carries at least its child's effort,
    so (ties broken by depth) every shown row's parent is shown too."""
    children: dict[str, list[str]] = {}
    for path in by_module:
        if path == "":
            continue
        parent = path.rpartition(".")[0]
        while parent and parent not in by_module:  # attach to the nearest ancestor that has a row
            parent = parent.rpartition(".")[0]
        children.setdefault(parent, []).append(path)
    ordered: list[str] = []

    def visit(path: str) -> None:
        ordered.append(path)
        for child in sorted(children.get(path, []), key=lambda p: (-by_module[p].likely, p)):
            visit(child)

    if "" in by_module:
        visit("")
    else:
        for top_level in sorted(children.get("", []), key=lambda p: (-by_module[p].likely, p)):
            visit(top_level)
    large = [p for p in ordered if not p or _share(by_module[p].likely, total_likely) >= MODULE_MIN_SHARE]
    chosen = set(sorted(large, key=lambda p: (-by_module[p].likely, p.count(".") + bool(p), p))[:MODULE_ROWS])
    shown = []
    for path in ordered:
        if path not in chosen:
            continue
        effort = by_module[path]
        share = _share(effort.likely, total_likely)
        depth = 0 if path == "" else path.count(".") + 1
        shown.append({
            "path": path or "(model)",
            "name": path.rpartition(".")[2] if path else "(model)",
            "class": class_name if path == "" else module_types.get(path, ""),
            "depth": depth,
            "indent": f"{depth * 1.2:.1f}",
            "likely_text": _days(effort.likely),
            "range_text": _range(effort),
            "share_text": _pct(share),
            "bar_pct": _num(100 * share),
        })
    return shown, len(ordered) - len(large), len(large) - len(shown)


def _display(assessment: Assessment, rows: list[_Row], document: dict[str, Any]) -> dict[str, Any]:
    model, capture, est = assessment.model, assessment.capture, assessment.estimate
    total = est.total if est else None
    total_likely = total.likely if total else 0.0
    ops = [_operator_display(r, total_likely) for r in rows]
    summary = document["summary"]
    unknown = [op for op in ops if not op["known"]]

    categories = []
    for category in CATEGORIES:
        members = [op for op in ops if op["category"] == category]
        effort = est.by_category.get(category, Effort(0.0, 0.0, 0.0)) if est else None
        share = _share(effort.likely, total_likely) if effort else 0.0
        categories.append({
            "name": category,
            "types": len(members),
            "occurrences": sum(op["count"] for op in members),
            "likely_text": _days(effort.likely) if effort else "",
            "range_text": _range(effort) if effort else "",
            "share_text": _pct(share) if effort else "",
            "bar_pct": _num(100 * share),
            "ops": [op["op"] for op in members],
        })

    pareto_statement = ""
    pareto: dict[str, Any] | None = None
    if est is not None and est.pareto_ops:  # no operator, no effort: "0 of 0 types carry 0%" would say nothing
        share_types = est.pareto_share_of_types
        share_effort = summary["pareto"]["share_of_effort"]
        names = list(est.pareto_ops)
        pareto = {"ops": names, "count": len(names), "share_types_text": _pct(share_types),
                  "share_effort_text": _pct(share_effort),
                  # the sentence names the largest; a flat model can have 160 names here (the JSON has them all)
                  "shown": names[:TOP_OPERATORS], "more": max(0, len(names) - TOP_OPERATORS)}
        pareto_statement = (f"{len(names)} of {len(ops)} operator types ({_pct(share_types)}) carry "
                            f"{_pct(share_effort)} of the estimated effort")

    worst = max((op for op in ops if op["estimated"]), key=lambda op: (op["stars"], op["likely"]), default=None)
    cards = [
        {"label": "Estimated effort", "value": f"{_days(total.likely)} person-days" if total else "not estimated",
         "detail": f"range {_range(total)}; P50 {_days(est.p50)}, P90 {_days(est.p90)}" if est else ""},
        {"label": "Operator types", "value": str(len(ops)),
         "detail": f"{summary['occurrences']} calls in the forward pass"},
        {"label": "Custom development", "value": str(summary["categories"]["custom-dev"]),
         "detail": f"{summary['categories']['param-converted']} param-converted, "
                   f"{summary['categories']['direct']} direct"},
        {"label": "Unknown to the knowledge base", "value": str(len(unknown)),
         "detail": ", ".join(op["op"] for op in unknown[:3]) + (" ..." if len(unknown) > 3 else "")
         if unknown else "every operator has a known fact"},
        {"label": "Highest risk",
         "value": worst["stars_text"] if worst else ("none" if est is not None else "not estimated"),
         "detail": worst["op"] if worst else ("no operator to port" if est is not None else "")},
    ]

    attempts = [{"method": a.method, "status": "used" if a.method == capture.method and a.error is None
                 else ("ok" if a.error is None else "failed"),
                 "error": a.error or "", "seconds_text": f"{a.seconds:.2f} s"} for a in capture.attempts]
    modules, modules_small, modules_cut = ([], 0, 0)
    if est is not None:
        modules, modules_small, modules_cut = _module_rows(est.by_module, capture.module_types, model.class_name,
                                                           total_likely)

    return {
        "title": f"Ascend NPU migration assessment: {model.class_name}",
        "tool_version": assessment.tool_version,
        "model": {
            "class_name": model.class_name, "source": model.source, "entry": model.entry,
            "parameters_text": f"{model.parameters:,}", "dtype": model.dtype,
            "inputs_text": ", ".join(model.inputs), "capture_method": capture.method, "device": capture.device,
            "device_note": capture.device_note or "", "attempts": attempts,
        },
        "target": assessment.target,
        "torch_npu": assessment.torch_version,
        "kb_version": assessment.kb_version,
        "weights_source": assessment.weights_source,
        "estimated": est is not None,
        "totals": {
            "likely_text": _days(total.likely), "range_text": _range(total), "low_text": _days(total.low),
            "high_text": _days(total.high), "p50_text": _days(est.p50), "p90_text": _days(est.p90),
            "method": est.method,
        } if est else None,
        "cards": cards,
        "categories": categories,
        "pie": [{"label": c["name"], "value": c["types"]} for c in categories if c["types"]],
        "pareto": pareto,
        "pareto_statement": pareto_statement,
        "pareto_chart": _pareto_chart(ops, total_likely),
        "risk_grid": _risk_grid(est.risk_matrix) if est else None,
        "operators": ops,
        "top_operators": ops[:TOP_OPERATORS],  # largest effort first; first occurrences when not estimated
        "modules": modules,
        "modules_hidden": modules_small + modules_cut,  # every one of them smaller than any module shown
        "modules_small": modules_small,  # under MODULE_MIN_SHARE of the effort
        "modules_cut": modules_cut,  # above it, but past the MODULE_ROWS largest
        "module_rows": MODULE_ROWS,
        "findings": [{"kind": f.kind, "title": f.title, "ops": list(f.ops), "source": f.source or "",
                      "npu_api": f.npu_api or "", "effect": f.effect} for f in assessment.findings],
        "unknown": unknown,
        "suggested_html": f"{_stem(model.source)}.html",
    }


def _stem(source: str) -> str:
    """'examples/resnet_like.py' -> 'resnet_like'; 'torchvision.models:resnet50' -> 'resnet50'."""
    name = source.replace("\\", "/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return name[:-3] if name.endswith(".py") else (name or "report")


def build_view(assessment: Assessment) -> dict[str, Any]:
    """The view model every reporter renders: {'document': JSON report, 'display': formatted for templates}."""
    rows = _rows(assessment)
    document = _document(assessment, rows)
    return {"document": document, "display": _display(assessment, rows, document)}
