"""Baseline diff: operators added, removed and re-classified between two reports of a model, and the change in effort.

Both sides are Snapshots (opassess.snapshot), so a baseline JSON report from an earlier run compares with a fresh
Assessment or with another JSON report in the same terms. The diff renders as Markdown for a pull-request comment
(templates/diff.md.j2) or as JSON.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .records import Effort
from .snapshot import OpState, Snapshot
from .vocabulary import category_rank

CHANGES = ("added", "reclassified", "changed", "removed")  # report order
DIFF_FORMAT_VERSION = 1
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

    def of(self, change: str) -> tuple[OpChange, ...]:
        return tuple(c for c in self.changes if c.change == change)

    @property
    def other_model(self) -> str | None:
        """What the baseline describes when it is not the same model (another file or class), else None."""
        if (self.before.source, self.before.class_name) == (self.after.source, self.after.class_name):
            return None
        return f"{self.before.source} ({self.before.class_name})"


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


# ------------------------------------------------------------------ rendering


def _signed(value: float) -> str:
    """+12.0 / -3.5 / 0.0 person-days, always with one decimal."""
    text = f"{value:+.1f}"
    return "0.0" if text in ("+0.0", "-0.0") else text


def _days(effort: Effort | None) -> str:
    return f"{effort.likely:.1f}" if effort else "n/a"


def _category(state: OpState | None) -> str:
    if state is None:
        return ""
    text = state.category or "unclassified"
    return text if state.known is not False else f"{text} (unknown)"


def _change_row(change: OpChange) -> dict[str, Any]:
    state = change.after if change.after is not None else change.before  # a change always has one side
    return {
        "op": change.op,
        "change": change.change,
        "before": _category(change.before),
        "after": _category(change.after),
        "count_before": change.before.count if change.before else "",
        "count_after": change.after.count if change.after else "",
        "days_before": _days(change.before.person_days) if change.before else "",
        "days_after": _days(change.after.person_days) if change.after else "",
        "delta_text": _signed(change.effort.likely),
        "source": state.first_source or "",
        "worse": change.worse,
    }


def diff_view(diff: Diff, breaches: Sequence[Any] = ()) -> dict[str, Any]:
    """The diff with every number formatted, for templates/diff.md.j2."""
    rows = [_change_row(c) for c in diff.changes]
    counts = {name: sum(1 for c in diff.changes if c.change == name) for name in CHANGES}
    new_custom = [c.op for c in diff.changes if c.worse and c.after and c.after.category == "custom-dev"]
    return {
        "model": diff.after.source,
        "class_name": diff.after.class_name,
        "baseline": diff.before.origin,
        "before_text": _days(diff.before.total),
        "after_text": _days(diff.after.total),
        "delta_text": _signed(diff.effort.likely),
        "grew": diff.effort.likely >= _EPSILON,
        "counts": counts,
        "unchanged": not diff.changes,
        "other_model": diff.other_model,
        "new_custom": new_custom,
        "sections": [{"name": name, "rows": [r for r in rows if r["change"] == name]} for name in CHANGES
                     if counts[name]],
        "breaches": [b.message for b in breaches],
    }


def diff_document(diff: Diff) -> dict[str, Any]:
    """The diff as a JSON-able document (diff_format_version 1)."""

    def side(state: OpState | None) -> dict[str, Any] | None:
        if state is None:
            return None
        return {"category": state.category, "known": state.known, "count": state.count,
                "person_days": _effort_doc(state.person_days), "stars": state.stars, "source": list(state.sources)}

    return {
        "diff_format_version": DIFF_FORMAT_VERSION,
        "model": diff.after.source,
        "baseline": diff.before.origin,
        "baseline_model": diff.other_model,
        "person_days": {"before": _effort_doc(diff.before.total), "after": _effort_doc(diff.after.total),
                        "change": _effort_doc(diff.effort)},
        "changes": [{"op": c.op, "change": c.change, "before": side(c.before), "after": side(c.after),
                     "person_days_change": _effort_doc(c.effort)} for c in diff.changes],
    }


def _effort_doc(effort: Effort | None) -> dict[str, float] | None:
    if effort is None:
        return None
    return {"low": round(effort.low, 2), "likely": round(effort.likely, 2), "high": round(effort.high, 2)}


def render_diff(diff: Diff, fmt: str = "md", *, breaches: Sequence[Any] = (), templates_dir: Path | None = None
                ) -> str:
    """The diff as Markdown (a pull-request comment, through templates/diff.md.j2) or JSON."""
    from .errors import ReportError

    if fmt == "json":
        return json.dumps(diff_document(diff), indent=2, ensure_ascii=False) + "\n"
    if fmt == "md":
        from .report.templates import render_template

        text = render_template("diff.md.j2", "markdown", diff_view(diff, breaches), templates_dir)
        return text if text.endswith("\n") else text + "\n"
    raise ReportError(f"a diff renders as md or json, not {fmt!r}")
