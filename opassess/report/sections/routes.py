"""The routes in the reports: the JSON parts (`onnx`, `serving`) built from the Assessment, and the "ONNX -> ATC" and
"Serving" sections every human format shows, built once from that JSON."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...assessment import Assessment
from ...messages import say
from ..display.records import Record
from ..i18n import N_

# The ONNX verdicts (JSON values) as the reports say them
VERDICTS = (N_("supported"), N_("opset-dependent"), N_("no CANN mapping"))


def routes_doc(assessment: Assessment) -> dict[str, Any]:
    """{"onnx": {...}} and/or {"serving": {...}}: only the routes the scan checked (the keys are optional)."""
    out: dict[str, Any] = {}
    route = assessment.onnx
    if route is not None:
        out.update(onnx={
            "opset": route.opset, "requested_opset": route.requested_opset, "exporter": route.exporter or None,
            "nodes": [{"op_type": n.op_type, "count": n.count, "cann_op": n.cann_op or None, "verdict": n.verdict,
                       "evidence": n.evidence} for n in route.nodes],
            "failures": [{"exporter": f.exporter, "op": f.op or None, "message": f.message,
                          "category": "custom-dev" if not route.exported else None} for f in route.failures],
        })
    check = assessment.serving
    if check is not None:
        out.update(serving={"engine": check.engine, "target": check.product, "architecture": check.architecture,
                            "quant": check.quant or None,
                            "items": [{"subject": i.subject, "status": i.status, "detail": i.detail,
                                       "evidence": i.evidence} for i in check.items]})
    return out


@dataclass(frozen=True)
class OnnxRow(Record):
    op_type: str
    count: int
    cann_op: str
    verdict: str
    evidence: str


@dataclass(frozen=True)
class OnnxFailureRow(Record):
    exporter: str
    op: str
    message: str
    finding: bool  # the export failed outright: a custom-dev finding for the route (else an earlier attempt)


@dataclass(frozen=True)
class OnnxSection(Record):
    summary: str  # "opset 17, TorchScript exporter: 11 op types, 11 supported, 0 opset-dependent, 0 no CANN mapping"
    rows: tuple[OnnxRow, ...]
    failures: tuple[OnnxFailureRow, ...]
    limits: str  # what the check does not do (ATC is not run)


@dataclass(frozen=True)
class ServingRow(Record):
    subject: str
    status: str
    detail: str
    evidence: str


@dataclass(frozen=True)
class ServingSection(Record):
    summary: str
    rows: tuple[ServingRow, ...]


# ------------------------------------------------------------------ the JSON parts as the sections read them back
# (report/parts.py; tests/test_vocabulary.py ties them to the schema)


@dataclass(frozen=True)
class OnnxNodePart:
    op_type: str
    count: int
    cann_op: str | None
    verdict: str
    evidence: str


@dataclass(frozen=True)
class OnnxFailurePart:
    exporter: str
    op: str | None
    message: str
    category: str | None = None


@dataclass(frozen=True)
class OnnxPart:
    """`onnx`: the ONNX export at an opset and each node type's CANN verdict (--route onnx)."""

    opset: int
    requested_opset: int
    exporter: str | None
    nodes: tuple[OnnxNodePart, ...] = ()
    failures: tuple[OnnxFailurePart, ...] = ()


@dataclass(frozen=True)
class ServingItemPart:
    subject: str
    status: str
    detail: str
    evidence: str


@dataclass(frozen=True)
class ServingPart:
    """`serving`: the serving engine's checks on the target (--route vllm-ascend)."""

    engine: str
    target: str
    architecture: str = ""
    quant: str | None = None
    items: tuple[ServingItemPart, ...] = ()


def onnx_section(part: OnnxPart | None, _: Callable[[str], str],
                 data_dependent: tuple[str, ...] = ()) -> OnnxSection | None:
    """The "ONNX -> ATC" section, or None when the scan had no --route onnx. `data_dependent`: the operators whose
    output size the capture found to depend on the data (the model's dynamic-shape findings: torch.nonzero, ...),
    named beside the limits: their exported nodes (NonZero, ...) are judged by the map alone."""
    if not part:
        return None
    rows = tuple(OnnxRow(n.op_type, n.count, n.cann_op or "", _(n.verdict), say(n.evidence, _)) for n in part.nodes)
    if part.exporter:
        counts = {v: sum(1 for n in part.nodes if n.verdict == v) for v in VERDICTS}
        summary = _("opset %(opset)d, %(exporter)s exporter: %(n)d op types; %(counts)s") % {
            "opset": part.opset, "exporter": part.exporter, "n": len(rows),
            "counts": _(", ").join(f"{n} {_(v)}" for v, n in counts.items())}
    else:
        summary = _("the export at opset %(opset)d failed: this route needs custom development first") % {
            "opset": part.requested_opset}
    failures = tuple(OnnxFailureRow(f.exporter, f.op or "", f.message, f.category == "custom-dev")
                     for f in part.failures)
    limits = _("ATC itself is not run: the verdicts come from the ONNX -> CANN map (msit), not from a conversion.")
    if data_dependent and part.exporter:
        limits += " " + _("The output size of %(ops)s depends on the data: ATC's static-shape needs for their "
                          "nodes are not checked (no fact states them per operator).") % {
                              "ops": ", ".join(data_dependent)}
    return OnnxSection(summary=summary, rows=rows, failures=failures, limits=limits)


def serving_section(part: ServingPart | None, _: Callable[[str], str]) -> ServingSection | None:
    """The serving check's section, or None when the scan had no --route vllm-ascend."""
    if not part:
        return None
    rows = tuple(ServingRow(say(i.subject, _), _(i.status), say(i.detail, _), i.evidence) for i in part.items)
    summary = _("%(engine)s on %(target)s: %(n)d checks; TBD/WIP cells are risks, not support") % {
        "engine": part.engine, "target": part.target, "n": len(rows)}
    return ServingSection(summary=summary, rows=rows)
