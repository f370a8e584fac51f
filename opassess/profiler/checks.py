"""What a measured profile says needs work: AI CPU placements and CPU fallbacks with the fix the facts give, the
msprof-analyze advisor's shape-affinity rules on measured shapes, its PMU bound rules and the checklist's PMU
items where the export has those columns, and the advisor's dynamic-shape rule.

Every check is a plain dict (`Check`): {check, severity, op, kernel, message, fix, evidence}. Kernels are grouped by
(operator, name, type) so a kernel launched 10,000 times is one check; a PMU ratio is the duration-weighted mean of
its launches (a ratio is a share of each launch's time).
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from ..dtypes import FLOAT_DTYPES
from ..kb import kernels as kernel_facts
from ..kb.products import UnknownProductError
from .facts import ProfilerFacts
from .join import Match, base_name
from .read import Kernel

AI_CPU = "AI_CPU"
CUBE = ("AI_CORE", "MIX_AIC")
VECTOR = ("AI_VECTOR_CORE", "MIX_AIV")
_MATMUL = re.compile(r"matmul|^aclnn(mm|addmm|bmm|baddbmm|matmul)(_|$)", re.I)
_ATTENTION = re.compile(r"flashattention|fusionattention|fusedinferattention", re.I)


class Check(TypedDict):
    """One check of the profile document's `checks` list."""

    check: str
    severity: str  # "warning" or "info"
    op: str | None
    kernel: str | None
    message: str
    fix: str | None
    evidence: str


def _check(check: str, severity: str, op: str | None, kernel: str | None, message: str, fix: str | None,
           evidence: str) -> Check:
    return {"check": check, "severity": severity, "op": op, "kernel": kernel, "message": message, "fix": fix,
            "evidence": evidence}


def _groups(matches: Sequence[Match], operators: Sequence[Mapping[str, Any]]
            ) -> dict[tuple[str | None, str, str | None], list[Match]]:
    groups: dict[tuple[str | None, str, str | None], list[Match]] = defaultdict(list)
    for match in matches:
        op = operators[match.op]["op"] if match.op is not None else None
        groups[(op, match.kernel.name, match.kernel.type)].append(match)
    return groups


def _label(name: str, ktype: str | None) -> str:
    return name if not ktype or ktype == name else f"{name} ({ktype})"


def _dtypes(kernels: Sequence[Kernel]) -> tuple[str, ...]:
    return tuple(sorted({d for k in kernels for d in k.input_dtypes or () if d}))


def ai_cpu_fix(kernels: Sequence[Kernel], atens: Sequence[str], op: Mapping[str, Any] | None, product: str,
               facts: ProfilerFacts) -> tuple[str | None, str]:
    """(the fix, its evidence) for kernels that ran on the AI CPU."""
    ktype = kernels[0].type or ""
    dtypes = _dtypes(kernels)
    known = facts.ai_cpu.get(ktype)
    if known and (not dtypes or set(dtypes) & set(known["dtypes"])):
        return (f"cast the inputs to {known['cast_to']}: {ktype} runs on the AI CPU for "
                f"{', '.join(known['dtypes'])} (op-plugin's kernel warning)", ", ".join(known["evidence"]))
    if dtypes:
        for aten in atens:
            try:
                verdict = kernel_facts.judge(aten, product, dtypes)
            except UnknownProductError:
                break
            if verdict is not None and verdict.not_native and verdict.allowed:
                api = verdict.main_api.api if verdict.main_api else aten
                floating = all(d in FLOAT_DTYPES for d in verdict.not_native)  # a float input: a float target
                targets = [d for d in verdict.allowed if d in FLOAT_DTYPES] if floating else list(verdict.allowed)
                return (f"cast {', '.join(verdict.not_native)} to one of {', '.join(targets or verdict.allowed)} "
                        f"({api}'s documented dtypes on {product})", "; ".join(verdict.evidence[:2]))
    if op is not None and op.get("replacement"):
        return f"use {op['replacement']} (the report's replacement for {op['op']})", "the scan report"
    what = f"{ktype or 'the kernel'}" + (f" on {', '.join(dtypes)}" if dtypes else "")
    return (f"no fact names an AI Core path for {what}: rerun it alone with the inputs cast to float16 / float32 and "
            f"contiguous (the AI CPU is often the fallback for int64, float64 or an unsupported layout); if it stays "
            f"on the AI CPU, express it with ops that have AI Core kernels or write one (custom-dev)",
            "msprof-analyze's AI CPU rule (no per-dtype fact for this kernel)")


