"""Terminal summary (the default format): totals with the range, categories, top operators, risk grid, next steps."""
from __future__ import annotations

import functools
import io
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...vocabulary import Category, Confidence
from ..registry import RenderContext, register

if TYPE_CHECKING:
    from rich.console import Console, JustifyMethod, OverflowMethod
    from rich.table import Table

    from ..display.page import Display
    from ..display.records import ActionItem
    from ..sections.graph import GraphSection
    from ..sections.routes import OnnxSection, ServingSection
    from ..sections.source import SourceSection
    from ..sections.time import TimeSection
    from ..view import View

Gettext = Callable[[str], str]  # the reader's language: translations(language).gettext

# Styles only; model strings always go in as rich Text objects, so '[bold]' in a module name is shown, not applied,
# and through _inert_text, so an ESC sequence or a carriage return in one is shown as its escape, never run.
CATEGORY_STYLE = {Category.DIRECT: "green", Category.PARAM_CONVERTED: "yellow", Category.CUSTOM_DEV: "red",
                  "unclassified": "dim"}
HEAT_STYLE = {"low": "on dark_green", "moderate": "black on yellow", "high": "black on dark_orange",
              "critical": "white on red"}
CELL_NAMES = 2  # operator names shown per risk cell before "+N"
TERMINAL_TIME_ROWS = 8  # operators in the terminal's time table (Markdown and HTML list more, the JSON every one)
TERMINAL_SITES = 20  # source notes and skipped files listed in the terminal summary (sites: sections/source.LARGEST)
ROUTE_CHARS = 90  # a source site's NPU route is cut here (the Markdown, HTML and JSON reports have it whole)


@functools.cache
def _inert_text() -> type:
    """rich's Text whose constructor and append() show control characters as escapes (report/text.py's inert):
    the Text this module builds. rich's own methods build plain Text, so the line breaks it adds stay breaks."""
    from rich.text import Text

    from ..text import inert

    class InertText(Text):
        def __init__(self, text: str = "", *args: Any, **kwargs: Any) -> None:
            super().__init__(inert(text), *args, **kwargs)

        def append(self, text: Any, style: Any = None) -> Any:
            return super().append(inert(text) if isinstance(text, str) else text, style)

    return InertText


def _add_columns(table: Table, columns: Sequence[tuple[str, JustifyMethod]],
                 overflow: OverflowMethod = "ellipsis") -> None:
    for name, justify in columns:
        table.add_column(name, justify=justify, overflow=overflow)


@register("terminal", extension=".txt", description="rich summary for the terminal (the default)")
def render_terminal(view: View, context: RenderContext) -> str:
    """Render with rich into a string at a fixed width; ANSI styles only when context.color is set: the blocks in
    the order they print, each a function of the console, the display and the reader's gettext."""
    from rich.console import Console

    from ..i18n import translations
    from ..text import inert

    d = view.display
    _ = translations(view.language).gettext
    out = io.StringIO()
    console = Console(file=out, width=context.width, force_terminal=context.color, no_color=not context.color,
                      color_system="standard" if context.color else None, highlight=False, emoji=False,
                      legacy_windows=False, soft_wrap=False)
    for block in (_print_header, _print_effort, _print_categories, _print_top_operators, _print_risk_grid):
        block(console, d, _)
    for section, printer in ((d.time, _print_time), (d.graph, _print_graph), (d.source, _print_source)):
        if section:
            printer(console, section, _)  # type: ignore[operator,arg-type]
    if d.onnx or d.serving:
        _print_routes(console, d.onnx, d.serving, _)
    for index, line in enumerate(d.versions):  # the versions to install, the first (a warning to pin) in bold
        console.print(line, markup=False, style="" if index else "bold")
    for block in (_print_deprecated, _print_activities, _print_decisions, _print_origins, _print_next_report):
        block(console, d, _)
    _print_actions(console, d.actions, context.width, _)
    text = out.getvalue()
    if not context.color:  # rich pads titles and cells to the full width; plain text needs no trailing blanks
        # nor any control character (every model-derived name went through inert already: this is the last guard)
        text = "\n".join(inert(line.rstrip()) for line in text.split("\n"))
    return text


