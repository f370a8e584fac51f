"""A sentence kept as a catalog message id and its values, so each human format says it in the reader's language.

The records keep their English text for the JSON contract (`Message.text()` with no catalog); the reports render the
same message through the report language's gettext (`message.text(_)`). Templates use brace placeholders
(`'{op}: output size depends on the data ({count}x)'`), as patterns.toml's titles always have; a value that is itself
a Message (a phrase a detail function adds: the attention mask's convention) is translated too, identifiers and
numbers are placed as they are.

`Text` (below) is the other form, for sentences the code builds into `str` fields: a str that is its English text
and remembers its %-format message id and values; `say(text, _)` renders either form in the reader's language.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def N_(message: str) -> str:  # noqa: N802 - gettext's name for "mark for extraction, translate where shown"
    """Mark a message id where it is written (the reports translate it)."""
    return message


def _as_written(message: str) -> str:
    return message


@dataclass(frozen=True, order=True)
class Message:
    """`template` (a message id with {placeholders}) and its values, in the order given."""

    template: str
    values: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, template: str, **values: Any) -> Message:
        return cls(template, tuple(values.items()))

    @classmethod
    def join(cls, parts: Sequence[Any], separator: str) -> Message:
        """Phrases (Messages or identifiers) as one Message, joined by `separator` (itself a message id: ' or ')."""
        names = [f"p{i}" for i in range(len(parts))]
        return cls.of("{separator}".join("{" + name + "}" for name in names), separator=cls(separator),
                      **dict(zip(names, parts, strict=True)))

    def text(self, _: Callable[[str], str] = _as_written) -> str:
        """The sentence in the language of `_` (English by default): its template translated, then filled."""
        if not self.template:
            return ""
        if not self.values:  # a phrase without placeholders (it may hold braces: a quoted fact)
            return _(self.template)
        return _(self.template).format(**{key: value.text(_) if isinstance(value, Message) else value
                                          for key, value in self.values})

    def __str__(self) -> str:
        return self.text()


# ------------------------------------------------------------------ English text that remembers its message id
# A `Text` is a `str`: its value is the English sentence (`template % params`, the catalog's python-format), so every
# record field typed `str` (a reason's message, a sub-score's signal, an activity's basis, a decision's title) holds
# one unchanged, the JSON writes it as it always did, and comparing, hashing and sorting see the English text. It also
# remembers the message id (`template`, marked N_ for `make messages`) and its values; `say(text, _)` renders it
# through a gettext `_`, values included (a value may itself be a Text: 'classifier dtype: <the reason>: 0.5').
# Identifiers, numbers already written and quoted text are plain-string values and stay as they are. Operations on
# a Text (`+`, `join`, f-strings) give a plain str: build the whole sentence as one Text instead.

Translate = Callable[[str], str]


class Text(str):
    """English text that remembers the message id and values it was built from (see the comment above)."""

    template: str
    params: tuple[tuple[str, str | Message], ...]

    def __new__(cls, template: str, params: Mapping[str, Any] | None = None) -> Text:
        values = tuple((key, value if isinstance(value, (str, Message)) else str(value))
                       for key, value in (params or {}).items())
        text = super().__new__(cls, template % dict(values) if values else template)
        text.template, text.params = template, values
        return text

    def __reduce__(self) -> tuple[Any, ...]:  # pickled (a portfolio's processes) as what it was built from
        return (Text, (self.template, dict(self.params)))


def say(text: str | Message, _: Translate = str) -> str:
    """`text` in the reader's language: a Text through the catalog with its values said too (a Message: its own
    text(_)); other text looked up whole (a title from a data file listed for extraction), else as written."""
    if isinstance(text, Message):
        return text.text(_)
    if isinstance(text, Text):
        if not text.params:
            return _(text.template)
        return _(text.template) % {key: say(value, _) for key, value in text.params}
    return _(text) if text else text


def joined(items: Iterable[str], separator: str = "; ") -> str:
    """`separator.join(items)`, each item still said in the reader's language: a Text whose template holds only the
    placeholders and the separator (no words: it reads the same in every catalog) when any item is a Text."""
    items = list(items)
    if not any(isinstance(item, Text) for item in items):
        return separator.join(items)
    template = separator.replace("%", "%%").join(f"%(_{index})s" for index in range(len(items)))
    return Text(template, {f"_{index}": item for index, item in enumerate(items)})


def parsed(text: str, templates: Iterable[str]) -> str:
    """`text` read back as the Text of the first of `templates` (message ids) it was built from, its values taken from
    the text; `text` itself when none matches. For English built where no Text can travel (the capture worker sends
    plain strings): 'the example batch of 1 was doubled to 2 (...)' -> that message, said in the reader's language."""
    if isinstance(text, Text) or not text:
        return text
    for template in templates:
        match = _pattern(template).fullmatch(text)
        if match:
            return Text(template, match.groupdict())
    return text


def said_within(text: str, templates: Sequence[str], _: Translate) -> str:
    """`text` (a citation: 'PyTorch 2.13 dispatcher: aten::zeros_like has a CompositeExplicitAutograd kernel') with
    every phrase built from one of `templates` (each value one identifier) said through `_`, the rest as it is."""
    for template in templates:
        def said(match: re.Match[str], template: str = template) -> str:
            return say(Text(template, match.groupdict()), _)
        text = _pattern(template, r"[^\s;()\[\],]+").sub(said, text)
    return text


@functools.cache
def _pattern(template: str, value: str = ".*?") -> re.Pattern[str]:
    """'%(device)s device (%(error)s)' -> a regex with a named group per placeholder (a repeated one must repeat)."""
    seen: set[str] = set()

    def group(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in seen:
            return f"(?P={name})"
        seen.add(name)
        return f"(?P<{name}>{value})"
    return re.compile(re.sub(r"%\\\((\w+)\\\)s", group, re.escape(template)), re.S)
