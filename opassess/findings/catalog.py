"""patterns.toml's sentences for the message catalog: a Babel extractor, so the data file stays the one place a pattern
is written and `make messages` puts its titles and effects into every .po (the English text is the message id).

babel.cfg names it (`[extractors] patterns = opassess.findings.catalog:extract_patterns`); the catalog test extracts
with the same mapping, so a pattern added without a translation fails it (docs/reports.md, "Report language").
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .patterns import load_patterns


def extract_patterns(fileobj: IO[bytes], keywords: Any, comment_tags: Any, options: Any
                     ) -> Iterator[tuple[int, None, str, list[str]]]:
    """(line, funcname, message, comments) for every effect and title of a patterns file, in the file's order."""
    book = load_patterns(Path(fileobj.name))
    lines = fileobj.read().decode("utf-8").splitlines()
    for text in book.texts():
        head = text.split("{")[0][:40]
        line = next((number for number, content in enumerate(lines, 1) if head and head in content), 0)
        yield line, None, text, []
