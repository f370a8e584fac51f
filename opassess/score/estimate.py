"""Estimate stage: person-day ranges per unique operator, the model total with P50/P90, the 20/80 view,
a roll-up per module, and each operator's cell on the 5x5 likelihood-by-impact risk grid."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np

from ..messages import N_, Text, joined
from ..records import ClassifiedOp, Effort, Finding, Inventory, OpScore, Risk
from ..source.records import SourceEstimate
from ..vocabulary import CATEGORIES, CostBasis
from .cost import (
    DECISION,
    MODEL_LEVEL,
    NO_EFFORT,
    PER_OPERATOR,
    PRICED_CHANGE,
    PROJECT,
    SOURCE_FINDING,
    VALIDATION,
    VALIDATION_BLOCK,
    ZERO_COST,
    activities,
    activity_units,
    cost_basis,
    main_origin,
    operator_effort,
    origin_shares,
)
from .decisions import Cover, cover, decide, decide_sites, shared_causes
from .records import Estimate, OpEstimate
from .signals import ModelContext, OpSignals, measure_all
from .weights import RISK_LEVELS, Weights, level


def estimate(scores: Sequence[OpScore], inventory: Inventory, weights: Weights,
             findings: Sequence[Finding] = (), *, signals: Mapping[str, OpSignals] | None = None,
             source: Sequence[SourceEstimate] = (), model_level: bool = True, parallel_dimensions: int = 0
             ) -> Estimate:
    """Turn scored operators into per-operator and whole-model effort, the 20/80 view and the risk grid.

    Each operator is costed by its basis (cost.cost_basis): zero-cost operators 0, validation-block operators an
    equal share of the validation activity, the rest their own range (cost.operator_effort). The model-level
    activities (cost.activities) are lines of their own. total = per-operator efforts + activities (the block
    shares add up to the validation line, so they are counted once).
    `findings` are the ones the scores were computed with: a dynamic-shape finding raises an operator's likelihood
    and performance findings scale the performance-tuning line. `signals` (signals.measure_all, the ones the
    scores read) may be passed in when the caller already measured them.
    `source` (score.source_cost.estimate_sources) are the source scan's sites: their person-days join the total, the
    simulation, by_category and the project's origin, their cells the risk grid (notes, costing 0, stay off it);
    operators a site links cost nothing here (basis source-finding), so one call is counted once. Without a model
    (`opassess source`), model_level=False leaves out the model-level activities. `parallel_dimensions`: how many
    dimensions --parallel splits over more than one device (each a part of the distributed bring-up).
    """
    if signals is None:
        signals = measure_all([s.classified for s in scores], ModelContext.of(inventory, weights), weights, findings)
    shared = shared_causes(scores, source, weights, inventory.model.dtype)
    bases, covers = _bases(scores, inventory, weights, source, shared)
    source, site_members, linked = decide_sites(source, weights, shared)
    decisions = decide(scores, inventory, findings, weights, covers, site_members, linked)
    decided = {key: item.decisions for key, item in covers.items()}
    decided.update({op: (name,) for name, ops in linked.items() for op in ops})
    lines = activities(activity_units(scores, bases, signals, findings, weights, decided, source, parallel_dimensions),
                       weights, inventory.capture.step) if model_level else ()
    validation = next((line.person_days for line in lines if line.name == VALIDATION), NO_EFFORT)
    in_block = sum(1 for basis in bases.values() if basis == VALIDATION_BLOCK)
    block_share = Effort(validation.low / in_block, validation.likely / in_block,
                         validation.high / in_block) if in_block else NO_EFFORT

    def cost(score: OpScore) -> Effort:
        basis = bases[score.classified.operator.key]
        if basis == PER_OPERATOR:
            return operator_effort(score, weights)
        if basis in (DECISION, PRICED_CHANGE):
            return covers[score.classified.operator.key].person_days
        return block_share if basis == VALIDATION_BLOCK else NO_EFFORT

    ranked = sorted(
        ((score, cost(score), risk(score, signals[score.classified.operator.key], weights)) for score in scores),
        key=lambda item: (-item[1].likely, item[0].classified.operator.key),
    )
    own = [e for s, e, _ in ranked if bases[s.classified.operator.key] in (PER_OPERATOR, DECISION, PRICED_CHANGE)]
    # the model-level lines drawn on their own (the validation line is drawn as the block when operators share it)
    # and each decision's one-off effort
    activity_efforts = [line.person_days for line in lines if not (line.name == VALIDATION and in_block)]
    activity_efforts += [d.once for d in decisions]
    block = [validation] if in_block else []
    sites = [item.person_days for item in source if item.covered_by is None and item.reached]
    present = sum((item.person_days for item in source if item.covered_by is None and not item.reached), NO_EFFORT)
    total = sum([*own, *activity_efforts, *block, *sites], NO_EFFORT)
    pareto = _pareto(ranked, sum((e for _, e, _ in ranked), NO_EFFORT), weights.estimate.pareto_share)
    ops = tuple(OpEstimate(score=s, person_days=e, risk=r, pareto=s.classified.operator.key in pareto,
                           cost=bases[s.classified.operator.key], origin=main_origin(s.classified.operator),
                           basis=covers[k].basis if k in covers else "",
                           decisions=covers[k].decisions if k in covers else ())
                for s, e, r in ranked for k in [s.classified.operator.key])
    p10, p50, p90 = simulate([*own, *activity_efforts, *block], weights, [e for e in sites if e.high > 0])
    return Estimate(
        ops=ops,
        total=total,
        p50=p50,
        p90=p90,
        p10=p10,
        method=_method_text(weights, len(decisions), len(sites)),
        pareto_ops=tuple(pareto),
        pareto_share_of_types=len(pareto) / len(ops) if ops else 0.0,
        by_category=MappingProxyType(_by_category(ops, [item for item in source if item.reached])),
        by_module=MappingProxyType(_by_module(ops)),
        risk_matrix=_risk_matrix(ops, source),
        activities=lines,
        by_origin=MappingProxyType(_by_origin(ops, activity_efforts, sites)),
        profile=weights.profile,
        source=tuple(source),
        decisions=decisions,
        present=present,
    )


def _bases(scores: Sequence[OpScore], inventory: Inventory, weights: Weights, source: Sequence[SourceEstimate],
           shared: frozenset[str] = frozenset()) -> tuple[dict[str, CostBasis], dict[str, Cover]]:
    """Each operator's cost basis, and the decision covers of those costed by a decision or a priced change.

    A per-operator operator a decision covers is costed by the decision (or its priced change); a view only its
    kernel check covers stays zero-cost; an operator a source site links costs nothing here (source-finding)."""
    dispatch_seen = any(node.aten for node in inventory.capture.nodes)
    bases = {s.classified.operator.key: cost_basis(s.classified, weights.effort, dispatch_seen) for s in scores}
    covers = {s.classified.operator.key: c for s in scores
              if bases[s.classified.operator.key] == PER_OPERATOR
              for c in [cover(s.classified, inventory.model.dtype, weights, shared)] if c is not None}
    for key, item in covers.items():  # a view only its kernel check covers stays zero-cost
        lone = item.decisions == ("kernel-check",) and not item.changes
        zero = lone and weights.effort.zero_cost and dispatch_seen and all(
            a in weights.effort.zero_cost_aten for a in by_key(scores)[key].operator.aten)
        bases[key] = ZERO_COST if zero else DECISION if item.decisions else PRICED_CHANGE
    covers = {key: item for key, item in covers.items() if bases[key] != ZERO_COST}
    bases.update({key: SOURCE_FINDING for item in source for key in item.operators if key in bases})
    covers = {key: item for key, item in covers.items() if bases[key] in (DECISION, PRICED_CHANGE)}
    return bases, covers


def _risk_matrix(ops: Sequence[OpEstimate], source: Sequence[SourceEstimate]
                 ) -> tuple[tuple[tuple[str, ...], ...], ...]:
    """The 5x5 grid of operator keys (and source sites) by likelihood (row) and impact (column), 1-based cells."""
    grid: list[list[list[str]]] = [[[] for _ in range(RISK_LEVELS)] for _ in range(RISK_LEVELS)]
    for op in ops:
        if op.cost != SOURCE_FINDING:  # a library call a source site carries sits on the grid as that site
            grid[op.risk.likelihood - 1][op.risk.impact - 1].append(op.score.classified.operator.key)
    for item in source:
        if not item.finding.effort_free and item.covered_by is None and not item.finding.built_by and item.reached:
            grid[item.risk.likelihood - 1][item.risk.impact - 1].append(item.key)
    return tuple(tuple(tuple(cell) for cell in row) for row in grid)


def _method_text(weights: Weights, decisions: int, sites: int) -> str:
    """How the P10/P50/P90 were drawn, for the report's method note."""
    rules = weights.estimate
    parts = [Text(N_("PERT-beta Monte Carlo: %(samples)s samples, seed %(seed)s, lambda %(lam)s; each per-operator "
                     "range and each model-level activity drawn independently (correlated overruns would widen P90), "
                     "the validation block drawn once; every sample lies between the sums of the lows and highs, so "
                     "low <= P10 <= P50 <= P90 <= high holds by construction (no clamping); likely is the sum of the "
                     "most likely values and sits below P50 when ranges are skewed to the right; by_module splits "
                     "each operator's effort evenly across its occurrences' module paths"),
                  {"samples": rules.samples, "seed": rules.seed, "lam": f"{rules.pert_lambda:g}"})]
    if decisions:
        parts.append(Text(N_("%(n)s decision(s) drawn once each, their operators' checks drawn like operators"),
                          {"n": decisions}))
    if sites:
        parts.append(Text(N_("%(n)s source site(s) drawn like operators (30 or more with one range: their sum as one "
                             "normal)"), {"n": sites}))
    parts.append(Text(N_("profile %(profile)s: figures are assumptions until calibrated"),
                      {"profile": repr(weights.profile)}))
    return joined(parts)


