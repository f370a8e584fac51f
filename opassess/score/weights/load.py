"""Read and validate weights.toml (the shipped file, then the user's file key by key) into `weights.Weights`.

Every table is read through the strict reader (`opassess.datafile.TomlTable`): typed getters, ranges checked
here, `finish()` on every table, so a typo is one ConfigError line naming the file and the dotted key.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ...datafile import TomlTable, merge_layer, read_toml
from ...errors import ConfigError
from ...findings.patterns import shipped_patterns, unknown_kinds
from ...reasons import REASONS, unknown_codes
from ...resources import shipped_path
from ...vocabulary import CATEGORIES
from . import (
    ACTIVITY_STEPS,
    ACTIVITY_UNITS,
    CRITERIA,
    DIMENSIONS,
    RISK_LEVELS,
    SUM_TOLERANCE,
    ActivityRule,
    AttrRules,
    CalibrationRules,
    CategoryEffort,
    ComputeRules,
    DtypeRules,
    EffortRules,
    EstimateRules,
    FusionRules,
    ImpactRules,
    LayoutRules,
    LikelihoodRules,
    MaintenanceRules,
    MultiCardRules,
    PipelineRules,
    RiskRules,
    ShapeMatchRules,
    SignalRules,
    SourceRules,
    StarRules,
    VersionRules,
    Weights,
)
from .decisions import read_decisions

# Bounds on what a weights file may say, so every sum stays finite and a scan's time bounded: a person-day figure
# above 10,000 (about forty working years) is a typo, as is a pessimism factor above 100; a million Monte Carlo
# samples is fifty times the shipped 20,000 (1e9 would run for hours and fill memory).
MAX_DAYS = 10_000.0
MAX_FACTOR = 100.0
MAX_SAMPLES = 1_000_000
DEFAULT_PROFILE = "default"  # weights.toml itself; the other profiles are overlays in profiles/NAME.toml


def profile_names() -> tuple[str, ...]:
    """The shipped profiles: 'default' (weights.toml) and every profiles/NAME.toml."""
    folder = shipped_path("profiles")
    return (DEFAULT_PROFILE, *sorted(p.stem for p in folder.glob("*.toml"))) if folder.is_dir() else (DEFAULT_PROFILE,)


def profile_path(name: str) -> Path | None:
    """The overlay file of a shipped profile (None for the default); ConfigError naming the known ones."""
    if name == DEFAULT_PROFILE:
        return None
    names = profile_names()
    if name not in names:
        raise ConfigError(f"unknown weights profile {name!r}: expected one of {', '.join(names)}")
    return shipped_path("profiles") / f"{name}.toml"


def load_weights(path: Path | None = None, profile: str | None = None) -> Weights:
    """Read the shipped weights.toml, overlay the shipped profile `profile` (if not the default), then `path` (if
    given) key by key: profile first, the user's file on top. Validate and return the records."""
    shipped = shipped_path("weights.toml")
    layers = [(shipped, read_toml(shipped, "weights file"))]
    overlay = profile_path(profile or DEFAULT_PROFILE)
    if overlay is not None:
        layers.append((overlay, read_toml(overlay, "weights profile")))
    if path is not None and Path(path).resolve() != shipped.resolve():
        layers.append((Path(path), read_toml(Path(path), "weights file")))
    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for file, data in layers:
        merge_layer(merged, data, str(file), origins)
    source = " < ".join(str(file) for file, _ in layers)
    return replace(_build(TomlTable(merged, origins, "", str(layers[-1][0])), source),
                   profile=profile or DEFAULT_PROFILE)


def _check_sum(table: TomlTable, owner: str, names: tuple[str, ...], values: Mapping[str, float]) -> None:
    total = sum(values.values())
    if abs(total - 1.0) > SUM_TOLERANCE:
        terms = " + ".join(f"{name} {values[name]:g}" for name in names)
        raise table.error(owner, f"weights sum to {total:.6g} ({terms}), expected 1 (within {SUM_TOLERANCE:g})")


