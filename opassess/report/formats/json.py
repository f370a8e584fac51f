"""JSON report (format_version 1): the view model's document, as described by assessment.schema.json."""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from json.encoder import encode_basestring  # what json.dumps(ensure_ascii=False) quotes strings with
from typing import TYPE_CHECKING, Any

from ..registry import RenderContext, register

if TYPE_CHECKING:
    from ..view import View


@register("json", extension=".json",
          description="machine-readable report (format_version 1, see assessment.schema.json)")
def render_json(view: View, context: RenderContext) -> str:
    """The JSON document, indented, keys in the documented order, ending with a newline."""
    return lossless(dumps(view.document) + "\n")


_SURROGATE = re.compile("[\ud800-\udfff]")


def lossless(text: str) -> str:
    """`text` with every lone surrogate written as its JSON escape: a file name that is not UTF-8 (b'bad\\xff.py',
    which Python holds as 'bad\\udcff.py') becomes "bad\\udcff.py" in the report, valid UTF-8 that json.loads
    reads back to the same string (os.fsencode gives the bytes again), instead of a report no UTF-8 reader opens."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


class _Unusual(Exception):
    """A value the fast path leaves to json.dumps (NaN, a non-string key, an unknown type)."""


def _float(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        raise _Unusual
    return float.__repr__(value)


_SCALARS: dict[type, Callable[[Any], str]] = {
    str: encode_basestring, int: int.__repr__, float: _float, bool: lambda b: "true" if b else "false",
    type(None): lambda _: "null"}


def dumps(document: Any) -> str:
    """`json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)`, byte for byte, about twice as fast:
    with an indent json.dumps runs its pure-Python encoder, and a source scan's document holds 400,000 values.
    Anything out of the ordinary (NaN, a non-string key, a type JSON has not) goes to json.dumps itself."""
    scalar = _SCALARS.get

    def encode(value: Any, indent: str) -> str:
        inner = indent + "  "
        parts = []
        if isinstance(value, dict):
            if not value:
                return "{}"
            for key, item in value.items():
                if not isinstance(key, str):
                    raise _Unusual
                one = scalar(type(item))
                parts.append(f"{encode_basestring(key)}: {one(item) if one else encode(item, inner)}")
            return "{\n" + inner + (",\n" + inner).join(parts) + "\n" + indent + "}"
        if isinstance(value, list | tuple):
            if not value:
                return "[]"
            for item in value:
                one = scalar(type(item))
                parts.append(one(item) if one else encode(item, inner))
            return "[\n" + inner + (",\n" + inner).join(parts) + "\n" + indent + "]"
        if isinstance(value, str):  # a subclass (messages.Text)
            return encode_basestring(value)
        if isinstance(value, int) and not isinstance(value, bool):  # an IntEnum
            return int.__repr__(value)
        if isinstance(value, float):
            return _float(value)
        raise _Unusual

    try:
        one = scalar(type(document))
        return one(document) if one else encode(document, "")
    except (_Unusual, RecursionError):
        return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
