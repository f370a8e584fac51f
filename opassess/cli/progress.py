"""Progress on the terminal for `opassess scan`: a status line for one model, a bar across a portfolio's models."""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import typer

from .errors import one_line

if TYPE_CHECKING:
    from ..portfolio.records import PortfolioEvent


def scan_progress(quiet: bool) -> contextlib.AbstractContextManager[Callable[[str], None]]:
    """A progress callback: a rich status line on a terminal's stderr, nothing when stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        return contextlib.nullcontext(lambda _message: None)

    @contextlib.contextmanager
    def status() -> Iterator[Callable[[str], None]]:
        from rich.console import Console

        console = Console(stderr=True)
        with console.status("opassess: starting") as spinner:
            yield lambda message: spinner.update(f"opassess: {message}")

    return status()


def portfolio_progress(quiet: bool) -> contextlib.AbstractContextManager[Callable[[PortfolioEvent], None] | None]:
    """Progress across models: a rich bar (done, running, failed) on a terminal's stderr, else nothing; the line
    saying where a cluster's dashboard is either way (unless --quiet)."""
    if quiet:
        return contextlib.nullcontext(None)

    def dashboard(event: PortfolioEvent) -> None:
        if event.kind == "dashboard":
            typer.echo(f"opassess: Ray dashboard at {event.name}", err=True)

    if not sys.stderr.isatty():
        return contextlib.nullcontext(dashboard)

    @contextlib.contextmanager
    def bar() -> Iterator[Callable[[PortfolioEvent], None]]:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        with Progress(TextColumn("opassess"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.description}"), console=console, transient=True) as progress:
            task = progress.add_task("", total=None)
            running: set[str] = set()
            failed = 0

            def update(event: PortfolioEvent) -> None:
                nonlocal failed
                if event.kind == "dashboard":
                    console.print(f"opassess: Ray dashboard at {event.name}", highlight=False)
                    return
                if event.kind == "start":
                    running.add(event.name)
                else:
                    running.discard(event.name)
                result = event.result
                failure = result is not None and result.status != "ok"
                failed += failure
                verb = {"start": "scanning", "resumed": "resumed", "done": "finished"}.get(event.kind, event.kind)
                cause = f" (failed: {one_line(result.cause)})" if result is not None and failure else ""
                progress.update(task, total=event.total, completed=event.done,
                                description=f"{len(running)} running, {failed} failed; {verb} {event.name}{cause}")

            yield update

    return bar()
