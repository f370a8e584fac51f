"""source_facts.json's human texts for the message catalog: a Babel extractor (as kb/catalog.py is for rules.toml), so
the generated kernel-library and migration facts stay the one place their routes and notes are written and `make
messages` puts them into every .po (the English text is the message id; a fact regenerated with a new text and no
translation fails the catalog test).

The reports say a site's route and notes through the catalog (messages.say looks a plain string up whole), so the
texts extracted are the ones the code shows: a library's route, its dropped-features text and category note (each
whole and its first ';' clause, which a reason quotes), a migration row's NPU equivalent.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

_LIBRARY_KEYS = ("route", "dropped", "category_note")


def _first_clause(text: str) -> str:
    return text.split(";")[0]


def source_texts(facts: Any) -> Iterator[str]:
    """Every shown text of a parsed source_facts.json, in the file's order (repeats included)."""
    for row in facts.get("libraries") or ():
        for key in _LIBRARY_KEYS:
            text = row.get(key) or ""
            if text.strip():
                yield text
                if _first_clause(text).strip():
                    yield _first_clause(text)
    for row in facts.get("migration") or ():
        text = row.get("npu_equivalent") or ""
        if text.strip():
            yield text


def extract_source_facts(fileobj: IO[bytes], keywords: Any, comment_tags: Any, options: Any
                         ) -> Iterator[tuple[int, None, str, list[str]]]:
    """(line, funcname, message, comments) for every shown text of a source facts file."""
    raw = fileobj.read().decode("utf-8")
    lines = raw.splitlines()
    for text in dict.fromkeys(source_texts(json.loads(raw))):
        head = json.dumps(text)[1:41]
        line = next((number for number, content in enumerate(lines, 1) if head in content), 0)
        yield line, None, text, []