def placement_checks(matches: Sequence[Match], operators: Sequence[Mapping[str, Any]], product: str,
                     facts: ProfilerFacts) -> list[Check]:
    """AI_CPU kernels, and operators the facts say fall back to the host CPU that left no kernel in the profile."""
    found = []
    by_op = {op["op"]: op for op in operators}
    for (op_name, name, ktype), group in _groups(matches, operators).items():
        kernels = [m.kernel for m in group if m.kernel.placement == AI_CPU]
        if not kernels:
            continue
        op = by_op.get(op_name)
        atens = sorted({a for m in group for a in m.atens} | {base_name(a) for a in (op or {}).get("aten") or ()})
        fix, evidence = ai_cpu_fix(kernels, atens, op, product, facts)
        total = sum(k.duration_us for k in kernels)
        found.append(_check(
            "ai-cpu", "warning", op_name, _label(name, ktype),
            f"{_label(name, ktype)} ran on the AI CPU: {len(kernels)} launch(es), {total:.1f} us in the export"
            + (f" (input dtypes {', '.join(_dtypes(kernels))})" if _dtypes(kernels) else ""),
            fix, f"{evidence}; advisor rule {facts.advisor['ai-cpu']['row']}" if "ai-cpu" in facts.advisor
            else evidence))
    measured = {operators[m.op]["op"] for m in matches if m.op is not None}
    for op in operators:
        if op["op"] in measured:
            continue
        bases = [base_name(a) for a in op.get("aten") or ()]
        host = [b for b in bases if b in facts.host_cpu]
        reason = next((r for r in op.get("reasons") or () if r.get("code") == "cpu-fallback"), None)
        if not host and reason is None:
            continue
        if host:
            evidence = ", ".join(e for b in host for e in facts.host_cpu[b]["evidence"])
        else:
            assert reason is not None  # an op with neither was skipped just above
            evidence = reason["evidence"]
        fix = (f"use {op['replacement']}" if op.get("replacement")
               else "keep it off the hot path or express it with ops that have NPU kernels; else a custom kernel "
                    "(the facts name no NPU path)")
        found.append(_check("cpu-fallback", "warning", op["op"], None,
                            f"{op['op']} left no device kernel in the profile: it falls back to the host CPU"
                            + (f" (aten::{', aten::'.join(host)})" if host else ""), fix, evidence))
    return found


def shape_checks(matches: Sequence[Match], operators: Sequence[Mapping[str, Any]],
                 facts: ProfilerFacts) -> list[Check]:
    """The advisor's shape-affinity rules on the measured input shapes: a cube (MatMul) kernel's inner axis, a
    FlashAttention kernel's head dim (last axis) and, for 4-D inputs, sequence length (second-to-last axis)."""
    found = []
    for (op_name, name, ktype), group in _groups(matches, operators).items():
        label = f"{name} {ktype or ''}"
        if _MATMUL.search(label) and "cube-shape-affinity" in facts.advisor:
            rule = facts.advisor["cube-shape-affinity"]
            axes = lambda shape: [("inner axis", shape[-1])]  # noqa: E731
        elif _ATTENTION.search(label) and "fa-shape-affinity" in facts.advisor:
            rule = facts.advisor["fa-shape-affinity"]
            axes = lambda shape: [("head dim", shape[-1])] + ([("seq len", shape[-2])] if len(shape) == 4  # noqa: E731
                                                              else [])
        else:
            continue
        bad = {}
        for match in group:
            shapes = [s for s in match.kernel.input_shapes or () if s]
            for shape in shapes[:1 if rule["id"] == "fa-shape-affinity" else 2]:
                for axis, size in axes(shape):
                    if size % rule["modulus"]:
                        bad[(shape, axis)] = size
        for (shape, axis), size in sorted(bad.items()):
            found.append(_check(
                "shape-affinity", "info", op_name, _label(name, ktype),
                f"input shape {list(shape)}: {axis} {size} is not a multiple of {rule['modulus']} "
                f"(advisor: {rule['condition']})",
                f"pad the {axis} to a multiple of {rule['modulus']} where the model allows it",
                f"{rule['row']} ({rule['path']})"))
    return found