def _level(table: TomlTable, key: str) -> int:
    """A likelihood, impact or star level: 1..RISK_LEVELS."""
    value = table.integer(key)
    if not 1 <= value <= RISK_LEVELS:
        raise table.error(key, f"expected a level from 1 to {RISK_LEVELS}, got {value}")
    return value


def _unit(table: TomlTable, key: str) -> float:
    """A number that is a difficulty or a share: 0..1."""
    value = table.number(key)
    if value > 1:
        raise table.error(key, f"expected a value from 0 to 1, got {value:g}")
    return value


def _unit_table(table: TomlTable, key: str) -> Mapping[str, float]:
    """An open table (any key: a dtype, a reason code, a finding kind) of values from 0 to 1."""
    values = table.number_table(key)
    for name, value in values.items():
        if value > 1:
            raise table.table(key).error(name, f"expected a value from 0 to 1, got {value:g}")
    return values


def _codes(table: TomlTable, key: str) -> tuple[str, ...]:
    """A list of reason codes, each one registered (opassess/reasons.py): a mistyped code would silently stop
    counting, so it is refused with the file and the key."""
    codes = table.strings(key)
    unknown = unknown_codes(codes)
    if unknown:
        raise table.error(key, f"unknown reason code {unknown[0]!r} (`opassess explain CODE` and docs/reasons.md "
                               f"list the {len(REASONS)} codes)")
    return codes


def _finding_kinds(table: TomlTable, key: str, kinds: tuple[str, ...] | Mapping[str, float]) -> None:
    """Every finding kind named is one the pattern book declares (patterns.toml [kinds]): a mistyped or unknown kind
    would silently be priced as an unlisted one, so it is refused with the file and the key."""
    unknown = unknown_kinds(kinds)
    if unknown:
        where = table.table(key) if isinstance(kinds, Mapping) else table
        raise where.error(unknown[0] if isinstance(kinds, Mapping) else key, f"unknown finding kind {unknown[0]!r} "
                          f"(patterns.toml [kinds] declares {', '.join(shipped_patterns().kinds)})")


def _reason_table(table: TomlTable, key: str) -> Mapping[str, float]:
    """A table of reason code -> value from 0 to 1, every key a registered reason code."""
    values = _unit_table(table, key)
    unknown = unknown_codes(values)
    if unknown:
        raise table.table(key).error(unknown[0], f"unknown reason code {unknown[0]!r} (`opassess explain CODE` and "
                                                 f"docs/reasons.md list the {len(REASONS)} codes)")
    return values


def _version(table: TomlTable, key: str) -> tuple[int, int]:
    text = table.string(key)
    parts = text.split(".")
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        raise table.error(key, f"expected a torch release as 'MAJOR.MINOR' (e.g. '2.1'), got {text!r}")
    return int(parts[0]), int(parts[1])


# ------------------------------------------------------------------------- building


def _build(root: TomlTable, source: str) -> Weights:
    dimensions = {name: root.number(name) for name in DIMENSIONS}
    total = sum(dimensions.values())
    if abs(total - 1.0) > SUM_TOLERANCE:
        # Name the user's file when it set one of the three, else the shipped one.
        files = [root.file_of(name) for name in DIMENSIONS]
        file = root.default_file if root.default_file in files else files[0]
        terms = " + ".join(f"{name} {dimensions[name]:g}" for name in DIMENSIONS)
        raise ConfigError(
            f"{file}: keys 'functional', 'performance', 'ecosystem': dimension weights sum to "
            f"{total:.6g} ({terms}), expected 1 (within {SUM_TOLERANCE:g})"
        )

    criteria_table = root.table("criteria")
    criteria: dict[str, Mapping[str, float]] = {}
    for dimension in DIMENSIONS:
        table = criteria_table.table(dimension)
        values = {name: table.number(name) for name in CRITERIA[dimension]}
        table.finish()
        _check_sum(criteria_table, dimension, CRITERIA[dimension], values)
        criteria[dimension] = MappingProxyType(values)
    criteria_table.finish()

    weights = Weights(
        source=source,
        dimensions=MappingProxyType(dimensions),
        criteria=MappingProxyType(criteria),
        signals=_signals(root.table("signals")),
        effort=_effort(root.table("effort")),
        estimate=_estimate(root.table("estimate")),
        risk=_risk(root.table("risk")),
        calibration=_calibration(root.table("calibration")),
        activities=_activities(root.table("activities")),
        source_rules=_source(root.table("source")),
        decisions=read_decisions(root.table("decisions"), root.table("changes"), _triple),
        graph_mode=_graph_mode(root.table("graph_mode")),
    )
    root.finish()
    return weights


