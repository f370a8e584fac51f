"""The reporter registry: format name -> a function that renders the view model to a string."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ReportError

if TYPE_CHECKING:
    from .view import View


@dataclass(frozen=True)
class RenderContext:
    """Per-call rendering options every reporter receives with the view."""

    templates_dir: Path | None = None  # user templates; a template missing there falls back to the shipped one
    width: int = 100  # terminal reporter: console width in columns
    color: bool = False  # terminal reporter: emit ANSI styles (the CLI sets it when stdout is a terminal)
    # CI policy breaches found for this assessment (opassess.ci.policy.Breach): JUnit fails the test cases of the
    # operators named, SARIF raises their results to level "error". Empty when no policy was set or none breached.
    breaches: tuple[Any, ...] = ()


class RenderFunction(Protocol):
    def __call__(self, view: View, context: RenderContext) -> str: ...


@dataclass(frozen=True)
class Reporter:
    """One output format: its name, the file extension a report in it gets, and the function that renders it."""

    name: str
    extension: str  # ".md", ".html", ... (the CLI can name default output files with it)
    render: RenderFunction
    description: str
    other_extensions: tuple[str, ...] = ()  # further suffixes that pick this format from -o's name: ".markdown"

    @property
    def extensions(self) -> tuple[str, ...]:
        return (self.extension, *self.other_extensions)


REPORTERS: dict[str, Reporter] = {}


def register(name: str, *, extension: str, description: str = "", other_extensions: tuple[str, ...] = ()
             ) -> Callable[[RenderFunction], RenderFunction]:
    """Decorator adding a render function to REPORTERS under `name`; registering a name twice is an error."""

    def add(function: RenderFunction) -> RenderFunction:
        if name in REPORTERS:
            raise ReportError(f"report format {name!r} is registered twice "
                              f"({REPORTERS[name].render.__module__} and {function.__module__})")
        doc = (function.__doc__ or "").strip().splitlines()
        REPORTERS[name] = Reporter(name=name, extension=extension, render=function,
                                   description=description or (doc[0] if doc else name),
                                   other_extensions=tuple(other_extensions))
        return function

    return add


def format_for_suffix(suffix: str) -> str | None:
    """The registered format a file suffix names ('.html' -> 'html', '.markdown' -> 'md'), None for none."""
    suffix = suffix.lower()
    return next((r.name for r in REPORTERS.values() if suffix in r.extensions), None)
