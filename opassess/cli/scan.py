"""`opassess scan TARGET...`: one model in a worker process, or several as a portfolio of worker processes."""
from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import EXIT_ERROR
from ..huggingface import is_model_folder, with_config_defaults
from ..isolation import terminating_on_signals
from ..isolation.sandbox import available as available_sandbox
from ..options import DEFAULT_PRODUCT
from ..report.registry import REPORTERS, format_for_suffix
from .errors import fail_on_breaches, one_line, reporting_errors
from .options import (
    CAPTURE_HELP,
    CAST_DTYPES,
    Baseline,
    BatchSize,
    Debug,
    Exporter,
    FailOn,
    FailOnNew,
    GraphBackend,
    GraphModeOption,
    KbFolder,
    Label,
    Lang,
    MaxPersonDays,
    MaxPersonDaysAt,
    MaxRisk,
    NoDrive,
    NoGraphMode,
    Opset,
    PatchFile,
    Profile,
    Quant,
    Quiet,
    Route,
    SeqLen,
    Target,
    Task,
    Templates,
    TorchNpu,
    TrustRemoteCode,
    Weights,
    build_policy,
    check_values,
    dtype_value,
    graph_mode_value,
    input_shapes,
    report_language,
    route_values,
)
from .progress import portfolio_progress, scan_progress

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..assessment import Assessment
    from ..ci.diff import Diff
    from ..ci.policy import Breach, Policy
    from ..ci.snapshot import Snapshot
    from ..options import OutputOptions, ScanOptions
    from ..pipeline import Progress
    from ..report import View

DEFAULT_FORMAT = "terminal"
PORTFOLIO_FORMAT = "md"  # per-model reports of a portfolio, besides JSON
_SEVERAL = "apply when scanning several models (more than one target, or a directory)"


def pick_format(fmt: str | None, output: str | None) -> str:
    """The report format: -f when given, else from -o's extension (as the reporter registry maps them), else the
    terminal summary."""
    if fmt:
        return fmt
    if output and output != "-":
        return format_for_suffix(Path(output).suffix) or DEFAULT_FORMAT
    return DEFAULT_FORMAT


def _format_names(*, exclude: tuple[str, ...] = ()) -> str:
    """'csv, html, json, ...': the registered formats, for help texts and errors."""
    return ", ".join(name for name in sorted(REPORTERS) if name not in exclude)


