"""The source findings formatted for people: one row per site (work first, notes after), the scan's counts and the
files it skipped, built once from the JSON document for every format."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from ...messages import say
from ...source.catalog import said_contexts
from ...source.records import NOTE_KINDS
from ...vocabulary import CATEGORIES, Confidence
from ..display.records import Record
from ..parts import EffortPart, RiskPart
from ..text import days

LARGEST = 20  # sites the terminal summary lists (the Markdown, HTML and JSON reports list every one)


# ------------------------------------------------------------------ the JSON part as it is read back (report/parts.py;
# report/document.py builds `source_findings` and `source`; tests/test_vocabulary.py ties these to the schema)


@dataclass(frozen=True)
class SizePart:
    lines: int = 0
    kernels: int = 0
    apis: tuple[str, ...] = ()


@dataclass(frozen=True)
class SitePart:
    """One source finding (`source_findings`): a line of GPU-specific code, its route to the NPU and, once estimated,
    its cost."""

    file: str
    line: int
    code: str = ""
    kind: str = ""
    category: str = ""
    subject: str = ""
    npu_route: str = ""
    evidence: tuple[str, ...] = ()
    confidence: str | None = None
    person_days: EffortPart | None = None
    key: str | None = None
    basis: str | None = None
    risk: RiskPart | None = None
    operators: tuple[str, ...] = ()
    covered_by: str | None = None
    reached: bool | None = None
    size: SizePart | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SkippedPart:
    file: str = ""
    reason: str = ""


@dataclass(frozen=True)
class ConfigurationPart:
    """`source.configuration`: what a project's default configuration reaches (`opassess source`)."""

    config: str = ""
    roots: tuple[str, ...] = ()
    dtype: str = ""
    variants: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceScanPart:
    """`source`: the scanned root, its files and lines, the files it skipped and, for a project with a config
    class, what its default configuration reaches."""

    root: str = "."
    files: tuple[str, ...] = ()
    lines: int = 0
    skipped: tuple[SkippedPart, ...] = ()
    configuration: ConfigurationPart | None = None


def shown_sites(sites: Sequence[SitePart]) -> list[SitePart]:
    """The source findings a report lists on their own: not those a captured operator is (covered_by)."""
    return [site for site in sites if not site.covered_by]


def is_work(site: SitePart) -> bool:
    """Whether a site is work rather than a note (a precision note or no-op: no effort, listed after the work): the
    one test behind the summary cards, this section's counts, the JUnit cases and the snapshots' states."""
    return site.kind not in NOTE_KINDS


# ------------------------------------------------------------------ the display part


@dataclass(frozen=True)
class SourceRow(Record):
    """One source finding as the reports show it."""

    location: str  # "train.py:37"
    file: str
    line: int
    code: str
    kind: str
    category: str
    subject: str
    route: str
    evidence_text: str  # the table rows, "; "-joined
    confidence: Confidence | None  # None when the report names none (or a word this version does not know)
    notes_text: str  # dropped arguments, flagged APIs; "" when none
    size_text: str  # "7 lines, 1 kernel(s): arange, atomic_add"; "" when not sized
    likely_text: str  # "" when not estimated
    range_text: str
    stars_text: str
    note: bool  # a precision note or no-op: shown, not counted as work
    operators_text: str  # capture operators counted with this site


@dataclass(frozen=True)
class SkippedRow(Record):
    file: str
    reason: str


@dataclass(frozen=True)
class SourceSection(Record):
    """Everything a report shows about the source scan."""

    summary: str  # "18 sites in 4 files (312 lines): 7 direct, 8 param-converted, 3 custom-dev"
    work: Sequence[SourceRow]  # sites that are work, in (file, line) order (Rows: built when first read)
    notes: Sequence[SourceRow]  # precision notes and no-ops
    skipped: tuple[SkippedRow, ...]
    likely_text: str  # the sites' person-days together
    largest: tuple[SourceRow, ...] = ()  # the LARGEST sites by person-days, for the terminal summary


def _size(size: SizePart | None, gettext: Callable[[str], str]) -> str:
    if not size:
        return ""
    counted = gettext("%(lines)d lines, %(kernels)d kernel(s)") % {"lines": size.lines, "kernels": size.kernels}
    # the API names listed with the reader's separator ('、' in Chinese: a list of names, not a phrase)
    return counted + (gettext(": %(apis)s") % {"apis": gettext(", ").join(size.apis)} if size.apis else "")


def _stars(stars: int) -> str:
    return "\u2605" * stars + "\u2606" * (5 - stars)


