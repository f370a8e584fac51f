"""Score stage: turn each classified operator's measured signals into sub-scores and the 30/50/20 composite.

Every sub-score is a difficulty from 0 (no work) to 1 (hardest), computed from signals measured on the traced
model (opassess/score/signals.py) with the numbers in weights.toml. A criterion with several signals takes the largest
(the hardest problem decides; several small ones do not add up to a large one), and SubScore.signal names the
signal that decided, followed by the others that were non-zero.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..findings.patterns import shipped_patterns
from ..messages import N_, Text, joined
from ..records import ClassifiedOp, Finding, Inventory, OpScore, SubScore
from ..vocabulary import PROJECT_KINDS, Category
from .signals import ModelContext, OpSignals, measure_all
from .weights import CRITERIA, DIMENSIONS, Weights

Candidate = tuple[float, str]  # (value, what measured it)


def score(classified: Sequence[ClassifiedOp], inventory: Inventory, weights: Weights,
          findings: Sequence[Finding] = (), *, signals: Mapping[str, OpSignals] | None = None
          ) -> tuple[OpScore, ...]:
    """Score every classified operator on the functional / performance / ecosystem model of weights.toml.

    `signals` (signals.measure_all) may be passed in when the caller already measured them; the estimate reads
    the same ones."""
    if signals is None:
        signals = measure_all(classified, ModelContext.of(inventory, weights), weights, findings)
    return tuple(score_op(op, signals[op.operator.key], weights) for op in classified)


def score_op(op: ClassifiedOp, signals: OpSignals, weights: Weights) -> OpScore:
    """Score one operator from its measured signals (a reusable unit: portfolios score an op once)."""
    subscores = []
    dimension_values = {}
    for dimension in DIMENSIONS:
        total = 0.0
        for criterion in CRITERIA[dimension]:
            value, signal = _decide(_FORMULAS[criterion](op, signals, weights))
            weight = weights.criteria[dimension][criterion]
            subscores.append(SubScore(dimension, criterion, value, weight, signal))
            total += weight * value
        dimension_values[dimension] = total
    composite = sum(weights.dimensions[d] * dimension_values[d] for d in DIMENSIONS)
    return OpScore(classified=op, functional=dimension_values["functional"],
                   performance=dimension_values["performance"], ecosystem=dimension_values["ecosystem"],
                   composite=composite, subscores=tuple(subscores))


def _decide(candidates: list[Candidate]) -> Candidate:
    """The largest candidate decides; the other non-zero ones are listed after it."""
    ordered = sorted(candidates, key=lambda c: -c[0])
    value, text = ordered[0]
    others = list(dict.fromkeys(t for v, t in ordered[1:] if v > 0 and t != text))  # the same reason once
    if not others:
        return min(1.0, value), text
    return min(1.0, value), Text(N_("%(signal)s (also: %(others)s)"), {"signal": text, "others": joined(others)})


def _clamp(value: float) -> float:
    return max(0.0, min(1.0, value))


def _fmt(value: float) -> str:
    return f"{value:.3g}"


def _reason_candidates(signals: OpSignals, table: Mapping[str, float]) -> list[Candidate]:
    """Classifier reasons whose code the criterion's `reasons` table names, each with its difficulty."""
    return [(table[r.code], Text(N_("classifier %(code)s: %(reason)s: %(value)s"),
                                 {"code": r.code, "reason": r.message, "value": _fmt(table[r.code])}))
            for r in signals.reasons if r.code in table]


def _finding_candidates(signals: OpSignals, criterion: str, value: float,
                        by_kind: Mapping[str, float] | None = None) -> list[Candidate]:
    """One candidate per finding of `criterion` naming the op, priced `value` or its kind's price in `by_kind`."""
    priced = [(f, (by_kind or {}).get(f.kind, value)) for f in signals.findings
              if shipped_patterns().criterion_of(f.kind) == criterion]
    return [(price, Text(N_("%(kind)s finding: %(title)s: %(value)s"),
                         {"kind": f.kind, "title": f.message or f.title, "value": _fmt(price)})) for f, price in priced]


# -------------------------------------------------------------------------- functional


