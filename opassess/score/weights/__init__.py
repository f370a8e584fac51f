"""The scoring model (weights.toml) as frozen records: dimension and criterion weights, signal parameters, effort,
risk, calibration. Read and validated by `opassess.score.weights.load.load_weights`."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ...messages import N_, Text
from ...records import Risk
from .decisions import DecisionRules

DIMENSIONS = ("functional", "performance", "ecosystem")
CRITERIA: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "functional": ("shape_match", "dtype_support", "special_attrs"),
        "performance": ("fusion", "memory_layout", "pipeline"),
        "ecosystem": ("custom_op_maintenance", "version_compat", "multi_card"),
    }
)
SUM_TOLERANCE = 1e-6
RISK_LEVELS = 5  # the grid is 5 x 5


# ----------------------------------------------------------------------------- records


@dataclass(frozen=True)
class ShapeMatchRules:
    native_rank: int
    rank_limit: int
    data_dependent: float
    data_dependent_ops: tuple[str, ...]
    reasons: Mapping[str, float]  # classifier reason code -> difficulty


@dataclass(frozen=True)
class DtypeRules:
    difficulty: Mapping[str, float]
    unlisted: float
    mixed_precision_finding: float
    reasons: Mapping[str, float]
    findings: Mapping[str, float]  # a finding kind of the dtype_support criterion -> its price (else the one above)


@dataclass(frozen=True)
class AttrRules:
    per_limit_hit: float
    per_extra_combo: float
    per_attr_to_implement: float
    replacement_mapping: float
    reason_codes: tuple[str, ...]


@dataclass(frozen=True)
class FusionRules:
    adopt_replacement: float
    no_api_extra: float
    unlisted_finding: float
    findings: Mapping[str, float]
    no_work_findings: tuple[str, ...]


@dataclass(frozen=True)
class LayoutRules:
    layout_churn_finding: float
    layout_ops: tuple[str, ...]


@dataclass(frozen=True)
class PipelineRules:
    no_kernel: float
    dynamic: float
    dynamic_finding: float
    per_extra_shape: float
    reasons: Mapping[str, float]
    time_at_risk: float = 0.25  # the time model: at-risk time of this share of the estimated step scores 1


@dataclass(frozen=True)
class ComputeRules:
    ridge_flops_per_byte: float


@dataclass(frozen=True)
class MaintenanceRules:
    vendor_api: float
    unknown: float
    reasons: Mapping[str, float]


@dataclass(frozen=True)
class VersionRules:
    oldest: tuple[int, int]
    newest: tuple[int, int]
    deprecated: float
    no_version: float
    reason_codes: tuple[str, ...]


@dataclass(frozen=True)
class MultiCardRules:
    collective: float
    shard_share: float
    comm_namespaces: tuple[str, ...]


@dataclass(frozen=True)
class SignalRules:
    """Parameters of the formulas that turn measured signals into sub-scores (opassess/score/criteria.py)."""

    shape_match: ShapeMatchRules
    dtype_support: DtypeRules
    special_attrs: AttrRules
    fusion: FusionRules
    memory_layout: LayoutRules
    pipeline: PipelineRules
    compute: ComputeRules
    custom_op_maintenance: MaintenanceRules
    version_compat: VersionRules
    multi_card: MultiCardRules


@dataclass(frozen=True)
class CategoryEffort:
    """A practice-table range for one category, and how far its three-point estimate spreads."""

    low: float
    high: float
    optimism: float
    pessimism: float


@dataclass(frozen=True)
class EffortRules:
    per_extra_signature: float
    per_occurrence: float
    max_occurrence_days: float
    unknown_pessimism: float
    categories: Mapping[str, CategoryEffort]
    zero_cost: bool = False  # views and operators that dispatch nothing cost nothing
    block_direct: bool = False  # direct operators with a kernel and no tripped limit share the validation block
    limit_reasons: tuple[str, ...] = ()  # reason codes that take a direct operator out of the block
    zero_cost_aten: frozenset[str] = frozenset()  # ATen ops that do no work on the device
    # reason code -> its own range for a param-converted operator whose work that reason names ("binding")
    by_reason: Mapping[str, CategoryEffort] = field(default_factory=lambda: MappingProxyType({}))


# What an activity's per-unit days count (opassess/score/cost.py counts them) -> how a cost basis names the unit.
ACTIVITY_UNITS: Mapping[str, str] = MappingProxyType({
    "direct_type": N_("direct operator type(s)"),
    "dtype_at_risk": N_("dtype(s) at risk"),
    "type_at_risk": N_("operator type(s) at risk"),
    "finding": N_("performance finding(s)"),
    "optimizer": N_("optimizer step(s) and GradScaler call(s)"),
    "loss_scaling": N_("loss scaler(s)"),
    "distributed_site": N_("distributed site(s)"),
    "parallel_dimension": N_("parallel dimension(s) of --parallel"),
})
ACTIVITY_STEPS = ("", "forward", "train")  # an activity's `step`: every capture, a forward pass only, a training step


@dataclass(frozen=True)
class ActivityRule:
    """A model-level activity: three points plus per-unit days (added to all three), the extra capped."""

    name: str  # "environment", "validation", "accuracy", "performance"
    title: str
    low: float
    likely: float
    high: float
    per: Mapping[str, float]  # unit (ACTIVITY_UNITS) -> person-days per unit
    max_extra: float
    step: str = ""  # ACTIVITY_STEPS: only for a forward pass ("forward") or a training step ("train"); "" always
    needs: tuple[str, ...] = ()  # units (ACTIVITY_UNITS) of which the model must show one for it to apply (): always
    note: str = ""  # what the activity does, said after its basis (a loss-curve alignment's protocol)


@dataclass(frozen=True)
class EstimateRules:
    pareto_share: float
    samples: int
    seed: int
    pert_lambda: float


@dataclass(frozen=True)
class LikelihoodRules:
    base: Mapping[str, int]  # category -> base level
    unknown: int
    dtype_limit: int
    dynamic_shapes: int
    ai_cpu: int
    version_gap: int
    ai_cpu_reason_codes: tuple[str, ...]
    dtype_threshold: float
    version_threshold: float


@dataclass(frozen=True)
class ImpactRules:
    share_levels: tuple[float, ...]
    many_occurrences: int
    occurrence_bump: int
    main_path_bump: int


@dataclass(frozen=True)
class StarRules:
    base: Mapping[str, int]
    raise_at: int
    lower_at: int


@dataclass(frozen=True)
class RiskRules:
    likelihood: LikelihoodRules
    impact: ImpactRules
    stars: StarRules

    def cell(self, category: str, likelihood: int, impact: int, signals: list[str]) -> Risk:
        """The Risk at (likelihood, impact), both clamped to the grid: the category's stars, one more when
        likelihood x impact reaches raise_at, one fewer at or below lower_at (said in `signals`, appended to)."""
        likelihood, impact = level(likelihood), level(impact)
        stars = self.stars.base[category]
        product = likelihood * impact
        if product >= self.stars.raise_at:
            stars += 1
            signals.append(Text(N_("stars +1: likelihood x impact %(product)s >= %(at)s"),
                                {"product": product, "at": self.stars.raise_at}))
        elif product <= self.stars.lower_at:
            stars -= 1
            signals.append(Text(N_("stars -1: likelihood x impact %(product)s <= %(at)s"),
                                {"product": product, "at": self.stars.lower_at}))
        return Risk(likelihood=likelihood, impact=impact, stars=level(stars), signals=tuple(signals))


def level(value: int) -> int:
    """A likelihood, impact or star count clamped to 1..RISK_LEVELS."""
    return max(1, min(RISK_LEVELS, value))


@dataclass(frozen=True)
class CalibrationRules:
    min_rows: int
    spread_quantiles: tuple[float, float]


@dataclass(frozen=True)
class SourceRules:
    """[source]: person-days per site the source scan finds, and where such a site sits on the risk grid.

    Each effort is a (low, likely, high) triple; kernels (`kernel_kinds`) add per kernel and per 100 lines of their
    size on top of their category's triple."""

    effort: Mapping[str, tuple[float, float, float]]  # category -> per site
    per_kernel: Mapping[str, tuple[float, float, float]]  # category -> per kernel of a sized kernel site
    per_100_lines: Mapping[str, tuple[float, float, float]]  # category -> per 100 lines of it
    kernel_kinds: tuple[str, ...]
    impact: int  # a site's impact level (its share of compute is not measured)
    kernel_impact: int  # a kernel's impact level: it is on the hot path when it exists at all
    low_confidence: int  # likelihood steps added when the route is matched by name only (confidence low)
    # the same edit again (same subject, kind and category, not a sized kernel): this fraction of the first site's
    # effort; 1.0 prices every site in full
    repeat: float = 1.0


@dataclass(frozen=True)
class Weights:
    """The whole scoring model, validated; `source` names the file(s) it came from, `profile` the shipped profile."""

    source: str
    dimensions: Mapping[str, float]
    criteria: Mapping[str, Mapping[str, float]]
    signals: SignalRules
    effort: EffortRules
    estimate: EstimateRules
    risk: RiskRules
    calibration: CalibrationRules
    activities: tuple[ActivityRule, ...] = ()
    profile: str = "default"
    source_rules: SourceRules | None = None  # [source]; None only in weights built in code without a [source] table
    decisions: DecisionRules | None = None  # [decisions] and [changes]; None: every operator priced on its own
    # [graph_mode]: person-days (low, likely, high) per graph break kind, to make the chosen graph back-end work
    graph_mode: Mapping[str, tuple[float, float, float]] | None = None  # None: weights built in code without one
