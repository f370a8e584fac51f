"""What `opassess profile` knows about profiler exports: the kb's profiler.json (tools/kb_profiler.py) and the
curated PMU checklist (data/profile_checklist.toml)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from ..datafile import TomlTable, read_json
from ..errors import ConfigError, KnowledgeBaseError
from ..resources import data_path

FILE = "profiler.json"
CHECKLIST = "profile_checklist.toml"


class PmuColumn(TypedDict):
    """profiler.json columns.pmu: one PMU column of a profiler export."""

    groups: list[str]  # the export's column groups ("MemoryAccess", ...)
    row: str  # profiler_csv_columns.tsv:N
    above: NotRequired[float]  # memory_bound only: the advisor's threshold, with what it means and its formula
    means: NotRequired[str]
    formula: NotRequired[str]


class Threshold(TypedDict):
    column: str
    above: float


class AdvisorRule(TypedDict):
    """profiler.json advisor: one msprof-analyze advisor rule that applies to an export."""

    id: str  # "cube-bound", "fa-shape-affinity", "dynamic-shape", ...
    rule: str
    condition: str
    inputs: str
    static: bool
    row: str
    path: str  # the rule file in the advisor's sources
    thresholds: NotRequired[list[Threshold]]  # the bound rules
    modulus: NotRequired[int]  # the shape-affinity rules: an axis should be a multiple of it
    axes: NotRequired[list[str]]


class AiCpuFallback(TypedDict):
    """profiler.json fallbacks.ai_cpu: a kernel type op-plugin runs on the AI CPU for some input dtypes."""

    dtypes: list[str]
    cast_to: str
    evidence: list[str]


class HostCpuFallback(TypedDict):
    evidence: list[str]


@dataclass(frozen=True)
class Checklist:
    """One PMU checklist item: a utilisation column below a threshold, on kernels of some placements."""

    name: str
    columns: tuple[str, ...]
    below: float
    placements: tuple[str, ...]
    advice: str
    source: str


@dataclass(frozen=True)
class ProfilerFacts:
    """The profiler-export facts: column spellings per role, Level0 N/A columns, PMU columns, placements, advisor
    rules, kernels that fall back to the AI CPU or the host CPU, and the checklist."""

    roles: Mapping[str, tuple[str, ...]]
    role_rows: Mapping[str, tuple[str, ...]]
    level0_na: tuple[str, ...]
    pmu: Mapping[str, PmuColumn]
    placements: Mapping[str, str]
    advisor: Mapping[str, AdvisorRule]
    ai_cpu: Mapping[str, AiCpuFallback]
    host_cpu: Mapping[str, HostCpuFallback]
    checklist: tuple[Checklist, ...]
    provenance: Mapping[str, Any]

    def role_of(self, column: str) -> str | None:
        """'Duration(us)' -> 'duration_us'; None for a column no role reads."""
        for role, spellings in self.roles.items():
            if column in spellings:
                return role
        return None


def _checklist(path: Path) -> tuple[Checklist, ...]:
    root = TomlTable.of_file(path, "profile checklist")
    items = []
    for name in root.keys():
        table = root.table(name)
        items.append(Checklist(name, table.strings("columns"), table.number("below", maximum=1.0),
                               table.strings("placements"), table.string("advice"), f"{path.name} [{name}]"))
        table.finish()
    root.finish()
    return tuple(items)


@lru_cache(maxsize=4)
def load_facts(directory: Path | None = None, checklist: Path | None = None) -> ProfilerFacts:
    """The profiler facts of the shipped knowledge base (or of `directory`)."""
    path = (directory or data_path("kb")) / FILE
    data = read_json(path, "knowledge-base table", KnowledgeBaseError)
    try:
        columns = data["columns"]
        roles = {role: tuple(entry["spellings"]) for role, entry in columns["roles"].items()}
        facts = ProfilerFacts(
            roles=roles,
            role_rows={role: tuple(entry["rows"]) for role, entry in columns["roles"].items()},
            level0_na=tuple(columns["level0_na"]),
            pmu=columns["pmu"],
            placements=columns["placements"],
            advisor={rule["id"]: rule for rule in data["advisor"]},
            ai_cpu=data["fallbacks"]["ai_cpu"],
            host_cpu=data["fallbacks"]["host_cpu"],
            checklist=_checklist(checklist or data_path(CHECKLIST)),
            provenance={key: data[key] for key in ("generator", "generated_at", "sources")},
        )
    except (KeyError, TypeError) as exc:
        raise KnowledgeBaseError(f"{path}: malformed profiler facts ({exc!r}): rebuild with tools/build_kb.py") \
            from exc
    except ConfigError:
        raise
    return facts
