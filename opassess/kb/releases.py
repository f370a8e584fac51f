"""The torch / torch_npu / CANN release table (kb/versions.json, written by tools/kb_versions.py): which torch_npu
wheel pairs with a torch line, the CANN and Python it was released with, its line's status, and the features whose
facts state the torch_npu product version and CANN they need."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import read_kb_table
from ..resources import data_path
from .versions import Version, parse_version

TABLE = "versions.json"
_KEYS = ("sources", "releases", "requirements")


@dataclass(frozen=True)
class Release:
    """One torch_npu wheel: the torch it pins, its product version (7.3.0, 26.1.0), CANN, Python and status."""

    wheel: str
    torch: str
    product_version: str | None
    cann: str | None  # None: the table does not state it (cann_text says why)
    cann_text: str
    python: str
    status: str
    released: str | None
    follow_up: str | None
    row: int

    @property
    def torch_line(self) -> Version:
        return parse_version(self.torch)


@dataclass(frozen=True)
class Requirement:
    """A feature the facts give a minimum for: npu_fusion_attention's `sink` needs torch_npu 7.3.0 / CANN 8.5.0+."""

    feature: str
    op: str | None
    param: str
    product_version: str
    cann: str
    cite: str  # 'third_party_kernel_libs.tsv:3'

    def used_in(self, text: str) -> bool:
        """Whether an advice or finding text calls this feature ('npu_fusion_attention(sink=...)')."""
        return f"{self.op}({self.param}=" in text if self.op else f"{self.param}=" in text


def _product_key(version: str | None) -> tuple[int, ...]:
    """'7.3.0' -> (7, 3, 0); the year-based 26.1.0 sorts after the older 7.x scheme, as it was released."""
    parts = []
    for part in (version or "").split("."):
        parts.append(int(part) if part.isdigit() else -1)
    return tuple(parts)


@dataclass(frozen=True)
class Releases:
    """Lookups over versions.json; every answer carries its table row."""

    path: Path
    data: Mapping[str, Any]

    def cite(self, row: int, table: str = "versions") -> str:
        return f"{self.data['sources'][table]['table']}:{row}"

    @property
    def releases(self) -> tuple[Release, ...]:
        return tuple(Release(**{k: r[k] for k in Release.__dataclass_fields__}) for r in self.data["releases"])

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        return tuple(Requirement(r["feature"], r["op"], r["param"], r["product_version"], r["cann"],
                                 f"{r['table']}:{r['row']}") for r in self.data["requirements"])

    def for_torch(self, line: Version) -> Release | None:
        """The newest torch_npu wheel for a torch line (the table lists the newest product version first)."""
        return next((r for r in self.releases if r.torch_line == line), None)

    def newest_torch(self) -> Version:
        """The newest torch line any torch_npu wheel pairs with."""
        return max(r.torch_line for r in self.releases)

    def newest_stated(self) -> Release | None:
        """The newest wheel whose CANN the facts state (a wheel read from the registry may not say)."""
        return next((r for r in self.releases if r.cann), None)

    def first_with(self, product_version: str, line: Version) -> Release | None:
        """The wheel of product version `product_version` or newer for a torch line, the oldest such."""
        candidates = [r for r in self.releases if r.torch_line == line and r.product_version
                      and _product_key(r.product_version) >= _product_key(product_version)]
        return min(candidates, key=lambda r: _product_key(r.product_version)) if candidates else None

    @property
    def recommended(self) -> Mapping[str, Any] | None:
        return self.data.get("recommended")

    @property
    def driver(self) -> Mapping[str, Any] | None:
        return self.data.get("driver")


def format_releases(table: Releases) -> str:
    """`opassess kb show versions`: every torch_npu release with its torch, product version, CANN and status, the
    features with a stated minimum, and the driver statement, each with its row."""
    lines = [f"torch_npu releases ({table.data['sources']['versions']['table']}; {table.data['upstream'][:100]})",
             f"{'torch_npu':<14} {'torch':<7} {'product':<8} {'CANN':<9} {'status':<12} row"]
    for r in table.releases:
        status = r.status if len(r.status) <= 12 else r.status[:11] + "~"
        lines.append(f"{r.wheel:<14} {r.torch:<7} {r.product_version or '-':<8} {r.cann or '-':<9} {status:<12} "
                     f"{r.row}")
    lines.append(f"newest torch line paired: {'.'.join(map(str, table.newest_torch()))}")
    for need in table.requirements:
        lines.append(f"{need.feature}: {need.op} {need.param}= needs torch_npu {need.product_version}+ and CANN "
                     f"{need.cann}+ ({need.cite})")
    if table.driver:
        lines.append(f"driver/firmware: {table.driver['text']} ({table.cite(table.driver['row'])})")
    return "\n".join(lines)


def load_releases(directory: Path | None = None) -> Releases:
    """The release table of a knowledge-base folder (the shipped one when the folder has none)."""
    path = Path(directory) / TABLE if directory is not None else data_path("kb") / TABLE
    return _load(path if path.is_file() else data_path("kb") / TABLE)


@cache
def _load(path: Path) -> Releases:
    return Releases(path, read_kb_table(path, _KEYS, "tools/kb_versions.py"))
