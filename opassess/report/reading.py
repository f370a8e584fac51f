"""The JSON document read back whole: `read_document` decodes it once into a DocumentPart (report/parts.py) whose
fields are the sections' parts, declared beside their builders (report/sections/<name>.py). The view decodes the
document it built; `opassess diff`, gates and portfolios decode a report read from a file (ci/snapshot.py)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .parts import EffortPart, decode
from .sections.graph import GraphModePart
from .sections.operators import FindingPart, ModelPart, OperatorPart, SummaryPart, ToolPart
from .sections.performance import PerformancePart
from .sections.reach import ReachPart
from .sections.routes import OnnxPart, ServingPart
from .sections.source import SitePart, SourceScanPart
from .sections.versions import VersionsPart


@dataclass(frozen=True)
class InputFilePart:
    path: str
    sha256: str


@dataclass(frozen=True)
class InputsPart:
    overlay: str | None = None
    files: tuple[InputFilePart, ...] = ()


@dataclass(frozen=True)
class UnknownOperatorPart:
    op: str
    kind: str = ""
    count: int = 0
    modules: tuple[str, ...] = ()
    source: tuple[str, ...] = ()


@dataclass(frozen=True)
class DocumentPart:
    """The whole JSON document (format_version 1) as records: what every format, the display and the gates read."""

    tool: ToolPart
    model: ModelPart
    format_version: Any = None
    target: str | None = None
    torch_npu: str | None = None
    kb_version: str | None = None
    weights_source: str = ""
    sandbox: str | None = None
    inputs: InputsPart | None = None
    operators: tuple[OperatorPart, ...] = ()
    summary: SummaryPart = field(default_factory=SummaryPart)
    risk_matrix: tuple[tuple[tuple[str, ...], ...], ...] | None = None
    by_module: Mapping[str, EffortPart] | None = None
    findings: tuple[FindingPart, ...] = ()
    performance: PerformancePart | None = None
    source_findings: tuple[SitePart, ...] = ()
    source: SourceScanPart | None = None
    unknown_operators: tuple[UnknownOperatorPart, ...] = ()
    graph_mode: GraphModePart | None = None
    reach: ReachPart | None = None
    versions: VersionsPart | None = None
    seconds: Mapping[str, float] = field(default_factory=dict)
    onnx: OnnxPart | None = None
    serving: ServingPart | None = None


def read_document(document: Mapping[str, Any]) -> DocumentPart:
    """The document's records; DocumentError (a ValueError) names the first object that is not what it should be
    ("operators[3].person_days: missing 'low'")."""
    return decode(DocumentPart, document)


def parts_of(view: Any) -> DocumentPart:
    """The records of a view's document: decoded once by build_view, or now for a view of a document alone (the
    SARIF and JUnit tests render hand-written documents)."""
    parts = getattr(view, "parts", None)
    return parts if isinstance(parts, DocumentPart) else read_document(view.document)
