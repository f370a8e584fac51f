"""The profile document rendered: json, md, html, terminal (a registry of pure string renderers, as report/registry.py
does for scan reports; the CLI writes the string through output.py).

Every format reads the same rows (`profile_view`): the numbers are formatted once there, the renderers only lay
them out. Names from the export are untrusted text: inert() for the terminal, escaped for Markdown and HTML.
"""
from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ReportError
from ..report.text import MISSING, inert, percent

Renderer = Callable[[Mapping[str, Any]], str]
PROFILE_FORMATS: dict[str, Renderer] = {}
OP_HEADER = ("operator", "measured us", "calls", "placement", "predicted us", "ratio")
UNMATCHED_HEADER = ("kernel", "type", "placement", "calls", "measured us", "why")
CHECK_HEADER = ("check", "operator", "kernel", "finding", "fix")


def register(name: str) -> Callable[[Renderer], Renderer]:
    """Add a renderer under `name`; a name registered twice is an error."""

    def add(function: Renderer) -> Renderer:
        if name in PROFILE_FORMATS:
            raise ReportError(f"profile format {name!r} is registered twice")
        PROFILE_FORMATS[name] = function
        return function

    return add


def render_profile(document: Mapping[str, Any], fmt: str) -> str:
    if fmt not in PROFILE_FORMATS:
        raise ReportError(f"unknown profile format {fmt!r}: expected one of {', '.join(PROFILE_FORMATS)}")
    return PROFILE_FORMATS[fmt](document)


def _us(value: float | None) -> str:
    return MISSING if value is None else f"{value:,.1f}"


def _calls(value: float) -> str:
    return f"{value:g}"


def profile_view(document: Mapping[str, Any]) -> dict[str, Any]:
    """Titles and rows of strings, for the text formats."""
    summary, profile = document["summary"], document["profile"]
    ops = [(r["op"], _us(r["measured_us"]), _calls(r["calls"]), r["placement"], _us(r["predicted_us"]),
            MISSING if r["ratio"] is None else f"{r['ratio']:.2f}x") for r in document["operators"]]
    unmatched = [(r["name"], r["type"] or MISSING, r["placement"] or MISSING, _calls(r["calls"]),
                  _us(r["measured_us"]), r["why"]) for r in document["unmatched"]]
    checks = [(c["check"], c["op"] or "", c["kernel"] or "", c["message"], c["fix"] or "")
              for c in document["checks"]]
    share = summary["matched_share"]
    level0 = "; Level0: shapes and placement read N/A" if profile["level0"] else ""
    facts = [
        f"export: {', '.join(profile['variants'])} ({len(profile['files'])} file(s), {profile['kernels']} kernel "
        f"launches, {profile['steps']} step(s), {profile['devices']} device(s)){level0}",
        f"report: {document['report']['model']} on {document['report']['target']}",
        f"measured {_us(summary['measured_us'])} us per step and device; joined to operators "
        f"{_us(summary['matched_us'])} us"
        + (f" ({percent(share)})" if share is not None else ""),
        ("predicted " + _us(summary["predicted_us"]) + " us for the joined operators (the report's time model)")
        if summary["predicted_us"] is not None else ("predicted: no joined operator carries the report's "
                                                                "time model (estimated_time)"),
    ]
    return {"title": f"Profile of {document['report']['model']}", "facts": facts, "operators": ops,
            "unmatched": unmatched, "checks": checks}


@register("json")
def render_json(document: Mapping[str, Any]) -> str:
    """The document itself (profile.schema.json)."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _md_cell(text: str) -> str:
    return inert(text, newline=" ").replace("|", "\\|")


def _md_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return lines


@register("md")
def render_markdown(document: Mapping[str, Any]) -> str:
    """Markdown: facts, operators slowest first, checks, unmatched kernels."""
    view = profile_view(document)
    lines = [f"# {_md_cell(view['title'])}", "", *[f"- {_md_cell(f)}" for f in view["facts"]], "",
             "## Operators, slowest first", "", *_md_table(OP_HEADER, view["operators"]), "",
             "## Checks", ""]
    lines += _md_table(CHECK_HEADER, view["checks"]) if view["checks"] else ["No check fired."]
    lines += ["", "## Unmatched kernels", ""]
    lines += _md_table(UNMATCHED_HEADER, view["unmatched"]) if view["unmatched"] else ["Every kernel was joined."]
    return "\n".join(lines) + "\n"


def _html_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


@register("html")
def render_html(document: Mapping[str, Any]) -> str:
    """One self-contained HTML page."""
    view = profile_view(document)
    facts = "".join(f"<li>{html.escape(f)}</li>" for f in view["facts"])
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        # like the scan's HTML report: nothing is fetched or run, whatever an export's names hold
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{html.escape(view['title'])}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "table{border-collapse:collapse;margin-bottom:1.5em}td,th{border:1px solid #ccc;padding:.25em .5em;"
        "text-align:left}</style></head><body>"
        f"<h1>{html.escape(view['title'])}</h1><ul>{facts}</ul>"
        f"<h2>Operators, slowest first</h2>{_html_table(OP_HEADER, view['operators'])}"
        f"<h2>Checks</h2>{_html_table(CHECK_HEADER, view['checks']) if view['checks'] else '<p>No check fired.</p>'}"
        "<h2>Unmatched kernels</h2>"
        + (_html_table(UNMATCHED_HEADER, view["unmatched"]) if view["unmatched"]
           else "<p>Every kernel was joined.</p>")
        + "</body></html>\n"
    )


def _text_table(header: tuple[str, ...], rows: list[tuple[str, ...]], limit: int = 60) -> list[str]:
    cells = [tuple(inert(c, newline=" ")[:limit] for c in row) for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


@register("terminal")
def render_terminal(document: Mapping[str, Any]) -> str:
    """Plain text for a terminal: the same sections as Markdown."""
    view = profile_view(document)
    lines = [inert(view["title"]), *[f"  {inert(f)}" for f in view["facts"]], "", "Operators, slowest first",
             *_text_table(OP_HEADER, view["operators"]), "", "Checks"]
    lines += _text_table(CHECK_HEADER, view["checks"], 90) if view["checks"] else ["  none fired"]
    lines += ["", "Unmatched kernels"]
    lines += _text_table(UNMATCHED_HEADER, view["unmatched"], 90) if view["unmatched"] else ["  none"]
    return "\n".join(lines) + "\n"