def _shape_match(op: ClassifiedOp, s: OpSignals, w: Weights) -> list[Candidate]:
    rules = w.signals.shape_match
    # Rank beyond the native 4-D formats, linear up to the descriptor limit: rank 5 -> (5 - 4) / (8 - 4) = 0.25.
    excess = _clamp((s.max_rank - rules.native_rank) / (rules.rank_limit - rules.native_rank))
    out: list[Candidate] = [(excess, Text(N_("max input rank %(rank)s vs native %(native)s, limit %(limit)s: "
                                             "%(value)s"), {"rank": s.max_rank, "native": rules.native_rank,
                                                            "limit": rules.rank_limit, "value": _fmt(excess)}))]
    if s.data_dependent:
        out.append((rules.data_dependent, Text(N_("data-dependent output shape (%(ops)s): %(value)s"),
                                               {"ops": ", ".join(s.data_dependent),
                                                "value": _fmt(rules.data_dependent)})))
    return out + _reason_candidates(s, rules.reasons)


def _dtype_support(op: ClassifiedOp, s: OpSignals, w: Weights) -> list[Candidate]:
    rules = w.signals.dtype_support
    out: list[Candidate] = []
    for dtype in s.dtypes:
        listed = dtype in rules.difficulty
        value = rules.difficulty[dtype] if listed else rules.unlisted
        out.append((value, Text(N_("dtype %(dtype)s: %(value)s") if listed else
                                N_("dtype %(dtype)s (not in the table): %(value)s"),
                                {"dtype": dtype, "value": _fmt(value)})))
    if not out:
        out.append((0.0, Text(N_("no tensor dtype seen: 0"))))
    out += _reason_candidates(s, rules.reasons)
    out += _finding_candidates(s, "dtype_support", rules.mixed_precision_finding, rules.findings)
    return out


def _special_attrs(op: ClassifiedOp, s: OpSignals, w: Weights) -> list[Candidate]:
    rules = w.signals.special_attrs
    # Limits hit by the worst signature (the same limit repeated over signatures is counted by combinations below).
    per_signature: dict[int | None, int] = {}
    for reason in s.limit_reasons:
        per_signature[reason.signature] = per_signature.get(reason.signature, 0) + 1
    hits = max(per_signature.values(), default=0)
    value = _clamp(hits * rules.per_limit_hit)
    detail = joined(dict.fromkeys(r.message for r in s.limit_reasons))
    values = {"hits": hits, "per": _fmt(rules.per_limit_hit), "value": _fmt(value), "detail": detail}
    out: list[Candidate] = [(value, Text(N_("%(hits)s attribute limit(s) hit by one signature x %(per)s = %(value)s "
                                            "[%(detail)s]") if detail else
                                         N_("%(hits)s attribute limit(s) hit by one signature x %(per)s = %(value)s"),
                                         values))]
    if s.attr_combos > 1:  # each further combination hitting a limit: its own mapping and test
        combos = _clamp((s.attr_combos - 1) * rules.per_extra_combo)
        out.append((combos, Text(N_("%(n)s attribute combinations hit a limit: (%(n)s - 1) x %(per)s = %(value)s"),
                                 {"n": s.attr_combos, "per": _fmt(rules.per_extra_combo), "value": _fmt(combos)})))
    if _needs_kernel(op, s):
        to_write = _clamp(len(s.attr_names) * rules.per_attr_to_implement)
        out.append((to_write, Text(N_("no NPU kernel: %(n)s attribute(s) to implement x %(per)s = %(value)s"),
                                   {"n": len(s.attr_names), "per": _fmt(rules.per_attr_to_implement),
                                    "value": _fmt(to_write)})))
    # A required replacement (an optional one, on a direct op, is performance work).
    if op.replacement and op.category != Category.DIRECT:
        out.append((rules.replacement_mapping, Text(N_("attributes to map onto %(api)s: %(value)s"),
                                                    {"api": op.replacement,
                                                     "value": _fmt(rules.replacement_mapping)})))
    return out


# ------------------------------------------------------------------------- performance


