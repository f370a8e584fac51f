"""Baseline diff: operators added, removed and re-classified between two reports of a model, and the change in effort.

Both sides are Snapshots (opassess.ci.snapshot), so a baseline JSON report from an earlier run compares with a fresh
Assessment or with another JSON report in the same terms. opassess.ci.diff.format renders a diff as Markdown for a
pull-request comment (templates/diff.md.j2) or as JSON.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...records import Effort
from ...vocabulary import category_rank
from ..snapshot import OpState, Snapshot

CHANGES = ("added", "reclassified", "changed", "removed")  # report order
_ZERO = Effort(0.0, 0.0, 0.0)
_EPSILON = 0.005  # person-days below the reports' two-decimal rounding are not a change


def effort_delta(after: Effort | None, before: Effort | None) -> Effort:
    """after - before, a missing side counting as zero: (4, 5, 6) - (1, 2, 3) = (3, 3, 3)."""
    a, b = after or _ZERO, before or _ZERO
    return Effort(a.low - b.low, a.likely - b.likely, a.high - b.high)


@dataclass(frozen=True)
class OpChange:
    """One operator type that differs between the baseline and the new report."""

    op: str
    change: str  # one of CHANGES
    before: OpState | None  # None when added
    after: OpState | None  # None when removed

    @property
    def effort(self) -> Effort:
        """Change in this operator's person-days (after - before)."""
        return effort_delta(self.after.person_days if self.after else None,
                            self.before.person_days if self.before else None)

    @property
    def worse(self) -> bool:
        """Added, or moved up direct < param-converted < custom-dev."""
        if self.before is None:
            return self.after is not None
        if self.after is None:
            return False
        return category_rank(self.after.category) > category_rank(self.before.category)


@dataclass(frozen=True)
class Diff:
    """What changed from `before` (the baseline) to `after`."""

    before: Snapshot
    after: Snapshot
    changes: tuple[OpChange, ...]  # in CHANGES order, then by the size of the effort change

    @property
    def effort(self) -> Effort:
        """Change of the model's total person-days."""
        return effort_delta(self.after.total, self.before.total)

    @property
    def p50(self) -> tuple[float, float] | None:
        """P50 before and after (the reports' headline) when both reports carry one, else None."""
        if self.before.band is None or self.after.band is None:
            return None
        return self.before.band[1], self.after.band[1]

    @property
    def headline(self) -> tuple[float | None, float | None]:
        """The figures the diff compares, before and after: P50 where both reports have one, else the likely totals
        (reports written before the simulation); None for a side without an estimate."""
        return self.headline_at("P50")

    def headline_at(self, percentile: str) -> tuple[float | None, float | None]:
        """As `headline`, for the simulated totals' P10, P50 or P90 (--max-person-days-at)."""
        if self.before.band is not None and self.after.band is not None:
            return self.before.gated_at(percentile), self.after.gated_at(percentile)
        return (self.before.total.likely if self.before.total else None,
                self.after.total.likely if self.after.total else None)

    @property
    def growth(self) -> float:
        """How much the headline figure grew (after - before, a missing side counting as zero)."""
        before, after = self.headline
        return (after or 0.0) - (before or 0.0)

    @property
    def grew(self) -> bool:
        """The headline figure grew by more than the reports' rounding."""
        return self.growth >= _EPSILON

    def of(self, change: str) -> tuple[OpChange, ...]:
        return tuple(c for c in self.changes if c.change == change)

    @property
    def other_model(self) -> str | None:
        """What the baseline describes when it is not the same model, else None.

        Models match by --label when both reports carry one, else by factory and class: the path is not compared,
        so a base revision checked out in another folder (a git worktree) is the same model."""
        if self.before.label and self.after.label:
            same = self.before.label == self.after.label
        else:
            same = (self.before.entry, self.before.class_name) == (self.after.entry, self.after.class_name)
        return None if same else self.before.name


def diff_snapshots(before: Snapshot, after: Snapshot) -> Diff:
    """Compare two snapshots operator by operator (keyed by operator name)."""
    old = {o.op: o for o in before.operators}
    new = {o.op: o for o in after.operators}
    changes: list[OpChange] = []
    for op, state in new.items():
        previous = old.get(op)
        if previous is None:
            changes.append(OpChange(op, "added", None, state))
        elif previous.category != state.category or previous.known != state.known:
            changes.append(OpChange(op, "reclassified", previous, state))
        elif (previous.count != state.count or previous.stars != state.stars
              or abs(effort_delta(state.person_days, previous.person_days).likely) >= _EPSILON):
            changes.append(OpChange(op, "changed", previous, state))
    changes.extend(OpChange(op, "removed", state, None) for op, state in old.items() if op not in new)
    changes.sort(key=lambda c: (CHANGES.index(c.change), -abs(c.effort.likely), c.op))
    return Diff(before=before, after=after, changes=tuple(changes))