def by_key(scores: Sequence[OpScore]) -> dict[str, ClassifiedOp]:
    """Classified operators by key."""
    return {s.classified.operator.key: s.classified for s in scores}


def effort(score: OpScore, weights: Weights) -> Effort:
    """Person-days for one scored operator on its own (cost.operator_effort): reusable when a portfolio pays for an
    operator once."""
    return operator_effort(score, weights)


def risk(score: OpScore, signals: OpSignals, weights: Weights) -> Risk:
    """Place one operator on the 5x5 grid and give it stars.

    likelihood = category base + one step per signal (unknown to the knowledge base, a dtype limit, dynamic
    shapes (a data-dependent ATen op or a dynamic-shape finding), AI CPU placement, a kernel version gap);
    impact = 1 + one level per share-of-compute threshold reached + bumps for many occurrences and a place on the
    main path; both clamped to 1..5. Stars start at the category's practice-table value, +1 when
    likelihood x impact >= raise_at, -1 when <= lower_at.
    Example (shipped weights): custom-dev (3) unknown (+1) with no kernel (+1) = 5; 20% of compute (levels at
    2%, 5%, 15% reached: 1 + 3 = 4) on the main path (+1) = 5; 5 x 5 = 25 >= 15 -> 5 + 1 stars, clamped to 5.
    """
    rules = weights.risk
    op = score.classified
    values = {sub.criterion: sub.value for sub in score.subscores}
    likelihood = rules.likelihood.base[op.category]
    dynamic = [*signals.data_dependent,
               *dict.fromkeys(Text(N_("dynamic-shape finding")) for f in signals.findings
                              if f.kind == "dynamic-shape")]
    signals_seen: list[str] = [Text(N_("%(category)s: base likelihood %(n)s"),
                                    {"category": op.category, "n": likelihood})]
    steps = [
        (not op.known, rules.likelihood.unknown, Text(N_("not in the knowledge base"))),
        (values.get("dtype_support", 0.0) >= rules.likelihood.dtype_threshold, rules.likelihood.dtype_limit,
         Text(N_("dtype limit (dtype_support %(value)s)"), {"value": f"{values.get('dtype_support', 0.0):.2g}"})),
        (bool(dynamic), rules.likelihood.dynamic_shapes,
         Text(N_("dynamic shapes (%(ops)s)"), {"ops": joined(dynamic, ", ")})),
        ((bool(signals.missing_kernels) and not op.replacement) or bool(signals.ai_cpu_reasons),
         rules.likelihood.ai_cpu,
         Text(N_("runs on AI CPU or the host (%(ops)s)"), {"ops": ", ".join(signals.missing_kernels) or "classifier"})),
        (values.get("version_compat", 0.0) >= rules.likelihood.version_threshold, rules.likelihood.version_gap,
         Text(N_("kernel version gap (version_compat %(value)s)"),
              {"value": f"{values.get('version_compat', 0.0):.2g}"})),
    ]
    for hit, step, text in steps:
        if hit and step:
            likelihood += step
            signals_seen.append(Text(N_("+%(step)s %(signal)s"), {"step": step, "signal": text}))
    likelihood = level(likelihood)

    share = signals.compute_share if signals.time_share is None else signals.time_share
    reached = sum(1 for threshold in rules.impact.share_levels if share >= threshold)
    impact = 1 + reached
    if signals.time_share is not None:  # the time model's share of the step (opassess/perf)
        signals_seen.append(Text(N_("carries %(share)s of the %(measure)s (an estimate): impact %(impact)s"),
                                 {"share": f"{share:.1%}", "measure": signals.time_measure, "impact": impact}))
    else:
        signals_seen.append(Text(N_("%(share)s of compute (%(measure)s): impact %(impact)s"),
                                 {"share": f"{share:.1%}", "measure": signals.compute_measure, "impact": impact}))
    if signals.occurrences >= rules.impact.many_occurrences and rules.impact.occurrence_bump:
        impact += rules.impact.occurrence_bump
        signals_seen.append(Text(N_("+%(step)s %(n)s occurrences"),
                                 {"step": rules.impact.occurrence_bump, "n": signals.occurrences}))
    if signals.on_main_path and rules.impact.main_path_bump:
        impact += rules.impact.main_path_bump
        signals_seen.append(Text(N_("+%(step)s on the main path"), {"step": rules.impact.main_path_bump}))
    elif signals.on_main_path is None:
        signals_seen.append(Text(N_("main path not measured (the capture has no edges)")))
    impact = level(impact)

    return rules.cell(op.category, likelihood, impact, signals_seen)


