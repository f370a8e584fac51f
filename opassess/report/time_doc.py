"""The time model's part of the JSON document: `estimated_time` per operator, `time` per finding, `performance`."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..perf.records import DeviceMemory, ParallelStep, Performance, StepTime
from ..records import Finding


def _us(value: float) -> float:
    return round(float(value), 1)


def _step_doc(step: StepTime) -> dict[str, Any]:
    return {"variant": step.variant, "label": step.label, "step_us": _us(step.step_us),
            "at_risk_us": _us(step.at_risk_us), "by_unit": {u: _us(v) for u, v in step.by_unit.items()},
            "notes": list(step.notes)}


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


def performance_doc(performance: Performance | None) -> dict[str, Any] | None:
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
    doc["compare"] = [{"product": name, **(_step_doc(other) if other is not None else
                                           {"step_us": None, "at_risk_us": None, "by_unit": {}})}
                      for name, other in performance.compare]
    doc["memory"] = memory_doc(performance.memory)
    doc["parallel"] = parallel_doc(performance.parallel)
    return doc


def operator_time_doc(performance: Performance | None, key: str) -> dict[str, Any] | None:
    """`estimated_time` of one operator on the target: {us, at_risk_us, bound, unit, penalties, calls}."""
    step = performance.step if performance is not None else None
    op = step.operator(key) if step is not None else None
    if op is None:
        return None
    return {"us": _us(op.us), "at_risk_us": _us(op.at_risk_us), "bound": op.bound, "unit": op.unit,
            "penalties": [{"code": code, "us": _us(us)} for code, us in sorted(op.penalties.items(),
                                                                               key=lambda kv: -kv[1])],
            "calls": op.calls}


def finding_gain_us(performance: Performance | None, finding: Finding) -> float | None:
    """The time a finding's fix recovers on the target: the at-risk time of the calls it covers (and their
    backward); None without a step."""
    step = performance.step if performance is not None else None
    if step is None:
        return None
    nodes = set(finding.nodes)
    return sum(c.at_risk_us for c in step.calls if c.node in nodes or c.node.removesuffix(".backward") in nodes)


def finding_time_doc(performance: Performance | None, finding: Finding) -> Mapping[str, float] | None:
    step = performance.step if performance is not None else None
    gain = finding_gain_us(performance, finding)
    if step is None or gain is None:
        return None
    return {"gain_us": _us(gain), "step_at_risk_us": _us(step.at_risk_us)}
