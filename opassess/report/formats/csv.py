"""CSV report: one row per operator type, then one per source site (kind 'source:<kind>'), for spreadsheets
(written through pandas)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...vocabulary import TRAIN_STEP
from ..reading import parts_of
from ..registry import RenderContext, register
from ..sections.operators import OperatorPart, ScoresPart
from ..sections.source import SitePart, shown_sites
from ..text import inert, step_text

if TYPE_CHECKING:
    from ..view import View

SEPARATOR = "; "  # joins list-valued cells (modules, ATen ops, source lines)
# A cell starting with one of these is run as a formula by spreadsheet programs (CSV injection); model-supplied
# names are prefixed with an apostrophe, which spreadsheets hide and which keeps the text as text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _inert(value: Any) -> Any:
    """A cell's text with control characters shown as escapes (report/text.py) and a formula start defused."""
    if not isinstance(value, str):
        return value
    value = inert(value)
    return "'" + value if value.startswith(_FORMULA_START) else value


def _row(op: OperatorPart, training: bool = False) -> dict[str, Any]:
    scores = op.scores or ScoresPart()
    days, risk = op.person_days, op.risk
    return {
        "op": op.op,
        "kind": op.kind,
        "category": op.category,
        "known": op.known,
        "count": op.count,
        "signatures": len(op.signatures),
        "functional": scores.functional,
        "performance": scores.performance,
        "ecosystem": scores.ecosystem,
        "composite": scores.composite,
        "person_days_low": days.low if days else None,
        "person_days_likely": days.likely if days else None,
        "person_days_high": days.high if days else None,
        "risk_likelihood": risk.likelihood if risk else None,
        "risk_impact": risk.impact if risk else None,
        "risk_stars": risk.stars if risk else None,
        "pareto": op.pareto,
        "replacement": op.replacement,
        "cann_op": op.cann_op,
        "aten": SEPARATOR.join(op.aten),
        "step": step_text(op.kind, op.backward_aten, training),
        "backward_aten": SEPARATOR.join(op.backward_aten or ()),
        "modules": SEPARATOR.join(op.modules),
        "source": SEPARATOR.join(op.source),
        "reasons": SEPARATOR.join(dict.fromkeys(f"{r.code}: {r.message}" for r in op.reasons)),
        "confidence": op.confidence,
    }


def _source_row(site: SitePart) -> dict[str, Any]:
    """A source site in the operator columns: op its subject, kind 'source:<kind>', source 'file:line', replacement
    its NPU route, reasons its evidence and notes."""
    days, risk = site.person_days, site.risk
    return dict(_row(_EMPTY), op=site.subject, kind=f"source:{site.kind}", category=site.category, known=True,
                count=1, signatures=0, person_days_low=days.low if days else None,
                person_days_likely=days.likely if days else None, person_days_high=days.high if days else None,
                risk_likelihood=risk.likelihood if risk else None, risk_impact=risk.impact if risk else None,
                risk_stars=risk.stars if risk else None, replacement=site.npu_route, aten="", step="",
                source=f"{site.file}:{site.line}", reasons=SEPARATOR.join([*site.evidence, *site.notes]),
                confidence=site.confidence)


@register("csv", extension=".csv", description="one row per operator type, for spreadsheets")
def render_csv(view: View, context: RenderContext) -> str:
    """Operators in report order (largest effort first); list cells joined with '; '."""
    import pandas as pd  # imported here: pandas costs ~0.5 s and only this format needs it

    document = parts_of(view)
    training = document.model.capture.step == TRAIN_STEP
    rows = [{key: _inert(value) for key, value in _row(op, training).items()} for op in document.operators]
    rows += [{key: _inert(value) for key, value in _source_row(site).items()}
             for site in shown_sites(document.source_findings)]
    frame = pd.DataFrame(rows, columns=list(_row(_EMPTY).keys()))
    return frame.to_csv(index=False, lineterminator="\n")


_EMPTY = OperatorPart(op="", backward_aten=())  # a source site's row starts from an empty operator's