def _signals(table: TomlTable) -> SignalRules:
    t = table.table("shape_match")
    shape = ShapeMatchRules(t.integer("native_rank"), t.integer("rank_limit"), _unit(t, "data_dependent"),
                            t.strings("data_dependent_ops"), _reason_table(t, "reasons"))
    if shape.rank_limit <= shape.native_rank:
        raise t.error("rank_limit", f"must be greater than native_rank ({shape.native_rank}), got {shape.rank_limit}")
    t.finish()

    t = table.table("dtype_support")
    dtype = DtypeRules(_unit_table(t, "difficulty"), _unit(t, "unlisted"), _unit(t, "mixed_precision_finding"),
                       _reason_table(t, "reasons"), _unit_table(t, "findings"))
    _finding_kinds(t, "findings", dtype.findings)
    t.finish()

    t = table.table("special_attrs")
    attrs = AttrRules(_unit(t, "per_limit_hit"), _unit(t, "per_extra_combo"), _unit(t, "per_attr_to_implement"),
                      _unit(t, "replacement_mapping"), _codes(t, "reason_codes"))
    t.finish()

    t = table.table("fusion")
    fusion = FusionRules(_unit(t, "adopt_replacement"), _unit(t, "no_api_extra"), _unit(t, "unlisted_finding"),
                         _unit_table(t, "findings"), t.strings("no_work_findings"))
    _finding_kinds(t, "findings", fusion.findings)
    _finding_kinds(t, "no_work_findings", fusion.no_work_findings)
    t.finish()

    t = table.table("memory_layout")
    layout = LayoutRules(_unit(t, "layout_churn_finding"), t.strings("layout_ops"))
    t.finish()

    t = table.table("pipeline")
    pipeline = PipelineRules(_unit(t, "no_kernel"), _unit(t, "dynamic"), _unit(t, "dynamic_finding"),
                             _unit(t, "per_extra_shape"), _reason_table(t, "reasons"), _unit(t, "time_at_risk"))
    if pipeline.time_at_risk <= 0:
        raise t.error("time_at_risk", "must be above 0")
    t.finish()

    t = table.table("compute")
    compute = ComputeRules(t.number("ridge_flops_per_byte"))
    if compute.ridge_flops_per_byte == 0:
        raise t.error("ridge_flops_per_byte", "must be greater than 0")
    t.finish()

    t = table.table("custom_op_maintenance")
    maintenance = MaintenanceRules(_unit(t, "vendor_api"), _unit(t, "unknown"), _reason_table(t, "reasons"))
    t.finish()

    t = table.table("version_compat")
    version = VersionRules(_version(t, "oldest"), _version(t, "newest"), _unit(t, "deprecated"),
                           _unit(t, "no_version"), _codes(t, "reason_codes"))
    if version.newest < version.oldest:
        raise t.error("newest", f"release {version.newest} is older than oldest {version.oldest}")
    t.finish()

    t = table.table("multi_card")
    multi = MultiCardRules(_unit(t, "collective"), _unit(t, "shard_share"), t.strings("comm_namespaces"))
    if multi.shard_share == 0:
        raise t.error("shard_share", "must be greater than 0 (the share of compute that saturates the score)")
    t.finish()

    table.finish()
    return SignalRules(shape, dtype, attrs, fusion, layout, pipeline, compute, maintenance, version, multi)


def _days(table: TomlTable, key: str, default: Any = None) -> float:
    """A person-day figure, at most MAX_DAYS: a larger one is a typo, and 1e308 would overflow the sums to inf."""
    if default is None:
        return table.number(key, maximum=MAX_DAYS)
    return table.number(key, default, maximum=MAX_DAYS)


