"""The display of one assessment: the records and sections every format reads (report/display/build.py builds it).

Apart from records.py because its sections (report/sections/) are built on those
records: this module names both without a circle."""
from __future__ import annotations

from dataclasses import dataclass

from ..sections.graph import GraphSection
from ..sections.routes import OnnxSection, ServingSection
from ..sections.source import SourceSection
from ..sections.time import TimeSection
from .records import (
    ActionItem,
    ActivityRow,
    Card,
    CategoryRow,
    DecisionRow,
    FindingRow,
    ModelHeader,
    ModuleRow,
    OperatorRow,
    OriginRow,
    ParetoChart,
    ParetoSummary,
    PieSlice,
    Record,
    RiskGrid,
    RuleRange,
    Totals,
)


@dataclass(frozen=True)
class Display(Record):
    """Everything a format shows of one assessment (report/display/build.py builds it; View.display holds it)."""

    title: str
    tool_version: str
    model: ModelHeader
    target: str
    torch_npu: str
    kb_version: str
    weights_source: str
    estimated: bool
    totals: Totals | None
    cards: tuple[Card, ...]
    categories: tuple[CategoryRow, ...]
    pie: tuple[PieSlice, ...]
    pareto: ParetoSummary | None
    pareto_statement: str
    pareto_chart: ParetoChart | None
    risk_grid: RiskGrid | None
    operators: tuple[OperatorRow, ...]
    top_operators: tuple[OperatorRow, ...]  # largest effort first; first occurrences when not estimated
    modules: tuple[ModuleRow, ...]
    modules_hidden: int  # every one of them smaller than any module shown
    modules_small: int  # under MODULE_MIN_SHARE of the effort
    modules_cut: int  # above it, but past the MODULE_ROWS largest
    module_rows: int
    findings: tuple[FindingRow, ...]
    unknown: tuple[OperatorRow, ...]
    suggested_html: str
    effort_ranges: tuple[RuleRange, ...] = ()  # per category, from the weights the assessment used
    evidence_order: str = ""  # "Verdicts from: kernel facts (CANN aclnn docs) for Atlas A2, then ..."
    pareto_marked: bool = False  # badge the 20/80 operators: only when they are few (display.PARETO_MARK_SHARE)
    profile: str = ""  # the weights profile used
    assumptions: str = ""  # "figures are assumptions until calibrated ..."
    band_text: str = ""  # what the P10-P90 band means
    activities: tuple[ActivityRow, ...] = ()  # model-level lines
    decisions: tuple[DecisionRow, ...] = ()  # model-level decisions (operators sharing one cause and one fix)
    origins: tuple[OriginRow, ...] = ()  # effort by origin, largest first
    zero_cost: tuple[str, ...] = ()  # operators that put no work on the device
    validation_block: tuple[str, ...] = ()  # direct operators that share the validation activity
    actions: tuple[ActionItem, ...] = ()  # what to do, in every format
    source: SourceSection | None = None  # the source scan's sites; None when it found nothing
    source_only: bool = False  # `opassess source`: no model was loaded, the header says so
    onnx: OnnxSection | None = None  # --route onnx; None without
    serving: ServingSection | None = None  # --route vllm-ascend; None without
    time: TimeSection | None = None  # the time model's step and operators; None without one
    graph: GraphSection | None = None  # readiness per NPU graph back-end; None with --no-graph-mode
    versions: tuple[str, ...] = ()  # the torch / torch_npu / CANN set to install (report/sections/versions.py)

    def effort_range(self, category: str) -> str | None:
        return next((r.text for r in self.effort_ranges if r.category == category), None)
