"""Calibration of the time model from a profile (`opassess calibrate --profile-data PATH --report REPORT.json`).

The time model (opassess/perf) gives each operator, per call, max(compute, memory) + launch, with
    compute = FLOPs / (peak[unit][dtype] x efficiency[unit]),  memory = bytes / (HBM bandwidth x memory efficiency).
The efficiencies and launch costs are modelled values (Huawei's msModeling TensorCast figures). This module fits
them to measured operator times: efficiency and launch_us per unit (cube, vector, aicpu) and the memory efficiency,
so the model reproduces the measurements as closely as it can; the peaks and the bandwidth stay the tables'.

Rows: the operators the profile joined to the report (profiler/join.py) whose unit has a kernel: the unit is the
report's `estimated_time.unit` (the time model's), except where the measurement says otherwise: a kernel measured on
the AI CPU fits the aicpu unit, and an operator the model sends to the host or to no unit but measured on the device
fits its placement's (AI_CORE / MIX_AIC: cube, AI_VECTOR_CORE / MIX_AIV: vector); without the time model, the
placement's. Each row says where its unit came from. Per row the prediction is
calls x (max(compute, memory) + launch) for the average call (the report's FLOPs and bytes over its calls) plus the
penalties the report's time model added (`estimated_time.at_risk_us`, held fixed: they are not efficiencies).

Regimes: a kernel's time identifies only the parameter its time is made of. At the modelled values each row is
compute-bound (compute at least half its time: it identifies its unit's efficiency), memory-bound (memory at least
half: the memory efficiency) or launch-bound (launch at least half: its unit's launch cost), else mixed (it counts
in the loss, identifies nothing). Only parameters some row identifies are fitted; the others keep their modelled
value and the result says which and why (a profile of launch-bound 128x256x768 matmuls says nothing of the cube's
efficiency on a 7B model's 4096-wide ones). Each fitted value is then shrunk towards the modelled one by how much
measured time its evidence covers: ln(value) moves T / (T + EVIDENCE_US) of the way from the modelled value to the
fit, T the identifying rows' measured microseconds (EVIDENCE_US = 5 us, about one kernel launch: an assumption, not
an Ascend figure). Worked example: 40 us of launch-bound kernels fitting a launch of 17 us against 5 us modelled
gives 5 x (17 / 5)^(40 / 45) = 14.8 us.

Objective: the sum over rows of ln(predicted / measured)^2 (every operator counts by its relative error, whatever its
size), minimised by coordinate descent (a golden-section search per parameter over ln(value), efficiencies in
[0.01, 1], launch costs in [0.1, 1000] us), sweeps until no parameter moves. A parameter no row depends on keeps its
value and is not written. Worked example: one cube op of 1e12 FLOPs on a 1e15 FLOP/s peak measured at 2,000 us with
a 0 us launch fits efficiency 1e12 / (1e15 x 2e-3) = 0.5.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ..dtypes import FLOAT_DTYPES
from ..perf import CallWork, DeviceProfile, roofline
from ..report.text import inert

UNITS = ("cube", "vector", "aicpu")
PLACEMENT_UNITS = {"AI_CORE": "cube", "MIX_AIC": "cube", "AI_VECTOR_CORE": "vector", "MIX_AIV": "vector",
                   "AI_CPU": "aicpu"}
EFFICIENCY_RANGE = (0.01, 1.0)
LAUNCH_RANGE = (0.1, 1000.0)  # us
SWEEPS = 60
CARVED = ("fp32-cube", "unfused")  # penalties perf/model.py takes out of the roofline instead of adding to it
REGIME_SHARE = 0.5  # a row identifies a parameter when that part is at least half its modelled time
EVIDENCE_US = 5.0  # measured time that moves a parameter half way from the modelled value to the fit (assumption)
RIDGE = 1e-3  # weight of the pull towards the modelled values, against ln-ratio errors of order 0.01-1 per operator
GOLDEN = (math.sqrt(5) - 1) / 2


@dataclass(frozen=True)
class FitRow:
    """One measured operator as the fit sees it."""

    op: str
    unit: str
    unit_from: str  # "time model" or "placement AI_CORE"
    dtype: str | None
    calls: int
    flops: float  # over all calls
    bytes: float
    fixed_us: float  # penalties the report's time model added (held fixed)
    measured_us: float


@dataclass(frozen=True)
class DeviceFit:
    """The fitted parameters, the rows, and the error before and after."""

    product: str
    rows: tuple[FitRow, ...]
    before: Mapping[str, float]  # parameter -> value ("cube.efficiency", "cube.launch_us", "memory.efficiency")
    after: Mapping[str, float]
    fitted: tuple[str, ...]  # the parameters some row depends on (the others keep their value)
    predicted_before: tuple[float, ...]  # per row
    predicted_after: tuple[float, ...]
    skipped: tuple[tuple[str, str], ...]  # (op, why) of measured operators the fit leaves out
    # parameter -> why it keeps its modelled value (no row in the regime that identifies it)
    kept: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # fitted parameter -> the measured time of the rows identifying it
    evidence_us: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    # "cube.flops" -> (min, max) per call of the rows fitted on
    sizes: Mapping[str, tuple[float, float]] = field(default_factory=lambda: MappingProxyType({}))

    @staticmethod
    def error(predicted: Sequence[float], rows: Sequence[FitRow]) -> float:
        """The fit error, the quantity minimised: the root mean square of ln(predicted / measured) (0.1 is about
        10% off on a typical operator; exp() of it is the typical factor off)."""
        return math.sqrt(sum(math.log(max(p, 1e-9) / r.measured_us) ** 2
                             for p, r in zip(predicted, rows, strict=True)) / len(rows))

    @property
    def error_before(self) -> float:
        return self.error(self.predicted_before, self.rows)

    @property
    def error_after(self) -> float:
        return self.error(self.predicted_after, self.rows)

    @property
    def notes(self) -> tuple[str, ...]:
        """What the user should know about how well the measurements pin the parameters down."""
        notes = []
        if len(self.rows) < len(self.fitted):
            notes.append(f"{len(self.rows)} measured operators for {len(self.fitted)} parameters: the fit is "
                         f"underdetermined, the values are one of many that fit; profile more operators")
        for name, why in self.kept.items():
            notes.append(f"{name} kept at its modelled value {self.before[name]:.4g}: {why}")
        for name in self.fitted:
            low, high = LAUNCH_RANGE if name.endswith("launch_us") else EFFICIENCY_RANGE
            if not low * 1.01 < self.after[name] < high * 0.99:
                notes.append(f"{name} = {self.after[name]:.4g} is at the end of its range ({low:g}-{high:g}): the "
                             f"model cannot reproduce these measurements with it")
        return tuple(notes)


def parameters(profile: DeviceProfile) -> dict[str, float]:
    values = {f"{unit}.efficiency": profile.efficiency[unit] for unit in UNITS}
    values.update({f"{unit}.launch_us": profile.launch_us[unit] for unit in UNITS})
    values["memory.efficiency"] = profile.memory_efficiency
    return values


def with_parameters(profile: DeviceProfile, values: Mapping[str, float]) -> DeviceProfile:
    return replace(profile, efficiency=MappingProxyType({u: values[f"{u}.efficiency"] for u in UNITS}),
                   launch_us=MappingProxyType({**profile.launch_us, **{u: values[f"{u}.launch_us"] for u in UNITS}}),
                   memory_efficiency=values["memory.efficiency"])


def predict(row: FitRow, profile: DeviceProfile) -> float:
    """The row's time with `profile`: calls x (max(compute, memory) + launch) of the average call, plus fixed."""
    work = CallWork(node="", op=row.op, unit=row.unit, dtype=row.dtype, flops=row.flops / row.calls,
                    bytes=row.bytes / row.calls)
    compute, memory, launch = roofline(work, profile)
    return row.calls * (max(compute, memory) + launch) + row.fixed_us


