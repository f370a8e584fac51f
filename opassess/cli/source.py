"""`opassess source PATH...`: a static scan of a project's GPU-specific code, reported like a model scan."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..options import DEFAULT_PRODUCT
from .errors import reporting_errors
from .options import (
    Baseline,
    Debug,
    FailOn,
    FailOnNew,
    KbFolder,
    Label,
    Lang,
    MaxPersonDays,
    MaxPersonDaysAt,
    MaxRisk,
    PatchFile,
    Profile,
    Quiet,
    Target,
    Templates,
    TorchNpu,
    Weights,
    build_policy,
    report_language,
)
from .scan import DEFAULT_FORMAT, _format_names, _scan_one


def source_command(
    paths: Annotated[list[Path], typer.Argument(
        help="Folders and files to scan: Python (syntax tree), C++/CUDA sources (.cu, .cuh, .cpp, ...) and build "
             "files (setup.py). Nothing is imported or run.", metavar="PATH")],
    fmt: Annotated[str | None, typer.Option(
        "--format", "-f", help=f"Report format: {_format_names()} (default: from -o's extension, else "
                               f"{DEFAULT_FORMAT}).")] = None,
    output: Annotated[str | None, typer.Option(
        "--output", "-o", help="Write the report here ('-' for stdout).")] = None,
    product: Target = DEFAULT_PRODUCT,
    torch_npu: TorchNpu = None,
    weights: Weights = None,
    profile: Profile = "default",
    kb: KbFolder = None,
    templates: Templates = None,
    fail_on: FailOn = None,
    max_person_days: MaxPersonDays = None,
    max_person_days_at: MaxPersonDaysAt = "P50",
    max_risk: MaxRisk = None,
    baseline: Baseline = None,
    fail_on_new: FailOnNew = False,
    quiet: Quiet = False,
    patch: PatchFile = None,
    lang: Lang = None,
    label: Label = None,
    debug: Debug = False,
) -> None:
    """Scan source code for GPU-specific sites (CUDA APIs, NCCL, AMP, kernel libraries, Triton and CUDA kernels,
    extensions): each site with its category, NPU route, evidence and person-days; CI gates as for `scan`.

    Exit codes: 0 ok, 1 an error (a path that does not exist, a bad weights file), 2 bad usage, 3 a gate was breached.
    """
    from ..isolation.worker import process_age
    from ..options import OutputOptions, ScanOptions
    from ..pipeline.sources import assess_sources
    from ..startup import in_command

    with reporting_errors(debug):
        if "graph-break" in (fail_on or ()):  # no model runs here: the gate could never fire
            raise typer.BadParameter("needs a model: graph breaks come from `opassess scan MODEL` (the source scan "
                                     "runs nothing)", param_hint="'--fail-on graph-break'")
        policy = build_policy(fail_on, max_person_days, max_risk, percentile=max_person_days_at)
        out = OutputOptions(fmt=fmt, output=output, templates=templates, quiet=quiet, baseline=baseline,
                            fail_on_new=fail_on_new, patch=patch)
        given = tuple(str(p) for p in paths)
        options = ScanOptions(target=given[0], product=product, torch_npu=torch_npu, weights=weights, kb_dir=kb,
                              label=label, language=report_language(lang), profile=profile, source=given)
        _scan_one(options, out, policy,
                  run=lambda opts, progress: assess_sources(opts.source, opts, progress,
                                                            start=process_age() if in_command() else None))
