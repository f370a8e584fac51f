"""`opassess calibrate actuals.csv`: print the before/after error table and the proposed [effort.*] TOML snippet."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import reporting_errors
from ..options import Debug

if TYPE_CHECKING:
    from ...score.calibrate import Calibration


def format_table(result: Calibration) -> str:
    """The error table: one row per category, then the whole file."""
    from ...report.text import bounds_range

    header = ("category", "actuals", "range before", "range after", "MAE before", "MAE after", "inside before",
              "inside after")
    rows = [header]
    for fit in result.categories:
        rows.append((
            fit.category,
            str(fit.rows),
            bounds_range(*fit.before),
            bounds_range(*fit.after),
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


def format_profile(result: Calibration, base: str, base_text: str | None) -> str:
    """A weights profile to pass with --weights: the base profile's own keys (if it is not the default) with the
    calibrated ranges on top, as one TOML file (the base's [effort.CATEGORY] tables take the new low/high)."""
    changed = {fit.category: fit for fit in result.categories if fit.changed}
    lines = [f"# Profile calibrated by `opassess calibrate {result.source}` ({result.rows} actuals) on top of the "
             f"'{base}' profile: MAE {result.mae_before:.2f} -> {result.mae_after:.2f} person-days.",
             f"# Use it with: opassess scan MODEL --profile {base} --weights THIS_FILE",
             "# The ranges below are fitted to your actuals; every other figure is still an assumption.", ""]
    section = ""
    for line in (base_text or "").splitlines():
        header = line.strip()
        if header.startswith("[") and not header.startswith("[["):
            section = header[1:].split("]")[0].strip()
            lines.append(line)
            fit = changed.get(section.removeprefix("effort.")) if section.startswith("effort.") else None
            if fit is not None:  # the calibrated range replaces the base's, right under its header
                lines += _range_lines(changed.pop(fit.category))
            continue
        if section.startswith("effort.") and section.removeprefix("effort.") in _calibrated(result) \
                and line.split("=")[0].strip() in ("low", "high"):
            continue
        lines.append(line)
    for fit in changed.values():
        lines += ["", f"[effort.{fit.category}]", *_range_lines(fit)]
    return "\n".join(lines).rstrip("\n") + "\n"


def _calibrated(result: Calibration) -> set[str]:
    return {fit.category for fit in result.categories if fit.changed}


def _range_lines(fit) -> list[str]:
    return [f"low = {fit.after[0]:g}    # calibrated, was {fit.before[0]:g} ({fit.method})",
            f"high = {fit.after[1]:g}   # calibrated, was {fit.before[1]:g}"]


def calibrate_command(
    actuals: Annotated[Path | None, typer.Argument(help="CSV of recorded actuals: operator, category, person_days "
                                                        "(and optionally composite, from a scan's JSON report).")
                       ] = None,
    weights: Annotated[Path | None, typer.Option(help="A weights file on top of the profile (default: "
                                                         "none).")] = None,
    profile: Annotated[str, typer.Option(help="The shipped profile to calibrate: default or classic (the "
                                              "practice table, per operator type).")] = "default",
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write the calibrated profile here (a TOML file for scan --weights; with "
                               "--profile-data a device overlay for scan --device-profile).")] = None,
    verified: Annotated[Path | None, typer.Option(
        help="JUnit results of the hand-off's verification harness (pytest --junitxml): recorded into the "
             "knowledge-base overlay as verified on your hardware, used by later scans.")] = None,
    kb_dir: Annotated[Path | None, typer.Option(
        "--kb-dir", help="With --verified: the overlay folder for verified.json (default: OPASSESS_KB_DIR, else "
                         "the user folder `opassess kb import` writes).")] = None,
    profile_data: Annotated[Path | None, typer.Option(
        help="A profiler export (kernel_details.csv, op_summary_*.csv or their folder): fit the time model's "
             "efficiencies and launch costs to it (needs --report).")] = None,
    report: Annotated[Path | None, typer.Option(
        "--report", "-r", help="With --profile-data: the scan's JSON report.")] = None,
    debug: Debug = False,
) -> None:
    """Calibrate opassess to your team and hardware: effort ranges from recorded actuals (ACTUALS), the knowledge
    base from verification results (--verified), or the time model from a profile (--profile-data)."""
    modes = [name for name, value in (("ACTUALS", actuals), ("--verified", verified),
                                      ("--profile-data", profile_data)) if value is not None]
    if len(modes) != 1:
        raise typer.BadParameter("give exactly one of ACTUALS, --verified or --profile-data"
                                 + (f" (got {', '.join(modes)})" if modes else ""))
    if profile_data is not None and report is None:
        raise typer.BadParameter("--profile-data needs --report REPORT.json", param_hint="'--report'")
    with reporting_errors(debug):
        if verified is not None:
            _record_verified(verified, kb_dir)
        elif profile_data is not None:
            from .device import calibrate_device

            assert report is not None  # refused above without it
            calibrate_device(profile_data, report, output)
        else:
            assert actuals is not None  # the one mode given
            _calibrate_effort(actuals, weights, profile, output)


def _calibrate_effort(actuals: Path, weights: Path | None, profile: str, output: Path | None) -> None:
    from ...output import write_output
    from ...score.calibrate import calibrate
    from ...score.weights.load import load_weights, profile_path

    result = calibrate(actuals, load_weights(weights, profile))
    typer.echo(format_table(result))
    typer.echo(format_snippet(result), nl=False)
    if output is not None:
        base = profile_path(profile)
        write_output(format_profile(result, profile, base.read_text(encoding="utf-8") if base else None), output)
        typer.echo(f"opassess: wrote the calibrated profile to {output}", err=True)


def _record_verified(results: Path, kb_dir: Path | None) -> None:
    from ...kb.store import user_kb_dir
    from ...kb.verified import record_verified

    env = os.environ.get("OPASSESS_KB_DIR")  # the overlay folder later scans read (kb/store.load_kb)
    folder = kb_dir if kb_dir is not None else Path(env) if env else user_kb_dir()
    target, cases, counts = record_verified(results, folder)
    for case in cases:
        detail = f": {case.failure}" if case.failure else ""
        typer.echo(f"{case.status:7}  {case.op}  {case.signature}  on {case.device}{detail}")
    typer.echo(f"opassess: recorded {counts['passed']} passed and {counts['failed']} failed signature(s) "
               f"({counts['skipped']} skipped: no device) in {target}; later scans read it", err=True)
    if counts["not-run"]:
        typer.echo(f"opassess: {counts['not-run']} device case(s) not run on an NPU, no verdict recorded: the "
                   f"device was the CPU (OPASSESS_VERIFY_DEVICE=cpu), or the harness failed before the device call "
                   f"(building the call or its CPU reference; run it from the project root)", err=True)


def _days(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _share(value: float | None) -> str:
    from ...report.text import percent

    return "-" if value is None else percent(value)
