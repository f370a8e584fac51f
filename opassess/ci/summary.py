"""CI summary: a short Markdown digest of one scan (with its baseline diff and policy breaches), appended to the
file GitHub Actions names in GITHUB_STEP_SUMMARY (templates/summary.md.j2)."""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..messages import N_, Text
from ..report.text import days, days_range
from ..vocabulary import CATEGORIES, Category
from .snapshot import Snapshot

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
TOP_CUSTOM = 10  # custom-dev operators listed by name


def summary_view(snapshot: Snapshot, diff_markdown: str | None = None, breaches: Sequence[Any] = ()
                 ) -> dict[str, Any]:
    """The digest's values, formatted, for templates/summary.md.j2."""
    counts = {c: sum(1 for o in snapshot.operators if o.category == c) for c in CATEGORIES}
    custom = sorted((o for o in snapshot.operators if o.category == Category.CUSTOM_DEV),
                    key=lambda o: -(o.person_days.likely if o.person_days else 0.0))
    return {
        "model": snapshot.source,
        "class_name": snapshot.class_name,
        "total_text": days(snapshot.gated) if snapshot.gated is not None else Text(N_("not estimated")),
        "range_text": (f"P10-P90 {days(snapshot.band[0])}-{days(snapshot.band[2])}" if snapshot.band
                       else Text(N_("range %(range)s"), {"range": days_range(snapshot.total)}) if snapshot.total
                       else ""),
        "types": len(snapshot.operators),
        "counts": counts,
        "unknown": sum(1 for o in snapshot.operators if o.known is False),
        "custom": [{"op": o.op, "likely_text": days(o.person_days.likely) if o.person_days else "",
                    "source": o.first_source or ""} for o in custom[:TOP_CUSTOM]],
        "custom_more": max(0, len(custom) - TOP_CUSTOM),
        "breaches": [b.message for b in breaches],
        "diff": diff_markdown or "",
    }


def render_summary(snapshot: Snapshot, *, diff_markdown: str | None = None, breaches: Sequence[Any] = (),
                   templates_dir: Path | None = None, language: str = "en") -> str:
    """The Markdown digest of one scan, in `language`."""
    from ..report.templates import render_template

    text = render_template("summary.md.j2", "markdown", summary_view(snapshot, diff_markdown, breaches),
                           templates_dir, language)
    return text if text.endswith("\n") else text + "\n"


def append_step_summary(text: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """Append `text` to the file named by GITHUB_STEP_SUMMARY (GitHub shows it on the run's page); None when the
    variable is unset. The file is appended to, not replaced: every step of a job adds its own part."""
    destination = (os.environ if environ is None else environ).get(STEP_SUMMARY_ENV)
    if not destination:
        return None
    from ..output import append_text

    return append_text(text if text.endswith("\n") else text + "\n", destination, f"the {STEP_SUMMARY_ENV} summary")