def _fusion(op: ClassifiedOp, s: OpSignals, w: Weights) -> list[Candidate]:
    rules = w.signals.fusion
    total = 0.0
    parts: list[str] = []
    for finding in s.findings:
        if shipped_patterns().criterion_of(finding.kind) != "fusion" or finding.kind in rules.no_work_findings:
            continue
        value = rules.findings.get(finding.kind, rules.unlisted_finding)
        if not finding.npu_api:  # None or "": no fused NPU API
            value += rules.no_api_extra
        total += value
        parts.append(Text(N_("%(kind)s (%(api)s) %(value)s"), {
            "kind": finding.kind, "api": finding.npu_api or Text(N_("no fused NPU API")), "value": _fmt(value)}))
    if parts:
        # Findings add up (each is a rewrite to make), saturating at 1: attention 0.6 + rmsnorm 0.4 = 1.0.
        return [(_clamp(total), Text(N_("%(n)s fusion finding(s): %(parts)s = %(value)s"),
                                     {"n": len(parts), "parts": joined(parts, " + "), "value": _fmt(_clamp(total))}))]
    if op.replacement:
        return [(rules.adopt_replacement, Text(N_("no fusion finding; replacement %(api)s to adopt: %(value)s"),
                                               {"api": op.replacement, "value": _fmt(rules.adopt_replacement)}))]
    return [(0.0, Text(N_("no fusion finding and no replacement names this op: 0")))]


def _memory_layout(op: ClassifiedOp, s: OpSignals, w: Weights) -> list[Candidate]:
    rules = w.signals.memory_layout
    if s.aten_calls:
        share = len(s.layout_calls) / s.aten_calls
        names = ", ".join(sorted(set(s.layout_calls)))
        out: list[Candidate] = [(share, Text(N_("%(n)s/%(total)s ATen calls move memory (%(ops)s): %(value)s")
                                             if names else N_("%(n)s/%(total)s ATen calls move memory: %(value)s"),
                                             {"n": len(s.layout_calls), "total": s.aten_calls, "ops": names,
                                              "value": _fmt(share)}))]
    else:
        out = [(0.0, Text(N_("no ATen calls recorded: 0")))]
    out += _finding_candidates(s, "memory_layout", rules.layout_churn_finding)
    return out


def _pipeline(op: ClassifiedOp, s: OpSignals, w: Weights) -> list[Candidate]:
    rules = w.signals.pipeline
    out: list[Candidate] = []
    if s.aten_ops:
        if op.replacement and s.missing_kernels:
            out.append((0.0, Text(N_("%(n)s ATen op(s) without NPU kernel, replaced by %(api)s on the NPU: 0"),
                                  {"n": len(s.missing_kernels), "api": op.replacement})))
        else:
            share = len(s.missing_kernels) / len(s.aten_ops)
            names = ", ".join(s.missing_kernels)
            out.append((share, Text(N_("%(n)s/%(total)s ATen ops without NPU kernel (%(ops)s) run on AI CPU or the "
                                       "host: %(value)s") if names else
                                    N_("%(n)s/%(total)s ATen ops without NPU kernel (all on AI Core): %(value)s"),
                                    {"n": len(s.missing_kernels), "total": len(s.aten_ops), "ops": names,
                                     "value": _fmt(share)})))
    elif _needs_kernel(op, s):
        out.append((rules.no_kernel, Text(N_("%(kind)s op with no NPU kernel evidence: %(value)s"),
                                          {"kind": op.operator.kind, "value": _fmt(rules.no_kernel)})))
    else:
        out.append((0.0, Text(N_("no ATen op to place: 0"))))
    out += _reason_candidates(s, rules.reasons)
    if s.data_dependent:
        out.append((rules.dynamic, Text(N_("dynamic shapes from %(ops)s: %(value)s"),
                                        {"ops": ", ".join(s.data_dependent), "value": _fmt(rules.dynamic)})))
    shapes = _clamp((s.input_shapes - 1) * rules.per_extra_shape)
    out.append((shapes, Text(N_("%(n)s distinct input shape(s): (%(n)s - 1) x %(per)s = %(value)s"),
                             {"n": s.input_shapes, "per": _fmt(rules.per_extra_shape), "value": _fmt(shapes)})))
    out += _finding_candidates(s, "pipeline", rules.dynamic_finding)
    if s.at_risk_us > 0:
        value = _clamp(s.at_risk_share / rules.time_at_risk)
        out.append((value, Text(N_("%(us)s us at risk = %(share)s of the estimated step (time model, an estimate) / "
                                   "%(per)s = %(value)s"),
                                {"us": f"{s.at_risk_us:.1f}", "share": f"{s.at_risk_share:.1%}",
                                 "per": _fmt(rules.time_at_risk), "value": _fmt(value)})))
    return out


