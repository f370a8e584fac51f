"""The one place exceptions become messages and exit codes, shared by every command module.

Exit codes: 0 ok; 1 an error in the input or the scan (one line, no traceback unless --debug); 2 bad command-line
usage; 3 a CI policy was breached; 130 interrupted (SIGINT), 143 terminated (SIGTERM), 129 hung up (SIGHUP).
"""
from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterator

import typer

from ..errors import EXIT_ERROR, EXIT_INTERRUPTED, InternalError, OpassessError, PolicyBreach, UsageError
from ..isolation.signals import Terminated
from ..output import release_stdout
from ..report.text import inert

MESSAGE_LIMIT = 500  # characters of one error line: a model's 1 MB exception text is cut, not printed


def one_line(exc: object) -> str:
    """An error as one inert line of at most MESSAGE_LIMIT characters (the cut is marked)."""
    text = inert(exc, newline=" ")
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT - 1] + "…"


@contextlib.contextmanager
def reporting_errors(debug: bool) -> Iterator[None]:
    """Turn library errors into one line on stderr and an exit code; anything else is an internal error."""
    try:
        yield
    except (typer.Exit, typer.Abort, typer.TyperException):  # usage errors keep their message and exit code 2
        raise
    except UsageError as exc:
        if exc.option is None:
            raise _reported(exc, debug) from None
        # a rule between options (ScanOptions): reported as typer reports a bad value, with the usage line, exit 2
        raise typer.BadParameter(str(exc), param_hint=f"'{exc.option}'") from None
    except InternalError as exc:
        if debug:
            traceback.print_exc()
        typer.echo(f"opassess: internal error: {one_line(exc)} (run with --debug for the traceback)",
                   err=True)
        raise typer.Exit(exc.exit_code) from None
    except OpassessError as exc:
        raise _reported(exc, debug) from None
    except Terminated as exc:  # SIGTERM / SIGHUP: workers and temporary files are gone by now
        typer.echo(f"opassess: terminated by {exc.signal_name}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except BrokenPipeError:  # `opassess scan ... | head -c1`: the reader left before the report was written
        release_stdout()
        typer.echo("opassess: error: standard output was closed before the report was written (the reading end "
                   "of the pipe exited)", err=True)
        raise typer.Exit(EXIT_ERROR) from None
    except KeyboardInterrupt:
        typer.echo("opassess: interrupted", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:  # a bug in opassess itself: say so, still one line unless --debug
        if debug:
            traceback.print_exc()
        typer.echo(f"opassess: internal error: {type(exc).__name__}: {one_line(exc)} (run with --debug for "
                   "the traceback)",
                   err=True)
        raise typer.Exit(EXIT_ERROR) from None


def _reported(exc: OpassessError, debug: bool) -> typer.Exit:
    """An opassess error said in one line on stderr (with its traceback under --debug): the exit to raise."""
    if debug:
        traceback.print_exc()
    typer.echo(f"opassess: error: {one_line(exc)}", err=True)  # one line, whatever the model named
    return typer.Exit(exc.exit_code)


def fail_on_breaches(lines: list[str]) -> None:
    """One line per breach on stderr, then exit 3."""
    if lines:
        for line in lines:
            typer.echo(f"opassess: policy: {inert(line, newline=' ')}", err=True)
        raise typer.Exit(PolicyBreach.exit_code)
