"""`opassess diff BEFORE AFTER`: compare two JSON reports and apply the CI gates to what changed."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .errors import fail_on_breaches, reporting_errors
from .options import (
    Debug,
    FailOn,
    Lang,
    MaxPersonDays,
    MaxPersonDaysAt,
    MaxRisk,
    Templates,
    build_policy,
    report_language,
)


def diff_command(
    before: Annotated[Path, typer.Argument(help="The baseline JSON report.")],
    after: Annotated[Path, typer.Argument(help="The new JSON report.")],
    fmt: Annotated[str, typer.Option(
        "--format", "-f", help="md (for a pull-request comment) or json.")] = "md",
    output: Annotated[str, typer.Option("--output", "-o", help="Write the diff here ('-' for stdout).")] = "-",
    fail_on: FailOn = None,
    max_person_days: MaxPersonDays = None,
    max_person_days_at: MaxPersonDaysAt = "P50",
    max_risk: MaxRisk = None,
    templates: Templates = None,
    lang: Lang = None,
    debug: Debug = False,
) -> None:
    """Compare two JSON reports: operators added, removed and re-classified, and the change in effort.

    The CI gates apply to what changed (a known custom-dev operator in the baseline does not fail, a new one does).
    Exit codes: 0 ok, 1 an unreadable report, 2 bad usage, 3 a gate was breached.
    """
    from ..ci.diff import diff_snapshots
    from ..ci.diff.format import DIFF_FORMATS, render_diff
    from ..ci.policy import evaluate
    from ..ci.snapshot import read_snapshot
    from ..output import write_output

    with reporting_errors(debug):
        policy = build_policy(fail_on, max_person_days, max_risk, percentile=max_person_days_at)
        language = report_language(lang)
        if fmt not in DIFF_FORMATS:
            raise typer.BadParameter(f"{fmt!r}: expected {' or '.join(DIFF_FORMATS)}", param_hint="'--format'")
        difference = diff_snapshots(read_snapshot(before), read_snapshot(after))
        breaches = evaluate(difference, policy)
        write_output(render_diff(difference, fmt, breaches=breaches, templates_dir=templates, language=language),
                     output)
        fail_on_breaches([b.message for b in breaches])
