"""Portfolio report: the plan of a multi-model scan as JSON (portfolio_format_version 1) or Markdown
(templates/portfolio.md.j2); numbers are formatted here, the template only places them."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from ..errors import ReportError
from ..messages import joined
from .records import Portfolio
from ..report.document import effort_doc as _effort_doc
from ..report.document import headline
from ..report.templates import escape_markdown
from ..report.text import days, days_range, percent, share

PORTFOLIO_FORMAT_VERSION = 1
PORTFOLIO_FORMATS = ("json", "md", "html")


def portfolio_document(portfolio: Portfolio) -> dict[str, Any]:
    """The JSON document of a portfolio."""
    saved = portfolio.standalone_total.likely - portfolio.shared_total.likely
    return {
        "portfolio_format_version": PORTFOLIO_FORMAT_VERSION,
        "models": [{"name": r.name, "target": r.target, "status": r.status, "cause": r.cause,
                    "reports": list(r.reports), "seconds": round(r.seconds, 3), "resumed": r.resumed}
                   for r in portfolio.results],
        "skipped": [{"path": s.path, "reason": s.reason} for s in portfolio.skipped],
        "person_days": {"standalone": _effort_doc(portfolio.standalone_total),
                        "shared": _effort_doc(portfolio.shared_total), "saved_likely": round(saved, 2),
                        # the headline: P50 of the simulated shared total with its P10-P90 band
                        "headline": headline(*(round(v, 2) for v in portfolio.shared_band)),
                        "shared_band": _band_doc(portfolio.shared_band),
                        "standalone_band": _band_doc(portfolio.standalone_band),
                        "saved_p50": round(portfolio.standalone_band[1] - portfolio.shared_band[1], 2)},
        "plan": [{"order": i + 1, "name": p.name, "target": p.target, "standalone": _effort_doc(p.standalone),
                  "marginal": _effort_doc(p.marginal), "cumulative": _effort_doc(p.cumulative),
                  "model_level": _effort_doc(p.model_level),
                  "new_ops": list(p.new_ops), "extended_ops": list(p.extended_ops), "shared_ops": list(p.shared_ops),
                  "custom_dev": list(p.custom_dev), "costs": {op: _effort_doc(cost) for op, cost in p.costs}}
                 for i, p in enumerate(portfolio.plan)],
        "custom_dev": [{"rank": i + 1, "op": d.op, "unblocks": len(d.models), "models": list(d.models),
                        "sole_blocker_of": list(d.sole_blocker_of), "person_days": _effort_doc(d.effort)}
                       for i, d in enumerate(portfolio.custom_dev)],
        "breaches": [{"model": name, "rule": b.rule, "op": b.op, "message": b.message, "source": b.source}
                     for name, b in portfolio.breaches],
    }


def _band_doc(band: tuple[float, float, float]) -> dict[str, float]:
    return {"p10": round(band[0], 2), "p50": round(band[1], 2), "p90": round(band[2], 2)}


def _band_text(band: tuple[float, float, float]) -> str:
    return f"P10-P90 {days(band[0])}-{days(band[2])}"


def _link(name: str, reports: tuple[str, ...]) -> Markup:
    """'[resnet\\_like](resnet_like.md)': the model's Markdown report when written, else its JSON report."""
    target = next((f for f in reports if f.endswith(".md")), next(iter(reports), None))
    text = escape_markdown(name)
    return Markup(f"[{text}]({quote(target)})" if target else text)


def portfolio_view(portfolio: Portfolio) -> dict[str, Any]:
    """The portfolio with every number formatted, for templates/portfolio.md.j2."""
    ok = [r for r in portfolio.results if r.status == "ok"]
    saved = portfolio.standalone_band[1] - portfolio.shared_band[1]  # P50s, as the headline
    saved_share = share(saved, portfolio.standalone_band[1])
    reports = {r.name: r.reports for r in portfolio.results}
    return {
        "models": len(portfolio.results),
        "scanned": len(ok),
        "resumed": sum(1 for r in portfolio.results if r.resumed),
        "failed": [{"name": r.name, "target": r.target, "cause": r.cause or ""} for r in portfolio.failed],
        "skipped": [{"path": s.path, "reason": s.reason} for s in portfolio.skipped],
        "standalone_text": days(portfolio.standalone_band[1]),
        "standalone_band_text": _band_text(portfolio.standalone_band),
        "standalone_likely": days(portfolio.standalone_total.likely),
        "shared_text": days(portfolio.shared_band[1]),
        "shared_band_text": _band_text(portfolio.shared_band),
        "shared_likely": days(portfolio.shared_total.likely),
        "shared_range": days_range(portfolio.shared_total),
        "saved_text": days(saved),
        "saved_share": percent(saved_share),
        "plan": [{"order": i + 1, "name": p.name, "target": p.target,
                  "link": _link(p.name, reports.get(p.name, ())), "report": _page(reports.get(p.name, ())),
                  "standalone_text": days(p.standalone.likely), "marginal_text": days(p.marginal.likely),
                  "cumulative_text": days(p.cumulative.likely), "new": len(p.new_ops),
                  "extended": len(p.extended_ops), "shared": len(p.shared_ops), "custom_dev": list(p.custom_dev)}
                 for i, p in enumerate(portfolio.plan)],
        "custom_dev": [{"rank": i + 1, "op": d.op, "unblocks": len(d.models), "models": list(d.models),
                        "sole": list(d.sole_blocker_of), "likely_text": days(d.effort.likely),
                        "range_text": days_range(d.effort)} for i, d in enumerate(portfolio.custom_dev)],
        "breaches": [joined([name, b.message], ": ") for name, b in portfolio.breaches],  # said in the page's language
    }


def _page(reports: tuple[str, ...]) -> str:
    """The per-model report a web page links to: its HTML report, else Markdown, else JSON ('' when none)."""
    for suffix in (".html", ".md", ".json"):
        found = next((r for r in reports if r.endswith(suffix)), None)
        if found:
            return quote(found)
    return ""


def render_portfolio(portfolio: Portfolio, fmt: str, *, templates_dir: Path | None = None,
                     language: str = "en") -> str:
    """The portfolio report as 'json', 'md' or 'html' (the page for management, in `language`)."""
    if fmt == "json":
        return json.dumps(portfolio_document(portfolio), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if fmt in ("md", "html"):
        return _render_page(portfolio_view(portfolio), fmt, templates_dir, language)
    raise ReportError(f"a portfolio report is {' or '.join(PORTFOLIO_FORMATS)}, not {fmt!r}")


def portfolio_files(portfolio: Portfolio, *, templates_dir: Path | None = None, language: str = "en"
                    ) -> dict[str, str]:
    """portfolio.json, portfolio.md and portfolio.html (file name -> text), the view built once for both pages."""
    view = portfolio_view(portfolio)
    return {"portfolio.json": render_portfolio(portfolio, "json"),
            "portfolio.md": _render_page(view, "md", templates_dir, language),
            "portfolio.html": _render_page(view, "html", templates_dir, language)}


def _render_page(view: dict[str, Any], fmt: str, templates_dir: Path | None, language: str) -> str:
    """The Markdown or HTML page of a portfolio view, through its template."""
    from ..report.templates import render_template

    if fmt == "md":
        text = render_template("portfolio.md.j2", "markdown", view, templates_dir, language)
        return text if text.endswith("\n") else text + "\n"
    return render_template("portfolio.html.j2", "html", view, templates_dir, language)
