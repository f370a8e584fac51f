"""`opassess calibrate actuals.csv`: print the before/after error table and the proposed [effort.*] TOML snippet."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..report.text import percent
from ..score.calibrate import Calibration, calibrate
from .errors import reporting_errors


def format_table(result: Calibration) -> str:
    """The error table: one row per category, then the whole file."""
    header = ("category", "actuals", "range before", "range after", "MAE before", "MAE after", "inside before",
              "inside after")
    rows = [header]
    for fit in result.categories:
        rows.append((
            fit.category,
            str(fit.rows),
            _range(fit.before),
            _range(fit.after),
            _days(fit.mae_before),
            _days(fit.mae_after),
            _share(fit.inside_before),
            _share(fit.inside_after),
        ))
    rows.append(("all", str(result.rows), "", "", _days(result.mae_before), _days(result.mae_after), "", ""))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                       for i, (cell, width) in enumerate(zip(row, widths, strict=False))).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    notes = [f"{fit.category}: {fit.method}" for fit in result.categories]
    return "\n".join([
        f"Calibration of {result.weights_source} against {result.source} ({result.rows} actuals)",
        f"prediction per actual: {result.prediction}; MAE = mean absolute error in person-days",
        "",
        *lines,
        "",
        *notes,
    ]) + "\n"


def format_snippet(result: Calibration) -> str:
    """The proposed ranges as TOML to paste into weights.toml (only the categories whose range changed)."""
    lines = [f"# Proposed by `opassess calibrate {result.source}` ({result.rows} actuals): "
             f"MAE {result.mae_before:.2f} -> {result.mae_after:.2f} person-days"]
    changed = [fit for fit in result.categories if fit.changed]
    for fit in changed:
        lines += ["", f"[effort.{fit.category}]  # {fit.method}",
                  f"low = {fit.after[0]:g}    # was {fit.before[0]:g}",
                  f"high = {fit.after[1]:g}   # was {fit.before[1]:g}"]
    if not changed:
        lines.append("# no range changed")
    return "\n".join(lines) + "\n"


def calibrate_command(
    actuals: Annotated[Path, typer.Argument(help="CSV of recorded actuals: operator, category, person_days "
                                                 "(and optionally composite, from a scan's JSON report).")],
    weights: Annotated[Path | None, typer.Option(help="The weights.toml to calibrate (default: the shipped "
                                                         "one).")] = None,
    debug: Annotated[bool, typer.Option(help="Show tracebacks.")] = False,
) -> None:
    """Propose category ranges for weights.toml from a team's recorded actuals, with the error before and after."""
    from ..score.weights_load import load_weights

    with reporting_errors(debug):
        result = calibrate(actuals, load_weights(weights))
        typer.echo(format_table(result))
        typer.echo(format_snippet(result), nl=False)


def _range(bounds: tuple[float, float]) -> str:
    return f"{bounds[0]:g}-{bounds[1]:g}"


def _days(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _share(value: float | None) -> str:
    return "-" if value is None else percent(value)
