"""rules.toml's sentences for the message catalog: a Babel extractor (as findings/catalog.py is for patterns.toml), so
the curated rules stay the one place their notes and evidence are written and `make messages` puts them into every
.po (the English text is the message id; a rule added without a translation fails the catalog test).

The reports say a reason's values through the catalog (messages.say), so a replacement's note placed into a reason
reads in the reader's language; evidence quotes a rule's text inside a citation ('rules.toml: family (<evidence>)'),
so `said_quotes` puts each quoted rule text of a citation into the reader's language, the rest as it is.
"""
from __future__ import annotations

import functools
import tomllib
from collections.abc import Callable, Iterator
from typing import IO, Any

from ..messages import N_
from ..resources import package_path

_KEYS = ("note", "evidence")  # and every '*_evidence' key

# Phrases the code writes into citations (kb/facts.py, kb/store.py, classify/aten.py build their English from these),
# said in the reader's language inside a citation by messages.said_within; the longer ones first.
DERIVED = N_("functional %(op)s derived from %(out)s")
STRUCTURED = N_("structured codegen %(name)s")
CALLING_OUT = N_("%(op)s has a %(kind)s kernel calling its out variant %(out)s")
CALLING = N_("%(op)s has a %(kind)s kernel calling %(called)s")
DISPATCHED = N_("%(op)s has a %(kind)s kernel")
NOT_EXCLUDED = N_("not excluded")  # a kernel doc's dtype row lists the dtype and does not exclude it for the product
# a composite torch_npu runs through PyTorch's decomposition on some products (rules.toml [[composite]] fallback)
FALLS_BACK = N_("on %(product)s its NPU kernel runs %(fallback)s (%(why)s), calling %(called)s")
CITED_PHRASES = (FALLS_BACK, CALLING_OUT, CALLING, DISPATCHED, DERIVED, STRUCTURED, NOT_EXCLUDED)


def rule_texts(table: Any, key: str | None = None) -> Iterator[str]:
    """Every note and evidence string of a parsed rules.toml, in the file's order."""
    if isinstance(table, dict):
        for name, value in table.items():
            yield from rule_texts(value, name)
    elif isinstance(table, list):
        for value in table:
            yield from rule_texts(value, key)
    elif isinstance(table, str) and key is not None and (key in _KEYS or key.endswith("_evidence")) and table:
        yield table


def extract_rules(fileobj: IO[bytes], keywords: Any, comment_tags: Any, options: Any
                  ) -> Iterator[tuple[int, None, str, list[str]]]:
    """(line, funcname, message, comments) for every note and evidence string of a rules file."""
    raw = fileobj.read()
    lines = raw.decode("utf-8").splitlines()
    for text in dict.fromkeys(rule_texts(tomllib.loads(raw.decode("utf-8")))):
        head = text[:40]
        line = next((number for number, content in enumerate(lines, 1) if head in content), 0)
        yield line, None, text, []


@functools.cache
def _shipped_texts() -> tuple[str, ...]:
    """The shipped rules.toml's texts, longest first (a text inside another is replaced after it)."""
    with package_path("data", "rules.toml").open("rb") as handle:
        texts = dict.fromkeys(rule_texts(tomllib.load(handle)))
    return tuple(sorted(texts, key=len, reverse=True))


def said_quotes(citation: str, _: Callable[[str], str]) -> str:
    """`citation` with every rules.toml text quoted in it said through `_` (identifiers around them as they are)."""
    for text in _shipped_texts():
        if text in citation:
            said = _(text)
            if said != text:
                citation = citation.replace(text, said)
    return citation
