"""The time section: its JSON part (`estimated_time` per operator, `time` per finding, `performance`) and its display
part (the step on the target and each compared product, and a row per operator with a bar of its time and of the part
at risk; built once from the JSON document for every format). The memory and parallel lines are sections/job.py's."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ...findings.patterns import IMPACT, shipped_patterns
from ...messages import N_, say
from ...perf.records import DeviceMemory, ParallelStep, Performance, StepTime
from ...records import Finding
from ..display.records import Card, Record
from .operators import OperatorPart
from .performance import (
    ComparePart,
    EstimatedTimeDoc,
    EstimatedTimePart,
    FindingTimePart,
    PerformanceDoc,
    PerformancePart,
)


def estimated_times(operators: Sequence[OperatorPart]) -> list[tuple[str, EstimatedTimePart]]:
    """(operator key, its `estimated_time`) for every operator the time model timed, in the document's order."""
    return [(o.op, o.estimated_time) for o in operators if o.estimated_time]


# ------------------------------------------------------------------ the display part


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
    gpu_text: str = ""  # the operator on the --gpu-baseline GPU


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
    lead: tuple[str, ...] = ()  # said before the step: memory that does not fit (sections/job.py)
    job: tuple[str, ...] = ()  # after it: memory that fits, the --parallel layout's step and collectives
    gpu: str = ""  # the --gpu-baseline GPU, when the rows carry its column


def gain_text(time: FindingTimePart | None, _: Callable[[str], str] = str) -> str:
    """A finding's expected gain: '-1.80 ms of 6.20 ms at risk'; '' when it recovers nothing measurable."""
    if not time or time.gain_us < 0.05:
        return ""
    return _("-%(gain)s of %(risk)s at risk") % {"gain": us_text(time.gain_us), "risk": us_text(time.step_at_risk_us)}


def slow_card(perf: PerformancePart | None, operators: Sequence[OperatorPart], _: Callable[[str], str] = str
              ) -> tuple[Card, ...]:
    """'Runs slowly (estimate)': the step's time at risk and the operator carrying most of it; () without a time
    model or with nothing at risk."""
    step, risk = (perf.step_us, perf.at_risk_us) if perf else (None, None)
    if not step or not risk or risk < 0.05:
        return ()
    op, worst = max(estimated_times(operators), key=lambda item: item[1].at_risk_us)
    return (Card(_("Runs slowly (estimate)"),
                 _("%(risk)s of %(step)s at risk") % {"risk": us_text(risk), "step": us_text(step)},
                 _("most: %(op)s, %(risk)s (%(unit)s)") % {"op": op, "risk": us_text(worst.at_risk_us),
                                                           "unit": worst.unit}),)


# A list's separator, said in the reader's language (Chinese lists with '、'): the unit and penalty codes it separates
# are identifiers.
SEPARATOR = N_(", ")


def _by_unit(by_unit: Mapping[str, float], _: Callable[[str], str] = str) -> str:
    return _(SEPARATOR).join(f"{unit} {us_text(us)}" for unit, us in sorted(by_unit.items(), key=lambda kv: -kv[1]))


def _num(value: float) -> str:
    return f"{value:.1f}"


