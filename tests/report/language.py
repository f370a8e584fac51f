"""The completeness check of a translated report: the English sentences left in it, outside identifiers and code.

`english_sentences(text)` strips what is meant to stay as written (fenced and inline code, HTML tags, scripts and
styles, URLs, text quoted verbatim in Chinese quotation marks “...” / 「...」 (a message another program wrote,
torch's error: data, not the report's sentence), identifiers: anything with `.`, `::`, `_`, `/`, `@`, `=`, a digit
or an inner capital, and the names in KEPT), then returns every run of two or more English words left (a label of
one word, 'Model', is not caught: it cannot be told from a class name, 'Linear'); numbers and identifiers break a
run, so one message gives the same sentences whatever its parameters. A Chinese report should have none; the test
keeps an allowance of the sentences not yet moved through the catalog, each named, which may only shrink.
"""
from __future__ import annotations

import html
import re

# Names that stay as written in every language: products, the method's names, the category and confidence values
# (identifiers of the JSON contract, shown as they are), units.
KEPT = ("Monte Carlo", "PERT-beta", "Atlas training", "Atlas", "Ascend", "Huawei", "Chromium", "GitHub",
        "param-converted", "custom-dev", "direct", "unknown", "high", "medium", "low", "opassess", "torch",
        "torch_npu", "aclnn", "aclop", "person-days", "dispatch", "dynamo", "fx", "meta")

_FENCE = re.compile(r"```.*?```", re.S)
_INLINE = re.compile(r"`[^`\n]*`")
_QUOTED = re.compile(r"“[^”\n]*”|「[^」\n]*」")  # a quoted message (torch's error) in a Chinese sentence
_SCRIPT = re.compile(r"<(script|style|code|pre)\b[^>]*>.*?</\1>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")
_URL = re.compile(r"\b\w+://\S+")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# an identifier: a token with a separator, digit or inner capital (aten::add.Tensor, npu_aten_ops, A2, aclnnAdd,
# --train, 2.13, examples/x.py, key=value); '\_' is Markdown's escaped underscore
_IDENT = re.compile(r"(?<![\w\\])(?:--?)?(?=[\w\\.:/@=<>\[\]-]*(?:[.:_/@=\d\\]|[a-z][A-Z]))[\w\\.:/@=<>\[\]'-]*\w")
_OPTION = re.compile(r"(?<![\w-])--?[a-z][\w-]*(?: (?:md|html|json|csv|sarif|junit|terminal)\b)?")  # -f html, --train
_WORD = r"[A-Za-z][A-Za-z']*(?:-[A-Za-z]+)*"
_RUN = re.compile(rf"{_WORD}(?:[ ,]+{_WORD})+")
_KEPT = re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(k) for k in sorted(KEPT, key=len, reverse=True))
                   + r")(?![\w-])")


def visible_text(text: str) -> str:
    """What a reader reads as prose: the report without code, markup, URLs and terminal colours."""
    text = _ANSI.sub("", text)
    text = _SCRIPT.sub(" ", text)
    text = _FENCE.sub(" ", text)
    text = _INLINE.sub(" ", text)
    text = _TAG.sub("\n", text)  # each text node a line of its own (a heading, a cell)
    text = html.unescape(text)
    text = _QUOTED.sub(" ", text)
    return _URL.sub(" ", text)


def english_sentences(text: str) -> list[str]:
    """Every run of two or more English words in the prose of `text`, in order, without repeats."""
    found: dict[str, None] = {}
    for line in visible_text(text).splitlines():
        line = _KEPT.sub(" \0 ", _IDENT.sub(" \0 ", _OPTION.sub(" \0 ", line)))  # a NUL: not a word, not a cell border
        for run in _RUN.findall(line):
            words = [w for w in re.split(r"[ ,]+", run) if w]
            if sum(1 for w in words if any(c.islower() for c in w)) >= 2:
                found[re.sub(r"\s+", " ", run).strip(" ,")] = None
    return list(found)
