"""The estimate stage's records (score/estimate.py builds them): each operator's effort and risk, the model-level
activities and decisions, the source sites, and the Estimate that totals them."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..records import CostBasis, Effort, OpScore, Risk
from ..source.records import SourceEstimate


@dataclass(frozen=True)
class OpEstimate:
    score: OpScore
    person_days: Effort
    risk: Risk
    pareto: bool  # among the operators that carry 80% of the effort
    # How the operator is costed (opassess/score/cost.py; CostBasis says each): per-operator (its category's range),
    # validation-block (a share of the model's validation block), zero-cost (no work on the device), ...
    cost: CostBasis = CostBasis.PER_OPERATOR
    origin: str = "project"  # "project", or the upstream library its source lines lie in ("transformers", ...)
    # cost "decision": how its own effort was reached (its decisions' checks, its priced changes); "" otherwise
    basis: str = ""
    decisions: tuple[str, ...] = ()  # Decision.name of each decision the operator belongs to


@dataclass(frozen=True)
class Activity:
    """A model-level activity (environment bring-up, validation, accuracy alignment, performance tuning)."""

    name: str
    title: str
    person_days: Effort
    basis: str  # what scaled it: "3 findings x 0.25", "validated once for 12 direct operator types"


@dataclass(frozen=True)
class Decision:
    """Operators sharing one cause and one fix (opassess/score/decisions.py), priced once plus a check each."""

    name: str  # "precision" | "kernel-check"
    title: str  # "precision plan: run in float16 with loss scaling on Atlas training series (...)"
    cause: str  # the one fact behind it
    operators: tuple[str, ...]  # the operator keys it covers (each keeps its verdict and reasons)
    person_days: Effort  # once + the operators' checks
    once: Effort  # the decision's own effort, counted once in the total (the checks are on the operators' lines)
    basis: str  # "1-2-4 once + 8 operator type(s) x 0.02-0.05-0.15 (a check each)"
    plan: tuple[str, ...] = ()  # what to do: dtype on the target, loss scaling, overflow-prone operators
    sites: tuple[str, ...] = ()  # the source sites it covers (SourceEstimate.key), each costing its check
    check: Effort = Effort(0.0, 0.0, 0.0)  # what each covered operator type or site costs ([decisions.*] per_operator)
    members: tuple[int, int] = (0, 0)  # operator types and source sites that pay a check (the basis's counts)


@dataclass(frozen=True)
class Estimate:
    ops: tuple[OpEstimate, ...]  # sorted by likely effort, largest first
    total: Effort
    p50: float
    p90: float
    method: str  # how P50/P90 were computed
    pareto_ops: tuple[str, ...]
    pareto_share_of_types: float  # e.g. 0.2: the Pareto operators are 20% of the operator types
    by_category: Mapping[str, Effort]
    by_module: Mapping[str, Effort]  # every ancestor module gets the sum of its children ("" = whole model)
    risk_matrix: tuple[tuple[tuple[str, ...], ...], ...]  # [likelihood-1][impact-1] -> operator keys
    p10: float = 0.0
    activities: tuple[Activity, ...] = ()  # model-level lines, in the total
    by_origin: Mapping[str, Effort] = field(default_factory=dict)  # "project" / library / "model-level" -> effort
    profile: str = "default"  # the weights profile used
    source: tuple[SourceEstimate, ...] = ()  # the source scan's findings, in the total and the risk grid
    decisions: tuple[Decision, ...] = ()  # model-level decisions: their `once` efforts are in the total
    present: Effort = Effort(0.0, 0.0, 0.0)  # source sites present but not reached by this model: not in the total
