"""Shared-effort planning: an operator ported for one model is not paid again for the next.

Each model's report is cut into pieces of work (plan.pieces: operator types, model-level activities, decisions'
one-off fixes) adding up to its total. The first model that needs a piece pays it in full; a later model pays only
the share the ports so far do not cover: nothing for an operator type with every signature ported, the extension for
new signatures (estimate.effort with and without them), nothing for the environment bring-up on a product already
brought up or a decision already taken; its own validation, accuracy alignment and tuning in full. Models are ordered
greedily by marginal effort, cheapest next, so a lead sees which models come almost for free once others are ported;
custom-dev operators are ranked by how many models need them.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..ci.snapshot import OpState, SignatureState, Snapshot
from ..records import ClassifiedOp, Effort, Operator, OpScore, Signature
from ..score.cost import VALIDATION_BLOCK
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


# Model-level activities done once for the whole portfolio on one product (install CANN and torch_npu, wire up CI);
# the others (validation, accuracy alignment, performance tuning) are work on each model.
SHARED_ACTIVITIES = frozenset({"environment"})


@dataclass(frozen=True)
class Piece:
    """One piece of work a model's report prices: an operator type, a model-level activity or a decision's one-off
    fix. `key` says when two models' pieces are the same work (an operator type and category; an activity done once
    per product; a decision by its name and cause; work that is the model's own)."""

    key: tuple[str, ...]
    own: Effort  # what the model's report puts on it (alone)
    op: OpState | None = None


def pieces(name: str, snapshot: Snapshot) -> list[Piece]:
    """The pieces of work `snapshot` prices, adding up to its total (its operators and sites alone when the report
    lists no activities: then its model-level rest is one piece of its own).

    A validation-block operator's share belongs to the validation line, which is the model's own work (its outputs
    compared), so the operator is a piece of no cost here and the line is priced in full."""
    listed = snapshot.activities is not None
    result = []
    for op in snapshot.operators:
        if op.person_days is None:  # not estimated: nothing to share or pay
            continue
        block = listed and op.cost == VALIDATION_BLOCK
        result.append(Piece(("op", op.op, op.category or ""), _ZERO if block else op.person_days, op))
    rest = model_level(snapshot)
    if listed:
        for activity, days in snapshot.activities or ():
            shared = activity in SHARED_ACTIVITIES
            key = ("activity", activity, snapshot.target or "") if shared else ("model", name, activity)
            result.append(Piece(key, days))
        result += [Piece(("decision", decision, cause), once) for decision, cause, once in snapshot.decisions]
        listed_days = sum((p.own for p in result if p.op is None), _ZERO)
        rest = _less(rest + _block(snapshot), listed_days)
    if rest.high > 0:
        result.append(Piece(("model", name, ""), rest))
    return result


def _block(snapshot: Snapshot) -> Effort:
    return sum((o.person_days for o in snapshot.operators if o.person_days is not None
                and o.cost == VALIDATION_BLOCK), _ZERO)


def _less(a: Effort, b: Effort) -> Effort:
    """a - b point by point, never below 0 (a report's rounding can leave -0.01), kept ordered."""
    low, likely, high = max(0.0, a.low - b.low), max(0.0, a.likely - b.likely), max(0.0, a.high - b.high)
    return Effort(min(low, likely), likely, max(likely, high))


@dataclass
class _Paid:
    """What the plan so far has paid for: operator types with their signatures, and the other pieces' most."""

    ports: dict[tuple[str, ...], _Port]
    most: dict[tuple[str, ...], float]


def share_of(piece: Piece, paid: _Paid, weights: Weights) -> float:
    """The share of `piece` (0..1) a model still pays once the plan so far is ported: 1 for new work, 0 for work
    done, and for an operator type ported before with other signatures the extension over its own likely days.

    The extension is effort(signatures so far + new ones) - effort(signatures so far) (estimate.effort), e.g. a
    param-converted op ported with 1 signature, this model bringing a 2nd: the extra occurrences' per_occurrence
    days (per_extra_signature is paid only for a different limit, and a report snapshot names none); 0.02 of an
    operator priced 4.0 alone is a share of 0.005. A share is never above 1, so what a model adds is never more
    than what it costs alone, and the portfolio never more than its models one by one."""
    from ..score.estimate import effort

    if piece.own.likely <= 0 and piece.own.high <= 0:
        return 0.0
    if piece.op is None:
        before = paid.most.get(piece.key)
        if before is None:
            return 1.0
        return max(0.0, 1.0 - before / piece.own.likely) if piece.own.likely > 0 else 0.0
    port = paid.ports.get(piece.key)
    if port is None:
        return 1.0
    fresh = [s for s in piece.op.signatures if s.key not in port.signatures]
    if not fresh:
        return 0.0
    covered = list(port.signatures.values())
    extension = effort(_scored(port.template, covered + fresh), weights).likely - \
        effort(_scored(port.template, covered), weights).likely
    return min(1.0, max(0.0, extension / piece.own.likely)) if piece.own.likely > 0 else 0.0