def scan(
    targets: Annotated[list[str], typer.Argument(
        help="Model files (each defines build_model() and example_inputs()), Hugging Face model folders (a "
             "config.json; no weights are read) or config.json files, directories of model files or model folders, "
             "or package.module:factory. Several make a portfolio.", metavar="TARGET")],
    fmt: Annotated[str | None, typer.Option(
        "--format", "-f", help=f"Report format: {_format_names()} (default: from -o's extension, else "
                               f"{DEFAULT_FORMAT}). With several models: the per-model format written besides JSON "
                               f"(default {PORTFOLIO_FORMAT}).")] = None,
    output: Annotated[str | None, typer.Option(
        "--output", "-o", help="Write the report here ('-' for stdout). With several models: the directory for the "
                               "per-model and portfolio reports.")] = None,
    entry: Annotated[str | None, typer.Option(
        help="Factory to call instead of build_model: FUNC or FILE:FUNC.")] = None,
    input_shape: Annotated[list[str] | None, typer.Option(
        "--input-shape", help="Shape of one input tensor, e.g. 1,3,224,224 (repeatable, one per positional input); "
                              "used instead of the file's example_inputs().")] = None,
    input_dtype: Annotated[str, typer.Option(help="dtype of the tensors built from --input-shape.")] = "float32",
    dtype: Annotated[str | None, typer.Option(
        help="Cast the model (parameters and floating inputs) to float16 or bfloat16 and assess it in that dtype. "
             "This is not mixed precision: for autocast, use --train --amp.")] = None,
    train: Annotated[bool, typer.Option(
        "--train", help="Capture one training step instead of a forward pass: forward in train mode, the loss "
                        "(the file's loss_fn(output, inputs), else the output's mean), backward() and one optimizer "
                        "step (the file's build_optimizer(model), else AdamW(foreach=True)), with gradient clipping "
                        "at 1.0 unless the file sets max_grad_norm = None.")] = False,
    amp: Annotated[str | None, typer.Option(
        "--amp", help="With --train: run the forward and the loss under autocast, bf16 or fp16 (fp16 with a "
                      "GradScaler).")] = None,
    device: Annotated[str, typer.Option(
        help="Device to build and run the model on: meta (no weights allocated) or cpu.")] = "meta",
    capture: Annotated[str | None, typer.Option(help=CAPTURE_HELP)] = None,
    product: Target = DEFAULT_PRODUCT,
    torch_npu: TorchNpu = None,
    compare: Annotated[str | None, typer.Option(
        "--compare", help="Also estimate the step time on these products, comma-separated (A3,950): one "
                          "table.")] = None,
    device_profile: Annotated[Path | None, typer.Option(
        "--device-profile", help="A TOML overlay of the target's device profile (efficiencies, peaks, launch costs, "
                                 "host link) for the time model; see docs/cost-and-time.md.")] = None,
    parallel: Annotated[str | None, typer.Option(
        "--parallel", help="Time and size the job over devices: tp=N,pp=N,dp=N[,ep=N][,cp=N][,sp][,zero=N] (the "
                           "example inputs are one micro-batch); see docs/cost-and-time.md.")] = None,
    global_batch: Annotated[int | None, typer.Option(
        "--global-batch", min=1, help="With --parallel: samples per optimizer step over all data-parallel "
                                      "replicas (default: one micro-batch each).")] = None,
    gpu_baseline: Annotated[str | None, typer.Option(
        "--gpu-baseline", help="Also time the step on this NVIDIA GPU from its datasheet figures (A100, H100, H20, "
                               "H200, L40S, B200): the NPU/GPU ratio, per operator too.")] = None,
    match_gpus: Annotated[int | None, typer.Option(
        "--match-gpus", min=1, help="With --gpu-baseline: the NPUs (whole --parallel replicas) whose throughput "
                                    "matches N GPUs.")] = None,
    weights: Weights = None,
    profile: Profile = "default",
    handoff: Annotated[Path | None, typer.Option(
        help="Write hand-offs to this directory: per custom-dev operator a runnable reproduction and a ticket "
             "skeleton, and the list of operators to verify numerically.")] = None,
    patch: PatchFile = None,
    kb: KbFolder = None,
    source: Annotated[list[Path] | None, typer.Option(
        "--source", help="Also scan this folder or file statically for GPU-specific code (CUDA APIs, kernel "
                         "libraries, Triton and CUDA kernels, extensions) and report its sites with the model's "
                         "operators (repeatable). The model file and the project files it imports are scanned "
                         "anyway.")] = None,
    route: Route = None,
    opset: Opset = None,
    exporter: Exporter = None,
    quant: Quant = None,
    templates: Templates = None,
    fail_on: FailOn = None,
    max_person_days: MaxPersonDays = None,
    max_person_days_at: MaxPersonDaysAt = "P50",
    max_risk: MaxRisk = None,
    graph_mode: GraphModeOption = "capture",
    no_graph_mode: NoGraphMode = False,
    no_drive: NoDrive = False,
    graph_backend: GraphBackend = "inductor",
    baseline: Baseline = None,
    fail_on_new: FailOnNew = False,
    jobs: Annotated[int | None, typer.Option(
        min=1, help=f"Models scanned at once, each in its own process (default: the number of cores); these "
                    f"options {_SEVERAL}.")] = None,
    timeout: Annotated[float | None, typer.Option(
        min=0.1, help="Seconds one model may take before its worker (with its process group) is killed (default "
                      "600, for one model too).")] = None,
    memory_limit: Annotated[float | None, typer.Option(
        "--memory-limit", min=0, help="GiB of address space a worker may add to what torch and opassess "
                                      "map at start, 0 for none (default: physical memory / the workers that "
                                      "run at once, at least 1 GiB).")] = None,
    resume: Annotated[bool, typer.Option(
        help="Continue an interrupted run in -o DIR without rescanning finished models.")] = False,
    executor: Annotated[str, typer.Option(
        help="Where a portfolio's models run: local (worker processes on this machine) or ray (one Ray task each, "
             "on a Ray cluster; pip install 'opassess[ray]').")] = "local",
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="With --executor ray: the cluster to join (HOST:PORT, ray://HOST:PORT, or auto for "
                              "RAY_ADDRESS); without it a Ray instance is started on this machine.")] = None,
    task: Task = None,
    seq_len: SeqLen = None,
    batch_size: BatchSize = 1,
    trust_remote_code: TrustRemoteCode = False,
    sandbox: Annotated[str, typer.Option(
        help="The model's worker on Linux: auto (the file system read-only but a private temporary folder, and no "
             "network, with Landlock where the kernel has it, else unprivileged user, mount and network namespaces; "
             "the JSON report's 'sandbox' says which applied), require (fail where neither is available), off. It "
             "keeps a model from changing files and reaching the network, not from reading your files or faking "
             f"its own capture. This machine: {available_sandbox()}.")] = "auto",
    quiet: Quiet = False,
    lang: Lang = None,
    label: Label = None,
    debug: Debug = False,
) -> None:
    """Scan models: trace each, classify every operator, estimate the porting effort, write reports, apply CI gates.

    Exit codes: 0 ok, 1 an error (bad input, a failed scan, any model of a portfolio failed), 2 bad usage,
    3 a --fail-on / --max-person-days / --max-risk gate was breached.
    """
    from ..options import OutputOptions, ParallelLayout, ScanOptions

    with reporting_errors(debug), terminating_on_signals():
        policy = build_policy(fail_on, max_person_days, max_risk, graph_backend, max_person_days_at)
        graph_mode = graph_mode_value(graph_mode, no_graph_mode, fail_on)
        out = OutputOptions(fmt=fmt, output=output, templates=templates, quiet=quiet, baseline=baseline,
                            fail_on_new=fail_on_new, handoff=handoff, patch=patch)
        if executor not in ("local", "ray"):
            raise typer.BadParameter("expected local or ray", param_hint="'--executor'")
        if ray_address is not None and executor != "ray":
            raise typer.BadParameter("needs --executor ray", param_hint="'--ray-address'")
        if dtype:
            dtype = dtype_value(dtype, "--dtype", CAST_DTYPES)
        input_dtype = dtype_value(input_dtype, "--input-dtype")
        check_values(capture, profile)
        # the rules between the scan's own options (--amp needs --train, ...) are ScanOptions' (opassess/options.py)
        options = ScanOptions(
            target=targets[0], entry=entry, input_shapes=input_shapes(input_shape),
            input_dtype=input_dtype, dtype=dtype, device=device,
            methods=tuple(m.strip() for m in capture.split(",") if m.strip()) if capture else None, product=product,
            torch_npu=torch_npu, weights=weights, kb_dir=kb, label=label, language=report_language(lang),
            train=train, amp=amp, profile=profile, source=tuple(str(p) for p in source or ()),
            compare=tuple(p.strip() for p in (compare or "").split(",") if p.strip()), device_profile=device_profile,
            **route_values(route, opset, exporter, quant),
            graph_mode=graph_mode, graph_backend=graph_backend,
            parallel=ParallelLayout.parse(parallel) if parallel else None, global_batch=global_batch,
            gpu_baseline=gpu_baseline, match_gpus=match_gpus,
            task=task, seq_len=seq_len, batch_size=batch_size, trust_remote_code=trust_remote_code, sandbox=sandbox,
            drive=not no_drive,
        )
        if gpu_baseline:  # an unknown GPU is bad usage before any model runs
            from ..perf.gpu import gpu_entry

            gpu_entry(gpu_baseline)
        if len(targets) > 1 or any((Path(t).is_dir() and not is_model_folder(t)) or t.endswith(".toml")
                                   for t in targets):
            if baseline is not None:
                raise typer.BadParameter("compares one model; with several, run `opassess diff` on each model's "
                                         "JSON report", param_hint="'--baseline'")
            if label is not None:
                raise typer.BadParameter("names one model; a portfolio names each model by its file",
                                         param_hint="'--label'")
            for name, value in (("--handoff", handoff), ("--patch", patch)):
                if value is not None:
                    raise typer.BadParameter("writes one model's files; scan the models one by one",
                                             param_hint=f"'{name}'")
            _scan_portfolio(targets, options, out, policy, jobs=jobs, timeout=timeout, memory_limit=memory_limit,
                            resume=resume, executor=executor, ray_address=ray_address)
        else:
            given = [name for name, value in (("--jobs", jobs), ("--memory-limit", memory_limit),
                                              ("--resume", resume or None),
                                              ("--executor", None if executor == "local" else executor))
                     if value is not None]
            if given:
                raise typer.BadParameter(_SEVERAL, param_hint=f"'{given[0]}'")
            _scan_one(with_config_defaults(options), out, policy, timeout=timeout, debug=debug)


