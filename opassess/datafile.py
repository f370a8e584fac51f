"""The one strict reader for opassess's TOML data files (weights, patterns, rules, error codes).

Every data file is read through `read_toml` and walked with `TomlTable`: typed getters, the origin of every
key tracked across layers (shipped file < user file), and `finish()` refusing any key nobody read, so a typo
such as `natur = "x"` or a `[familly]` table is one error line naming the file and the dotted key instead of
a silent fallback to a default.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import stat
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Self, TypeVar

from opassess.errors import ConfigError, KnowledgeBaseError, OpassessError

ErrorType = Callable[[str], OpassessError]
T = TypeVar("T")


READ_LIMIT = 256 * 1024 * 1024  # bytes: the largest data file, table or report opassess reads whole
# While `recording_reads` is on: the absolute path and SHA-256 of every file read through `read_bytes` (the inputs a
# scan pins before any model code runs: isolation/inputs.py)
_LEDGER: list[dict[str, str]] = []


@contextlib.contextmanager
def recording_reads() -> Iterator[dict[str, str]]:
    """Note the SHA-256 of every file `read_bytes` reads inside the block (the first read of each path wins)."""
    ledger: dict[str, str] = {}
    _LEDGER.append(ledger)
    try:
        yield ledger
    finally:
        _LEDGER.remove(ledger)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def check_regular(path: Path | str, what: str = "file", error: ErrorType = ConfigError) -> None:
    """Refuse, without opening it for reading, a path that is not a regular file (a FIFO would block, a device
    never ends): one `error` naming the file and what it is."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(mode):
        raise error(f"{path}: cannot read {what}: {_kind(mode)}, not a regular file")


def read_bytes(path: Path | str, what: str = "data file", error: ErrorType = ConfigError,
               limit: int = READ_LIMIT) -> bytes:
    """The bytes of one regular file, at most `limit` of them: opened with O_NONBLOCK (a FIFO never blocks) and
    checked with fstat (a FIFO, socket or device is refused), so no input can hang or exhaust the reader."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        check_regular(path, what, error)  # a socket cannot be opened at all: say what it is
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{path}: cannot read {what}: {_kind(mode)}, not a regular file")
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise error(f"{path}: cannot read {what}: larger than {limit} bytes")
        data = b"".join(chunks)
        if _LEDGER:
            _LEDGER[-1].setdefault(os.path.abspath(path), sha256_hex(data))
        return data
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def read_text(path: Path | str, what: str = "data file", error: ErrorType = ConfigError,
              limit: int = READ_LIMIT, errors: str = "strict") -> str:
    """`read_bytes` decoded as UTF-8 (a BOM is dropped); bad encoding is one `error` naming the file."""
    data = read_bytes(path, what, error, limit)
    try:
        return data.decode("utf-8-sig", errors=errors)
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start}): a {what} must be UTF-8") from exc


def read_json(path: Path | str, what: str = "JSON file", error: ErrorType = ConfigError,
              limit: int = READ_LIMIT) -> Any:
    """One JSON document; a syntax error or one nested too deep to read is one `error` naming the file."""
    text = read_text(path, what, error, limit)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise error(f"{path}: not valid JSON ({exc}): a {what} must be JSON") from exc
    except RecursionError as exc:
        raise error(f"{path}: {what} is nested too deep to read") from exc


def read_kb_table(path: Path, keys: tuple[str, ...], tool: str) -> dict[str, Any]:
    """A knowledge-base table (JSON object) written by `tool`: missing, unreadable or lacking one of `keys` is one
    KnowledgeBaseError naming the file and the tool that rebuilds it."""
    if not path.is_file():
        raise KnowledgeBaseError(f"{path}: knowledge-base table missing (rebuild with {tool})")
    data = read_json(path, "knowledge-base table", KnowledgeBaseError)
    missing = [key for key in keys if not isinstance(data, dict) or key not in data]
    if missing:
        raise KnowledgeBaseError(f"{path}: missing key {missing[0]!r} (rebuild with {tool})")
    return data


def read_generated(path: Path | str, what: str, tool: str, build: Callable[[Any, Path], T]) -> T:
    """A table generated under tools/ (JSON), built into its record by `build(data, path)`: a missing file, or a key
    the record needs that the file lacks, is one KnowledgeBaseError naming the file (and the tool that writes it)."""
    file = Path(path)
    if not file.exists():
        raise KnowledgeBaseError(f"{file}: missing; run {tool}")
    data = read_json(file, what, KnowledgeBaseError)
    try:
        return build(data, file)
    except KeyError as exc:
        raise KnowledgeBaseError(f"{file}: missing key {exc}") from exc


def read_toml(path: Path, what: str = "data file", error: ErrorType = ConfigError) -> dict[str, Any]:
    """Parse one TOML file; a syntax error, bad encoding, nesting too deep, a file that is not a regular file or
    is too large is one `error` naming the file."""
    text = read_text(path, what, error)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: TOML syntax error: {exc}") from exc
    except RecursionError as exc:
        raise error(f"{path}: {what} is nested too deep to read") from exc


def merge_layer(into: dict[str, Any], layer: Mapping[str, Any], file: str, origins: dict[str, str],
                prefix: str = "") -> None:
    """Overlay `layer` on `into` (tables merge key by key, anything else replaces) and note which file set what."""
    for key, value in layer.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge_layer(into[key], value, file, origins, dotted + ".")
        else:
            for stale in [k for k in origins if k.startswith(dotted + ".")]:  # a table replaced by a value
                del origins[stale]
            if isinstance(value, dict):
                into[key] = {}
                merge_layer(into[key], value, file, origins, dotted + ".")
            else:
                into[key] = value
            origins[dotted] = file


def type_name(value: Any) -> str:
    """How a TOML value's type is named in an error message."""
    return {dict: "a table", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), type(value).__name__)