def _print_header(console: Console, d: Display, _: Gettext) -> None:
    """The model, what was captured, what it was assessed against, and why earlier capture methods were not used."""
    Text = _inert_text()  # noqa: N806 - used as the class it is
    model = d.model
    head = Text()
    head.append(model.class_name, style="bold")
    if d.source_only:
        head.append("  " + _("source scan of %s (no model loaded)") % model.source)
        console.print(head)
    else:
        head.append("  " + _("%(source)s · %(parameters)s parameters · %(dtype)s · captured with %(method)s on "
                             "%(device)s") % {"source": model.source, "parameters": model.parameters_text,
                                             "dtype": model.dtype, "method": model.capture_method,
                                             "device": model.device})
        console.print(head)
        step = model.step_text
        console.print(Text(step[:1].upper() + step[1:], style="" if model.training else "dim"))
    console.print(Text(_("Assessed against %(target)s, torch_npu %(torch_npu)s, knowledge base %(kb)s")
                       % {"target": d.target, "torch_npu": d.torch_npu, "kb": d.kb_version}, style="dim"))
    if d.evidence_order:
        console.print(Text(d.evidence_order, style="dim"))
    for attempt in model.attempts:
        if attempt.status == "failed":  # why an earlier capture method was not used
            console.print(Text(_("%(method)s capture not used: %(error)s")
                               % {"method": attempt.method, "error": attempt.error}, style="dim"))
    if model.device_note and not d.source_only:
        console.print(Text(model.device_note, style="yellow"))
    if model.stand_ins_text:
        console.print(Text(model.stand_ins_text, style="yellow"))
    if model.reach_text:
        console.print(Text(model.reach_text, style="yellow"))
    console.print()


def _print_effort(console: Console, d: Display, _: Gettext) -> None:
    """The estimate's headline (P50 with the P10-P90 band), the profile's note and the 20/80 statement."""
    Text = _inert_text()  # noqa: N806
    totals = d.totals
    if d.estimated and totals is not None:
        line = Text(_("Estimated effort: "))
        line.append(_("%s person-days") % totals.p50_text, style="bold")
        line.append(_(" (P10-P90 %(p10)s-%(p90)s)") % {"p10": totals.p10_text, "p90": totals.p90_text})
        console.print(line)  # one headline: P50 and its band; the sums below it, labelled
        console.print(Text(_("Sum of the most likely values %(likely)s, of the lows and highs %(range)s.")
                           % {"likely": totals.likely_text, "range": totals.range_text}, style="dim"))
        console.print(Text(_("%(sentence)s.") % {"sentence": d.band_text}, style="dim"))
        console.print(Text(_("Profile %(name)s: %(note)s.") % {"name": d.profile, "note": d.assumptions},
                           style="dim"))
        if d.pareto_statement:
            console.print(Text(_("20/80: %s.") % d.pareto_statement))
    else:
        console.print(Text(_("Not estimated: the classification and estimate stages did not run."), style="yellow"))
    console.print()


def _print_categories(console: Console, d: Display, _: Gettext) -> None:
    """Types, calls and effort per category (not for a source scan alone: its section counts the sites)."""
    from rich.table import Table

    Text = _inert_text()  # noqa: N806
    if d.source_only:
        return
    categories = Table(title=_("Categories"), title_justify="left", show_edge=False, pad_edge=False)
    _add_columns(categories, ((_("Category"), "left"), (_("Types"), "right"), (_("Calls"), "right"),
                              (_("Person-days"), "right"), (_("Range"), "right"), (_("Share"), "right")))
    for c in d.categories:
        categories.add_row(Text(c.name, style=CATEGORY_STYLE.get(c.name, "")), str(c.types),
                           str(c.occurrences), c.likely_text, c.range_text, c.share_text)
    console.print(categories)
    console.print()


def _print_top_operators(console: Console, d: Display, _: Gettext) -> None:
    """The largest operators: category (unknown, confidence), calls, effort and risk stars; the step with --train."""
    from rich.table import Table

    Text = _inert_text()  # noqa: N806
    if not d.top_operators:
        return
    training = d.model.training
    title = _("Top operators by effort") if d.estimated else _("Operators (not estimated)")
    top = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    columns: list[tuple[str, JustifyMethod]] = [
        ("#", "right"), (_("Operator"), "left"), (_("Category"), "left"), (_("Calls"), "right"),
        (_("Person-days"), "right"), (_("Range"), "right"), (_("Risk"), "left")]
    if training:  # which part of the training step each operator belongs to
        columns.insert(2, ("Step", "left"))
    _add_columns(top, columns, overflow="fold")
    for op in d.top_operators:
        category = Text(op.category, style=CATEGORY_STYLE.get(op.category, ""))
        if not op.known:
            category.append(" " + _("(unknown)"), style="dim")
        if op.confidence:
            category.append(f" · {op.confidence}", style="dim")
        step = [Text(_(op.step_text))] if training else []
        top.add_row(str(op.rank), Text(op.op), *step, category, str(op.count), op.likely_text,
                    op.range_text, Text(op.stars_text))
    console.print(top)
    console.print()