def _scan_one(options: ScanOptions, out: OutputOptions, policy: Policy, *, timeout: float | None = None,
              debug: bool = False, run: Callable[[ScanOptions, Progress], Assessment] | None = None) -> None:
    """One model, in a worker process (isolation/), or, with `run`, what it assesses in this process (`opassess
    source`, which runs no model code): report, baseline diff, step summary, gates, written here."""
    from ..ci.diff import diff_snapshots
    from ..ci.policy import evaluate
    from ..ci.snapshot import read_snapshot
    from ..ci.summary import STEP_SUMMARY_ENV
    from ..isolation.scan import DEFAULT_TIMEOUT, finish_assessment, in_process, start_assessment
    from ..pipeline.assess import assess
    from ..report import build_view

    chosen = pick_format(out.fmt, out.output)
    if chosen not in REPORTERS:
        raise typer.BadParameter(f"unknown format {chosen!r}; expected one of {_format_names()}",
                                 param_hint="'--format'")
    before = read_snapshot(out.baseline) if out.baseline is not None else None  # a bad one fails before the scan
    output = out.output  # as the user wrote it, in the "wrote ..." line
    if output and output != "-":  # so does an -o that names a device, a FIFO or a folder (checked again on writing)
        from ..output import writable_target

        writable_target(Path(output))
    # Paths are resolved before any model code runs: a model's os.chdir() cannot move them.
    written_to = output if output in (None, "-") else os.path.abspath(output)
    handoff_dir = None if out.handoff is None else Path(os.path.abspath(out.handoff))
    patch_roots = [Path(os.path.abspath(p)) for p in (*options.source, options.target.split(":")[0])]
    model_file = Path(os.path.abspath(options.target.split(":")[0]))  # the hand-offs find it relative to themselves
    options = dataclasses.replace(options, weights=_absolute(options.weights), kb_dir=_absolute(options.kb_dir))
    if run is not None or in_process():  # OPASSESS_IN_PROCESS=1: for a debugger; model output still goes to stderr
        with scan_progress(out.quiet) as progress, contextlib.redirect_stdout(sys.stderr):
            assessment = (run or assess)(options, progress)
    else:
        extra = tuple(Path(p) for p in (out.baseline,) if isinstance(p, (str, Path)) and str(p) != "-")
        started = start_assessment(options, timeout=timeout if timeout is not None else DEFAULT_TIMEOUT,
                                   debug=debug, templates=_absolute(out.templates), extra=extra)
        if started.pinned.kb.overlay is not None and not out.quiet:  # what the gate rests on besides the shipped facts
            typer.echo(f"opassess: knowledge-base overlay: {started.pinned.kb.overlay}", err=True)
        with scan_progress(out.quiet) as progress:  # the spinner's thread starts after the fork
            assessment = finish_assessment(started, options, progress)
    view = build_view(assessment, options.language)
    # the view holds the one JSON document: report, snapshot and gates read it (the snapshot only when a baseline,
    # a gate or the step summary will: a 14,000-site source scan's takes 0.05 s)
    wanted = before is not None or policy.active or bool(os.environ.get(STEP_SUMMARY_ENV))
    after = read_snapshot(view.document) if wanted else None
    diff = diff_snapshots(before, after) if before is not None and after is not None else None
    breaches = evaluate(diff if out.fail_on_new and diff is not None else after, policy) if after is not None \
        else ()  # (it has a baseline)
    _write_report(view, chosen, out, breaches, written_to)
    if handoff_dir is not None:
        from ..handoff import write_handoffs

        written = write_handoffs(view.document, handoff_dir, model_file)
        if not out.quiet:
            typer.echo(f"opassess: wrote {len(written)} hand-off file(s) to {out.handoff}", err=True)
    if out.patch is not None:
        from .patch import write_patch

        write_patch(view.document, out.patch, patch_roots, out.quiet)
    _finish_ci(after, diff, out, breaches, options.language)