def _weighted(kernels: Sequence[Kernel], column: str) -> float | None:
    values = [(k.pmu[column], k.duration_us) for k in kernels if column in k.pmu]
    if not values:
        return None
    weight = sum(w for _, w in values)
    return sum(v * w for v, w in values) / weight if weight else sum(v for v, _ in values) / len(values)


def pmu_checks(matches: Sequence[Match], operators: Sequence[Mapping[str, Any]], columns: frozenset[str],
               facts: ProfilerFacts) -> list[Check]:
    """The checklist's vector utilisation, the memory_bound column and the advisor's bound rules, per kernel group,
    only where the export has the PMU columns."""
    found = []
    memory = facts.pmu.get("memory_bound")
    memory_above = memory.get("above") if memory is not None else None
    for (op_name, name, ktype), group in _groups(matches, operators).items():
        kernels = [m.kernel for m in group]
        placement = kernels[0].placement or ""
        label = _label(name, ktype)
        for item in facts.checklist:
            column = next((c for c in item.columns if c in columns), None)
            value = _weighted(kernels, column) if column and placement in item.placements else None
            if value is not None and value < item.below:
                found.append(_check(f"checklist:{item.name}", "warning", op_name, label,
                                    f"{column} = {value:.2f} (below {item.below:.2f})", item.advice, item.source))
        bound = _weighted(kernels, "memory_bound") if memory_above is not None else None
        if memory is not None and memory_above is not None and bound is not None and bound > memory_above:
            found.append(_check("memory-bound", "info", op_name, label,
                                f"memory_bound = {bound:.2f} > {memory_above:g}: {memory['means']} "
                                f"({memory['formula']})",
                                "reduce data movement (fuse with neighbours, keep data on chip, lower precision)",
                                memory["row"]))
        rule_id = ("fa-bound" if _ATTENTION.search(f"{name} {ktype or ''}") else "cube-bound" if placement in CUBE
                   else "vector-bound" if placement in VECTOR else None)
        rule = facts.advisor.get(rule_id) if rule_id else None
        if rule_id is None or rule is None:
            continue
        for threshold in rule.get("thresholds", ()):
            value = _weighted(kernels, threshold["column"])
            if value is not None and value > threshold["above"]:
                found.append(_check(rule_id, "info", op_name, label,
                                    f"{threshold['column']} = {value:.2f} > {threshold['above']:g} "
                                    f"(advisor: {rule['condition']})", None, f"{rule['row']} ({rule['path']})"))
    return found


def dynamic_shape_check(kernels: Sequence[Kernel], facts: ProfilerFacts) -> list[Check]:
    """The advisor's rule: an export whose OP State column names no static-shape kernel."""
    states = [k.op_state.lower() for k in kernels if k.op_state]
    rule = facts.advisor.get("dynamic-shape")
    if not states or rule is None or any("static" in s for s in states):
        return []
    return [_check("dynamic-shape", "warning", None, None,
                   f"all {len(states)} kernels with an OP State are dynamic-shape kernels",
                   "torch_npu.npu.set_compile_mode(jit_compile=False) (advisor: " + rule["condition"] + ")",
                   f"{rule['row']} ({rule['path']})")]


def all_checks(matches: Sequence[Match], operators: Sequence[Mapping[str, Any]], columns: frozenset[str],
               product: str, facts: ProfilerFacts) -> list[Check]:
    """Every check, placement problems first."""
    kernels = [m.kernel for m in matches]
    return [*placement_checks(matches, operators, product, facts), *dynamic_shape_check(kernels, facts),
            *pmu_checks(matches, operators, columns, facts), *shape_checks(matches, operators, facts)]
