"""The command line: parses flags, calls the library, picks a reporter, writes; the one place that prints and exits.

Exit codes: 0 ok; 1 an error in the input or the scan (one line, no traceback unless --debug); 2 bad command-line
usage; 3 a CI policy was breached.
"""
from __future__ import annotations

import contextlib
import sys
import traceback
from pathlib import Path
from typing import Annotated, Iterator, Optional

import typer

from .errors import EXIT_ERROR, OpassessError

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


def pick_format(fmt: Optional[str], output: Optional[str]) -> str:
    """The report format: -f when given, else from -o's extension, else the terminal summary."""
    if fmt:
        return fmt
    if output and output != "-":
        return _EXTENSIONS.get(Path(output).suffix.lower(), "terminal")
    return "terminal"


@app.command()
def scan(
    target: Annotated[str, typer.Argument(help="Model file (defines build_model() and example_inputs()) or package.module:factory.")],
    fmt: Annotated[Optional[str], typer.Option("--format", "-f", help="Report format: terminal, md, html, json, csv (default: from -o's extension, else terminal).")] = None,
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Write the report here ('-' for stdout).")] = None,
    entry: Annotated[Optional[str], typer.Option(help="Factory to call instead of build_model: FUNC or FILE:FUNC.")] = None,
    input_shape: Annotated[Optional[list[str]], typer.Option("--input-shape", help="Shape of one input tensor, e.g. 1,3,224,224 (repeatable); used when the file has no example_inputs().")] = None,
    input_dtype: Annotated[str, typer.Option(help="dtype of the tensors built from --input-shape.")] = "float32",
    dtype: Annotated[Optional[str], typer.Option(help="Assess the model as it would run in mixed precision: float16 or bfloat16.")] = None,
    device: Annotated[str, typer.Option(help="Device to build and run the model on: meta (no weights allocated) or cpu.")] = "meta",
    capture: Annotated[str, typer.Option(help="Capture methods to try, in order, comma-separated: fx, export, dispatch.")] = "fx,export,dispatch",
    product: Annotated[str, typer.Option("--target", help="Ascend product assessed against: 'Atlas A2', 'Atlas A3', 'Ascend 950DT', 'Atlas training'.")] = "Atlas A2",
    torch_npu: Annotated[Optional[str], typer.Option("--torch-npu", help="torch / torch_npu version assessed against (default: the newest in the knowledge base).")] = None,
    weights: Annotated[Optional[Path], typer.Option(help="A weights.toml to use instead of the shipped one.")] = None,
    kb: Annotated[Optional[Path], typer.Option("--kb", help="A knowledge-base directory to use instead of the shipped one.")] = None,
    templates: Annotated[Optional[Path], typer.Option(help="A directory of report templates overriding the shipped ones.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
    debug: Annotated[bool, typer.Option(help="Show tracebacks.")] = False,
) -> None:
    """Scan a model: trace it, classify every operator, estimate the porting effort and write a report."""
    from .load import parse_shape, normalise_dtype
    from .pipeline import ScanOptions, assess
    from .report import formats, render
    from .report.write import write_output

    with reporting_errors(debug):
        chosen = pick_format(fmt, output)
        if chosen not in formats():
            raise typer.BadParameter(f"unknown format {chosen!r}; expected one of {', '.join(formats())}",
                                     param_hint="'--format'")
        if device not in ("meta", "cpu"):
            raise typer.BadParameter("expected meta or cpu", param_hint="'--device'")
        if dtype:
            dtype = normalise_dtype(dtype, option="--dtype")
            if dtype not in ("float16", "bfloat16", "float32"):
                raise typer.BadParameter("expected float16 or bfloat16", param_hint="'--dtype'")
        options = ScanOptions(
            target=target, entry=entry, input_shapes=tuple(parse_shape(s) for s in input_shape or ()),
            input_dtype=input_dtype, dtype=dtype, device=device,
            methods=tuple(m.strip() for m in capture.split(",") if m.strip()), product=product,
            torch_npu=torch_npu, weights=weights, kb_dir=kb,
        )
        with _progress(quiet) as progress:
            assessment = assess(options, progress)
        text = render(assessment, chosen, templates_dir=templates)
        if chosen == "terminal" and (output is None or output == "-"):
            typer.echo(text, nl=False)
        else:
            write_output(text, output or "-")
            if output and output != "-" and not quiet:
                typer.echo(f"opassess: wrote {chosen} report to {output}", err=True)


def _register_optional_commands() -> None:
    """Commands that live beside their library code (kb, explain, calibrate)."""
    with contextlib.suppress(ImportError):
        from .cli_kb import explain, kb_app

        app.add_typer(kb_app, name="kb", help="Show or refresh the knowledge base of Ascend NPU facts.")
        app.command("explain")(explain)
    with contextlib.suppress(ImportError):
        from .cli_calibrate import calibrate_command

        app.command("calibrate")(calibrate_command)


_register_optional_commands()


def main() -> None:
    """Console-script entry point."""
    app()
