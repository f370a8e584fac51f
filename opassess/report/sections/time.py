"""The time model formatted for people: the step on the target and each compared product, and a row per operator
with a bar of its time and of the part at risk; built once from the JSON document for every format."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..messages import N_, say
from .display_records import Card, Record

ROWS = 15  # operators listed, by time at risk then time (the JSON has every one)


def us_text(us: float | None) -> str:
    """333.3 -> '333.3 us'; 6210 -> '6.21 ms'; 2.5e6 -> '2.50 s' (every time here is an estimate)."""
    if us is None:
        return "-"
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} us"


@dataclass(frozen=True)
class TimeRow(Record):
    op: str
    us_text: str
    at_risk_text: str
    share_text: str  # of the step
    bound: str
    unit: str
    penalties_text: str  # "cpu-fallback 5.40 ms, fp32-cube 1.42 ms"
    bar_pct: str  # the operator's time, as a share of the largest operator's time
    risk_pct: str  # the part at risk, same scale
    risk_of_bar_pct: str  # the part at risk as a share of the operator's own bar (the inner bar's width)


@dataclass(frozen=True)
class CompareRow(Record):
    product: str
    label: str
    step_text: str  # "-" when the tables give no figures
    at_risk_text: str
    by_unit_text: str
    note: str


@dataclass(frozen=True)
class TimeSection(Record):
    product: str
    headline: str  # "Estimated step: 333.3 us (80.2 us at risk, 24%)"
    by_unit_text: str  # "cube 170.1 us, vector 163.2 us"
    estimate: str  # what every time is
    method: str
    notes: tuple[str, ...]
    rows: tuple[TimeRow, ...]
    more: int  # operators not listed
    compare: tuple[CompareRow, ...]  # the target first, then each --compare product; empty without --compare
    lead: tuple[str, ...] = ()  # said before the step: memory that does not fit (job_view.py)
    job: tuple[str, ...] = ()  # after it: memory that fits, the --parallel layout's step and collectives


def gain_text(time: Mapping[str, float] | None, _: Callable[[str], str] = str) -> str:
    """A finding's expected gain: '-1.80 ms of 6.20 ms at risk'; '' when it recovers nothing measurable."""
    if not time or time["gain_us"] < 0.05:
        return ""
    return _("-%(gain)s of %(risk)s at risk") % {"gain": us_text(time["gain_us"]),
                                                 "risk": us_text(time["step_at_risk_us"])}


def slow_card(document: Mapping[str, Any], _: Callable[[str], str] = str) -> tuple[Card, ...]:
    """'Runs slowly (estimate)': the step's time at risk and the operator carrying most of it; () without a time
    model or with nothing at risk."""
    perf = document.get("performance") or {}
    step, risk = perf.get("step_us"), perf.get("at_risk_us")
    if not step or not risk or risk < 0.05:
        return ()
    timed = [(o["op"], o["estimated_time"]) for o in document["operators"] if o.get("estimated_time")]
    op, worst = max(timed, key=lambda item: item[1]["at_risk_us"])
    return (Card(_("Runs slowly (estimate)"),
                 _("%(risk)s of %(step)s at risk") % {"risk": us_text(risk), "step": us_text(step)},
                 _("most: %(op)s, %(risk)s (%(unit)s)") % {"op": op, "risk": us_text(worst["at_risk_us"]),
                                                           "unit": worst["unit"]}),)


# A list's separator, said in the reader's language (Chinese lists with '、'): the unit and penalty codes it separates
# are identifiers.
SEPARATOR = N_(", ")


def _by_unit(by_unit: Mapping[str, float], _: Callable[[str], str] = str) -> str:
    return _(SEPARATOR).join(f"{unit} {us_text(us)}" for unit, us in sorted(by_unit.items(), key=lambda kv: -kv[1]))


def _num(value: float) -> str:
    return f"{value:.1f}"


def time_section(document: Mapping[str, Any], _: Callable[[str], str] = str) -> TimeSection | None:
    """The time section of a document; None without a time model."""
    perf = document.get("performance")
    if not perf:
        return None
    step, risk = perf["step_us"], perf["at_risk_us"]
    if step is None:
        headline = _("No estimated step time: %s") % (perf["note"] or _("no device figures for this product"))
    else:
        headline = _("Estimated step: %(step)s (%(risk)s at risk, %(pc)d%%)") % {
            "step": us_text(step), "risk": us_text(risk), "pc": round(100 * risk / step) if step else 0}
    timed = [(o["op"], o["estimated_time"]) for o in document["operators"] if o.get("estimated_time")]
    timed.sort(key=lambda item: (-item[1]["at_risk_us"], -item[1]["us"], item[0]))
    timed = [item for item in timed if item[1]["us"] > 0]
    largest = max((t["us"] for _op, t in timed), default=0.0) or 1.0
    rows = tuple(TimeRow(
        op=op, us_text=us_text(t["us"]), at_risk_text=us_text(t["at_risk_us"]) if t["at_risk_us"] else "",
        share_text=f"{100 * t['us'] / step:.0f}%" if step else "", bound=t["bound"], unit=t["unit"],
        penalties_text=_(SEPARATOR).join(f"{p['code']} {us_text(p['us'])}" for p in t["penalties"]),
        bar_pct=_num(100 * t["us"] / largest), risk_pct=_num(100 * t["at_risk_us"] / largest),
        risk_of_bar_pct=_num(100 * t["at_risk_us"] / t["us"]))
        for op, t in timed[:ROWS])
    compare: tuple[CompareRow, ...] = ()
    if perf.get("compare"):
        compare = tuple(CompareRow(product=c["product"], label=c.get("label") or "", step_text=us_text(c["step_us"]),
                                   at_risk_text=us_text(c["at_risk_us"]), by_unit_text=_by_unit(c["by_unit"], _),
                                   note="" if c["step_us"] is not None else _("no published figures in the tables"))
                        for c in [perf, *perf["compare"]])
    return TimeSection(product=perf["product"], headline=headline, by_unit_text=_by_unit(perf["by_unit"], _),
                       estimate=say(perf["estimate"], _), method=say(perf["method"], _),
                       notes=tuple(perf.get("notes") or ()),
                       rows=rows, more=max(0, len(timed) - ROWS), compare=compare)
