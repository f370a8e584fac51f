"""`opassess calibrate --profile-data PATH --report REPORT.json [-o device.toml]`: the time model's efficiencies and
launch costs fitted to a profile, the error before and after, and the device overlay for scan --device-profile."""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import typer

from ...options import DEFAULT_PRODUCT
from ...profiler.fit import DeviceFit


def format_fit(result: DeviceFit, source: str) -> str:
    """The parameter table, then one row per measured operator with its prediction before and after."""
    from ...report.text import inert

    header = ("parameter", "before", "after")
    params = [header] + [(name, f"{result.before[name]:.4g}", f"{result.after[name]:.4g}")
                         for name in result.fitted]
    ops = [("operator", "unit", "measured us", "before us", "after us")] + [
        (inert(r.op), f"{r.unit} ({r.unit_from})", f"{r.measured_us:,.1f}", f"{b:,.1f}", f"{a:,.1f}")
        for r, b, a in zip(result.rows, result.predicted_before, result.predicted_after, strict=True)]
    lines = [f"Calibration of the {result.product} time model against {inert(source)} ({len(result.rows)} measured "
             f"operators)",
             "prediction per operator: calls x (max(compute, memory) + launch) of its average call, plus the report's "
             "penalties; fit error = RMS of ln(predicted / measured), the quantity minimised",
             "", *_table(params), "", *_table(ops), "",
             f"fit error: {result.error_before:.3f} before, {result.error_after:.3f} after (a typical operator off "
             f"by a factor {math.exp(result.error_before):.2f} before, {math.exp(result.error_after):.2f} after)"]
    lines += [f"left out: {inert(op)}: {why}" for op, why in result.skipped]
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines) + "\n"


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                       enumerate(zip(row, widths, strict=True))).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def calibrate_device(profile_data: Path, report: Path, output: Path | None) -> None:
    """Fit, print the table and the overlay, write the overlay to `output` when given."""
    from ...output import write_output
    from ...perf import load_profile
    from ...profiler import assess_profile, read_report
    from ...profiler.fit import fit, fit_rows, overlay_text

    document = read_report(report)
    measured = assess_profile(profile_data, report, report=document)
    rows, skipped = fit_rows(measured, document)
    result = fit(rows, load_profile(str(document.get("target") or DEFAULT_PRODUCT)), skipped)
    source = str(profile_data)
    typer.echo(format_fit(result, source))
    text = overlay_text(result, source)
    typer.echo(text, nl=False)
    if output is not None:
        write_output(text, output, "the device profile")
        typer.echo(f"opassess: wrote the device profile to {output}; use it with scan --device-profile {output}",
                   err=True)
