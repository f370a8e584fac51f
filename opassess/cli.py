"""The command line: parses flags, calls the library, picks a reporter, writes; the one place that prints and exits.

Exit codes: 0 ok; 1 an error in the input or the scan (one line, no traceback unless --debug); 2 bad command-line
usage; 3 a CI policy was breached.
"""
from __future__ import annotations

import contextlib
import shutil
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from .errors import EXIT_ERROR, OpassessError, PolicyBreach

app = typer.Typer(
    name="opassess",
    help="Assess how hard it is to move a PyTorch model's operators to the Ascend NPU (torch_npu / CANN).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_EXTENSIONS = {".json": "json", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".csv": "csv",
               ".sarif": "sarif", ".xml": "junit", ".txt": "terminal"}


@contextlib.contextmanager
def reporting_errors(debug: bool) -> Iterator[None]:
    """Turn library errors into one line on stderr and an exit code; anything else is an internal error."""
    try:
        yield
    except (typer.Exit, typer.Abort, typer.TyperException):  # usage errors keep their message and exit code 2
        raise
    except OpassessError as exc:
        if debug:
            traceback.print_exc()
        typer.echo(f"opassess: error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        typer.echo("opassess: interrupted", err=True)
        raise typer.Exit(130) from None
    except Exception as exc:  # a bug in opassess itself: say so, still one line unless --debug
        if debug:
            traceback.print_exc()
        typer.echo(f"opassess: internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
                   err=True)
        raise typer.Exit(EXIT_ERROR) from None


def _progress(quiet: bool):
    """A progress callback: a rich status line on a terminal's stderr, nothing when stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        return contextlib.nullcontext(lambda _message: None)

    @contextlib.contextmanager
    def status():
        from rich.console import Console

        console = Console(stderr=True)
        with console.status("opassess: starting") as spinner:
            yield lambda message: spinner.update(f"opassess: {message}")

    return status()


def pick_format(fmt: str | None, output: str | None) -> str:
    """The report format: -f when given, else from -o's extension, else the terminal summary."""
    if fmt:
        return fmt
    if output and output != "-":
        return _EXTENSIONS.get(Path(output).suffix.lower(), "terminal")
    return "terminal"


_SEVERAL = "apply when scanning several models (more than one target, or a directory)"


def _policy(fail_on: list[str] | None, max_person_days: float | None, max_risk: int | None):
    from .policy import FAIL_ON, Policy

    for value in fail_on or ():
        if value not in FAIL_ON:
            raise typer.BadParameter(f"{value!r}: expected one of {', '.join(FAIL_ON)}", param_hint="'--fail-on'")
    return Policy(fail_on=tuple(dict.fromkeys(fail_on or ())), max_person_days=max_person_days, max_risk=max_risk)


def _fail_on_breaches(lines: list[str]) -> None:
    """One line per breach on stderr, then exit 3."""
    if lines:
        for line in lines:
            typer.echo(f"opassess: policy: {line}", err=True)
        raise typer.Exit(PolicyBreach.exit_code)


FailOn = Annotated[list[str] | None, typer.Option("--fail-on", help="CI gate (repeatable): exit 3 when an operator is 'custom-dev', 'param-converted' (or worse) or 'unknown' to the knowledge base.")]
MaxPersonDays = Annotated[float | None, typer.Option("--max-person-days", min=0, help="CI gate: exit 3 when the likely effort exceeds N person-days (with a baseline and --fail-on-new: when it grows by more than N).")]
MaxRisk = Annotated[int | None, typer.Option("--max-risk", min=1, max=5, help="CI gate: exit 3 when an operator's risk exceeds STARS (1-5).")]
Templates = Annotated[Path | None, typer.Option(help="A directory of report templates overriding the shipped ones.")]
Debug = Annotated[bool, typer.Option(help="Show tracebacks.")]


@app.command()
def scan(
    targets: Annotated[list[str], typer.Argument(help="Model files (each defines build_model() and example_inputs()), directories of model files, or package.module:factory. Several make a portfolio.", metavar="TARGET")],
    fmt: Annotated[str | None, typer.Option("--format", "-f", help="Report format: terminal, md, html, json, csv, sarif, junit (default: from -o's extension, else terminal). With several models: the per-model format written besides JSON (default md).")] = None,
    output: Annotated[str | None, typer.Option("--output", "-o", help="Write the report here ('-' for stdout). With several models: the directory for the per-model and portfolio reports.")] = None,
    entry: Annotated[str | None, typer.Option(help="Factory to call instead of build_model: FUNC or FILE:FUNC.")] = None,
    input_shape: Annotated[list[str] | None, typer.Option("--input-shape", help="Shape of one input tensor, e.g. 1,3,224,224 (repeatable, one per positional input); used instead of the file's example_inputs().")] = None,
    input_dtype: Annotated[str, typer.Option(help="dtype of the tensors built from --input-shape.")] = "float32",
    dtype: Annotated[str | None, typer.Option(help="Assess the model as it would run in mixed precision: float16 or bfloat16.")] = None,
    device: Annotated[str, typer.Option(help="Device to build and run the model on: meta (no weights allocated) or cpu.")] = "meta",
    capture: Annotated[str | None, typer.Option(help="Capture methods to try, in order, comma-separated: fx, dispatch, dispatch-compiling, export (default: that order; dispatch first above 1e9 parameters).")] = None,
    product: Annotated[str, typer.Option("--target", help="Ascend product assessed against: 'Atlas A2', 'Atlas A3', 'Ascend 950DT', 'Atlas training'.")] = "Atlas A2",
    torch_npu: Annotated[str | None, typer.Option("--torch-npu", help="torch / torch_npu version assessed against (default: the newest in the knowledge base).")] = None,
    weights: Annotated[Path | None, typer.Option(help="A weights.toml to use instead of the shipped one.")] = None,
    kb: Annotated[Path | None, typer.Option("--kb", help="A knowledge-base directory to use instead of the shipped one.")] = None,
    templates: Templates = None,
    fail_on: FailOn = None,
    max_person_days: MaxPersonDays = None,
    max_risk: MaxRisk = None,
    baseline: Annotated[Path | None, typer.Option(help="A JSON report of an earlier scan: report operators added, removed and re-classified and the change in effort.")] = None,
    fail_on_new: Annotated[bool, typer.Option("--fail-on-new", help="Apply the CI gates to what changed since --baseline only.")] = False,
    jobs: Annotated[int | None, typer.Option(min=1, help=f"Models scanned at once, each in its own process (default: the number of cores); these options {_SEVERAL}.")] = None,
    timeout: Annotated[float | None, typer.Option(min=0.1, help="Seconds one model may take before its worker is killed (default 600).")] = None,
    memory_limit: Annotated[float | None, typer.Option("--memory-limit", min=0, help="GiB of address space per worker, 0 for none (default: physical memory / jobs).")] = None,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run in -o DIR without rescanning finished models.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
    debug: Debug = False,
) -> None:
    """Scan models: trace each, classify every operator, estimate the porting effort, write reports, apply CI gates.

    Exit codes: 0 ok, 1 an error (bad input, a failed scan, any model of a portfolio failed), 2 bad usage,
    3 a --fail-on / --max-person-days / --max-risk gate was breached.
    """
    from .load import normalise_dtype, parse_shape
    from .pipeline import ScanOptions

    with reporting_errors(debug):
        policy = _policy(fail_on, max_person_days, max_risk)
        if fail_on_new and baseline is None:
            raise typer.BadParameter("needs --baseline (the report the new operators are compared with)",
                                     param_hint="'--fail-on-new'")
        if device not in ("meta", "cpu"):
            raise typer.BadParameter("expected meta or cpu", param_hint="'--device'")
        if dtype:
            dtype = normalise_dtype(dtype, option="--dtype")
            if dtype not in ("float16", "bfloat16", "float32"):
                raise typer.BadParameter("expected float16 or bfloat16", param_hint="'--dtype'")
        options = ScanOptions(
            target=targets[0], entry=entry, input_shapes=tuple(parse_shape(s) for s in input_shape or ()),
            input_dtype=input_dtype, dtype=dtype, device=device,
            methods=tuple(m.strip() for m in capture.split(",") if m.strip()) if capture else None, product=product,
            torch_npu=torch_npu, weights=weights, kb_dir=kb,
        )
        if len(targets) > 1 or any(Path(t).is_dir() for t in targets):
            if baseline is not None:
                raise typer.BadParameter("compares one model; with several, run `opassess diff` on each model's "
                                         "JSON report", param_hint="'--baseline'")
            _scan_portfolio(targets, options, fmt=fmt, output=output, templates=templates, policy=policy,
                            jobs=jobs, timeout=timeout, memory_limit=memory_limit, resume=resume, quiet=quiet)
        else:
            given = [name for name, value in (("--jobs", jobs), ("--timeout", timeout),
                                              ("--memory-limit", memory_limit), ("--resume", resume or None))
                     if value is not None]
            if given:
                raise typer.BadParameter(_SEVERAL, param_hint=f"'{given[0]}'")
            _scan_one(options, fmt=fmt, output=output, templates=templates, policy=policy, baseline=baseline,
                      fail_on_new=fail_on_new, quiet=quiet)


def _scan_one(options, *, fmt, output, templates, policy, baseline, fail_on_new, quiet) -> None:
    """One model, in this process: report, baseline diff, step summary, gates."""
    from .diff import diff_snapshots, render_diff
    from .pipeline import assess
    from .policy import evaluate
    from .report import formats, render
    from .report.summary import append_step_summary, render_summary
    from .report.write import write_output
    from .snapshot import read_snapshot

    chosen = pick_format(fmt, output)
    if chosen not in formats():
        raise typer.BadParameter(f"unknown format {chosen!r}; expected one of {', '.join(formats())}",
                                 param_hint="'--format'")
    before = read_snapshot(baseline) if baseline is not None else None  # a bad baseline fails before the scan
    # The model's own code runs inside assess(): whatever it prints goes to stderr, so stdout carries the report only.
    with _progress(quiet) as progress, contextlib.redirect_stdout(sys.stderr):
        assessment = assess(options, progress)
    after = read_snapshot(assessment)
    diff = diff_snapshots(before, after) if before is not None else None
    breaches = evaluate(diff if fail_on_new else after, policy)
    to_terminal = chosen == "terminal" and (output is None or output == "-") and sys.stdout.isatty()
    width = shutil.get_terminal_size((100, 24)).columns if to_terminal else 100
    text = render(assessment, chosen, templates_dir=templates, breaches=breaches, width=width, color=to_terminal)
    if chosen == "terminal" and (output is None or output == "-"):
        typer.echo(text, nl=False)
    else:
        write_output(text, output or "-")
        if output and output != "-" and not quiet:
            typer.echo(f"opassess: wrote {chosen} report to {output}", err=True)
    diff_markdown = None
    if diff is not None:
        diff_markdown = render_diff(diff, "md", templates_dir=templates)  # the summary lists the breaches
        counts = {name: len(diff.of(name)) for name in ("added", "removed", "reclassified")}
        new_custom = sum(1 for c in diff.changes if c.worse and c.after and c.after.category == "custom-dev")
        typer.echo(f"opassess: against {baseline}: {counts['added']} added ({new_custom} custom-dev), "
                   f"{counts['removed']} removed, {counts['reclassified']} re-classified operator types; effort "
                   f"{diff.effort.likely:+.1f} person-days", err=True)
    append_step_summary(render_summary(after, diff_markdown=diff_markdown, breaches=breaches,
                                       templates_dir=templates))
    _fail_on_breaches([b.message for b in breaches])


def _portfolio_progress(quiet: bool):
    """A rich progress bar across models on a terminal's stderr; nothing otherwise."""
    if quiet or not sys.stderr.isatty():
        return contextlib.nullcontext(None)

    @contextlib.contextmanager
    def bar():
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("opassess"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.description}"), console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task("", total=None)

            def update(event) -> None:
                verb = {"start": "scanning", "resumed": "resumed", "done": "finished"}.get(event.kind, event.kind)
                failed = f" (failed: {event.result.cause})" if event.result and event.result.status != "ok" else ""
                progress.update(task, total=event.total, completed=event.done,
                                description=f"{verb} {event.name}{failed}")

            yield update

    return bar()


def _scan_portfolio(targets, options, *, fmt, output, templates, policy, jobs, timeout, memory_limit, resume,
                    quiet) -> None:
    """Several models, each in its own worker: per-model reports and the portfolio report in -o DIR."""
    from .portfolio import PortfolioOptions, default_jobs, scan_portfolio
    from .report import formats
    from .report.portfolio import render_portfolio
    from .report.summary import append_step_summary
    from .report.write import write_output

    if not output or output == "-":
        raise typer.BadParameter("with several models, -o names the directory for the per-model and portfolio "
                                 "reports", param_hint="'--output'")
    per_model = fmt or "md"
    if per_model not in formats() or per_model == "terminal":
        raise typer.BadParameter(f"unknown per-model format {per_model!r}; expected one of "
                                 f"{', '.join(f for f in formats() if f != 'terminal')}", param_hint="'--format'")
    out_dir = Path(output)
    portfolio_options = PortfolioOptions(
        targets=tuple(targets), scan=options, out_dir=out_dir,
        formats=() if per_model == "json" else (per_model,), jobs=jobs or default_jobs(),
        timeout=timeout if timeout is not None else 600.0,
        memory_limit=None if memory_limit is None else int(memory_limit * 2**30), resume=resume, policy=policy)
    with _portfolio_progress(quiet) as on_event:
        portfolio = scan_portfolio(portfolio_options, on_event)
    markdown = render_portfolio(portfolio, "md", templates_dir=templates)
    write_output(render_portfolio(portfolio, "json"), out_dir / "portfolio.json")
    write_output(markdown, out_dir / "portfolio.md")
    append_step_summary(markdown)
    if not quiet:
        resumed = sum(1 for r in portfolio.results if r.resumed)
        typer.echo(f"opassess: {len(portfolio.results)} models, {len(portfolio.results) - len(portfolio.failed)} "
                   f"scanned{f' ({resumed} resumed)' if resumed else ''}, {len(portfolio.failed)} failed; "
                   f"{portfolio.shared_total.likely:.1f} person-days with operators shared "
                   f"({portfolio.standalone_total.likely:.1f} one by one); wrote {out_dir / 'portfolio.md'}",
                   err=True)
    for result in portfolio.failed:
        typer.echo(f"opassess: error: {result.target}: {result.cause}", err=True)
    if portfolio.failed:
        for name, breach in portfolio.breaches:
            typer.echo(f"opassess: policy: {name}: {breach.message}", err=True)
        raise typer.Exit(EXIT_ERROR)
    _fail_on_breaches([f"{name}: {breach.message}" for name, breach in portfolio.breaches])


@app.command("diff")
def diff_command(
    before: Annotated[Path, typer.Argument(help="The baseline JSON report.")],
    after: Annotated[Path, typer.Argument(help="The new JSON report.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="md (for a pull-request comment) or json.")] = "md",
    output: Annotated[str, typer.Option("--output", "-o", help="Write the diff here ('-' for stdout).")] = "-",
    fail_on: FailOn = None,
    max_person_days: MaxPersonDays = None,
    max_risk: MaxRisk = None,
    templates: Templates = None,
    debug: Debug = False,
) -> None:
    """Compare two JSON reports: operators added, removed and re-classified, and the change in effort.

    The CI gates apply to what changed (a known custom-dev operator in the baseline does not fail, a new one does).
    Exit codes: 0 ok, 1 an unreadable report, 2 bad usage, 3 a gate was breached.
    """
    from .diff import diff_snapshots, render_diff
    from .policy import evaluate
    from .report.write import write_output
    from .snapshot import read_snapshot

    with reporting_errors(debug):
        policy = _policy(fail_on, max_person_days, max_risk)
        if fmt not in ("md", "json"):
            raise typer.BadParameter(f"{fmt!r}: expected md or json", param_hint="'--format'")
        difference = diff_snapshots(read_snapshot(before), read_snapshot(after))
        breaches = evaluate(difference, policy)
        write_output(render_diff(difference, fmt, breaches=breaches, templates_dir=templates), output)
        _fail_on_breaches([b.message for b in breaches])


# Commands that live beside their library code.
from .cli_calibrate import calibrate_command  # noqa: E402
from .cli_kb import explain, kb_app  # noqa: E402

app.add_typer(kb_app, name="kb", help="Show or refresh the knowledge base of Ascend NPU facts.")
app.command("explain")(explain)
app.command("calibrate")(calibrate_command)


def main() -> None:
    """Console-script entry point."""
    app()
