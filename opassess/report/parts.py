"""The JSON document read back as typed records: `decode` builds a frozen dataclass (a "part") from one object of the
document, and the small parts every section shares (person-days, risk) are declared here.

Each section declares the parts it reads beside its builder (report/sections/<name>.py) and report/reading.py puts
them together into the whole document's record, decoded once where a document is read (the view, a report file read
back by `opassess diff`); renderers, the display, gates and diffs then read attributes (`op.person_days.likely`), not
string keys. A part's field is named as its JSON key (`key("class")` where the key is no Python name); its type says
how to read the value: a part, `X | None`, `tuple[X, ...]` (a JSON list), `Mapping[str, X]` (an object keyed by
names), or a plain str, int, float or bool, whose JSON type is checked. A key missing from the object takes the
field's default, and a field with none is required: `decode` raises DocumentError naming where.
tests/test_vocabulary.py ties each part's fields to the schema's properties.
"""
from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields, is_dataclass
from functools import cache
from typing import Any, TypeVar, Union, cast, get_args, get_origin, get_type_hints

T = TypeVar("T")
KEY = "json_key"  # a field's metadata entry naming its JSON key when that is no Python name ("class")


class DocumentError(ValueError):
    """A document's object is not the part it should be: a required key missing, a list or object malformed."""

    def __init__(self, problem: str, path: str = "") -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.problem, self.path = problem, path

    def within(self, step: str) -> DocumentError:
        """The same error one level up: 'risk: missing ...' read inside operators[3] -> 'operators[3].risk: ...'."""
        return DocumentError(self.problem, step + ("" if not self.path or self.path.startswith("[") else ".")
                             + self.path)


def key(name: str, default: Any = None) -> Any:
    """A field read from the JSON key `name` (`class_name: str = key("class", "")`)."""
    return field(default=default, metadata={KEY: name})


def json_key(item: Field[Any]) -> str:
    return item.metadata.get(KEY, item.name)


Reader = Callable[[Any], Any]


@cache
def _plan(cls: Any) -> tuple[tuple[str, str, Reader | None, bool], ...]:
    """(field name, JSON key, how to read its value (None: as it is), required) of each field of the part `cls`,
    worked out once per class: a 14,000-site source scan is decoded in a fraction of a second."""
    hints = get_type_hints(cls)
    return tuple((f.name, json_key(f), _reader(hints[f.name]),
                  f.default is MISSING and f.default_factory is MISSING) for f in fields(cls))


def decode(cls: type[T], value: Any, where: str = "") -> T:
    """The part `cls` of one object of the document; DocumentError names where it failed ("operators[3].risk")."""
    try:
        if not isinstance(value, Mapping):
            raise DocumentError(f"expected an object, got {type(value).__name__}")
        given = {}
        for name, json_name, read, required in _plan(cast(Any, cls)):
            if json_name in value:
                try:
                    given[name] = value[json_name] if read is None else read(value[json_name])
                except DocumentError as exc:
                    raise exc.within(json_name) from None
            elif required:
                raise DocumentError(f"missing {json_name!r}")
        return cls(**given)
    except DocumentError as exc:
        raise (exc.within(where) if where else exc) from None


def _reader(hint: Any) -> Reader | None:
    """How to read a value of type `hint` from the document: a str, int, float or bool is checked for its JSON type
    and taken as the document holds it (an int where a float is declared stays an int); None for Any and other
    hints, taken as they are."""
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        kinds = [a for a in get_args(hint) if a is not type(None)]
        inner = _reader(kinds[0]) if len(kinds) == 1 else None
        return None if inner is None else (lambda v: None if v is None else inner(v))
    if isinstance(hint, type) and is_dataclass(hint):
        return lambda v: decode(hint, v)
    if origin is tuple:
        item = _reader(get_args(hint)[0])

        def read_list(value: Any) -> tuple[Any, ...]:
            if not isinstance(value, (list, tuple)):
                raise DocumentError(f"expected a list, got {type(value).__name__}")
            if item is None:
                return tuple(value)
            out = []
            for index, v in enumerate(value):
                try:
                    out.append(item(v))
                except DocumentError as exc:
                    raise exc.within(f"[{index}]") from None
            return tuple(out)
        return read_list
    if origin is Mapping or origin is dict:
        entry = _reader(get_args(hint)[1])

        def read_object(value: Any) -> dict[str, Any]:
            if not isinstance(value, Mapping):
                raise DocumentError(f"expected an object, got {type(value).__name__}")
            if entry is None:
                return dict(value)
            out = {}
            for k, v in value.items():
                try:
                    out[k] = entry(v)
                except DocumentError as exc:
                    raise exc.within(str(k)) from None
            return out
        return read_object
    return _PLAIN.get(hint)


def _plain(kinds: tuple[type, ...], said: str) -> Reader:
    """A reader that takes a plain value of one of `kinds` as it is (never a bool for a number) and refuses any
    other: a baseline report's `"op": 5` or `"count": null` is a malformed document, not an operator to compare."""
    def read(value: Any) -> Any:
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            raise DocumentError(f"expected {said}, got {_json_type(value)}")
        return value
    return read


def _json_type(value: Any) -> str:
    return "null" if value is None else {bool: "a boolean", str: "a string", int: "a number", float: "a number",
                                          list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


_PLAIN: dict[Any, Reader] = {str: _plain((str,), "a string"), int: _plain((int,), "an integer"),
                             float: _plain((int, float), "a number"), bool: _plain((bool,), "a boolean")}


def encode(part: Any) -> dict[str, Any]:
    """A part back as the JSON object it was read from (its keys in field order), for formats that copy an object
    through (SARIF's personDays)."""
    return {json_key(f): getattr(part, f.name) for f in fields(part)}


# ------------------------------------------------------------------ the parts every section shares


@dataclass(frozen=True)
class EffortPart:
    """{low, likely, high} person-days ($defs/effort)."""

    low: float
    likely: float
    high: float


@dataclass(frozen=True)
class RiskPart:
    """An operator's or a source site's risk: likelihood and impact (1-5) and its stars (0: none stated)."""

    likelihood: int = 0
    impact: int = 0
    stars: int = 0
    signals: tuple[str, ...] = ()
