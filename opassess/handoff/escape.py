"""Model-derived text made inert in the files opassess writes for others to run or read (the hand-offs).

A model chooses its operator names, class names, attribute names and values: an autograd.Function whose
`__qualname__` holds '\"\"\"' and a newline would otherwise close the docstring of a generated `repro_*.py` and add
code of its choosing, a newline in an op name would add lines to `verify_apis.txt` or `op_plugin_*.yaml`, a
400-character name would make a file name the file system refuses. Every hand-off writer takes such text through
these helpers, one per place it lands:

- Python code: `repr()` (a string literal), never spliced into code; a JSON document (json.dumps, ASCII) inside
  a raw triple-quoted string, where every quote of a string value is escaped and no two strings touch, so three
  quotes never meet and the literal cannot be closed from inside;
- a Python docstring or comment, a line of a line-oriented file: `one_line` (printable ASCII, one line, no quote
  that could close the docstring);
- YAML: `yaml_scalar` (a double-quoted scalar, which is a JSON string) or a plain name checked by `identifier`;
- a file name: `file_stem` (sanitised, capped at STEM_LIMIT bytes with a short hash of the whole name).
"""
from __future__ import annotations

import hashlib
import json
import re

STEM_LIMIT = 100  # bytes of a hand-off file name's stem made from a model's name (file systems allow 255 in all)


def one_line(value: object) -> str:
    """`value` as one line of printable ASCII that cannot end a line, a comment or a docstring: every backslash
    doubled, every control and non-ASCII character its escape (a line feed the two characters backslash, n), every
    double quote preceded by a backslash (three quotes cannot close a docstring)."""
    text = str(value).encode("unicode_escape").decode("ascii")
    return text.replace('"', '\\"')


def yaml_scalar(value: object) -> str:
    """`value` as a YAML double-quoted scalar (a JSON string is one): nothing in it can start a key, a list item, a
    comment or another line."""
    return json.dumps(str(value), ensure_ascii=True)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def identifier(value: object, fallback: str = "x") -> str:
    """`value` when it is a plain identifier (letters, digits, underscores), else `fallback`: for a name that lands
    in YAML or code unquoted (an argument name)."""
    text = str(value)
    return text if _NAME.match(text) else fallback


def file_stem(key: str) -> str:
    """A file name stem from an operator name: 'opassess_examples::fused_bias_gelu' ->
    'opassess_examples__fused_bias_gelu'; anything but ASCII letters, digits and '_' becomes '_'; a stem that had to
    be changed beyond that or is longer than STEM_LIMIT keeps its first bytes and ends with 8 hex digits of the
    name's SHA-256, so two long names sharing a prefix stay two files."""
    plain = key.replace("::", "__")
    stem = re.sub(r"[^A-Za-z0-9_]+", "_", plain).strip("_") or "operator"
    if len(stem) <= STEM_LIMIT:
        return stem
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{stem[:STEM_LIMIT - 9]}_{digest}"
