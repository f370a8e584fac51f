"""CI policy: which facts in a report (or in its diff against a baseline) breach the gates a pipeline set.

Rules, one per command-line flag:
  --fail-on CATEGORY   `custom-dev` breaches on custom-dev operators; `param-converted` on param-converted ones *and
                       worse* (anything that is not direct); `unknown` on operators the knowledge base does not know.
  --max-person-days N  the model's P50 (the headline; the likely total in a report without one) exceeds N;
                       --max-person-days-at P90 (or P10) gates that percentile of the simulated total instead.
  --max-risk STARS     an operator's risk exceeds STARS stars (1..5).
  --fail-on graph-break  the model's graph breaks on the --graph-backend back-end (inductor by default).
  --fail-on unreached  an operator present in the functions the run entered but on a line it did not reach, not
                       captured elsewhere and not direct (the report's reach block; never gated otherwise).
Applied to a Diff (`--fail-on-new`, `opassess diff`), the same rules look only at what the change brought:
operators added or re-classified to a worse category (or to unknown), the growth of the gated figure, and
operators whose stars rose above the limit.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..assessment import Assessment
from ..messages import N_, Text, joined
from ..report.text import MISSING, days
from ..vocabulary import CATEGORIES, Category, category_rank
from .diff import Diff
from .snapshot import SOURCE_KIND, OpState, Snapshot, read_snapshot

UNKNOWN = "unknown"  # --fail-on unknown: operators the knowledge base does not know
GRAPH_BREAK = "graph-break"  # --fail-on graph-break: a break of the chosen graph back-end (--graph-backend)
UNREACHED = "unreached"  # --fail-on unreached: a non-direct operator present but not reached by the run
FAIL_ON = (Category.CUSTOM_DEV.value, Category.PARAM_CONVERTED.value, UNKNOWN, GRAPH_BREAK, UNREACHED)
PERCENTILES = ("P10", "P50", "P90")  # what --max-person-days-at names: the simulated total's band, P50 the headline


@dataclass(frozen=True)
class Policy:
    """The gates a CI job sets; an empty Policy breaches nothing."""

    fail_on: tuple[str, ...] = ()  # values of FAIL_ON
    max_person_days: float | None = None
    max_risk: int | None = None  # stars, 1..5
    graph_backend: str = "inductor"  # the back-end --fail-on graph-break gates
    percentile: str = "P50"  # the figure --max-person-days compares (--max-person-days-at): one of PERCENTILES

    def __post_init__(self) -> None:
        unknown = [value for value in self.fail_on if value not in FAIL_ON]
        if unknown:
            raise ValueError(f"--fail-on {unknown[0]!r}: expected one of {', '.join(FAIL_ON)}")
        if self.max_risk is not None and not 1 <= self.max_risk <= 5:
            raise ValueError(f"--max-risk {self.max_risk}: expected 1..5 stars")
        if self.percentile not in PERCENTILES:
            raise ValueError(f"--max-person-days-at {self.percentile!r}: expected one of {', '.join(PERCENTILES)}")
        if self.max_person_days is not None and self.max_person_days < 0:
            raise ValueError(f"--max-person-days {self.max_person_days:g}: expected a number >= 0")

    @property
    def active(self) -> bool:
        return bool(self.fail_on) or self.max_person_days is not None or self.max_risk is not None

    def failing_categories(self) -> frozenset[str]:
        """Categories that breach --fail-on: the lowest one named and everything above it."""
        named = [category_rank(c) for c in self.fail_on if c in CATEGORIES]
        if not named:
            return frozenset()
        return frozenset(c for c in CATEGORIES if category_rank(c) >= min(named))


@dataclass(frozen=True)
class Breach:
    """One violated gate: the rule, the operator it concerns (None for the model total) and a one-line message."""

    rule: str  # "fail-on", "max-person-days", "max-risk"
    op: str | None
    message: str
    source: str | None = None


def evaluate(subject: Assessment | Snapshot | Diff, policy: Policy) -> tuple[Breach, ...]:
    """The breaches of `policy` in a report, or, for a Diff, in what changed since the baseline."""
    if not policy.active:
        return ()
    if isinstance(subject, Diff):
        return _evaluate_diff(subject, policy)
    snapshot = subject if isinstance(subject, Snapshot) else read_snapshot(subject)
    breaches = list(_operator_breaches(((op, None) for op in snapshot.operators), policy, in_diff=False))
    breaches += _graph_breaches(snapshot, None, policy)
    if UNREACHED in policy.fail_on:
        breaches += [Breach("fail-on", op, Text(N_("%(op)s: %(category)s, present but not reached by this run at "
                                                   "%(source)s (--fail-on unreached)"),
                                                {"op": op, "category": category, "source": source}), source)
                     for op, category, source in snapshot.unreached]
    gated = snapshot.gated_at(policy.percentile)
    if policy.max_person_days is not None and gated is not None and gated > policy.max_person_days:
        what = policy.percentile if snapshot.band is not None else Text(N_("likely total"))
        breaches.append(Breach("max-person-days", None, Text(
            N_("estimated effort (%(what)s) %(days)s person-days exceeds --max-person-days %(limit)s"),
            {"what": what, "days": days(gated), "limit": f"{policy.max_person_days:g}"})))
    return tuple(breaches)


def _graph_breaches(snapshot: Snapshot, before: Snapshot | None, policy: Policy) -> list[Breach]:
    """--fail-on graph-break: each break of the chosen back-end (in a diff: each the baseline did not have)."""
    if GRAPH_BREAK not in policy.fail_on or snapshot.graph_breaks is None:
        return []
    backend = policy.graph_backend
    old = {(op, kind, reason) for op, kind, _, reason in
           ((before.graph_breaks or {}).get(backend, ()) if before is not None else ())}
    template = (N_("new graph break on %(backend)s: %(op)s%(where)s (%(reason)s) (--fail-on graph-break)")
                if before is not None else
                N_("graph break on %(backend)s: %(op)s%(where)s (%(reason)s) (--fail-on graph-break)"))
    return [Breach("fail-on", op, Text(template, {"backend": backend, "op": op, "where": _at(source),
                                                  "reason": reason}), source)
            for op, kind, source, reason in snapshot.graph_breaks.get(backend, ())
            if (op, kind, reason) not in old]


def _at(source: str | None) -> str:
    """' at model.py:12' (a Text), or '' without a source."""
    return Text(N_(" at %(source)s"), {"source": source}) if source else ""


def _where(op: OpState) -> str:
    return _at(op.first_source)


def _operator_breaches(pairs: Iterable[tuple[OpState, OpState | None]], policy: Policy, *, in_diff: bool
                       ) -> Iterable[Breach]:
    """fail-on and max-risk for each (operator now, the same operator in the baseline or None); in a diff, an
    operator breaches only by what changed: added, moved to a worse category, become unknown, stars risen."""
    failing = policy.failing_categories()
    for op, before in pairs:
        reasons = []
        if op.category in failing:
            was = before.category if before is not None else None
            if before is None or category_rank(op.category) > category_rank(was):
                reasons.append(op.category if before is None else
                               Text(N_("%(category)s (was %(was)s)"), {"category": op.category, "was": was}))
        if UNKNOWN in policy.fail_on and op.known is False and (before is None or before.known is not False):
            reasons.append(Text(N_("unknown to the knowledge base")))
        if reasons:
            flags = ", ".join(f"--fail-on {value}" for value in policy.fail_on)
            calls = Text(N_("a source site")) if op.kind == SOURCE_KIND else \
                Text(N_("%(n)s call(s)"), {"n": op.count})
            template = (N_("new %(op)s: %(reasons)s, %(calls)s%(where)s (%(flags)s)") if in_diff
                        else N_("%(op)s: %(reasons)s, %(calls)s%(where)s (%(flags)s)"))
            yield Breach("fail-on", op.op, Text(template, {"op": op.op, "reasons": joined(reasons, ", "),
                                                           "calls": calls, "where": _where(op), "flags": flags}),
                         op.first_source)
        if policy.max_risk is not None and op.stars is not None and op.stars > policy.max_risk \
                and (before is None or before.stars is None or before.stars <= policy.max_risk):
            rose = Text(N_(" (was %(stars)s)"), {"stars": before.stars}) \
                if before is not None and before.stars is not None else ""
            yield Breach("max-risk", op.op, Text(N_("%(op)s: risk %(stars)s stars%(rose)s exceeds --max-risk "
                                                    "%(limit)s%(where)s"),
                                                 {"op": op.op, "stars": op.stars, "rose": rose,
                                                  "limit": policy.max_risk, "where": _where(op)}), op.first_source)


def _evaluate_diff(diff: Diff, policy: Policy) -> tuple[Breach, ...]:
    pairs = ((c.after, c.before) for c in diff.changes if c.after is not None)
    breaches = list(_operator_breaches(pairs, policy, in_diff=True))
    breaches += _graph_breaches(diff.after, diff.before, policy)
    figures = diff.headline_at(policy.percentile)  # P50 (or the named percentile), else the likely totals
    growth = (figures[1] or 0.0) - (figures[0] or 0.0)
    if policy.max_person_days is not None and growth > policy.max_person_days:
        what = policy.percentile if diff.p50 is not None else Text(N_("likely total"))
        before, after = (days(v) if v is not None else MISSING for v in figures)
        breaches.append(Breach("max-person-days", None, Text(
            N_("estimated effort (%(what)s) grew by %(days)s person-days (%(before)s -> %(after)s), more than "
               "--max-person-days %(limit)s"), {"what": what, "days": days(growth), "before": before, "after": after,
                                                "limit": f"{policy.max_person_days:g}"})))
    return tuple(breaches)