def _pay(piece: Piece, paid: _Paid) -> None:
    if piece.op is None:
        paid.most[piece.key] = max(paid.most.get(piece.key, 0.0), piece.own.likely)
        return
    port = paid.ports.setdefault(piece.key, _Port(template=piece.op, signatures={}))
    for s in piece.op.signatures:
        port.signatures.setdefault(s.key, s)


def _scale(e: Effort, share: float) -> Effort:
    return Effort(e.low * share, e.likely * share, e.high * share)


def plan_portfolio(snapshots: Sequence[tuple[str, str, Snapshot]], weights: Weights
                   ) -> tuple[tuple[ModelPlan, ...], tuple[OpDemand, ...], Effort, Effort]:
    """Order (name, target, snapshot) models by marginal effort, cheapest next, paying each piece of work once.

    Returns the plan, the custom-dev operators ranked by how many models each unblocks, the standalone total
    (every model alone) and the shared total (sum of marginals). Each piece a model brings costs it its own
    person-days times share_of (0..1): so marginal <= standalone for every model and shared <= standalone, by
    construction, on all three points.
    Example: A = {Conv2d 1.5, mylib::gelu 12}, B = {Conv2d 1.5, Linear 1.5}, every signature the same: B first
    (3.0 < 13.5), then A adds only mylib::gelu (12.0): shared 15.0 against 16.5 standalone.
    """
    remaining = [(name, target, snapshot, pieces(name, snapshot)) for name, target, snapshot in snapshots]
    paid = _Paid(ports={}, most={})
    spent: dict[str, Effort] = {}
    plan: list[ModelPlan] = []
    cumulative = _ZERO
    while remaining:
        shares = [[share_of(piece, paid, weights) for piece in item[3]] for item in remaining]
        index = min(range(len(remaining)), key=lambda i: (sum(p.own.likely * f for p, f in
                                                              zip(remaining[i][3], shares[i], strict=True)), i))
        name, target, snapshot, work = remaining.pop(index)
        chosen = shares.pop(index)
        new: list[str] = []
        extended: list[str] = []
        shared: list[str] = []
        costs: dict[str, Effort] = {}
        marginal, own_level = _ZERO, _ZERO
        for piece, share in zip(work, chosen, strict=True):
            cost = _scale(piece.own, share)
            marginal = marginal + cost
            if piece.op is None:
                own_level = own_level + cost
            else:
                seen = piece.key in paid.ports
                (new if not seen else shared if share == 0 and not _fresh(piece, paid) else extended).append(
                    piece.op.op)
                costs[piece.op.op] = costs.get(piece.op.op, _ZERO) + cost
                if piece.op.category == Category.CUSTOM_DEV:
                    spent[piece.op.op] = spent.get(piece.op.op, _ZERO) + cost
        for piece in work:
            _pay(piece, paid)
        cumulative = cumulative + marginal
        plan.append(ModelPlan(
            name=name, target=target, standalone=sum((p.own for p in work), _ZERO), marginal=marginal,
            cumulative=cumulative, new_ops=tuple(new), extended_ops=tuple(extended), shared_ops=tuple(shared),
            custom_dev=tuple(o.op for o in snapshot.operators if o.category == Category.CUSTOM_DEV),
            costs=tuple((op, cost) for op, cost in costs.items() if cost != _ZERO), model_level=own_level,
            shares=tuple((p.own, f) for p, f in zip(work, chosen, strict=True) if p.own.high > 0)))
    demands = []
    for name in sorted({o for p in plan for o in p.custom_dev}):
        needing = tuple(p.name for p in plan if name in p.custom_dev)
        sole = tuple(p.name for p in plan if p.custom_dev == (name,))
        demands.append(OpDemand(op=name, models=needing, sole_blocker_of=sole, effort=spent.get(name, _ZERO)))
    demands.sort(key=lambda d: (-len(d.models), -len(d.sole_blocker_of), d.effort.likely, d.op))
    standalone = sum((p.standalone for p in plan), _ZERO)
    return tuple(plan), tuple(demands), standalone, cumulative


def _fresh(piece: Piece, paid: _Paid) -> bool:
    """Whether the operator piece brings a signature the ports so far do not cover."""
    port = paid.ports.get(piece.key)
    return piece.op is not None and port is not None and any(s.key not in port.signatures
                                                             for s in piece.op.signatures)


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


def bands(plan: Sequence[ModelPlan], weights: Weights
          ) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """(P10, P50, P90) of the shared total and of the standalone total, simulated together: each piece of work is
    drawn once from its own range (score.estimate.simulate_shares) and the shared sum takes each draw times the share
    its model pays, so in every sample the shared sum is at most the standalone one, and so is each percentile."""
    from ..score.estimate import simulate_shares

    return simulate_shares([share for p in plan for share in p.shares], weights)