def _absolute(path: Path | None) -> Path | None:
    return None if path is None else Path(os.path.abspath(path))


def _write_report(view: View, chosen: str, out: OutputOptions, breaches: Sequence[Breach],
                  output: str | None) -> None:
    """Render the view in the chosen format to `output` (-o made absolute before the scan: the terminal summary to
    the terminal, at its width); the "wrote ..." line names -o as the user wrote it."""
    templates, quiet, shown = out.templates, out.quiet, out.output
    from ..output import write_output
    from ..report import RenderContext, render_view

    to_terminal = chosen == DEFAULT_FORMAT and (output is None or output == "-") and sys.stdout.isatty()
    # COLUMNS is honoured on a terminal and when piped; without it a pipe gets 100 columns
    width = shutil.get_terminal_size((100, 24)).columns
    text = render_view(view, chosen, RenderContext(templates_dir=templates, breaches=tuple(breaches), width=width,
                                                   color=to_terminal))
    if chosen == DEFAULT_FORMAT and (output is None or output == "-"):
        typer.echo(text, nl=False)
    else:
        write_output(text, output or "-")
        if output and output != "-" and not quiet:
            typer.echo(f"opassess: wrote {chosen} report to {shown or output}", err=True)


def _finish_ci(after: Snapshot | None, diff: Diff | None, out: OutputOptions, breaches: Sequence[Breach],
               language: str) -> None:
    """The baseline diff's one-line account, the step summary, then the gates."""
    from ..ci.diff.format import new_custom_dev, render_diff
    from ..ci.summary import STEP_SUMMARY_ENV, append_step_summary, render_summary
    from ..report.text import signed_days

    diff_markdown = None
    if diff is not None:
        diff_markdown = render_diff(diff, "md", templates_dir=out.templates, language=language)  # breaches: below
        counts = {name: len(diff.of(name)) for name in ("added", "removed", "reclassified")}
        typer.echo(f"opassess: against {out.baseline}: {counts['added']} added ({len(new_custom_dev(diff))} "
                   f"custom-dev), {counts['removed']} removed, {counts['reclassified']} re-classified operator types; "
                   f"effort{' (P50)' if diff.p50 else ''} {signed_days(diff.growth, zero_sign=True)} person-days",
                   err=True)
    if after is not None and os.environ.get(STEP_SUMMARY_ENV):  # only for GitHub (its templates: 0.1 s)
        append_step_summary(render_summary(after, diff_markdown=diff_markdown, breaches=breaches,
                                           templates_dir=out.templates, language=language))
    fail_on_breaches([b.message for b in breaches])