def _print_risk_grid(console: Console, d: Display, _: Gettext) -> None:
    """The 5 x 5 risk matrix, likelihood 5 at the top, a cell's first names and '+N more', coloured by heat."""
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text as RichText

    from ..text import inert

    Text = _inert_text()  # noqa: N806
    if not d.risk_grid:
        return
    impacts = d.risk_grid.impacts
    rows = d.risk_grid.rows
    caption = (_("rows: likelihood 1 %(l1)s to 5 %(l5)s; columns: impact 1 %(i1)s to 5 %(i5)s")
               % {"l1": rows[-1].label, "l5": rows[0].label, "i1": impacts[0].label, "i5": impacts[-1].label})
    grid = Table(title=_("Risk matrix (likelihood by impact)"), title_justify="left", show_lines=True, expand=True,
                 caption=caption, caption_justify="left")
    grid.add_column("L\\I", justify="center", no_wrap=True, width=3)
    for impact in impacts:
        # Equal columns; names are cut with an ellipsis rather than folded mid-word (the HTML has them whole).
        grid.add_column(str(impact.impact), justify="center", no_wrap=True, overflow="ellipsis", ratio=1)
    for row in rows:
        cells = []
        for cell in row.cells:
            shown = cell.shorts[:CELL_NAMES]
            text = RichText("\n".join(inert(name) for name in shown) if shown else "·")
            if cell.count > CELL_NAMES:
                text.append("\n" + _("+%d more") % (cell.count - CELL_NAMES))
            cells.append(Padding(text, 0, style=HEAT_STYLE[cell.heat] if cell.count else ""))
        grid.add_row(Text(str(row.likelihood)), *cells)
    console.print(grid)
    console.print()


def _print_deprecated(console: Console, d: Display, _: Gettext) -> None:
    """One line per operator whose replacement the facts mark deprecated, with its successor if there is one."""
    Text = _inert_text()  # noqa: N806
    for op in d.operators:
        if op.replacement_deprecated:
            line = Text(_("Deprecated replacement: "), style="yellow")
            names = {"op": op.op, "replacement": op.replacement, "name": op.replacement_successor}
            line.append((_("%(op)s -> %(replacement)s is deprecated in the facts, successor %(name)s.") % names)
                        if op.replacement_successor else
                        _("%(op)s -> %(replacement)s is deprecated in the facts, no successor.") % names)
            console.print(line)


def _print_activities(console: Console, d: Display, _: Gettext) -> None:
    """The model-level activities, and which direct operators the validation line covers."""
    from rich.table import Table

    Text = _inert_text()  # noqa: N806
    if not d.activities:
        return
    lines = Table(title=_("Model-level activities"), title_justify="left", show_edge=False, pad_edge=False)
    _add_columns(lines, ((_("Activity"), "left"), (_("Person-days"), "right"), (_("Range"), "right"),
                         (_("Basis"), "left")), overflow="fold")
    for a in d.activities:
        lines.add_row(Text(a.title), a.likely_text, a.range_text, Text(a.basis))
    console.print(lines)
    if d.validation_block:
        console.print(Text(_("%(n)d direct operator type(s) are validated together in the validation line; "
                             "zero-cost (no device work): %(ops)s.") % {
            "n": len(d.validation_block), "ops": ", ".join(d.zero_cost) or _("none")}, style="dim"))
    console.print()


def _print_decisions(console: Console, d: Display, _: Gettext) -> None:
    """The model-level decisions: a table of their costs, then each one's operators and plan."""
    from rich.table import Table

    Text = _inert_text()  # noqa: N806
    if not d.decisions:
        return
    table = Table(title=_("Decisions (priced once, plus a check per operator)"), title_justify="left",
                  show_edge=False, pad_edge=False)
    _add_columns(table, ((_("Decision"), "left"), (_("Person-days"), "right"), (_("Range"), "right"),
                         (_("Basis"), "left")), overflow="fold")
    for item in d.decisions:
        table.add_row(Text(item.title), item.likely_text, item.range_text, Text(item.basis))
    console.print(table)
    for item in d.decisions:
        console.print(Text(f"{item.title}: {', '.join(item.operators)}", style="dim"))
        for line in item.plan:
            console.print(Text(f"  - {line}", style="dim"))
    console.print()


