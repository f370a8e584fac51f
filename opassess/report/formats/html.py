"""Self-contained HTML report (templates/html.j2 with html.css and html.js inlined): works offline, escapes the
model, and runs only its own script: the Content-Security-Policy names that script by its SHA-256 hash."""
from __future__ import annotations

import base64
import hashlib
import re
from typing import TYPE_CHECKING

from ..registry import RenderContext, register

if TYPE_CHECKING:
    from ..view import View

TEMPLATE = "html.j2"
# html.j2's policy says `script-src 'opassess-script-hash'`; the hash of the page's own script replaces it.
SCRIPT_HASH_PLACEHOLDER = "'opassess-script-hash'"
_SCRIPTS = re.compile(r"<script\b[^>]*>(.*?)</script>", re.DOTALL | re.IGNORECASE)


def script_hash(script: str) -> str:
    """The CSP source allowing exactly this inline script: "'sha256-<base64 of SHA-256 of its UTF-8 bytes>'"."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii") + "'"


def with_script_hash(page: str) -> str:
    """`page` with the policy's placeholder replaced by the hash of the page's last <script> element, the one
    html.j2 places after the body's content, computed from its exact text. Any other script (one that escaping
    let through, were it to fail) is not listed and so does not run; a page without a script allows none."""
    if SCRIPT_HASH_PLACEHOLDER not in page:
        return page
    scripts = _SCRIPTS.findall(page)
    return page.replace(SCRIPT_HASH_PLACEHOLDER, script_hash(scripts[-1]) if scripts else "'none'", 1)


@register("html", extension=".html", other_extensions=(".htm",),
          description="one self-contained offline page: risk heat map, Pareto chart, sortable and filterable "
                      "operator table with evidence")
def render_html(view: View, context: RenderContext) -> str:
    """The display part of the view through html.j2 (autoescaped), its script allowed by hash."""
    from ..templates import render_template  # jinja2 loads when a template is rendered, not at start-up

    return with_script_hash(render_template(TEMPLATE, "html", view.display.context(), context.templates_dir,
                                            view.language))
