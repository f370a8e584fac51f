"""`opassess profile PATH --report REPORT.json`: a profiler export joined to a scan report's operators."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .errors import reporting_errors
from .options import Debug

PROFILE_DEFAULT_FORMAT = "terminal"


def profile_command(
    path: Annotated[Path, typer.Argument(help="A torch_npu kernel_details.csv, an msprof op_summary_*.csv, or a "
                                              "*_ascend_pt / PROF_* folder holding them.")],
    report: Annotated[Path, typer.Option("--report", "-r", help="The scan's JSON report "
                                                                "(opassess scan MODEL -f json -o REPORT.json).")],
    fmt: Annotated[str | None, typer.Option("--format", "-f", help="json, md, html or terminal (default: from -o's "
                                                                   "suffix, else terminal).")] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="Write here ('-' for stdout).")] = "-",
    steps: Annotated[int | None, typer.Option(min=1, help="Steps the export covers (default: its distinct Step Id "
                                                          "values, else 1); times are per step.")] = None,
    debug: Debug = False,
) -> None:
    """Measured time per operator (slowest first) against the report's prediction, AI CPU placements and CPU
    fallbacks with their fix, the advisor's shape and PMU rules, and the kernels no operator explains.

    Exit codes: 0 ok, 1 an unreadable export or report, 2 bad usage.
    """
    from ..output import write_output
    from ..profiler import assess_profile
    from ..profiler.formats import PROFILE_FORMATS, render_profile

    with reporting_errors(debug):
        chosen = fmt or {".json": "json", ".md": "md", ".html": "html"}.get(Path(output).suffix.lower(),
                                                                          PROFILE_DEFAULT_FORMAT)
        if chosen not in PROFILE_FORMATS:
            raise typer.BadParameter(f"{chosen!r}: expected one of {', '.join(PROFILE_FORMATS)}",
                                     param_hint="'--format'")
        document = assess_profile(path, report, steps=steps)
        write_output(render_profile(document, chosen), output)
        if output != "-":
            typer.echo(f"opassess: wrote the {chosen} profile report to {output}", err=True)
