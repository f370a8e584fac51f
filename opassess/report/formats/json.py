"""JSON report (format_version 1): the view model's document, as described by assessment.schema.json."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..registry import RenderContext, register

if TYPE_CHECKING:
    from ..view import View


@register("json", extension=".json",
          description="machine-readable report (format_version 1, see assessment.schema.json)")
def render_json(view: View, context: RenderContext) -> str:
    """The JSON document, indented, keys in the documented order, ending with a newline."""
    return json.dumps(view.document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
