"""The reach record in the report: the JSON `reach` block and the summary's first line about what the run missed.

"Present, not reached": calls on lines of the entered functions that did not run, judged as operators
(classify/reach.py). They are costed apart from the headline, like `scan --source`'s unreached sites.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...assessment import Assessment
from ...vocabulary import Category
from ..parts import EffortPart
from ..paths import portable, shorten_paths


def reach_doc(assessment: Assessment, roots: Sequence[str]) -> dict[str, Any] | None:
    """The `reach` block: the share of the entered functions' lines that ran, and each present-not-reached call."""
    reach = assessment.reach
    if reach is None:
        return None
    outside = list(dict.fromkeys(n.key for n in assessment.capture.nodes if n.attrs.get("witness")))
    not_direct = [c for c in reach.calls if c.category != Category.DIRECT]
    return {
        "functions": reach.functions, "lines": reach.lines, "ran": reach.ran, "share": round(reach.share, 4),
        "not_direct": list(dict.fromkeys(c.operator for c in not_direct)),
        "person_days": {"low": round(reach.person_days.low, 2), "likely": round(reach.person_days.likely, 2),
                        "high": round(reach.person_days.high, 2)},
        "basis": reach.basis,
        "outside_recorder": outside,
        "driven": list(assessment.capture.driven),
        "present": [{"source": portable(f"{c.file}:{c.line}", roots), "code": c.code, "call": c.call,
                     "operator": c.operator, "function": c.function, "branch": c.branch,
                     "category": str(c.category), "reason": c.reason, "captured": c.captured}
                    for c in reach.calls],
    }


@dataclass(frozen=True)
class PresentCallPart:
    """A call present on a line of an entered function that did not run, judged as an operator."""

    source: str
    operator: str
    category: str
    captured: bool = False
    code: str = ""
    call: str = ""
    function: str = ""
    branch: str | None = None
    reason: str = ""


@dataclass(frozen=True)
class ReachPart:
    """`reach`: the share of the entered functions' lines that ran, and each present-not-reached call (read back
    by the display and by ci/snapshot's unreached gate)."""

    functions: int = 0
    lines: int = 0
    ran: int = 0
    share: float = 0.0
    not_direct: tuple[str, ...] = ()
    person_days: EffortPart | None = None
    basis: str = ""
    outside_recorder: tuple[str, ...] = ()
    driven: tuple[str, ...] = ()
    present: tuple[PresentCallPart, ...] = ()


def reach_text(reach: ReachPart | None, _: Callable[[str], str] = str) -> str:
    """'Not reached by this run: 25 calls present in the functions it entered (2 not direct: torchvision::nms
    param-converted at torchvision/ops/boxes.py:108, skipped by `if boxes.numel() == 0: return`); 78.5% of those
    functions' lines ran; 3.0 person-days apart, not in the total.' ('' when no record was kept)."""
    if not reach:
        return ""
    driven = ""
    if reach.driven:
        driven = _("Driven so that the data-dependent branches run (--no-drive for the plain run): %(what)s. ") % {
            "what": "; ".join(reach.driven)}
    share = _("%(share)s of the lines of the %(functions)d functions the run entered ran") % {
        "share": f"{reach.share * 100:.1f}%", "functions": reach.functions}
    present = reach.present
    outside = ""
    if reach.outside_recorder:
        outside = " " + _("The model called %(ops)s outside the recorder (torch's profiler saw it): judged as "
                          "operators of their own.") % {"ops": ", ".join(reach.outside_recorder)}
    if not present:
        return driven + _("Reach: %(share)s; no call the knowledge base judges is on a line it missed.") % {
            "share": share} + outside
    named = []
    for key in reach.not_direct:
        sites = [p for p in present if p.operator == key]
        where = ", ".join(_site(p, _) for p in sites[:2]) + (_(" and %(n)d more") % {"n": len(sites) - 2}
                                                             if len(sites) > 2 else "")
        named.append(_("%(op)s %(category)s at %(where)s") % {"op": key, "category": sites[0].category,
                                                              "where": where}
                     + (_(" (captured elsewhere)") if sites[0].captured else ""))
    text = driven + _("Not reached by this run: %(n)d call(s) present in the functions it entered") % {
        "n": len(present)}
    if named:
        text += _(" (%(k)d not direct: %(named)s)") % {"k": len(named), "named": "; ".join(named)}
    text += "; " + share
    if reach.person_days and reach.person_days.likely:
        text += _("; %(days)s person-days apart, not in the total") % {"days": f"{reach.person_days.likely:g}"}
    return text + "." + outside


def _site(site: PresentCallPart, _: Callable[[str], str]) -> str:
    """'torchvision/ops/boxes.py:108 (skipped by `if boxes.numel() == 0: return`)'."""
    where = shorten_paths(site.source)
    branch = site.branch
    if not branch:
        return where
    branch = branch if len(branch) <= 60 else branch[:59] + "…"
    return where + _(" (skipped by `%(branch)s`)") % {"branch": branch}
