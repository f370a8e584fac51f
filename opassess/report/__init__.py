"""Reports: build the view model once from an Assessment and render it in any registered format.

Every module in opassess/report/formats registers itself with `@register(name, extension=...)`; adding a
format (SARIF, JUnit, ...) is one new module there, discovered at import time.
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ReportError
from ..output import write_output
from . import formats as _formats
from .registry import REPORTERS, RenderContext, Reporter, register

if TYPE_CHECKING:
    from ..assessment import Assessment
    from .view import View, build_view

__all__ = ["REPORTERS", "RenderContext", "Reporter", "View", "build_view", "formats", "register", "render",
           "render_view", "write_output"]

for _module in sorted(pkgutil.iter_modules(_formats.__path__), key=lambda m: m.name):
    importlib.import_module(f"{_formats.__name__}.{_module.name}")


def formats() -> tuple[str, ...]:
    """Names of the registered report formats, in a stable order."""
    return tuple(sorted(REPORTERS))


def render(assessment: Assessment, fmt: str, *, templates_dir: Path | None = None, width: int = 100,
           color: bool = False, breaches: Iterable[Any] = (), language: str = "en") -> str:
    """Render `assessment` as `fmt` ('json', 'md', 'html', 'csv', 'terminal', 'sarif', 'junit', ...) and return the
    text; `breaches` (opassess.ci.policy.Breach) mark the operators a CI policy failed on."""
    from .view import build_view

    return render_view(build_view(assessment, language), fmt, RenderContext(templates_dir=templates_dir, width=width,
                                                                  color=color, breaches=tuple(breaches)))


def __getattr__(name: str) -> Any:
    """View and build_view load on first use: the view pulls the display, the KB evidence and the scoring, which
    `import opassess.cli` (and `opassess --help`) should not pay for."""
    if name in ("View", "build_view"):
        from . import view

        return getattr(view, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def render_view(view: View, fmt: str, context: RenderContext | None = None) -> str:
    """Render a view built once (build_view) as `fmt`: several formats of one assessment share its view."""
    reporter = REPORTERS.get(fmt)
    if reporter is None:
        raise ReportError(f"unknown report format {fmt!r}; choose one of {', '.join(formats())}")
    return reporter.render(view, context or RenderContext())
