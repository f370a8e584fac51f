"""Terminal summary (the default format): totals with the range, categories, top operators, risk grid, next steps."""
from __future__ import annotations

import io
from typing import Any

from ...vocabulary import Category
from ..registry import RenderContext, register

# Styles only; model strings always go in as rich Text objects, so '[bold]' in a module name is shown, not applied.
CATEGORY_STYLE = {Category.DIRECT: "green", Category.PARAM_CONVERTED: "yellow", Category.CUSTOM_DEV: "red",
                  "unclassified": "dim"}
HEAT_STYLE = {"low": "on dark_green", "moderate": "black on yellow", "high": "black on dark_orange",
              "critical": "white on red"}
CELL_NAMES = 2  # operator names shown per risk cell before "+N"


@register("terminal", extension=".txt", description="rich summary for the terminal (the default)")
def render_terminal(view: dict[str, Any], context: RenderContext) -> str:
    """Render with rich into a string at a fixed width; ANSI styles only when context.color is set."""
    from rich.console import Console
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    d = view["display"]
    model = d["model"]
    out = io.StringIO()
    console = Console(file=out, width=context.width, force_terminal=context.color, no_color=not context.color,
                      color_system="standard" if context.color else None, highlight=False, emoji=False,
                      legacy_windows=False, soft_wrap=False)

    head = Text()
    head.append(model["class_name"], style="bold")
    head.append(f"  {model['source']} · {model['parameters_text']} parameters · {model['dtype']} · "
                f"captured with {model['capture_method']} on {model['device']}")
    console.print(head)
    console.print(Text(f"Assessed against {d['target']}, torch_npu {d['torch_npu']}, knowledge base {d['kb_version']}",
                       style="dim"))
    for attempt in model["attempts"]:
        if attempt["status"] == "failed":  # why an earlier capture method was not used
            console.print(Text(f"{attempt['method']} capture not used: {attempt['error']}", style="dim"))
    if model["device_note"]:
        console.print(Text(model["device_note"], style="yellow"))
    console.print()

    if d["estimated"]:
        totals = d["totals"]
        line = Text("Estimated effort: ")
        line.append(f"{totals['p50_text']} person-days", style="bold")
        line.append(f" (P10-P90 {totals['p10_text']}-{totals['p90_text']}; likely {totals['likely_text']}, range "
                    f"{totals['range_text']})")
        console.print(line)
        console.print(Text(f"{d['band_text']}.", style="dim"))
        console.print(Text(f"Profile {d['profile']}: {d['assumptions']}.", style="dim"))
        if d["pareto_statement"]:
            console.print(Text(f"20/80: {d['pareto_statement']}."))
    else:
        console.print(Text("Not estimated: the classification and estimate stages did not run.", style="yellow"))
    console.print()

    categories = Table(title="Categories", title_justify="left", show_edge=False, pad_edge=False)
    for name, justify in (("Category", "left"), ("Types", "right"), ("Calls", "right"), ("Person-days", "right"),
                          ("Range", "right"), ("Share", "right")):
        categories.add_column(name, justify=justify)
    for c in d["categories"]:
        categories.add_row(Text(c["name"], style=CATEGORY_STYLE.get(c["name"], "")), str(c["types"]),
                           str(c["occurrences"]), c["likely_text"], c["range_text"], c["share_text"])
    console.print(categories)
    console.print()

    if d["top_operators"]:
        title = "Top operators by effort" if d["estimated"] else "Operators (not estimated)"
        top = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
        for name, justify in (("#", "right"), ("Operator", "left"), ("Category", "left"), ("Calls", "right"),
                              ("Person-days", "right"), ("Range", "right"), ("Risk", "left")):
            top.add_column(name, justify=justify, overflow="fold")
        for op in d["top_operators"]:
            category = Text(op["category"], style=CATEGORY_STYLE.get(op["category"], ""))
            if not op["known"]:
                category.append(" (unknown)", style="dim")
            top.add_row(str(op["rank"]), Text(op["op"]), category, str(op["count"]), op["likely_text"],
                        op["range_text"], Text(op["stars_text"]))
        console.print(top)
        console.print()

    if d["risk_grid"]:
        impacts = d["risk_grid"]["impacts"]
        rows = d["risk_grid"]["rows"]
        caption = (f"rows: likelihood 1 {rows[-1]['label']} to 5 {rows[0]['label']}; "
                   f"columns: impact 1 {impacts[0]['label']} to 5 {impacts[-1]['label']}")
        grid = Table(title="Risk matrix (likelihood by impact)", title_justify="left", show_lines=True, expand=True,
                     caption=caption, caption_justify="left")
        grid.add_column("L\\I", justify="center", no_wrap=True, width=3)
        for impact in impacts:
            # Equal columns; names are cut with an ellipsis rather than folded mid-word (the HTML has them whole).
            grid.add_column(str(impact["impact"]), justify="center", no_wrap=True, overflow="ellipsis", ratio=1)
        for row in rows:
            cells = []
            for cell in row["cells"]:
                shown = cell["shorts"][:CELL_NAMES]
                text = Text("\n".join(shown) if shown else "·")
                if cell["count"] > CELL_NAMES:
                    text.append(f"\n+{cell['count'] - CELL_NAMES} more")
                cells.append(Padding(text, 0, style=HEAT_STYLE[cell["heat"]] if cell["count"] else ""))
            grid.add_row(Text(str(row["likelihood"])), *cells)
        console.print(grid)
        console.print()

    if d["activities"]:
        lines = Table(title="Model-level activities", title_justify="left", show_edge=False, pad_edge=False)
        for name, justify in (("Activity", "left"), ("Person-days", "right"), ("Range", "right"),
                              ("Basis", "left")):
            lines.add_column(name, justify=justify, overflow="fold")
        for a in d["activities"]:
            lines.add_row(Text(a["title"]), a["likely_text"], a["range_text"], Text(a["basis"]))
        console.print(lines)
        if d["validation_block"]:
            console.print(Text(f"{len(d['validation_block'])} direct operator type(s) are validated together in the "
                               f"validation line; zero-cost (no device work): "
                               f"{', '.join(d['zero_cost']) or 'none'}.", style="dim"))
        console.print()
    if len(d["origins"]) > 1:
        origins = Table(title="Effort by origin", title_justify="left", show_edge=False, pad_edge=False)
        for name, justify in (("Origin", "left"), ("Person-days", "right"), ("Share", "right"), ("Who", "left")):
            origins.add_column(name, justify=justify, overflow="fold")
        for o in d["origins"]:
            origins.add_row(Text(o["origin"]), o["likely_text"], o["share_text"], Text(o["who"]))
        console.print(origins)
        console.print()

    if d["unknown"]:
        unknown = Text("Unknown to the knowledge base: ", style="yellow")
        unknown.append(", ".join(op["op"] for op in d["unknown"]))
        console.print(unknown)
    hint = Text("Full report: ", style="dim")
    hint.append(f"opassess scan {model['source']} -f html -o {d['suggested_html']}")
    console.print(hint, soft_wrap=True)
    console.print(Text("(also -f md, -f json, -f csv)", style="dim"))
    console.print()
    _print_actions(console, d["actions"], context.width)
    text = out.getvalue()
    if not context.color:  # rich pads titles and cells to the full width; plain text needs no trailing blanks
        text = "\n".join(line.rstrip() for line in text.split("\n"))
    return text


def _print_actions(console: Any, actions: Any, width: int) -> None:
    """The action items, last: one per operator that needs work or finding, wrapped by hand (names break at '.'
    and '::', never mid-word) so they read at 80 columns."""
    from rich.text import Text

    from ..plan_view import wrap

    if not actions:
        console.print(Text("Action items: none: every operator runs as is; bring up, validate and tune "
                           "(see the model-level activities)."))
        return
    console.print(Text("Action items:", style="bold"))
    for item in actions:
        days = f" [{item['days_text']}]" if item["days_text"] else ""
        text = f"- {item['kind']}: {item['subject']}: {item['action']}{days}"
        for line in wrap(text, width, indent="    "):
            console.print(Text(line), overflow="ignore", crop=False)