class Rows(Sequence[SourceRow]):
    """Source rows built on first reading, all at once: a 14,000-site scan's terminal summary reads only how many
    there are (and its largest few, built apart), the Markdown and HTML reports every one."""

    def __init__(self, findings: Sequence[SitePart], build: Callable[[SitePart], SourceRow]):
        self._findings, self._build = findings, build
        self._rows: tuple[SourceRow, ...] | None = None

    def _all(self) -> tuple[SourceRow, ...]:
        if self._rows is None:
            self._rows = tuple(map(self._build, self._findings))
        return self._rows

    def __len__(self) -> int:
        return len(self._findings)

    @overload
    def __getitem__(self, index: int) -> SourceRow: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[SourceRow, ...]: ...

    def __getitem__(self, index: int | slice) -> SourceRow | tuple[SourceRow, ...]:
        return self._all()[index]

    def __iter__(self) -> Iterator[SourceRow]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Sequence) else other)

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return f"Rows({len(self)} rows)"


def source_section(sites: Sequence[SitePart], scan: SourceScanPart | None, gettext: Callable[[str], str]
                   ) -> SourceSection | None:
    """The section, or None when nothing was found and nothing skipped (reports then look as they did before)."""
    # a site an ordinary captured operator is (covered_by) is that operator's row: shown once, there
    findings = shown_sites(sites)
    scan = scan or SourceScanPart()
    skipped = tuple(SkippedRow(s.file, s.reason) for s in scan.skipped)
    if not findings and not skipped:
        return None
    # 14,000 sites say a few dozen routes and evidence texts: each plain string is said once (a Text every time)
    routes: dict[str, str] = {}
    evidences: dict[str, str] = {}
    configured = scan.configuration  # a source-only scan: the project's default configuration decides
    separator = gettext("; ")
    not_reached = gettext("present, not reached by the default configuration") if configured \
        else gettext("present, not reached by this model")

    def row(f: SitePart) -> SourceRow:
        effort, risk = f.person_days, f.risk
        route = f.npu_route
        if type(route) is not str:
            route = say(route, gettext)
        elif route in routes:
            route = routes[route]
        else:
            route = routes[route] = say(route, gettext)
        evidence = "; ".join(f.evidence)
        if evidence not in evidences:
            evidences[evidence] = said_contexts(evidence, gettext)
        return SourceRow(
            location=f"{f.file}:{f.line}", file=f.file, line=f.line, code=f.code, kind=f.kind,
            category=f.category, subject=f.subject, route=route, evidence_text=evidences[evidence],
            confidence=Confidence.of(f.confidence),
            notes_text=separator.join([*([not_reached] if f.reached is False else []),
                                       *(say(n, gettext) for n in f.notes)]),
            size_text=_size(f.size, gettext),
            likely_text=days(effort.likely) if effort else "",
            range_text=f"{days(effort.low)}\u2013{days(effort.high)}" if effort else "",
            stars_text=_stars(risk.stars) if risk else "", note=not is_work(f),
            operators_text=", ".join(f.operators))

    work = [f for f in findings if is_work(f)]
    notes = [f for f in findings if not is_work(f)]
    counts = {c: sum(1 for f in work if f.category == c) for c in CATEGORIES}
    summary = gettext("%(sites)d sites in %(files)d files (%(lines)d lines): %(counts)s; %(notes)d notes") % {
        "sites": len(work), "files": len(scan.files), "lines": scan.lines or 0,
        "counts": ", ".join(f"{n} {c}" for c, n in counts.items()), "notes": len(notes)}
    present = [f for f in findings if f.reached is False]
    if present:
        text = gettext("%(n)d present, not reached by this model: %(days)s person-days, not in the total")
        if configured:
            text = gettext("%(n)d present, not reached by the default configuration (%(config)s): %(days)s "
                           "person-days, not in the total")
        summary += "; " + text % {"n": len(present), "config": configured.config if configured else "",
                                  "days": days(sum(_likely(f) or 0.0 for f in present))}
    total = sum(f.person_days.likely for f in findings if f.person_days and f.reached is not False)
    largest = sorted(work, key=lambda f: -(_likely(f) or 0.0))[:LARGEST]
    return SourceSection(summary=summary, work=Rows(work, row), notes=Rows(notes, row), skipped=skipped,
                         likely_text=days(total), largest=tuple(map(row, largest)))


def _likely(site: SitePart) -> float | None:
    return site.person_days.likely if site.person_days else None