def _range(t: TomlTable) -> CategoryEffort:
    effort = CategoryEffort(_days(t, "low"), _days(t, "high"), _unit(t, "optimism"),
                            t.number("pessimism", maximum=MAX_FACTOR))
    if effort.low > effort.high:
        raise t.error("low", f"low {effort.low:g} is greater than high {effort.high:g}")
    t.finish()
    return effort


def _effort(table: TomlTable) -> EffortRules:
    categories = {category: _range(table.table(category)) for category in CATEGORIES}
    by_reason: dict[str, CategoryEffort] = {}
    if "reasons" in table:  # a reason code whose work has its own range (binding: an op-plugin registration)
        reasons = table.table("reasons")
        unknown = unknown_codes(reasons.keys())
        if unknown:
            raise reasons.error(unknown[0], "not a registered reason code (docs/reasons.md lists them)")
        by_reason = {code: _range(reasons.table(code)) for code in reasons.keys()}
        reasons.finish()
    rules = EffortRules(_days(table, "per_extra_signature"), _days(table, "per_occurrence"),
                        _days(table, "max_occurrence_days"), table.number("unknown_pessimism", maximum=MAX_FACTOR),
                        MappingProxyType(categories), zero_cost=table.boolean("zero_cost"),
                        block_direct=table.boolean("block_direct"), limit_reasons=_codes(table, "limit_reasons"),
                        zero_cost_aten=frozenset(table.strings("zero_cost_aten")),
                        by_reason=MappingProxyType(by_reason))
    table.finish()
    return rules


def _estimate(table: TomlTable) -> EstimateRules:
    share = table.number("pareto_share")
    if not 0 < share <= 1:
        raise table.error("pareto_share", f"expected a share above 0 and at most 1, got {share:g}")
    rules = EstimateRules(share, table.integer("samples"), table.integer("seed"), table.number("pert_lambda"))
    if not 1 <= rules.samples <= MAX_SAMPLES:
        raise table.error("samples", f"expected 1 to {MAX_SAMPLES} samples, got {rules.samples}")
    table.finish()
    return rules


def _risk(table: TomlTable) -> RiskRules:
    t = table.table("likelihood")
    likelihood = LikelihoodRules(
        base=MappingProxyType({category: _level(t, category) for category in CATEGORIES}),
        unknown=t.integer("unknown"),
        dtype_limit=t.integer("dtype_limit"),
        dynamic_shapes=t.integer("dynamic_shapes"),
        ai_cpu=t.integer("ai_cpu"),
        version_gap=t.integer("version_gap"),
        ai_cpu_reason_codes=_codes(t, "ai_cpu_reason_codes"),
        dtype_threshold=_unit(t, "dtype_threshold"),
        version_threshold=_unit(t, "version_threshold"),
    )
    t.finish()

    t = table.table("impact")
    levels = t.numbers("share_levels")
    if len(levels) != RISK_LEVELS - 1:
        raise t.error("share_levels",
                      f"expected {RISK_LEVELS - 1} thresholds (for {RISK_LEVELS} levels), got {len(levels)}")
    if list(levels) != sorted(levels) or any(level > 1 for level in levels):
        raise t.error("share_levels", f"expected ascending shares from 0 to 1, got {list(levels)}")
    impact = ImpactRules(levels, t.integer("many_occurrences"), t.integer("occurrence_bump"),
                         t.integer("main_path_bump"))
    t.finish()

    t = table.table("stars")
    stars = StarRules(MappingProxyType({category: _level(t, category) for category in CATEGORIES}),
                      t.integer("raise_at"), t.integer("lower_at"))
    if stars.lower_at > stars.raise_at:
        raise t.error("lower_at", f"lower_at {stars.lower_at} is greater than raise_at {stars.raise_at}")
    t.finish()

    table.finish()
    return RiskRules(likelihood, impact, stars)


def _calibration(table: TomlTable) -> CalibrationRules:
    quantiles = table.numbers("spread_quantiles")
    if len(quantiles) != 2 or not 0 <= quantiles[0] < quantiles[1] <= 1:
        raise table.error("spread_quantiles", f"expected [low, high] with 0 <= low < high <= 1, got {list(quantiles)}")
    rules = CalibrationRules(table.integer("min_rows"), (quantiles[0], quantiles[1]))
    if rules.min_rows < 2:
        raise table.error("min_rows", "expected at least 2 (a range needs two actuals)")
    table.finish()
    return rules


