"""Self-contained HTML report (templates/html.j2 with html.css and html.js inlined): works offline, escapes the
model."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import RenderContext, register

if TYPE_CHECKING:
    from ..view import View

TEMPLATE = "html.j2"


@register("html", extension=".html", other_extensions=(".htm",),
          description="one self-contained offline page: risk heat map, Pareto chart, sortable and filterable "
                      "operator table with evidence")
def render_html(view: View, context: RenderContext) -> str:
    """The display part of the view through html.j2 (autoescaped)."""
    from ..templates import render_template  # jinja2 loads when a template is rendered, not at start-up

    return render_template(TEMPLATE, "html", view["display"].context(), context.templates_dir, view.language)
