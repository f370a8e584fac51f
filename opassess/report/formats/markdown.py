"""Markdown report for pull requests and planning documents (GitHub-flavoured, templates/md.j2)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import RenderContext, register

if TYPE_CHECKING:
    from ..view import View

TEMPLATE = "md.j2"


@register("md", extension=".md", other_extensions=(".markdown",),
          description="GitHub Markdown: summary, Mermaid pie, risk grid, collapsible lists")
def render_markdown(view: View, context: RenderContext) -> str:
    """The display part of the view through md.j2; runs of blank lines left by template tags collapse to one."""
    from ..templates import render_template  # jinja2 loads when a template is rendered, not at start-up

    text = render_template(TEMPLATE, "markdown", view.display.context(), context.templates_dir, view.language)
    return _tidy(text)


def _tidy(text: str) -> str:
    lines: list[str] = []
    for line in text.splitlines():
        line = line.rstrip()
        if line or (lines and lines[-1]):
            lines.append(line)
    return "\n".join(lines).strip("\n") + "\n"