def _print_origins(console: Console, d: Display, _: Gettext) -> None:
    """Effort by origin (the project, each upstream library, model-level), when there is more than one."""
    from rich.table import Table

    Text = _inert_text()  # noqa: N806
    if len(d.origins) <= 1:
        return
    origins = Table(title=_("Effort by origin"), title_justify="left", show_edge=False, pad_edge=False)
    _add_columns(origins, ((_("Origin"), "left"), (_("Person-days"), "right"), (_("Share"), "right"),
                           (_("Who"), "left")), overflow="fold")
    for o in d.origins:
        origins.add_row(Text(o.origin), o.likely_text, o.share_text, Text(o.who))
    console.print(origins)
    console.print()


def _print_next_report(console: Console, d: Display, _: Gettext) -> None:
    """The operators unknown to the knowledge base, and the command that writes the full report."""
    Text = _inert_text()  # noqa: N806
    if d.unknown:
        unknown = Text(_("Unknown to the knowledge base: "), style="yellow")
        unknown.append(", ".join(op.op for op in d.unknown))
        console.print(unknown)
    hint = Text(_("Full report: "), style="dim")
    command = "source" if d.source_only else "scan"
    hint.append(f"opassess {command} {d.model.source} -f html -o {d.suggested_html}")
    console.print(hint, soft_wrap=True)
    console.print(Text(_("(also -f md, -f json, -f csv)"), style="dim"))
    console.print()


def _print_graph(console: Console, section: GraphSection, _: Gettext) -> None:
    """Graph mode: one line per back-end (ready, or its first blockers with file:line), then the effort item."""
    Text = _inert_text()  # noqa: N806
    console.print(Text(_("Graph mode (%s):") % section.method_text, style="bold"))
    for line in section.lines:
        text = Text(f"  {line.backend}{' *' if line.chosen else ''}: ")
        text.append(line.text, style="green" if line.ready else "yellow")
        console.print(text)
    if section.effort_text:
        console.print(Text(f"  {section.effort_text}", style="dim"))
    console.print(Text("  " + _("%(sentence)s.") % {"sentence": section.unseen}, style="dim"))
    console.print()


def _print_time(console: Console, section: TimeSection, _: Gettext) -> None:
    """The time model: the step (an estimate), the compared products, the operators carrying most time at risk."""
    from rich.table import Table
    Text = _inert_text()  # noqa: N806 - model-derived names shown as escapes

    for lead in section.lead:  # what does not fit, before any time
        console.print(Text(lead, style="bold red"))
    line = Text(_("Time on %s: ") % section.product, style="bold")
    line.append(section.headline + (f": {section.by_unit_text}" if section.by_unit_text else ""))
    console.print(line)
    console.print(Text(_("Every time here is an %s.") % section.estimate, style="dim"))
    for text in section.job:
        console.print(Text(text))
    if section.compare:
        table = Table(show_edge=False, pad_edge=False)
        _add_columns(table, ((_("Product"), "left"), (_("Step"), "right"), (_("At risk"), "right"),
                             (_("By unit"), "left")), overflow="fold")
        for c in section.compare:
            table.add_row(c.product, c.step_text, c.at_risk_text, c.by_unit_text or c.note)
        console.print(table)
    if section.rows:
        table = Table(title=_("Operators by time at risk (estimate)"), title_justify="left", show_edge=False,
                      pad_edge=False)
        _add_columns(table, ((_("Operator"), "left"), (_("Time"), "right"), (_("At risk"), "right"),
                             (_("Unit"), "left"), (_("Penalties"), "left")), overflow="fold")
        for r in section.rows[:TERMINAL_TIME_ROWS]:
            table.add_row(Text(r.op), r.us_text, r.at_risk_text, r.unit, r.penalties_text)
        console.print(table)
    console.print()


