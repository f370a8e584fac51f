"""Torch versions as (major, minor) release lines, and inclusive ranges of them as the fact tables state them."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from opassess.errors import KnowledgeBaseError

Version = tuple[int, int]


def parse_version(text: str) -> Version:
    """'2.13', '2.13.0', 'v2.13', '2.13.0+cpu' -> (2, 13): "2.7.1" and "2.7" are the same release line."""
    m = re.match(r"^v?(\d+)\.(\d+)", str(text).strip())
    if not m:
        raise KnowledgeBaseError(f"not a torch version: {text!r} (expected e.g. 2.13)")
    return int(m.group(1)), int(m.group(2))


def format_version(version: Version) -> str:
    """(2, 13) -> '2.13'."""
    return f"{version[0]}.{version[1]}"


@dataclass(frozen=True)
class VersionRange:
    """Inclusive range of torch versions; None on a side means unbounded ('all_version', '..newest')."""

    low: Version | None
    high: Version | None

    def contains(self, version: Version) -> bool:
        return (self.low is None or version >= self.low) and (self.high is None or version <= self.high)

    def __str__(self) -> str:
        if self.low is None and self.high is None:
            return "all"
        low = format_version(self.low) if self.low else "*"
        if self.low == self.high:
            return f"v{low}"
        return f"v{low}..{format_version(self.high) if self.high else 'newest'}"


def version_ranges(raw: Iterable) -> tuple[VersionRange, ...]:
    """[["2.1", None], ["2.5", "2.7"]] as the JSON tables write them -> VersionRanges."""
    return tuple(VersionRange(parse_version(lo) if lo else None, parse_version(hi) if hi else None) for lo, hi in raw)


def in_ranges(ranges: tuple[VersionRange, ...], version: Version) -> bool:
    """True when any of `ranges` contains `version`."""
    return any(r.contains(version) for r in ranges)


def format_ranges(ranges: tuple[VersionRange, ...]) -> str:
    """'v2.1..newest,v1.11' (or 'none') for evidence strings."""
    return ",".join(str(r) for r in ranges) or "none"