def time_section(perf: PerformancePart | None, operators: Sequence[OperatorPart], _: Callable[[str], str] = str
                 ) -> TimeSection | None:
    """The time section of a document; None without a time model."""
    if not perf:
        return None
    step, risk = perf.step_us, perf.at_risk_us
    if step is None:
        headline = _("No estimated step time: %s") % (perf.note or _("no device figures for this product"))
    else:
        headline = _("Estimated step: %(step)s (%(risk)s at risk, %(pc)d%%)") % {
            "step": us_text(step), "risk": us_text(risk), "pc": round(100 * (risk or 0.0) / step) if step else 0}
    timed = estimated_times(operators)
    timed.sort(key=lambda item: (-item[1].at_risk_us, -item[1].us, item[0]))
    timed = [item for item in timed if item[1].us > 0]
    largest = max((t.us for _op, t in timed), default=0.0) or 1.0
    rows = tuple(TimeRow(
        op=op, us_text=us_text(t.us), at_risk_text=us_text(t.at_risk_us) if t.at_risk_us else "",
        share_text=f"{100 * t.us / step:.0f}%" if step else "", bound=t.bound, unit=t.unit,
        penalties_text=_(SEPARATOR).join(f"{p.code} {us_text(p.us)}" for p in t.penalties),
        bar_pct=_num(100 * t.us / largest), risk_pct=_num(100 * t.at_risk_us / largest),
        risk_of_bar_pct=_num(100 * t.at_risk_us / t.us),
        gpu_text=us_text(t.gpu_us) if t.gpu_us is not None else "")
        for op, t in timed[:ROWS])
    compare: tuple[CompareRow, ...] = ()
    if perf.compare:
        sides: list[PerformancePart | ComparePart] = [perf, *perf.compare]  # the target first
        compare = tuple(CompareRow(product=c.product, label=c.label or "", step_text=us_text(c.step_us),
                                   at_risk_text=us_text(c.at_risk_us), by_unit_text=_by_unit(c.by_unit, _),
                                   note="" if c.step_us is not None else _("no published figures in the tables"))
                        for c in sides)
    return TimeSection(product=perf.product, headline=headline, by_unit_text=_by_unit(perf.by_unit, _),
                       estimate=say(perf.estimate, _), method=say(perf.method, _), notes=tuple(perf.notes),
                       rows=rows, more=max(0, len(timed) - ROWS), compare=compare,
                       gpu=perf.gpu_baseline.gpu if perf.gpu_baseline else "")


# ------------------------------------------------------------------ the JSON part (top-level `performance`, each
# operator's `estimated_time`, each finding's `time`)


def _us(value: float) -> float:
    return round(float(value), 1)


def _step_doc(step: StepTime) -> dict[str, Any]:
    return {"variant": step.variant, "label": step.label, "step_us": _us(step.step_us),
            "at_risk_us": _us(step.at_risk_us), "by_unit": {u: _us(v) for u, v in step.by_unit.items()},
            "notes": list(step.notes), "host_us": _us(step.host_us), "eager_step_us": _us(step.eager_us)}


GIB = 1024 ** 3


def _gib(value: float | None) -> float | None:
    return None if value is None else round(value / GIB, 6)


def memory_doc(memory: DeviceMemory | None) -> dict[str, Any] | None:
    """{per_device_gib, hbm_gib, fits, breakdown: {part: gib}, basis}; fits null without the product's HBM."""
    if memory is None:
        return None
    return {"per_device_gib": _gib(memory.bytes), "hbm_gib": _gib(memory.hbm_bytes), "fits": memory.fits,
            "breakdown": {k: _gib(v) for k, v in memory.breakdown.items()}, "basis": memory.basis}


def _maybe_us(value: float | None) -> float | None:
    return None if value is None else _us(value)


def parallel_doc(job: ParallelStep | None) -> dict[str, Any] | None:
    """`performance.parallel`: {tp, pp, dp, ep, sp, cp, zero, devices, micro_batches, global_batch, step_us,
    compute_us, comm_us, bubble_us, tokens_per_s_per_device, samples_per_s_per_device, memory, collectives, notes}."""
    if job is None:
        return None
    lay = job.layout
    rate = job.tokens_per_s_per_device
    samples = job.samples_per_s_per_device
    return {"tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "ep": lay.ep, "sp": lay.sp, "cp": lay.cp, "zero": lay.zero,
            "devices": lay.devices, "micro_batches": job.micro_batches, "global_batch": job.global_batch,
            "step_us": _maybe_us(job.step_us), "compute_us": _maybe_us(job.compute_us),
            "comm_us": _maybe_us(job.comm_us), "bubble_us": _maybe_us(job.bubble_us),
            "tokens_per_s_per_device": None if rate is None else round(rate, 1),
            "samples_per_s_per_device": None if samples is None else round(samples, 3),
            "memory": memory_doc(job.memory),
            "collectives": [{"kind": c.kind, "group": c.group, "tier": c.tier, "calls": c.calls,
                             "bytes": round(c.bytes), "us": _us(c.us), "exposed_us": _us(c.exposed_us)}
                            for c in job.collectives],
            "notes": list(job.notes)}


