"""Paths a reader can use on any machine: no report holds an absolute path of the machine that scanned.

A library file is named from its site-packages ('/venv/lib/python3.11/site-packages/transformers/x.py:3' ->
'site-packages/transformers/x.py:3': the marker keeps it recognisable as upstream code), a standard-library file from
its lib folder ('stdlib/multiprocessing/process.py:108'), a project file relative to the scanned root (the model's
folder, the source scan's root, or the working directory), anything else by its file name.
"""
from __future__ import annotations

import os
import re
import sysconfig
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

_PACKAGES = re.compile(r"(?:^|/)((?:site|dist)-packages/.*)\Z", re.DOTALL)
_LINE = re.compile(r"(.*?)(:\d+)?\Z", re.DOTALL)  # a file name may hold a newline
# an absolute '/venv/.../site-packages/' or the portable document's 'site-packages/' before a package
_IN_TEXT = re.compile(r"(?:[^\s()'\"]*?[/\\])?(?<![\w.-])(?:site|dist)-packages[/\\]")


def _stdlib() -> tuple[str, ...]:
    paths = {sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib")}
    return tuple(Path(p).resolve().as_posix() for p in paths if p)


STDLIB = _stdlib()


def portable(source: str, roots: Sequence[str | os.PathLike] = ()) -> str:
    """`source` ('path' or 'path:line') with no absolute path of this machine in it (see the module docstring).
    Example: portable('/home/me/proj/models/net.py:12', ['/home/me/proj']) -> 'models/net.py:12'."""
    if not source:
        return source
    text = source.replace("\\", "/")
    match = _PACKAGES.search(text)
    if match:
        return match.group(1)
    parts = _LINE.match(text)
    assert parts is not None  # _LINE matches any text
    path, line = parts.groups()
    if not path.startswith("/") and not re.match(r"^[A-Za-z]:/", path):
        return text  # already relative
    line = line or ""
    for base in STDLIB:
        if path.startswith(base + "/"):
            return f"stdlib/{path[len(base) + 1:]}{line}"
    resolved = Path(path)
    for root in (*roots, os.getcwd()):
        try:
            relative = PurePosixPath(resolved.relative_to(Path(root).resolve()))
        except (ValueError, OSError):
            continue
        return f"{relative.as_posix() or '.'}{line}"
    return f"{resolved.name}{line}"


def roots_of(model_source: str, scan_root: str | None) -> tuple[str, ...]:
    """The folders project paths are made relative to: the model file's folder, then the source scan's root."""
    roots = []
    if scan_root:
        roots.append(scan_root)
    if model_source and model_source.endswith(".py"):
        roots.append(str(Path(model_source).resolve().parent))
    return tuple(roots)


_ABSOLUTE = re.compile(r"(?:(?<=^)|(?<=[\s(\[=]))(/[^\s'\"()\[\],;]+|[A-Za-z]:[\\/][^\s'\"()\[\],;]+)")


_LEAVES = frozenset({int, float, bool, type(None)})  # values scrub returns as they are, without a call for each


def scrub(value, roots: Sequence[str | os.PathLike] = ()):
    """`value` (a document: dicts, lists, strings) with every absolute path inside its strings made portable, e.g. an
    error '... (at /venv/lib/python3.11/site-packages/t/x.py:3)' -> '... (at site-packages/t/x.py:3)'."""
    # a document of 14,000 source sites holds 400,000 values, most of them numbers or repeated strings: numbers are
    # passed over and each distinct plain string is scrubbed once (a str subclass, e.g. a messages.Text, every time)
    done: dict[str, str] = {}

    def one(item):
        if type(item) is str:
            scrubbed = done.get(item)
            if scrubbed is None:
                scrubbed = done[item] = _scrub_text(item, roots)
            return scrubbed
        if isinstance(item, str):
            return _scrub_text(item, roots)
        if isinstance(item, dict):
            return {key: v if type(v) in _LEAVES else done[v] if type(v) is str and v in done else one(v)
                    for key, v in item.items()}
        if isinstance(item, list):
            return [v if type(v) in _LEAVES else done[v] if type(v) is str and v in done else one(v) for v in item]
        return item

    return one(value)


def _scrub_text(value: str, roots: Sequence[str | os.PathLike]) -> str:
    """One string with its absolute paths made portable; an unchanged string is kept as it is (a messages.Text keeps
    its message id)."""
    if "/" not in value and "\\" not in value:
        return value
    scrubbed = _ABSOLUTE.sub(lambda m: portable(m.group(1), roots), value)
    return value if scrubbed == value else scrubbed


def scrub_in_place(value: list | dict, roots: Sequence[str | os.PathLike] = ()) -> list | dict:
    """`scrub` of a part of a document built just now, none of its dicts and lists shared with anything: its strings
    are replaced where they stand (half the time of copying 14,000 source findings); returns `value`."""
    done: dict[str, str] = {}

    def one(item: list | dict) -> None:
        for key, v in item.items() if isinstance(item, dict) else enumerate(item):
            if type(v) in _LEAVES:
                continue
            if type(v) is str:
                scrubbed = done.get(v)
                if scrubbed is None:
                    scrubbed = done[v] = _scrub_text(v, roots)
            elif isinstance(v, str):
                scrubbed = _scrub_text(v, roots)
            else:
                if isinstance(v, dict | list):
                    one(v)
                continue
            if scrubbed is not v:
                item[key] = scrubbed

    one(value)
    return value


def shorten_paths(text: str) -> str:
    """Every installed-package path inside a message made relative to its site-packages ('(at /venv/lib/python3.11/
    site-packages/torchvision/ops/boxes.py:41)' or '(at site-packages/torchvision/ops/boxes.py:41)' -> '(at
    torchvision/ops/boxes.py:41)')."""
    return _IN_TEXT.sub("", text)
