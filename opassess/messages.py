"""A sentence kept as a catalog message id and its values, so each human format says it in the reader's language.

The records keep their English text for the JSON contract (`Message.text()` with no catalog); the reports render the
same message through the report language's gettext (`message.text(_)`). Templates use brace placeholders
(`'{op}: output size depends on the data ({count}x)'`), as patterns.toml's titles always have; a value that is itself
a Message (a phrase a detail function adds: the attention mask's convention) is translated too, identifiers and
numbers are placed as they are.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
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