def performance_doc(performance: Performance | None) -> PerformanceDoc | None:
    """{product, step_us, at_risk_us, by_unit, method, estimate, variant, notes, compare, memory, parallel}; None
    without a time model; step_us null when the tables give no figures for the product (`note` says so)."""
    if performance is None:
        return None
    step = performance.step
    doc: dict[str, Any] = {"product": performance.product, "step_us": None, "at_risk_us": None, "by_unit": {},
                           "method": performance.method, "estimate": performance.estimate, "note": performance.note,
                           "variant": None, "label": None, "notes": []}
    if step is not None:
        doc.update(_step_doc(step))
    base, pair = performance.gpu_baseline, performance.two_dies
    doc.update(
        compare=[{"product": name, **(_step_doc(other) if other is not None else
                                      {"step_us": None, "at_risk_us": None, "by_unit": {}})}
                 for name, other in performance.compare],
        memory=memory_doc(performance.memory),
        gpu_baseline=None if base is None else {
            "gpu": base.gpu, "label": base.label, "step_us": _us(base.step_us), "ratio": round(base.ratio, 3),
            "match_gpus": base.match_gpus, "matching_npus": base.matching_npus, "notes": list(base.notes)},
        parallel=parallel_doc(performance.parallel),
        two_dies=None if pair is None or pair.step_us is None else {
            "step_us": _us(pair.step_us), "compute_us": _us(pair.compute_us or 0.0),
            "comm_us": _us(pair.comm_us or 0.0), "tier": next((c.tier for c in pair.collectives), None)})
    return cast("PerformanceDoc", doc)  # built key by key, in the document's order


def operator_time_doc(performance: Performance | None, key: str) -> EstimatedTimeDoc | None:
    """`estimated_time` of one operator on the target: {us, at_risk_us, bound, unit, penalties, calls}."""
    step = performance.step if performance is not None else None
    op = step.operator(key) if step is not None else None
    if op is None:
        return None
    doc: EstimatedTimeDoc = {"us": _us(op.us), "at_risk_us": _us(op.at_risk_us), "bound": op.bound, "unit": op.unit,
           "penalties": [{"code": code, "us": _us(us)} for code, us in sorted(op.penalties.items(),
                                                                              key=lambda kv: -kv[1])],
           "calls": op.calls}
    base = performance.gpu_baseline if performance is not None else None
    if base is not None:
        doc["gpu_us"] = _us(base.operators.get(key, 0.0))
    return doc


def finding_gain_us(performance: Performance | None, finding: Finding) -> float | None:
    """The time a finding's fix recovers on the target: the at-risk time of the calls it covers (and their
    backward); None without a step."""
    step = performance.step if performance is not None else None
    if step is None:
        return None
    nodes = set(finding.nodes)
    return sum(c.at_risk_us for c in step.calls if c.node in nodes or c.node.removesuffix(".backward") in nodes)


def finding_time_doc(performance: Performance | None, finding: Finding, gain: float | None = None
                     ) -> Mapping[str, float] | None:
    """A finding's time part: what its fix recovers (`gain`, from finding_gains; its own covered calls without) and
    the step's time at risk."""
    step = performance.step if performance is not None else None
    gain = finding_gain_us(performance, finding) if gain is None else gain
    if step is None or gain is None:
        return None
    return {"gain_us": _us(gain), "step_at_risk_us": _us(step.at_risk_us)}


def finding_gains(performance: Performance | None, findings: Sequence[Finding]) -> list[float | None]:
    """What each finding's fix recovers with every call claimed once: a call two findings cover (an RMSNorm chain
    also in an add+norm chain) counts for the one recovering most on its own, so the gains add up to at most the
    step's time at risk. Example: A covers calls 1, 2 (3 + 2 us at risk), B calls 2, 3 (2 + 1 us): A 5, B 1. A finding
    of an impact-only kind (a share of compute: patterns.toml criterion "impact") fixes nothing: it recovers nothing
    and claims no call a fix could (Llama's Tensor.add share once took the adds of its Residual Add + RMSNorm)."""
    step = performance.step if performance is not None else None
    if step is None:
        return [None] * len(findings)
    book = shipped_patterns()
    alone = [finding_gain_us(performance, f) or 0.0 for f in findings]
    claimed: set[int] = set()
    gains: list[float | None] = [0.0] * len(findings)
    fixes = [i for i, f in enumerate(findings) if book.criterion_of(f.kind) != IMPACT]
    for index in sorted(fixes, key=lambda i: (-alone[i], i)):
        nodes = set(findings[index].nodes)
        gain = 0.0
        for position, call in enumerate(step.calls):
            if position not in claimed and (call.node in nodes or call.node.removesuffix(".backward") in nodes):
                claimed.add(position)
                gain += call.at_risk_us
        gains[index] = gain
    return gains
