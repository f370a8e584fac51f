"""The profile document (JSON, profile_format_version 1; profile.schema.json): built once, every format renders it.

Times are per step and device: the export's total divided by its steps (the distinct `Step Id` values of
kernel_details.csv, or --steps, else 1) and its devices (the distinct `Device_id` values: a multi-device run's export
holds every device's kernels), so they compare with the report's per-forward-pass prediction (`estimated_time.us`).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from .checks import Check
from .facts import ProfilerFacts
from .join import Match
from .read import Kernel, ProfileData

PROFILE_FORMAT_VERSION = 1


def _round(value: float) -> float:
    return round(value, 3)


def _shapes(kernel: Kernel) -> list[list[int] | None] | None:
    if kernel.input_shapes is None:
        return None
    return [list(s) if s is not None else None for s in kernel.input_shapes]


def _kernel_rows(matches: Sequence[Match], steps: int) -> list[dict[str, Any]]:
    """Launches of one (name, type, placement, input shapes) grouped into one row, slowest first."""
    groups: dict[tuple, list[Match]] = defaultdict(list)
    for match in matches:
        k = match.kernel
        groups[(k.name, k.type, k.placement, k.input_shapes, k.input_dtypes)].append(match)
    rows = []
    for (name, ktype, placement, _, _), group in groups.items():
        first = group[0]
        rows.append({
            "name": name, "type": ktype, "placement": placement,
            "calls": _round(len(group) / steps),
            "measured_us": _round(sum(m.kernel.duration_us for m in group) / steps),
            "input_shapes": _shapes(first.kernel),
            "input_dtypes": list(first.kernel.input_dtypes) if first.kernel.input_dtypes is not None else None,
            "joined_by": first.why if first.op is not None else None, "shape_match": first.shape_match,
            "source": first.kernel.source,
        })
    return sorted(rows, key=lambda r: (-r["measured_us"], r["name"]))


def _predicted(op: Mapping[str, Any]) -> float | None:
    estimated = op.get("estimated_time")
    if isinstance(estimated, Mapping) and isinstance(estimated.get("us"), (int, float)):
        return float(estimated["us"])
    return None


def count_steps(kernels: Sequence[Kernel], steps: int | None) -> int:
    """--steps when given, else the distinct Step Id values, else 1."""
    if steps:
        return steps
    return max(1, len({k.step for k in kernels if k.step is not None}))


def count_devices(kernels: Sequence[Kernel]) -> int:
    """The distinct Device_id values, else 1."""
    return max(1, len({k.device for k in kernels if k.device is not None}))


def operator_rows(matches: Sequence[Match], operators: Sequence[Mapping[str, Any]], steps: int
                  ) -> list[dict[str, Any]]:
    by_op: dict[int, list[Match]] = defaultdict(list)
    for match in matches:
        if match.op is not None:
            by_op[match.op].append(match)
    rows = []
    for index, group in by_op.items():
        op = operators[index]
        per_placement: dict[str, float] = defaultdict(float)
        for match in group:
            per_placement[match.kernel.placement or "N/A"] += match.kernel.duration_us / steps
        measured = sum(per_placement.values())
        predicted = _predicted(op)
        rows.append({
            "op": op["op"], "category": op.get("category"), "report_calls": op.get("count"),
            "measured_us": _round(measured), "calls": _round(len(group) / steps),
            "placement": max(per_placement, key=per_placement.__getitem__),
            "placements": {p: _round(us) for p, us in sorted(per_placement.items())},
            "predicted_us": predicted,
            "ratio": _round(measured / predicted) if predicted else None,
            "kernels": _kernel_rows(group, steps),
        })
    return sorted(rows, key=lambda r: (-r["measured_us"], r["op"]))


def unmatched_rows(matches: Sequence[Match], steps: int) -> list[dict[str, Any]]:
    groups: dict[tuple, list[Match]] = defaultdict(list)
    for match in matches:
        if match.op is None:
            groups[(match.kernel.name, match.kernel.type, match.kernel.placement, match.why)].append(match)
    rows = [{"name": name, "type": ktype, "placement": placement, "why": why, "calls": _round(len(group) / steps),
             "measured_us": _round(sum(m.kernel.duration_us for m in group) / steps), "source": group[0].kernel.source}
            for (name, ktype, placement, why), group in groups.items()]
    return sorted(rows, key=lambda r: (-r["measured_us"], r["name"]))


def build_profile_document(data: ProfileData, report: Mapping[str, Any], report_path: str,
                           matches: Sequence[Match], checks: Sequence[Check], steps: int,
                           facts: ProfilerFacts) -> dict[str, Any]:
    """The profile document: per operator measured vs predicted, unmatched kernels, checks, a summary."""
    devices = count_devices(data.kernels)
    per_step, steps = steps, steps * devices  # below, `steps` divides: each step of each device
    operators = operator_rows(matches, report["operators"], steps)
    unmatched = unmatched_rows(matches, steps)
    total = sum(k.duration_us for k in data.kernels) / steps
    matched = sum(r["measured_us"] for r in operators)
    predicted = [r for r in operators if r["predicted_us"] is not None]
    return {
        "profile_format_version": PROFILE_FORMAT_VERSION,
        "profile": {"path": data.path, "files": list(data.files), "variants": sorted(set(data.variants)),
                    "level0": data.level0, "steps": per_step, "devices": devices, "kernels": len(data.kernels),
                    "pmu_columns": sorted(c for c in data.columns if c in facts.pmu)},
        "report": {"path": report_path, "model": (report.get("model") or {}).get("source"),
                   "target": report.get("target"), "has_time_model": bool(predicted)},
        "summary": {
            "measured_us": _round(total), "matched_us": _round(matched),
            "matched_share": _round(matched / total) if total else None,
            "operators": len(operators), "unmatched_kernels": sum(int(r["calls"] * steps) for r in unmatched),
            "predicted_us": _round(sum(r["predicted_us"] for r in predicted)) if predicted else None,
            "checks": len(checks),
        },
        "operators": operators,
        "unmatched": unmatched,
        "checks": list(checks),
        "facts": {"generator": facts.provenance["generator"], "generated_at": facts.provenance["generated_at"]},
    }