def regime(row: FitRow, profile: DeviceProfile) -> str:
    """compute, memory or launch: the part of the row's modelled time (per call) that is at least REGIME_SHARE of
    it; mixed when none is."""
    work = CallWork(node="", op=row.op, unit=row.unit, dtype=row.dtype, flops=row.flops / row.calls,
                    bytes=row.bytes / row.calls)
    compute, memory, launch = roofline(work, profile)
    total = max(compute, memory) + launch
    if total <= 0:
        return "mixed"
    for name, part in (("launch", launch), ("compute", compute if compute >= memory else 0.0),
                       ("memory", memory if memory > compute else 0.0)):
        if part >= REGIME_SHARE * total:
            return name
    return "mixed"


def identified_by(name: str, row: FitRow, row_regime: str) -> bool:
    """Whether a row in `row_regime` identifies parameter `name`."""
    section, key = name.split(".")
    if section == "memory":
        return row_regime == "memory"
    if section != row.unit:
        return False
    return row_regime == ("launch" if key == "launch_us" else "compute")


_WANTED = {"efficiency": "compute-bound", "launch_us": "launch-bound"}


def _loss(rows: Sequence[FitRow], profile: DeviceProfile) -> float:
    return sum(math.log(max(predict(r, profile), 1e-9) / r.measured_us) ** 2 for r in rows)