# --------------------------------------------------------------------------- ecosystem


def _needs_kernel(op: ClassifiedOp, s: OpSignals) -> bool:
    """Nothing on the NPU runs it: an ATen op without kernel, or a custom op with no kernel evidence at all."""
    if op.replacement:
        return False
    return bool(s.missing_kernels) or (not s.aten_ops and (op.operator.kind in PROJECT_KINDS or not op.known))


def _custom_op_maintenance(op: ClassifiedOp, s: OpSignals, w: Weights) -> list[Candidate]:
    rules = w.signals.custom_op_maintenance
    out: list[Candidate] = []
    if op.replacement:
        out.append((rules.vendor_api, Text(N_("replacement %(api)s: a vendor API to keep in step: %(value)s"),
                                           {"api": op.replacement, "value": _fmt(rules.vendor_api)})))
    elif s.aten_ops:
        share = len(s.missing_kernels) / len(s.aten_ops)
        out.append((share, Text(N_("%(n)s/%(total)s ATen ops need an in-house kernel: %(value)s"),
                                {"n": len(s.missing_kernels), "total": len(s.aten_ops), "value": _fmt(share)})))
    out += _reason_candidates(s, rules.reasons)
    if not op.known:
        out.append((rules.unknown, Text(N_("not in the knowledge base: %(value)s"), {"value": _fmt(rules.unknown)})))
    if not out:
        out.append((0.0, Text(N_("no ATen op, nothing to maintain: 0"))))
    return out


def _version_compat(op: ClassifiedOp, s: OpSignals, w: Weights) -> list[Candidate]:
    rules = w.signals.version_compat
    out: list[Candidate] = []
    if s.versions is not None:
        have, span = s.versions
        value = 1 - have / span
        out.append((value, Text(N_("kernels in %(have)s/%(span)s torch_npu releases (%(evidence)s): 1 - "
                                   "%(have)s/%(span)s = %(value)s"),
                                {"have": have, "span": span, "evidence": s.version_evidence, "value": _fmt(value)})))
    if _needs_kernel(op, s):
        out.append((1.0, Text(N_("no NPU kernel in any release: 1"))))
    elif s.versions is None:
        out.append((rules.no_version, Text(N_("no version limit in the evidence: %(value)s"),
                                           {"value": _fmt(rules.no_version)})))
    for reason in s.deprecated:
        out.append((rules.deprecated, Text(N_("deprecated (%(evidence)s): %(value)s"),
                                           {"evidence": reason.evidence, "value": _fmt(rules.deprecated)})))
    return out


def _multi_card(op: ClassifiedOp, s: OpSignals, w: Weights) -> list[Candidate]:
    rules = w.signals.multi_card
    # Share of compute against the share that saturates: 12% / 25% = 0.48.
    value = _clamp(s.compute_share / rules.shard_share)
    out: list[Candidate] = [(value, Text(N_("%(share)s of model compute (%(measure)s) / %(saturates)s: %(value)s"),
                                         {"share": f"{s.compute_share:.1%}", "measure": s.compute_measure,
                                          "saturates": f"{rules.shard_share:.0%}", "value": _fmt(value)}))]
    if s.collectives:
        out.append((rules.collective, Text(N_("collective (%(ops)s) on HCCL: %(value)s"),
                                           {"ops": ", ".join(s.collectives), "value": _fmt(rules.collective)})))
    return out


_FORMULAS: dict[str, Callable[[ClassifiedOp, OpSignals, Weights], list[Candidate]]] = {
    "shape_match": _shape_match,
    "dtype_support": _dtype_support,
    "special_attrs": _special_attrs,
    "fusion": _fusion,
    "memory_layout": _memory_layout,
    "pipeline": _pipeline,
    "custom_op_maintenance": _custom_op_maintenance,
    "version_compat": _version_compat,
    "multi_card": _multi_card,
}
