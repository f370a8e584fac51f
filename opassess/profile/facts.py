"""What `opassess profile` knows about profiler exports: the kb's profiler.json (tools/kb_profiler.py) and the
curated PMU checklist (data/profile_checklist.toml)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..datafile import TomlTable, read_json
from ..errors import ConfigError, KnowledgeBaseError
from ..resources import data_path

FILE = "profiler.json"
CHECKLIST = "profile_checklist.toml"


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
    pmu: Mapping[str, Mapping[str, Any]]
    placements: Mapping[str, str]
    advisor: Mapping[str, Mapping[str, Any]]
    ai_cpu: Mapping[str, Mapping[str, Any]]
    host_cpu: Mapping[str, Mapping[str, Any]]
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
