"""The command line: parses flags, calls the library, picks a reporter, writes; the one place that prints and exits.

Each command lives in its own module (scan, source, diff, kb, calibrate, profile); every one of them runs its work
inside `reporting_errors` (cli/errors.py), the one place exceptions become messages and exit codes:
0 ok; 1 an error in the input or the scan (one line, no traceback unless --debug); 2 bad command-line usage;
3 a CI policy was breached.
"""
from __future__ import annotations

import os
import sys

import typer

from ..errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK
from .calibrate import calibrate_command
from .diff import diff_command
from .errors import reporting_errors
from .kb import explain, kb_app
from .options import ScanCommand
from .profile import profile_command
from .scan import pick_format, scan
from .source import source_command

__all__ = ["app", "main", "pick_format", "reporting_errors", "run"]

app = typer.Typer(
    name="opassess",
    help="Assess how hard it is to move a PyTorch model's operators to the Ascend NPU (torch_npu / CANN).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts are plain: 'opassess[ray]' keeps its brackets
)
app.command("scan", cls=ScanCommand)(scan)
app.command("source")(source_command)
app.command("diff")(diff_command)
app.add_typer(kb_app, name="kb", help="Show or refresh the knowledge base of Ascend NPU facts.")
app.command("explain")(explain)
app.command("calibrate")(calibrate_command)
app.command("profile")(profile_command)


def main() -> None:
    """The command line as a function (raises SystemExit with the exit code, as click does)."""
    app()


def _interrupted_unsaid(exc: BaseException) -> bool:
    """A KeyboardInterrupt typer turned into exit 130 without a word (raised `from` it), not one reporting_errors
    already said (raised `from None`)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen.__cause__, KeyboardInterrupt):
            return True
        seen = seen.__context__
    return False


def run() -> None:
    """What the console script and `python -m opassess` run (opassess/__main__.py, once it has imported this module
    with the collector paused): main(), then the process ends at once with its exit code. Every report has been
    written, fsynced and closed by then, and stdout and stderr are flushed here; what is skipped is the interpreter's
    teardown of torch's modules (about a second of a cold scan's wall time, for nothing). An exception other than
    SystemExit propagates as usual."""
    try:
        main()
        code = EXIT_OK
    except SystemExit as exc:
        if _interrupted_unsaid(exc):  # Ctrl-C before a command's own handler: typer exits 130 saying nothing
            print("opassess: interrupted", file=sys.stderr)
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or EXIT_OK
        else:  # SystemExit("message"): printed the way the interpreter prints it
            print(exc.code, file=sys.stderr)
            code = EXIT_ERROR
    except KeyboardInterrupt:  # Ctrl-C while typer still builds the commands, before any command's own handler
        print("opassess: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe on stdout: the exit code stands
            code = code or EXIT_ERROR
    os._exit(code)