def _pareto(ranked: list, total: Effort, share: float) -> list[str]:
    """The fewest operators, largest first, whose likely effort reaches `share` of the total."""
    chosen: list[str] = []
    running = 0.0
    for score, op_effort, _ in ranked:
        if total.likely <= 0 or running >= share * total.likely - 1e-9:
            break
        chosen.append(score.classified.operator.key)
        running += op_effort.likely
    return chosen


SUM_AS_NORMAL = 30  # source sites sharing one range, this many or more: their sum is drawn as one normal


def _pert(e: Effort, rules) -> tuple[float, float]:
    width = e.high - e.low
    return (1 + rules.pert_lambda * (e.likely - e.low) / width, 1 + rules.pert_lambda * (e.high - e.likely) / width)


def simulate(efforts: list[Effort], weights: Weights, sites: Sequence[Effort] = ()) -> tuple[float, float, float]:
    """P10, P50 and P90 of the total: each operator drawn from its PERT-beta distribution, summed, with a fixed seed.

    PERT-beta on [low, high] with mode likely: alpha = 1 + lambda (likely - low) / (high - low),
    beta = 1 + lambda (high - likely) / (high - low); e.g. 1, 2, 4 with lambda 4: alpha 2.33, beta 3.67.
    Source sites are drawn after the rest, the same way, except that n >= SUM_AS_NORMAL sites with the same range
    (a big tree repeats a few kinds of edit thousands of times) are drawn as one normal with n times the PERT mean
    and variance (the sum's central-limit form: mean low + width a / (a + b), variance width^2 a b / ((a + b)^2
    (a + b + 1))), clipped to [n low, n high]; 14,000 sites then cost a few draws, not 14,000.
    """
    if not efforts and not sites:
        return 0.0, 0.0, 0.0
    rules = weights.estimate
    rng = np.random.default_rng(rules.seed)
    totals = np.zeros(rules.samples)
    groups = Counter(sites)
    singles = [e for e, n in groups.items() if n < SUM_AS_NORMAL for _ in range(n)]
    for e in [*efforts, *singles]:
        width = e.high - e.low
        if width <= 1e-12:
            totals += e.likely
            continue
        alpha, beta = _pert(e, rules)
        totals += e.low + width * rng.beta(alpha, beta, rules.samples)
    for e, n in groups.items():
        if n < SUM_AS_NORMAL:
            continue
        width = e.high - e.low
        if width <= 1e-12:
            totals += n * e.likely
            continue
        a, b = _pert(e, rules)
        mean = e.low + width * a / (a + b)
        variance = width * width * a * b / ((a + b) ** 2 * (a + b + 1))
        totals += np.clip(rng.normal(n * mean, (n * variance) ** 0.5, rules.samples), n * e.low, n * e.high)
    p10, p50, p90 = np.percentile(totals, [10, 50, 90])
    return float(p10), float(p50), float(p90)


