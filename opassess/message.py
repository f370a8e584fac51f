"""Sentences for people, built from a catalog message id and its values, so each human format says them in the
reader's language while records and the JSON keep the English text.

A `Message` is a `str`: its value is the English sentence (`template % params`), so every record field typed `str`
(a reason's message, a sub-score's signal, an activity's basis, a decision's title) holds one unchanged, the JSON
writes it as it always did, and comparing, hashing and sorting see the English text. It also remembers the message id
(`template`, marked with `N_` for `make messages`) and its values; `say(text, _)` renders it through a gettext `_`,
values included (a value may itself be a Message: 'classifier dtype: <the reason's message>: 0.5'). Identifiers,
numbers already written and quoted text are plain-string values and stay as they are. Text that is not a Message
(built before this, or by a library) is looked up in the catalog as a whole and otherwise read as written.

Operations on a Message (`+`, `join`, f-strings) give a plain `str`: build the whole sentence as one Message instead.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Translate = Callable[[str], str]


def N_(message: str) -> str:  # noqa: N802 - gettext's name for "mark for extraction, translate where shown"
    """Mark a message id where a record is built; the reports translate it."""
    return message


class Message(str):
    """English text that remembers the message id and values it was built from (see the module docstring)."""

    template: str
    params: tuple[tuple[str, str], ...]

    def __new__(cls, template: str, params: Mapping[str, Any] | None = None) -> Message:
        values = tuple((key, value if isinstance(value, str) else str(value)) for key, value in (params or {}).items())
        text = super().__new__(cls, template % dict(values) if values else template)
        text.template, text.params = template, values
        return text

    def __reduce__(self) -> tuple[Any, ...]:  # pickled (a portfolio's processes) as what it was built from
        return (Message, (self.template, dict(self.params)))


def say(text: str, _: Translate = str) -> str:
    """`text` in the reader's language: a Message through the catalog with its values said too; other text looked up
    whole (a title from a data file listed for extraction) and otherwise as written."""
    if isinstance(text, Message):
        if not text.params:
            return _(text.template)
        return _(text.template) % {key: say(value, _) for key, value in text.params}
    return _(text) if text else text
