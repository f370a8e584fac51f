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
    if d["evidence_order"]:
        console.print(Text(d["evidence_order"], style="dim"))
    for attempt in model["attempts"]:
        if attempt["status"] == "failed":  # why an earlier capture method was not used
            console.print(Text(f"{attempt['method']} capture not used: {attempt['error']}", style="dim"))
    if model["device_note"]:
        console.print(Text(model["device_note"], style="yellow"))
    console.print()

    if d["estimated"]:
        totals = d["totals"]
        line = Text("Estimated effort: ")
        line.append(f"{totals['likely_text']} person-days", style="bold")
        line.append(f" likely (range {totals['range_text']}; P50 {totals['p50_text']}, P90 {totals['p90_text']})")
        console.print(line)
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
            if op["confidence"]:
                category.append(f" · {op['confidence']}", style="dim")
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

    if d["unknown"]:
        unknown = Text("Unknown to the knowledge base: ", style="yellow")
        unknown.append(", ".join(op["op"] for op in d["unknown"]))
        console.print(unknown)
    hint = Text("Full report: ", style="dim")
    hint.append(f"opassess scan {model['source']} -f html -o {d['suggested_html']}")
    console.print(hint, soft_wrap=True)
    console.print(Text("(also -f md, -f json, -f csv)", style="dim"))
    text = out.getvalue()
    if not context.color:  # rich pads titles and cells to the full width; plain text needs no trailing blanks
        text = "\n".join(line.rstrip() for line in text.split("\n"))
    return text