def _prior(values: Mapping[str, float], start: Mapping[str, float], names: Sequence[str]) -> float:
    """A weak pull towards the modelled values (RIDGE x ln(value / modelled)^2 per parameter): where the measurements
    do not pin a parameter down (fewer operators than parameters, a unit's launch and throughput measured at one
    call count), it stays near the model instead of drifting to the end of its range."""
    return RIDGE * sum(math.log(values[n] / start[n]) ** 2 for n in names)


def _range(name: str) -> tuple[float, float]:
    return LAUNCH_RANGE if name.endswith("launch_us") else EFFICIENCY_RANGE


def _golden(function, low: float, high: float, iterations: int = 80) -> float:
    """The argument in [low, high] minimising a one-dimensional function (golden-section search)."""
    a, b = low, high
    c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    fc, fd = function(c), function(d)
    for _ in range(iterations):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - GOLDEN * (b - a)
            fc = function(c)
        else:
            a, c, fc = c, d, fd
            d = a + GOLDEN * (b - a)
            fd = function(d)
    return (a + b) / 2


def fit(rows: Sequence[FitRow], profile: DeviceProfile, skipped: Sequence[tuple[str, str]] = ()) -> DeviceFit:
    """The parameters that best reproduce the measured times, starting from `profile`'s."""
    if not rows:
        from .read import ProfileError

        raise ProfileError("no measured operator to fit: the profile joined no operator with a kernel unit "
                           "(see `opassess profile` for what was joined and what was not)")
    before = parameters(profile)
    values = dict(before)
    units = {r.unit for r in rows}
    candidates = [n for n in values if n.split(".")[0] in units or n == "memory.efficiency"]

    fitted: list[str] = []
    regimes = [regime(r, profile) for r in rows]
    evidence = {n: sum(r.measured_us for r, g in zip(rows, regimes, strict=True) if identified_by(n, r, g))
                for n in candidates}
    kept: dict[str, str] = {}

    def loss_at(name: str, log_value: float) -> float:
        trial = {**values, name: math.exp(log_value)}
        return _loss(rows, with_parameters(profile, trial)) + _prior(trial, before, fitted)

    for name in candidates:  # a parameter is fitted when moving it over its range changes the data's loss
        low, high = (math.log(v) for v in _range(name))
        if abs(_loss(rows, with_parameters(profile, {**values, name: math.exp(low)}))
               - _loss(rows, with_parameters(profile, {**values, name: math.exp(high)}))) > 1e-12:
            if evidence[name] > 0:
                fitted.append(name)
                continue
            section, key = name.split(".")
            wanted = "memory-bound" if section == "memory" else f"{_WANTED[key]} {section}"
            seen = ", ".join(f"{sum(1 for g in regimes if g == k)} {k}-bound" for k in ("compute", "memory", "launch")
                             if k in regimes) or "none in one regime"
            kept[name] = f"no {wanted} kernel in the profile identifies it (of {len(rows)} measured: {seen})"
    for _ in range(SWEEPS):
        moved = 0.0
        for name in fitted:
            low, high = (math.log(v) for v in _range(name))
            best = _golden(lambda x, n=name: loss_at(n, x), low, high)
            if loss_at(name, best) < loss_at(name, math.log(values[name])):
                moved = max(moved, abs(best - math.log(values[name])))
                values[name] = math.exp(best)
        if moved < 1e-6:
            break
    for name in fitted:  # shrunk towards the modelled value by the time its evidence covers
        weight = evidence[name] / (evidence[name] + EVIDENCE_US)
        values[name] = before[name] * (values[name] / before[name]) ** weight
    after_profile = with_parameters(profile, values)
    sizes = {}
    for unit in units:
        for kind in ("flops", "bytes"):
            per_call = [getattr(r, kind) / r.calls for r in rows if r.unit == unit and getattr(r, kind) > 0]
            if per_call:
                sizes[f"{unit}.{kind}"] = (min(per_call), max(per_call))
    return DeviceFit(product=profile.product, rows=tuple(rows), before=MappingProxyType(before),
                     after=MappingProxyType(values), fitted=tuple(fitted),
                     predicted_before=tuple(predict(r, profile) for r in rows),
                     predicted_after=tuple(predict(r, after_profile) for r in rows), skipped=tuple(skipped),
                     kept=MappingProxyType(kept), evidence_us=MappingProxyType({n: evidence[n] for n in fitted}),
                     sizes=MappingProxyType(sizes))


