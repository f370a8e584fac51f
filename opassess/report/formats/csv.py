"""CSV report: one row per operator type, then one per source site (kind 'source:<kind>'), for spreadsheets
(written through pandas)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...vocabulary import TRAIN_STEP
from ..registry import RenderContext, register
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


def _row(op: dict[str, Any], training: bool = False) -> dict[str, Any]:
    scores = op["scores"] or {}
    days = op["person_days"] or {}
    risk = op["risk"] or {}
    return {
        "op": op["op"],
        "kind": op["kind"],
        "category": op["category"],
        "known": op["known"],
        "count": op["count"],
        "signatures": len(op["signatures"]),
        "functional": scores.get("functional"),
        "performance": scores.get("performance"),
        "ecosystem": scores.get("ecosystem"),
        "composite": scores.get("composite"),
        "person_days_low": days.get("low"),
        "person_days_likely": days.get("likely"),
        "person_days_high": days.get("high"),
        "risk_likelihood": risk.get("likelihood"),
        "risk_impact": risk.get("impact"),
        "risk_stars": risk.get("stars"),
        "pareto": op["pareto"],
        "replacement": op["replacement"],
        "cann_op": op["cann_op"],
        "aten": SEPARATOR.join(op["aten"]),
        "step": step_text(op["kind"], op.get("backward_aten"), training),
        "backward_aten": SEPARATOR.join(op.get("backward_aten", ())),
        "modules": SEPARATOR.join(op["modules"]),
        "source": SEPARATOR.join(op["source"]),
        "reasons": SEPARATOR.join(dict.fromkeys(f"{r['code']}: {r['message']}" for r in op["reasons"])),
        "confidence": op.get("confidence"),
    }


def shown_sites(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The source findings a report lists on their own: not those a captured operator is (covered_by)."""
    return [site for site in document.get("source_findings") or () if not site.get("covered_by")]


def _source_row(site: dict[str, Any]) -> dict[str, Any]:
    """A source site in the operator columns: op its subject, kind 'source:<kind>', source 'file:line', replacement
    its NPU route, reasons its evidence and notes."""
    row = _row(_EMPTY)
    days = site.get("person_days") or {}
    risk = site.get("risk") or {}
    row.update({"op": site["subject"], "kind": f"source:{site['kind']}", "category": site["category"], "known": True,
                "count": 1, "signatures": 0, "person_days_low": days.get("low"),
                "person_days_likely": days.get("likely"), "person_days_high": days.get("high"),
                "risk_likelihood": risk.get("likelihood"), "risk_impact": risk.get("impact"),
                "risk_stars": risk.get("stars"), "replacement": site["npu_route"], "aten": "", "step": "",
                "source": f"{site['file']}:{site['line']}",
                "reasons": SEPARATOR.join([*site.get("evidence", ()), *site.get("notes", ())]),
                "confidence": site.get("confidence")})
    return row


@register("csv", extension=".csv", description="one row per operator type, for spreadsheets")
def render_csv(view: View, context: RenderContext) -> str:
    """Operators in report order (largest effort first); list cells joined with '; '."""
    import pandas as pd  # imported here: pandas costs ~0.5 s and only this format needs it

    document = view.document
    training = document["model"]["capture"].get("step") == TRAIN_STEP
    rows = [{key: _inert(value) for key, value in _row(op, training).items()} for op in document["operators"]]
    rows += [{key: _inert(value) for key, value in _source_row(site).items()} for site in shown_sites(document)]
    frame = pd.DataFrame(rows, columns=list(_row(_EMPTY).keys()))
    return frame.to_csv(index=False, lineterminator="\n")


_EMPTY: dict[str, Any] = {"op": "", "kind": "", "category": None, "known": None, "count": 0, "signatures": [],
                          "scores": None, "person_days": None, "risk": None, "pareto": None, "replacement": None,
                          "cann_op": None, "aten": [], "modules": [], "source": [], "reasons": []}