def _print_routes(console: Console, onnx: OnnxSection | None, serving: ServingSection | None, _: Gettext
                   ) -> None:
    """The ONNX -> ATC section (gaps first, every row) and the serving check's lines."""
    from rich.table import Table
    Text = _inert_text()  # noqa: N806 - model-derived names shown as escapes

    if onnx:
        table = Table(title=_("ONNX -> ATC: %s") % onnx.summary, title_justify="left", show_edge=False,
                      pad_edge=False)
        _add_columns(table, ((_("ONNX op"), "left"), (_("Nodes"), "right"), (_("CANN op"), "left"),
                             (_("Verdict"), "left")), overflow="fold")
        for row in onnx.rows:
            style = "" if row.verdict == _("supported") else "yellow"  # the rows carry the reader's words
            table.add_row(Text(row.op_type), str(row.count), Text(row.cann_op), Text(row.verdict, style))
        console.print(table)
        for failure in onnx.failures:
            what = f"{failure.exporter} {failure.op}".strip()
            console.print(Text(_("Export failure (%(what)s): %(message)s") % {
                "what": what, "message": failure.message[:300]}, style="yellow" if failure.finding else "dim"))
        console.print(Text(onnx.limits, style="dim"))
        console.print()
    if serving:
        table = Table(title=_("Serving: %s") % serving.summary, title_justify="left", show_edge=False,
                      pad_edge=False)
        for name in (_("Checked"), _("Status"), _("Detail")):
            table.add_column(name, overflow="fold")
        for check in serving.rows:
            table.add_row(Text(check.subject), Text(check.status, "" if check.status == _("supported") else "yellow"),
                          Text(check.detail))
        console.print(table)
        console.print()


def _print_source(console: Console, section: SourceSection, _: Gettext) -> None:
    """The source scan's sites: work (category, route, person-days, stars), then the notes, then skipped files."""
    from rich.table import Table
    Text = _inert_text()  # noqa: N806 - model-derived names shown as escapes

    if section.work:
        table = Table(title=_("Source findings: %s") % section.summary, title_justify="left", show_edge=False,
                      pad_edge=False)
        _add_columns(table, ((_("Site"), "left"), (_("Found"), "left"), (_("Category"), "left"),
                             (_("NPU route"), "left"), (_("Person-days"), "right"), (_("Risk"), "left")),
                     overflow="fold")
        for row in section.largest:
            found = Text(f"{row.subject} ({row.kind})")
            if row.size_text:
                found.append(f"; {row.size_text}", style="dim")
            route = Text(row.route if len(row.route) <= ROUTE_CHARS else row.route[:ROUTE_CHARS - 1] + "…")
            if row.notes_text:
                route.append(f"; {row.notes_text}", style="yellow")
            category = Text(row.category, style=CATEGORY_STYLE.get(row.category, ""))
            if row.confidence == Confidence.LOW:
                category.append(" · low", style="dim")
            table.add_row(Text(row.location), found, category, route, row.likely_text, Text(row.stars_text))
        console.print(table)
        if len(section.work) > len(section.largest):
            console.print(Text(_("%(n)d more sites, each smaller: every site is in the Markdown, HTML and JSON "
                                 "reports.") % {"n": len(section.work) - len(section.largest)}, style="dim"))
    else:
        console.print(Text(_("Source findings: %s") % section.summary))
    for row in section.notes[:TERMINAL_SITES]:
        console.print(Text(_("Note (no work): %(site)s %(subject)s: %(route)s")
                           % {"site": row.location, "subject": row.subject, "route": row.route}, style="dim"))
    for skipped in section.skipped[:TERMINAL_SITES]:
        console.print(Text(_("Not scanned: %(file)s: %(reason)s") % {"file": skipped.file, "reason": skipped.reason},
                           style="yellow"))
    console.print()


def _print_actions(console: Console, actions: Sequence[ActionItem], width: int, _: Gettext = str) -> None:
    """The action items, last: one per operator that needs work or finding, wrapped by hand (names break at '.'
    and '::', never mid-word) so they read at 80 columns."""
    from ..sections.plan import wrap

    Text = _inert_text()  # noqa: N806
    if not actions:
        console.print(Text(_("Action items: none: every operator runs as is; bring up, validate and tune "
                             "(see the model-level activities).")))
        return
    console.print(Text(_("Action items:"), style="bold"))
    for item in actions:
        days = f" [{item.days_text}]" if item.days_text else ""
        time = f"; {item.time_text}" if item.time_text else ""
        text = f"- {item.kind}: {item.subject}: {item.action}{days}{time}"
        for line in wrap(text, width, indent="    "):
            console.print(Text(line), overflow="ignore", crop=False)
