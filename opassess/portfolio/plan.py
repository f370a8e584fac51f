"""Shared-effort planning: an operator ported for one model is not paid again for the next.

The first model that needs an operator type (in a category) pays its full person-days; a later model pays only for
the signatures (attributes, shapes, dtypes) the ports so far do not cover, costed with estimate.effort as the
difference between the operator with and without them. Models are ordered greedily by marginal effort, cheapest
next, so a lead sees which models come almost for free once others are ported; custom-dev operators are ranked by
how many models need them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..ci.snapshot import OpState, SignatureState, Snapshot
from ..records import ClassifiedOp, Effort, Operator, OpScore, Signature
from ..vocabulary import Category
from .records import ModelPlan, OpDemand

if TYPE_CHECKING:
    from ..score.weights import Weights

_ZERO = Effort(0.0, 0.0, 0.0)


def _scored(template: OpState, signatures: Sequence[SignatureState]) -> OpScore:
    """A scored operator rebuilt from a report with just `signatures`, carrying exactly what estimate.effort reads
    (category, composite, signature categories, call count, known); the other fields are left empty."""
    operator = Operator(key=template.op, kind=template.kind, count=sum(s.count for s in signatures), modules=(),
                        signatures=tuple(Signature(attrs={}, input_shapes=(), input_dtypes=(), count=s.count,
                                                   modules=(), sources=()) for s in signatures),
                        aten=(), sources=(), nodes=())
    classified = ClassifiedOp(operator=operator, category=Category(template.category or Category.DIRECT),
                              signature_categories=tuple(s.category or template.category or Category.DIRECT
                                                         for s in signatures),
                              reasons=(), replacement=None, cann_op=None, known=template.known is not False,
                              aten_support={})
    return OpScore(classified=classified, functional=0.0, performance=0.0, ecosystem=0.0,
                   composite=template.composite or 0.0, subscores=())


@dataclass
class _Port:
    """An operator type (in one category) ported for the plan so far: the report entry that paid for it first and
    every signature covered since."""

    template: OpState
    signatures: dict[str, SignatureState]


def _marginal(snapshot: Snapshot, ported: Mapping[tuple[str, str | None], _Port], weights: Weights
              ) -> tuple[Effort, list[str], list[str], list[str], dict[tuple[str, str | None], Effort]]:
    """What `snapshot` adds to the ports so far: its effort, its new / extended / shared operator types, and the
    cost per operator key."""
    from ..score.estimate import effort

    total, new, extended, shared, costs = _ZERO, [], [], [], {}
    for op in snapshot.operators:
        if op.person_days is None:  # not estimated: nothing to share or pay
            continue
        key = (op.op, op.category)
        port = ported.get(key)
        if port is None:
            cost = op.person_days
            new.append(op.op)
        else:
            fresh = [s for s in op.signatures if s.key not in port.signatures]
            if not fresh:
                cost = _ZERO
                shared.append(op.op)
            else:
                # e.g. a param-converted op already ported with 1 signature, this model bringing a 2nd: effort(2
                # signatures) - effort(1 signature) = the extra occurrences' per_occurrence days, below the cap
                # (per_extra_signature is paid only for a different limit, and a report snapshot names none).
                covered = list(port.signatures.values())
                with_fresh, without = effort(_scored(port.template, covered + fresh), weights), \
                    effort(_scored(port.template, covered), weights)
                cost = Effort(with_fresh.low - without.low, with_fresh.likely - without.likely,
                              with_fresh.high - without.high)
                extended.append(op.op)
        costs[key] = cost
        total = total + cost
    return total, new, extended, shared, costs


def plan_portfolio(snapshots: Sequence[tuple[str, str, Snapshot]], weights: Weights
                   ) -> tuple[tuple[ModelPlan, ...], tuple[OpDemand, ...], Effort, Effort]:
    """Order (name, target, snapshot) models by marginal effort, cheapest next, paying each operator once.

    Returns the plan, the custom-dev operators ranked by how many models each unblocks, the standalone total
    (every model alone) and the shared total (sum of marginals).
    Example: A = {Conv2d 1.5, mylib::gelu 12}, B = {Conv2d 1.5, Linear 1.5}, every signature the same: B first
    (3.0 < 13.5), then A adds only mylib::gelu (12.0): shared 15.0 against 16.5 standalone.
    """
    remaining = list(snapshots)
    ported: dict[tuple[str, str | None], _Port] = {}
    paid: dict[str, Effort] = {}
    plan: list[ModelPlan] = []
    cumulative = _ZERO
    while remaining:
        scored = []
        for index, (_name, _target, snapshot) in enumerate(remaining):
            scored.append((_marginal(snapshot, ported, weights), index))
        (marginal, new, extended, shared, costs), index = min(scored, key=lambda item: (item[0][0].likely,
                                                                                           item[1]))
        name, target, snapshot = remaining.pop(index)
        for op in snapshot.operators:
            if op.person_days is None:
                continue
            key = (op.op, op.category)
            port = ported.setdefault(key, _Port(template=op, signatures={}))
            for s in op.signatures:
                port.signatures.setdefault(s.key, s)
            if op.category == Category.CUSTOM_DEV:
                paid[op.op] = paid.get(op.op, _ZERO) + costs.get(key, _ZERO)
        own = model_level(snapshot)
        marginal = marginal + own
        cumulative = cumulative + marginal
        plan.append(ModelPlan(
            name=name, target=target, standalone=_standalone(snapshot) + own, marginal=marginal,
            cumulative=cumulative, new_ops=tuple(new), extended_ops=tuple(extended), shared_ops=tuple(shared),
            custom_dev=tuple(o.op for o in snapshot.operators if o.category == Category.CUSTOM_DEV),
            costs=tuple((op, cost) for (op, _), cost in costs.items() if cost != _ZERO), model_level=own))
    demands = []
    for name in sorted({o for p in plan for o in p.custom_dev}):
        needing = tuple(p.name for p in plan if name in p.custom_dev)
        sole = tuple(p.name for p in plan if p.custom_dev == (name,))
        demands.append(OpDemand(op=name, models=needing, sole_blocker_of=sole, effort=paid.get(name, _ZERO)))
    demands.sort(key=lambda d: (-len(d.models), -len(d.sole_blocker_of), d.effort.likely, d.op))
    standalone = sum((p.standalone for p in plan), _ZERO)
    return tuple(plan), tuple(demands), standalone, cumulative


def _standalone(snapshot: Snapshot) -> Effort:
    return sum((o.person_days for o in snapshot.operators if o.person_days is not None), _ZERO)


def model_level(snapshot: Snapshot) -> Effort:
    """What the report's total holds besides its operators and sites: its model-level activities and decisions
    (each point the total's less the operators', never below 0; 0 for a report without a total)."""
    if snapshot.total is None:
        return _ZERO
    ops, total = _standalone(snapshot), snapshot.total
    low, likely, high = (max(0.0, total.low - ops.low), max(0.0, total.likely - ops.likely),
                         max(0.0, total.high - ops.high))
    return Effort(min(low, likely), likely, max(likely, high))


def bands(plan: Sequence[ModelPlan], snapshots: Sequence[Snapshot], weights: Weights
          ) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """(P10, P50, P90) of the shared total (every cost the plan pays, each model's model-level once) and of the
    standalone total (every model's operators and model-level), each simulated like one model's total."""
    from ..score.estimate import simulate

    shared = [cost for p in plan for _, cost in p.costs] + [p.model_level for p in plan]
    alone = [o.person_days for s in snapshots for o in s.operators if o.person_days is not None]
    alone += [model_level(s) for s in snapshots]
    return simulate(shared, weights), simulate(alone, weights)