_MISSING = object()


class TomlTable:
    """One TOML table read with type checks; remembers which keys were read and names file and key on error."""

    def __init__(self, data: Any, origins: Mapping[str, str] | None = None, prefix: str = "",
                 default_file: str = "", error: ErrorType = ConfigError) -> None:
        self._data = data
        self._origins = origins or {}
        self._prefix = prefix
        self.default_file = default_file
        self._error = error
        self._read: set[str] = set()

    @classmethod
    def of_file(cls, path: Path, what: str = "data file", error: ErrorType = ConfigError) -> Self:
        """The root table of one file (no layering)."""
        return cls(read_toml(path, what, error), {}, "", str(path), error)

    # -- introspection

    def key(self, key: str) -> str:
        """The dotted key as the user would write it ('risk.impact.flops_share')."""
        return f"{self._prefix}{key}"

    def keys(self) -> list[str]:
        """Every key of this table, in file order (reading them is still up to the caller)."""
        return list(self._data)

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def file_of(self, key: str) -> str:
        """The file that set this key (or, for a table, the last file that set anything inside it)."""
        dotted = self.key(key)
        inside = {file for k, file in self._origins.items() if k == dotted or k.startswith(dotted + ".")}
        if self.default_file in inside or not inside:  # the last layer (the user's file) wins
            return self.default_file
        return inside.pop()

    def error(self, key: str, problem: str) -> OpassessError:
        """An error naming the file, the dotted key and the problem."""
        return self._error(f"{self.file_of(key)}: key '{self.key(key)}': {problem}")

    # -- typed getters (a default makes the key optional)

    def _get(self, key: str, default: Any = _MISSING) -> Any:
        if key not in self._data:
            if default is _MISSING:
                raise self.error(key, "missing")
            return default
        self._read.add(key)
        return self._data[key]

    def value(self, key: str, default: Any = _MISSING) -> Any:
        """Any value, unchecked (for callers that validate themselves)."""
        return self._get(key, default)

    def number(self, key: str, default: Any = _MISSING, *, negative: bool = False,
               maximum: float | None = None) -> float:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"expected a number, got {type_name(value)} {value!r}")
        if not math.isfinite(value):
            raise self.error(key, f"expected a finite number, got {value!r}")
        if value < 0 and not negative:
            raise self.error(key, f"negative value {value!r} (every number here is a weight, a size or a count)")
        if maximum is not None and value > maximum:
            raise self.error(key, f"{value:g} is above the largest value accepted here, {maximum:g}")
        return float(value)

    def integer(self, key: str, default: Any = _MISSING) -> int:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"expected an integer, got {type_name(value)} {value!r}")
        if value < 0:
            raise self.error(key, f"negative value {value!r} (every number here is a weight, a size or a count)")
        return value

    def boolean(self, key: str, default: Any = _MISSING) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {type_name(value)} {value!r}")
        return value

    def string(self, key: str, default: Any = _MISSING) -> str:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, str):
            raise self.error(key, f"expected a string, got {type_name(value)} {value!r}")
        return value

    def choice(self, key: str, choices: tuple[str, ...] | frozenset[str], default: Any = _MISSING) -> str:
        """A string that must be one of `choices`."""
        value = self.string(key, default)
        if value is default and default is not _MISSING:
            return value
        if value not in choices:
            raise self.error(key, f"expected one of {', '.join(sorted(choices))}, got {value!r}")
        return value

    def strings(self, key: str, default: Any = _MISSING) -> tuple[str, ...]:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.error(key, f"expected a list of strings, got {value!r}")
        return tuple(value)

    def numbers(self, key: str, default: Any = _MISSING) -> tuple[float, ...]:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, list) or not all(
            isinstance(item, (int, float)) and not isinstance(item, bool) for item in value
        ):
            raise self.error(key, f"expected a list of numbers, got {value!r}")
        if any(not math.isfinite(item) for item in value):
            raise self.error(key, f"expected finite numbers, got {value!r}")
        if any(item < 0 for item in value):
            raise self.error(key, f"negative value in {value!r}")
        return tuple(float(item) for item in value)

    def table(self, key: str, default: Any = _MISSING) -> Self:
        value = self._get(key, {} if default is not _MISSING else _MISSING)
        if not isinstance(value, dict):
            raise self.error(key, f"expected a table, got {type_name(value)} {value!r}")
        return self.renamed(self.key(key) + ".", value)

    def tables(self, key: str) -> Iterator[Self]:
        """An array of tables (`[[rule]]`); each item is read strictly."""
        value = self._get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise self.error(key, f"expected an array of tables ([[{self.key(key)}]]), got {type_name(value)}")
        for index, item in enumerate(value):
            yield self.renamed(f"{self.key(key)}[{index}].", item)

    def renamed(self, prefix: str, data: Any = _MISSING) -> Self:
        """This table (or `data` under it) named `prefix` in messages, of the same class, nothing read yet
        (`pattern[0].` -> `pattern[id=ffn].`)."""
        return type(self)(self._data if data is _MISSING else data, self._origins, prefix, self.default_file,
                          self._error)

    def number_table(self, key: str) -> Mapping[str, float]:
        """An open table (any key) of numbers, e.g. dtype -> difficulty."""
        table = self.table(key)
        return MappingProxyType({name: table.number(name) for name in table.keys()})

    def finish(self) -> None:
        """Reject keys nobody read: a typo must not silently fall back to the default."""
        unknown = [key for key in self._data if key not in self._read]
        if unknown:
            raise self.error(unknown[0], "unknown key")
