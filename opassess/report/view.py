"""The view every reporter renders: the JSON document and the display, both built once per assessment.

`build_view` joins the assessment's stages into rows, builds the document (report/document.py, the JSON contract)
and the display (report/display/build.py, typed records formatted for people) from them, and hands both to every
requested format; `view.document` and `view.display` read them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..assessment import Assessment
from .display.build import build_display
from .display.page import Display
from .display.rows import (  # noqa: F401 - the view's helpers, re-exported for its tests
    heat,
    short_name,
)
from .document import document_of, join_rows
from .reading import DocumentPart, read_document


@dataclass(frozen=True)
class View:
    """What every reporter receives: the JSON document (a plain dict) and the display records."""

    document: dict[str, Any]
    display: Display
    language: str = "en"  # the display's language, which the human formats (terminal, md, html) render in
    parts: DocumentPart | None = None  # the document read back as records (reading.parts_of), decoded once


def build_view(assessment: Assessment, language: str = "en") -> View:
    """The document and the display of `assessment`, each built once; the display in `language` (the human
    formats), the document in English (the JSON contract)."""
    rows = join_rows(assessment)
    document = document_of(assessment, rows)
    parts = read_document(document)
    return View(document=document, display=build_display(assessment, rows, parts, language),
                language=language, parts=parts)
