"""source_facts.json's human texts for the message catalog: a Babel extractor (as kb/catalog.py is for rules.toml), so
the generated kernel-library and migration facts stay the one place their routes and notes are written and `make
messages` puts them into every .po (the English text is the message id; a fact regenerated with a new text and no
translation fails the catalog test).

The reports say a site's route and notes through the catalog (messages.say looks a plain string up whole), so the
texts extracted are the ones the code shows: a library's route, its dropped-features text and category note (each
whole and its first ';' clause, which a reason quotes), each clause of the dropped-features text (a site's note puts
the clauses naming an argument the call passes first: `clauses`), a migration row's NPU equivalent, and a library
row's context, which its citation quotes ('third_party_kernel_libs.tsv:3 flash_attn (direct calls)': `said_contexts`).
"""
from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import IO, Any

from .facts import clauses, load_source_facts

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
                if key == "dropped":
                    yield from clauses(text)
        if (row.get("context") or "").strip():
            yield row["context"]
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


@functools.cache
def _shipped_cites() -> tuple[tuple[str, str], ...]:
    """(citation, context) of every shipped library row with a context, the longest citation first."""
    cites = {(lib.cite, lib.context) for lib in load_source_facts().libraries if lib.context}
    return tuple(sorted(cites, key=lambda cite: -len(cite[0])))


def said_contexts(text: str, _: Callable[[str], str]) -> str:
    """`text` with the context of every kernel-library citation in it said through `_` (the table, row and library
    name as they are): 'third_party_kernel_libs.tsv:3 flash_attn (direct calls)' -> '... flash_attn (直接调用)'."""
    for cite, context in _shipped_cites():
        if cite in text:
            said = _(context)
            if said != context:
                text = text.replace(cite, f"{cite[:-len(context) - 1]}{said})")
    return text
