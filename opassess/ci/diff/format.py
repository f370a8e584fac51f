"""A baseline diff written out: Markdown for a pull-request comment (templates/diff.md.j2) or JSON
(diff_format_version 1)."""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import ReportError
from ...messages import Text
from ...records import Effort
from ...report.document import effort_doc
from ...report.i18n import N_
from ...report.text import MISSING, days, days_or, signed_days
from ...vocabulary import Category
from ..policy import Breach
from ..snapshot import OpState
from . import CHANGES, Diff, OpChange

DIFF_FORMAT_VERSION = 1
DIFF_FORMATS = ("md", "json")


def _category(state: OpState | None) -> str:
    if state is None:
        return ""
    text = state.category or "unclassified"
    return text if state.known is not False else Text(N_("%(category)s (unknown)"), {"category": text})


def _change_row(change: OpChange) -> dict[str, Any]:
    state = change.after if change.after is not None else change.before  # a change always has one side
    return {
        "op": change.op,
        "change": change.change,
        "before": _category(change.before),
        "after": _category(change.after),
        "count_before": change.before.count if change.before else "",
        "count_after": change.after.count if change.after else "",
        "days_before": days_or(change.before.person_days) if change.before else "",
        "days_after": days_or(change.after.person_days) if change.after else "",
        "delta_text": signed_days(change.effort.likely),
        "source": (state.first_source if state is not None else None) or "",
        "worse": change.worse,
    }


# Section headings of the Markdown diff, marked for the message catalog and translated in the template.
SECTION_TITLES = {"added": N_("Added"), "reclassified": N_("Reclassified"), "changed": N_("Changed"),
                  "removed": N_("Removed")}


def new_custom_dev(diff: Diff) -> list[str]:
    """Operators the change made custom-dev (added as one, or moved up to it)."""
    return [c.op for c in diff.changes if c.worse and c.after and c.after.category == Category.CUSTOM_DEV]


def diff_view(diff: Diff, breaches: Sequence[Breach] = ()) -> dict[str, Any]:
    """The diff with every number formatted, for templates/diff.md.j2."""
    rows = [_change_row(c) for c in diff.changes]
    counts = {name: sum(1 for c in diff.changes if c.change == name) for name in CHANGES}
    return {
        "model": diff.after.source,
        "class_name": diff.after.class_name,
        "baseline": diff.before.origin,
        "before_text": _figure(diff.headline[0]),
        "after_text": _figure(diff.headline[1]),
        "delta_text": signed_days(diff.growth),
        "grew": diff.grew,
        "counts": counts,
        "unchanged": not diff.changes,
        "other_model": diff.other_model,
        "new_custom": new_custom_dev(diff),
        "sections": [{"name": name, "title": SECTION_TITLES[name],
                      "rows": [r for c, r in zip(diff.changes, rows, strict=True) if c.change == name]}
                     for name in CHANGES if counts[name]],
        "breaches": [b.message for b in breaches],
    }


def _figure(value: float | None) -> str:
    return days(value) if value is not None else MISSING


def _effort_doc(effort: Effort | None) -> dict[str, float] | None:
    return None if effort is None else effort_doc(effort)


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
        "p50": None if diff.p50 is None else {"before": diff.p50[0], "after": diff.p50[1],
                                              "change": round(diff.growth, 2)},
        "changes": [{"op": c.op, "change": c.change, "before": side(c.before), "after": side(c.after),
                     "person_days_change": _effort_doc(c.effort)} for c in diff.changes],
    }


def render_diff(diff: Diff, fmt: str = "md", *, breaches: Sequence[Breach] = (), templates_dir: Path | None = None,
                language: str = "en") -> str:
    """The diff as Markdown (a pull-request comment, through templates/diff.md.j2, in `language`) or JSON (English:
    a machine format)."""
    if fmt == "json":
        return json.dumps(diff_document(diff), indent=2, ensure_ascii=False) + "\n"
    if fmt == "md":
        from ...report.templates import render_template

        text = render_template("diff.md.j2", "markdown", diff_view(diff, breaches), templates_dir, language)
        return text if text.endswith("\n") else text + "\n"
    raise ReportError(f"a diff renders as {' or '.join(DIFF_FORMATS)}, not {fmt!r}")