def _dtype(op: Mapping[str, Any]) -> str | None:
    for sig in op.get("signatures") or ():
        dtypes = [d for d in sig.get("input_dtypes") or () if d]
        floating = next((d for d in dtypes if d in FLOAT_DTYPES), None)
        if floating or dtypes:
            return floating or dtypes[0]
    return None


def _added_penalties(estimated: Mapping[str, Any] | None) -> float:
    """The time the report's penalties add over the roofline. Penalties the time model carves out of the roofline
    (CARVED: part of the call's own time, not added to it) are left out, since `predict` recomputes the whole
    roofline; without the per-penalty list, `at_risk_us`."""
    if not estimated:
        return 0.0
    penalties = estimated.get("penalties")
    if isinstance(penalties, list) and all(isinstance(p, Mapping) for p in penalties):
        return sum(float(p.get("us") or 0) for p in penalties if p.get("code") not in CARVED)
    return float(estimated.get("at_risk_us") or 0.0)


def fit_rows(profile_document: Mapping[str, Any], report: Mapping[str, Any]
             ) -> tuple[list[FitRow], list[tuple[str, str]]]:
    """The rows of a profile document (profiler/document.py) against its report, and the operators left out."""
    by_op = {op["op"]: op for op in report["operators"]}
    rows, skipped = [], []
    for measured in profile_document["operators"]:
        op = by_op.get(measured["op"])
        if op is None or measured["measured_us"] <= 0:
            skipped.append((measured["op"], "no measured time"))
            continue
        estimated = op.get("estimated_time") if isinstance(op.get("estimated_time"), Mapping) else None
        placement = measured["placement"]
        if placement == "AI_CPU" or (placement in PLACEMENT_UNITS and (estimated or {}).get("unit") not in UNITS):
            # where it ran wins over the model where the model has it elsewhere: the AI CPU, or a kernel measured
            # on the device for an operator the model sends to the host (cpu-fallback) or to no unit
            unit, unit_from = PLACEMENT_UNITS[placement], f"placement {placement}"
        elif estimated is not None and estimated.get("unit") in UNITS:
            unit, unit_from = estimated["unit"], "time model"
        else:
            skipped.append((measured["op"], f"placement {placement} names no unit"))
            continue
        flops, moved = float(op.get("flops") or 0), float(op.get("bytes_moved") or 0)
        calls = int((estimated or {}).get("calls") or op.get("count") or 1)
        if flops <= 0 and moved <= 0:
            skipped.append((measured["op"], "the report counts no FLOPs and no bytes for it"))
            continue
        rows.append(FitRow(op=measured["op"], unit=unit, unit_from=unit_from, dtype=_dtype(op), calls=max(1, calls),
                           flops=flops, bytes=moved, fixed_us=_added_penalties(estimated),
                           measured_us=float(measured["measured_us"])))
    return rows, skipped


def overlay_text(result: DeviceFit, source: str) -> str:
    """A device-profile overlay (perf/device.py's format) with the fitted parameters, for scan --device-profile."""
    lines = [f"# Device profile calibrated by `opassess calibrate --profile-data` from {inert(source)}",
             f"# {len(result.rows)} measured operators; fit error (RMS of ln(predicted/measured)) "
             f"{result.error_before:.3f} -> {result.error_after:.3f}. Fitted values replace the modelled ones; every "
             f"other figure is the table's.",
             f"product = {json.dumps(result.product)}",  # a JSON string is a TOML basic string
             f"source = {json.dumps(source)}"]
    sections: dict[str, list[str]] = {}
    for name in result.fitted:
        section, key = name.split(".")
        sections.setdefault(section, []).append(f"{key} = {result.after[name]:.4g}    # was {result.before[name]:.4g}")
    lines += [f"# note: {inert(note)}" for note in result.notes]
    for section in ("memory", *UNITS):
        if section in sections:
            lines += ["", f"[{section}]", *sections[section]]
    if result.sizes:  # a scan whose calls reach outside these per-call sizes is warned (perf/step.outside_fitted)
        lines += ["", "[fitted]", *(f"{name.replace('.', '_')} = [{low:.6g}, {high:.6g}]"
                                    for name, (low, high) in sorted(result.sizes.items()))]
    return "\n".join(lines) + "\n"