def simulate_shares(shares: Sequence[tuple[Effort, float]], weights: Weights
                    ) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """(P10, P50, P90) of sum(share x piece) and of sum(piece) over (piece, share) pairs, from the same draws.

    Each piece is drawn once (PERT-beta as in simulate; n >= SUM_AS_NORMAL equal pairs as one normal sum) and added
    whole to the second sum and times its share (0..1) to the first, so in every sample the first sum is at most the
    second, and so is each percentile: a portfolio's shared P50 is never above its models' one by one.
    """
    if not shares:
        return (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    rules = weights.estimate
    rng = np.random.default_rng(rules.seed)
    whole, part = np.zeros(rules.samples), np.zeros(rules.samples)
    for (e, share), n in Counter(shares).items():
        width = e.high - e.low
        if width <= 1e-12:
            drawn: np.ndarray | float = n * e.likely
        elif n < SUM_AS_NORMAL:
            alpha, beta = _pert(e, rules)
            drawn = n * e.low + width * sum(rng.beta(alpha, beta, rules.samples) for _ in range(n))
        else:
            a, b = _pert(e, rules)
            mean, variance = e.low + width * a / (a + b), width * width * a * b / ((a + b) ** 2 * (a + b + 1))
            drawn = np.clip(rng.normal(n * mean, (n * variance) ** 0.5, rules.samples), n * e.low, n * e.high)
        whole += drawn
        part += share * drawn
    low, mid, high = np.percentile(part, [10, 50, 90])
    alone = np.percentile(whole, [10, 50, 90])
    return (float(low), float(mid), float(high)), (float(alone[0]), float(alone[1]), float(alone[2]))


def _by_category(ops: Sequence[OpEstimate], source: Sequence[SourceEstimate] = ()) -> dict[str, Effort]:
    totals = {category: Effort(0.0, 0.0, 0.0) for category in CATEGORIES}
    for op in ops:
        totals[op.score.classified.category] = totals[op.score.classified.category] + op.person_days
    for item in source:
        category = str(item.finding.category)
        totals[category] = totals[category] + item.person_days
    return totals


def _by_origin(ops: Sequence[OpEstimate], model_level: Sequence[Effort], sites: Sequence[Effort] = ()
               ) -> dict[str, Effort]:
    """Effort by where the code lives: each operator's effort split by its occurrences' origins (the project, or the
    upstream library), and the model-level activities under MODEL_LEVEL (`model_level`: their efforts, the validation
    line left out when the block shares already carry it); source sites are the project's. The values add up to the
    total."""
    totals: dict[str, Effort] = {PROJECT: sum(sites, NO_EFFORT)}
    for op in ops:
        e = op.person_days
        for origin, part in origin_shares(op.score.classified.operator).items():
            totals[origin] = totals.get(origin, NO_EFFORT) + Effort(e.low * part, e.likely * part, e.high * part)
    if model_level:
        totals[MODEL_LEVEL] = sum(model_level, NO_EFFORT)
    return totals


def _by_module(ops: Sequence[OpEstimate]) -> dict[str, Effort]:
    """Each operator's effort split evenly across its occurrences; each share added to its module and every ancestor.

    Example: Linear, 2 person-days, 4 occurrences in "a.q", "a.k", "a.v", "b": 0.5 each; "a" gets 1.5, "b" 0.5,
    "" (the whole model) 2.
    """
    totals: dict[str, Effort] = {"": Effort(0.0, 0.0, 0.0)}
    for op in ops:
        operator = op.score.classified.operator
        paths = [node.module_path for node in operator.nodes] or list(operator.modules) or [""]
        e = op.person_days
        part = Effort(e.low / len(paths), e.likely / len(paths), e.high / len(paths))
        for path in paths:
            for ancestor in _ancestors(path):
                totals[ancestor] = totals.get(ancestor, Effort(0.0, 0.0, 0.0)) + part
    return totals


def _ancestors(path: str) -> list[str]:
    """'a.b.c' -> ['a.b.c', 'a.b', 'a', '']."""
    parts = path.split(".") if path else []
    return [".".join(parts[:i]) for i in range(len(parts), -1, -1)]
