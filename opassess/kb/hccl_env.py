"""The HCCL counterpart of each NCCL environment variable (data/hccl_env.toml, curated and cited): read strictly."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from opassess.datafile import TomlTable
from opassess.errors import KnowledgeBaseError
from opassess.resources import data_path

FILE = "hccl_env.toml"
# owner/name@<40-hex commit>:path, optionally :L<first>[-L<last>]
CITATION = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}:[^:\s]+(:L\d+(-L\d+)?)?$")
_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


@dataclass(frozen=True)
class HcclVariable:
    """What torch_npu reads instead of an NCCL variable."""

    hccl: str
    old_name: str  # the older name torch_npu still reads, "" when none
    values: str
    cites: tuple[str, ...]  # repo@commit:path[:Lx-Ly]
    url: str

    @property
    def cite(self) -> str:
        return self.cites[0]


def read_hccl_env(path: Path) -> dict[str, HcclVariable]:
    """NCCL name -> its HcclVariable; an entry missing a key, with an unknown key, a malformed name or citation, or
    an NCCL name given twice is refused with the file and key named."""
    root = TomlTable.of_file(path, "HCCL environment-variable file", KnowledgeBaseError)
    found: dict[str, HcclVariable] = {}
    for row in root.tables("variable"):
        names = row.strings("nccl")
        variable = HcclVariable(row.string("hccl"), row.string("old_name"), row.string("values"),
                                row.strings("cite"), row.string("url"))
        for key, values in (("nccl", names), ("hccl", (variable.hccl,)),
                            ("old_name", (variable.old_name,) if variable.old_name else ())):
            for value in values:
                if not _NAME.match(value):
                    raise row.error(key, f"{value!r} is not an environment variable name")
        if not variable.cites or not all(CITATION.match(c) for c in variable.cites):
            raise row.error("cite", "each citation must read owner/name@<40-hex commit>:path[:Lx-Ly]")
        if not variable.url.startswith("https://"):
            raise row.error("url", "must be an https:// address")
        for name in names:
            if name in found:
                raise row.error("nccl", f"{name} is given twice")
            found[name] = variable
        row.finish()
    root.finish()
    return found


@lru_cache(maxsize=1)
def hccl_variables() -> Mapping[str, HcclVariable]:
    """The shipped table (data/hccl_env.toml)."""
    return read_hccl_env(data_path(FILE))
