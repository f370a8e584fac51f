"""The cost model: how each operator is costed (zero-cost, validation block, per operator), the model-level
activities, and where an operator's code lives (the project, or a named upstream library).

Every figure comes from weights.toml (or a profile on top of it); they are assumptions until calibrated.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from ..messages import N_, Text, joined
from ..records import ClassifiedOp, Effort, Finding, Operator, OpScore
from ..source.records import SourceEstimate, is_distributed
from ..vocabulary import PROJECT_KINDS as _OWN_KINDS  # the project's own kernels: never zero-cost, never in the block
from ..vocabulary import Category, CostBasis
from .records import Activity
from .signals import OpSignals
from .weights import ACTIVITY_UNITS, EffortRules, Weights

ZERO_COST, VALIDATION_BLOCK, PER_OPERATOR = CostBasis.ZERO_COST, CostBasis.VALIDATION_BLOCK, CostBasis.PER_OPERATOR
SOURCE_FINDING, DECISION, PRICED_CHANGE = CostBasis.SOURCE_FINDING, CostBasis.DECISION, CostBasis.PRICED_CHANGE
COST_BASES: tuple[str, ...] = tuple(basis.value for basis in CostBasis)

PROJECT = "project"  # the origin of operators whose source lines lie in the project's own code
MODEL_LEVEL = "model-level"  # the by_origin key of the model-level activities
VALIDATION = "validation"  # the activity the validation-block operators share
SITE_PACKAGES = re.compile(r"(?:^|[/\\])(?:site|dist)-packages[/\\]([^/\\]+)")  # also a report's "site-packages/x"
NO_EFFORT = Effort(0.0, 0.0, 0.0)
OPTIMIZER_KIND = "optimizer"  # an operator of a training step's optimizer step, clipping or GradScaler
LOSS_SCALER = "GradScaler"  # in the key of a loss scaler's calls (torch.amp.GradScaler.scale, ...) or its site
OPTIMIZER_SUBJECT = re.compile(r"\boptim(?:izers)?\.")  # a source site of an optimizer (apex.optimizers.FusedAdam)


def cost_basis(op: ClassifiedOp, rules: EffortRules, dispatch_seen: bool) -> CostBasis:
    """ZERO_COST, VALIDATION_BLOCK or PER_OPERATOR for one classified operator.

    Only a direct operator known to the knowledge base, of a user-level kind, with no reason in limit_reasons can
    be zero-cost (every ATen op it dispatched is in zero_cost_aten, or it dispatched none while the capture did
    record ATen ops elsewhere) or in the validation block.
    """
    operator = op.operator
    if op.category != Category.DIRECT or not op.known or operator.kind in _OWN_KINDS:
        return PER_OPERATOR
    if any(reason.code in rules.limit_reasons for reason in op.reasons):
        return PER_OPERATOR
    if rules.zero_cost and dispatch_seen and all(aten in rules.zero_cost_aten for aten in operator.aten):
        return ZERO_COST
    return VALIDATION_BLOCK if rules.block_direct else PER_OPERATOR


def distinct_limits(op: ClassifiedOp) -> int:
    """How many different sets of limits the operator's signatures trip (signatures that trip the same limits
    share one conversion): per-signature reasons of non-direct signatures, told apart by (code, evidence)."""
    trips: dict[int, set[tuple[str, str]]] = {}
    for reason in op.reasons:
        index = reason.signature
        if index is None or index >= len(op.signature_categories):
            continue
        if op.signature_categories[index] != Category.DIRECT:
            trips.setdefault(index, set()).add((reason.code, reason.evidence))
    converted = [i for i, c in enumerate(op.signature_categories) if c != Category.DIRECT]
    if not trips:
        return min(1, len(converted))
    return len({frozenset(trips.get(i, ())) for i in converted})


def operator_effort(score: OpScore, weights: Weights) -> Effort:
    """Person-days for one operator costed on its own (PER_OPERATOR).

    likely = low + composite x (high - low) of the category's range, plus certain extras: per_extra_signature for
    each further set of limits its signatures trip (signatures tripping the same limit need no second conversion),
    per_occurrence for each occurrence beyond the first (capped). Optimistic and pessimistic points spread the
    placed value by the category's optimism and pessimism (wider when the knowledge base does not know the op).
    Example (shipped weights): param-converted, composite 0.25, 3 signatures of which 2 trip different limits, 11
    occurrences: placed = 3 + 0.25 x 2 = 3.5; extras = (2 - 1) x 0.5 + min(1, 10 x 0.02) = 0.7;
    likely 4.2, low 3.5 x 0.8 + 0.7 = 3.5, high 3.5 x 1.6 + 0.7 = 6.3.
    """
    rules = weights.effort
    category = rules.categories[score.classified.category]
    if score.classified.category == Category.PARAM_CONVERTED:  # the work one reason names has its own range
        category = next((rules.by_reason[r.code] for r in score.classified.reasons if r.code in rules.by_reason),
                        category)
    placed = category.low + score.composite * (category.high - category.low)
    extras = max(0, distinct_limits(score.classified) - 1) * rules.per_extra_signature
    extras += min(rules.max_occurrence_days, max(0, score.classified.operator.count - 1) * rules.per_occurrence)
    pessimism = category.pessimism + (0.0 if score.classified.known else rules.unknown_pessimism)
    return Effort(low=placed * (1 - category.optimism) + extras, likely=placed + extras,
                  high=placed * (1 + pessimism) + extras)


def activity_units(scores: Sequence[OpScore], bases: Mapping[str, str], signals: Mapping[str, OpSignals],
                   findings: Sequence[Finding], weights: Weights, decided: Mapping[str, tuple[str, ...]] | None = None,
                   sites: Sequence[SourceEstimate] = (), parallel_dimensions: int = 0) -> dict[str, int]:
    """What the model shows, counted per activity unit (weights.ACTIVITY_UNITS). Operators a decision or a priced
    change covers (`decided`: key -> decision names) are not types at risk of their own (the decision carries the
    accuracy check), and a mixed-precision finding on a precision decision's operators is that decision's work.
    A training step's optimizer operators (its optimizer step, clipping, GradScaler calls) and loss scalers are
    counted; `sites` (the source scan's) count their reached distributed sites (distributed_site), and
    `parallel_dimensions` the dimensions --parallel splits over more than one device (tp=8,dp=4: 2)."""
    decided = decided or {}
    threshold = weights.risk.likelihood.dtype_threshold
    dtype_rules = weights.signals.dtype_support
    dtypes = {d for s in signals.values() for d in s.dtypes if d}
    at_risk_dtypes = [d for d in dtypes if dtype_rules.difficulty.get(d, dtype_rules.unlisted) >= threshold]
    at_risk_types = [
        s for s in scores
        if s.classified.operator.key not in decided and (
            s.classified.category != Category.DIRECT
            or any(sub.criterion == "dtype_support" and sub.value >= threshold for sub in s.subscores))
    ]
    no_work = weights.signals.fusion.no_work_findings
    reached = [item for item in sites if item.reached and item.covered_by is None]
    findings = [f for f in findings if not (f.kind == "mixed-precision" and f.ops
                                            and all("precision" in decided.get(key, ()) for key in f.ops))]
    return {
        "direct_type": sum(1 for basis in bases.values() if basis == VALIDATION_BLOCK),
        "dtype_at_risk": len(at_risk_dtypes),
        "type_at_risk": len(at_risk_types),
        "finding": sum(1 for f in findings if f.kind not in no_work),
        "optimizer": sum(1 for s in scores if s.classified.operator.kind == OPTIMIZER_KIND)
        + sum(1 for item in reached if OPTIMIZER_SUBJECT.search(item.finding.subject)),
        "loss_scaling": min(1, sum(1 for s in scores if s.classified.operator.kind == OPTIMIZER_KIND
                                   and LOSS_SCALER in s.classified.operator.key)
                            + sum(1 for item in reached if LOSS_SCALER in item.finding.subject)),
        "distributed_site": sum(1 for item in reached if is_distributed(item.finding)),
        "parallel_dimension": parallel_dimensions,
    }


def activities(units: Mapping[str, int], weights: Weights, step: str = "forward") -> tuple[Activity, ...]:
    """The model-level lines: each rule's three points plus min(max_extra, sum of per-unit days x units), added to
    all three; a rule that comes to nothing (all zero, as in the classic profile), one for another step (a training
    step's loss-curve alignment on a forward pass) or one needing a unit the model does not show is left out.
    Example (default profile): performance 0.25/0.5/1.5 with 3 findings x 0.25 = 0.75 -> 1.0/1.25/2.25."""
    lines = []
    for rule in weights.activities:
        if (rule.step and rule.step != step) or (rule.needs and not any(units.get(u, 0) for u in rule.needs)):
            continue
        terms = [(unit, per, units.get(unit, 0)) for unit, per in rule.per.items() if per and units.get(unit, 0)]
        raw = sum(per * count for _, per, count in terms)
        extra = min(rule.max_extra, raw)
        if rule.high <= 0 and extra <= 0:
            continue
        basis = joined((Text(N_("%(n)s %(unit)s x %(per)s"), {"n": count, "unit": Text(ACTIVITY_UNITS[unit]),
                                                              "per": f"{per:g}"}) for unit, per, count in terms), ", ")
        if raw > extra:
            basis = Text(N_("%(basis)s (capped at %(cap)s)"), {"basis": basis, "cap": f"{rule.max_extra:g}"})
        once = Text(N_("%(low)s-%(high)s once per model"), {"low": f"{rule.low:g}", "high": f"{rule.high:g}"})
        said = Text(N_("%(once)s + %(basis)s"), {"once": once, "basis": basis}) if basis else once
        if rule.note:
            said = Text(N_("%(basis)s; %(note)s"), {"basis": said, "note": Text(rule.note)})
        lines.append(Activity(rule.name, rule.title,
                              Effort(rule.low + extra, rule.likely + extra, rule.high + extra), said))
    return tuple(lines)


def origin_of(source: str | None) -> str:
    """PROJECT, or the upstream package a 'file:line' lies in ('.../site-packages/transformers/...' ->
    'transformers')."""
    if not source:
        return PROJECT
    match = SITE_PACKAGES.search(source)
    if not match:
        return PROJECT
    name = match.group(1).split(":")[0]
    return name[:-3] if name.endswith(".py") else name


def origin_shares(operator: Operator) -> dict[str, float]:
    """Origin -> share of the operator's occurrences whose source lies there (sums to 1)."""
    counts = Counter(origin_of(node.source) for node in operator.nodes) or Counter(
        origin_of(source) for source in operator.sources) or Counter({PROJECT: 1})
    total = sum(counts.values())
    return {origin: count / total for origin, count in counts.items()}


def main_origin(operator: Operator) -> str:
    """The origin of most of the operator's occurrences (the project on a tie)."""
    shares = origin_shares(operator)
    return max(shares, key=lambda origin: (shares[origin], origin == PROJECT))
