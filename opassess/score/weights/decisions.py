"""[decisions] and [changes] of weights.toml as frozen records: what a model-level decision costs (priced once, plus a
check per operator or source site it covers), what each decision recognises as its cause (attention routes, layout
parameters and subjects), the precision plan's overflow-prone operators and GradScaler settings, and what a parameter
limit costs by the change it needs (no-op argument, local rewrite). Read by load.py."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ...datafile import TomlTable
from ...findings.patterns import unknown_kinds

Triple = tuple[float, float, float]
# the causes opassess.score.decisions knows
DECISION_NAMES = ("precision", "kernel-check", "attention", "layout", "float64")
CHANGE_TIERS = ("no-op", "local-rewrite")  # priced changes; any other limit is an algorithm change (category range)
ALGORITHM = "algorithm"
SHARED = ("attention", "layout", "float64")  # decisions only when min_members places share the cause


@dataclass(frozen=True)
class DecisionRule:
    """One decision kind: its title, what it costs once, and the check per operator it covers."""

    name: str
    title: str
    effort: Triple
    per_operator: Triple
    routes: tuple[str, ...] = ()  # attention: the NPU ops a route names (a site's route, a library-route reason)
    params: tuple[str, ...] = ()  # layout: parameters whose limit is the cause (memory_format)
    subjects: tuple[str, ...] = ()  # layout: source-site subjects that are the cause (torch.channels_last)
    min_members: int = 1  # attention, layout, float64: the places that must share the cause before it is one decision


@dataclass(frozen=True)
class PrecisionRules:
    """What the precision plan names: overflow-prone ATen ops, reductions over many elements, GradScaler settings."""

    overflow_aten: frozenset[str]
    reduction_aten: frozenset[str]
    large_reduction: int  # elements: a reduction's input this large or larger is overflow-prone in float16
    overflow_findings: tuple[str, ...]  # finding kinds naming a hand-written norm
    init_scale: int
    growth_interval: int


@dataclass(frozen=True)
class DecisionRules:
    group: bool  # False: no decisions, no priced changes (every operator its own range)
    rules: Mapping[str, DecisionRule]
    precision: PrecisionRules
    changes: Mapping[str, Triple]  # tier -> person-days
    no_op_values: Mapping[str, tuple[Any, ...]]  # parameter -> values that change nothing
    local_rewrites: Mapping[str, str]  # parameter -> the local edit that takes the kernel's value


def read_decisions(decisions: TomlTable, changes: TomlTable, triple) -> DecisionRules:
    """[decisions] and [changes] through the strict reader; `triple(table, key)` reads a [low, likely, high] list
    (load.py's helper)."""
    rules = {}
    for name in DECISION_NAMES:
        t = decisions.table(name)
        rules[name] = DecisionRule(name, t.string("title"), triple(t, "effort"), triple(t, "per_operator"),
                                   t.strings("routes") if name == "attention" else (),
                                   t.strings("params") if name == "layout" else (),
                                   t.strings("subjects") if name == "layout" else (),
                                   t.integer("min_members") if name in SHARED else 1)
        if rules[name].min_members < 1:
            raise t.error("min_members", "min_members must be 1 or more")
        if name == "precision":
            large = t.integer("large_reduction")
            precision = PrecisionRules(frozenset(t.strings("overflow_aten")), frozenset(t.strings("reduction_aten")),
                                       large, t.strings("overflow_findings"), t.integer("init_scale"),
                                       t.integer("growth_interval"))
            unknown = unknown_kinds(precision.overflow_findings)
            if unknown:
                raise t.error("overflow_findings", f"unknown finding kind {unknown[0]!r} (patterns.toml [kinds])")
            if large < 1 or precision.init_scale < 1 or precision.growth_interval < 1:
                raise t.error("large_reduction", "large_reduction, init_scale and growth_interval must be positive")
        t.finish()
    group = decisions.boolean("group")
    decisions.finish()
    tiers = {tier: triple(changes, tier) for tier in CHANGE_TIERS}
    t = changes.table("no_op_values")
    no_op = {}
    for param in t.keys():
        values = t.value(param)
        if not isinstance(values, list) or not values:
            raise t.error(param, f"expected a non-empty list of values, got {values!r}")
        no_op[param] = tuple(values)
    t.finish()
    t = changes.table("local_rewrites")
    rewrites = {param: t.string(param) for param in t.keys()}
    t.finish()
    changes.finish()
    return DecisionRules(group, MappingProxyType(rules), precision, MappingProxyType(tiers),
                         MappingProxyType(no_op), MappingProxyType(rewrites))