def _scan_portfolio(targets: list[str], options: ScanOptions, out: OutputOptions, policy: Policy, *,
                    jobs: int | None, timeout: float | None, memory_limit: float | None, resume: bool,
                    executor: str = "local", ray_address: str | None = None) -> None:
    """Several models, each in its own worker: per-model reports and the portfolio report in -o DIR (the jobs, the
    limits, resuming and where they run are what only a portfolio takes)."""
    from ..ci.summary import append_step_summary
    from ..output import write_files
    from ..portfolio import DEFAULT_TIMEOUT, PortfolioOptions, default_jobs, scan_portfolio
    from ..portfolio.report import portfolio_files
    from ..report.document import headline
    from ..report.text import days

    if not out.output or out.output == "-":
        raise typer.BadParameter("with several models, -o names the directory for the per-model and portfolio "
                                 "reports", param_hint="'--output'")
    per_model = out.fmt or PORTFOLIO_FORMAT
    if per_model not in REPORTERS or per_model == DEFAULT_FORMAT:
        raise typer.BadParameter(f"unknown per-model format {per_model!r}; expected one of "
                                 f"{_format_names(exclude=(DEFAULT_FORMAT,))}", param_hint="'--format'")
    runner = None
    if executor == "ray":
        from ..portfolio.ray_executor import RayExecutor

        runner = RayExecutor(ray_address, jobs)  # without Ray installed: one line, exit 2
    out_dir = Path(out.output)
    portfolio_options = PortfolioOptions(
        targets=tuple(targets), scan=options, out_dir=out_dir,
        formats=() if per_model == "json" else (per_model,), jobs=jobs or default_jobs(),
        timeout=timeout if timeout is not None else DEFAULT_TIMEOUT,
        memory_limit=None if memory_limit is None else _gib_bytes(memory_limit), resume=resume, policy=policy)
    with portfolio_progress(out.quiet) as on_event:
        portfolio = scan_portfolio(portfolio_options, on_event, executor=runner)
    files = portfolio_files(portfolio, templates_dir=out.templates, language=options.language)
    write_files(files, out_dir)  # portfolio.json, .md and .html
    append_step_summary(files["portfolio.md"])
    if not out.quiet:
        resumed = sum(1 for r in portfolio.results if r.resumed)
        typer.echo(f"opassess: {len(portfolio.results)} models, {len(portfolio.results) - len(portfolio.failed)} "
                   f"scanned{f' ({resumed} resumed)' if resumed else ''}, {len(portfolio.failed)} failed; "
                   f"{headline(*portfolio.shared_band)} with operators shared "
                   f"({days(portfolio.standalone_band[1])} one by one); wrote {out_dir / 'portfolio.md'}",
                   err=True)
    for result in portfolio.failed:  # a scan error names its file already: 'pf2/x.py: ...' is said once
        cause = result.cause or ""
        named = cause if cause.startswith(result.target) else f"{result.target}: {cause}"
        typer.echo(f"opassess: error: {one_line(named)}", err=True)
    if portfolio.failed:
        for name, breach in portfolio.breaches:
            typer.echo(f"opassess: policy: {name}: {breach.message}", err=True)
        raise typer.Exit(EXIT_ERROR)
    fail_on_breaches([f"{name}: {breach.message}" for name, breach in portfolio.breaches])


def _gib_bytes(gib: float) -> int:
    """--memory-limit in bytes; infinite or not a number is above any cap, refused by PortfolioOptions."""
    return int(gib * 2**30) if math.isfinite(gib) else 2**64