def _activities(table: TomlTable) -> tuple[ActivityRule, ...]:
    """[activities.NAME]: title, low <= likely <= high, per-unit days (units from ACTIVITY_UNITS), max_extra, and
    optionally the step it applies to, the units of which it needs one and a note."""
    rules = []
    for name in table.keys():
        t = table.table(name)
        per = t.number_table("per") if "per" in t else MappingProxyType({})
        for unit in per:
            if unit not in ACTIVITY_UNITS:
                raise t.table("per").error(unit, f"unknown unit: expected one of {', '.join(ACTIVITY_UNITS)}")
            if per[unit] > MAX_DAYS:
                raise t.table("per").error(unit, f"{per[unit]:g} is above the largest value accepted here, "
                                                 f"{MAX_DAYS:g}")
        step = t.string("step") if "step" in t else ""
        if step not in ACTIVITY_STEPS:
            raise t.error("step", f"expected one of {', '.join(repr(s) for s in ACTIVITY_STEPS)}, got {step!r}")
        needs = t.strings("needs") if "needs" in t else ()
        if any(unit not in ACTIVITY_UNITS for unit in needs):
            raise t.error("needs", f"unknown unit: expected some of {', '.join(ACTIVITY_UNITS)}")
        rule = ActivityRule(name, t.string("title"), _days(t, "low"), _days(t, "likely"), _days(t, "high"), per,
                            _days(t, "max_extra", 0.0), step, needs, t.string("note") if "note" in t else "")
        if not rule.low <= rule.likely <= rule.high:
            raise t.error("likely", f"expected low <= likely <= high, got {rule.low:g}, {rule.likely:g}, "
                                    f"{rule.high:g}")
        t.finish()
        rules.append(rule)
    table.finish()
    return tuple(rules)


def _triple(table: TomlTable, key: str) -> tuple[float, float, float]:
    """[low, likely, high] person-days, low <= likely <= high."""
    values = table.numbers(key)
    if len(values) != 3 or not values[0] <= values[1] <= values[2]:
        raise table.error(key, f"expected [low, likely, high] with low <= likely <= high, got {list(values)}")
    return values[0], values[1], values[2]


def _graph_mode(table: TomlTable) -> Mapping[str, tuple[float, float, float]]:
    """[graph_mode]: a triple per graph break kind (opassess.graphmode.BREAK_KINDS), every kind named."""
    from ...graphmode.records import BREAK_KINDS

    values = {kind: _triple(table, kind) for kind in BREAK_KINDS}
    table.finish()
    return MappingProxyType(values)


def _source(table: TomlTable) -> SourceRules:
    """[source]: a triple per category, per kernel and per 100 lines of a kernel, and the risk levels of a site."""
    sized = {}
    for name in ("per_kernel", "per_100_lines"):
        t = table.table(name)
        sized[name] = MappingProxyType({category: _triple(t, category) for category in CATEGORIES})
        t.finish()
    rules = SourceRules(
        effort=MappingProxyType({category: _triple(table, category) for category in CATEGORIES}),
        per_kernel=sized["per_kernel"], per_100_lines=sized["per_100_lines"],
        kernel_kinds=table.strings("kernel_kinds"), impact=_level(table, "impact"),
        kernel_impact=_level(table, "kernel_impact"), low_confidence=table.integer("low_confidence"),
        repeat=table.number("repeat", 1.0))
    from ...source.records import KINDS  # the scan's vocabulary of kinds

    if rules.repeat > 1:
        raise table.error("repeat", f"{rules.repeat:g} is above 1: a repeated edit costs at most what the first did")
    unknown = [kind for kind in rules.kernel_kinds if kind not in KINDS]
    if unknown:
        raise table.error("kernel_kinds", f"unknown finding kind {unknown[0]!r}: expected some of {', '.join(KINDS)}")
    table.finish()
    return rules
