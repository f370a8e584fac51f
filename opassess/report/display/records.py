"""The display's records: frozen dataclasses the templates and the terminal reporter read (display/build.py builds
them). Records are read by attribute (`op.likely_text`), in Python and templates alike."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ...vocabulary import Category, Confidence


@dataclass(frozen=True)
class Record:
    """A display record: read by attribute (`cell.heat`), in Python and in the templates alike (a frozen dataclass
    of no fields: every record is one of its frozen dataclasses)."""

    def context(self) -> dict[str, Any]:
        """The record's fields as a template's top-level names (shallow: nested records stay records)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Attempt(Record):
    method: str
    status: str  # "used", "ok" or "failed"
    error: str
    seconds_text: str


@dataclass(frozen=True)
class ModelHeader(Record):
    class_name: str
    source: str
    entry: str | None
    parameters_text: str
    dtype: str
    inputs_text: str
    capture_method: str
    device: str
    device_note: str
    attempts: tuple[Attempt, ...]
    step_text: str = "forward pass only"  # what was captured: a forward pass, or a training step (--train)
    training: bool = False
    stand_ins_text: str = ""  # the GPU-only libraries and CUDA calls the capture stood in for (English data text)
    reach_text: str = ""  # what the run did not reach: the present-not-reached calls, not direct ones named first


@dataclass(frozen=True)
class Totals(Record):
    likely_text: str
    range_text: str
    low_text: str
    high_text: str
    p50_text: str
    p90_text: str
    method: str
    p10_text: str = ""
    headline_text: str = ""  # "4.3 person-days (P10-P90 3.4-5.6)"


@dataclass(frozen=True)
class Card(Record):
    label: str
    value: str
    detail: str


@dataclass(frozen=True)
class CategoryRow(Record):
    name: Category
    types: int
    occurrences: int
    likely_text: str
    range_text: str
    share_text: str
    bar_pct: str
    ops: tuple[str, ...]


@dataclass(frozen=True)
class PieSlice(Record):
    label: str
    value: int


@dataclass(frozen=True)
class AtenRow(Record):
    name: str
    support: str


@dataclass(frozen=True)
class ReasonRow(Record):
    code: str
    message: str
    evidence: str
    signatures: tuple[int, ...] = ()  # 0-based indexes of the signatures this reason covers (empty: the operator)
    covers: str = ""  # "signatures 1, 3 of 4: ..." ("" when it covers the operator or its only signature)


@dataclass(frozen=True)
class SignatureRow(Record):
    text: str
    count: int
    category: str


@dataclass(frozen=True)
class SubscoreRow(Record):
    dimension: str
    criterion: str
    value_text: str
    weight_text: str
    signal: str


@dataclass(frozen=True)
class OperatorRow(Record):
    """One operator type; the estimate's fields are empty ('' / -1 / 0) when the estimate did not run."""

    rank: int
    op: str
    short: str
    kind: str
    category: str
    known: bool
    count: int
    signature_count: int
    aten: tuple[str, ...]
    aten_rows: tuple[AtenRow, ...]
    category_rank: int
    reasons: tuple[ReasonRow, ...]
    replacement: str | None
    cann_op: str | None
    sources: tuple[str, ...]
    modules: tuple[str, ...]
    modules_text: str
    modules_shown: tuple[str, ...]
    modules_more: int
    signatures: tuple[SignatureRow, ...]
    estimated: bool
    search: str
    composite: float = -1
    composite_text: str = ""
    functional_text: str = ""
    performance_text: str = ""
    ecosystem_text: str = ""
    subscores: tuple[SubscoreRow, ...] = ()
    confidence: Confidence | None = None  # None when not classified
    likely: float = -1
    likely_text: str = ""
    range_text: str = ""
    share_text: str = ""
    stars: int = 0
    stars_text: str = ""
    likelihood: int = 0
    impact: int = 0
    risk_text: str = ""
    risk_signals: tuple[str, ...] = ()
    heat: str = "none"
    pareto: bool = False
    replacement_deprecated: bool = False  # the facts mark the replacement deprecated
    replacement_successor: str | None = None  # its successor; None: no successor
    step_text: str = "forward"  # "forward", "forward + backward" (--train) or "optimizer"
    backward_rows: tuple[AtenRow, ...] = ()  # the ATen ops its backward dispatched (--train)


@dataclass(frozen=True)
class ShownOp(Record):
    op: str
    short: str


@dataclass(frozen=True)
class RiskCell(Record):
    likelihood: int
    impact: int
    ops: tuple[str, ...]
    shorts: tuple[str, ...]
    shown: tuple[ShownOp, ...]
    more: int
    more_title: str
    count: int
    heat: str
    mark: str
    title: str


@dataclass(frozen=True)
class RiskRow(Record):
    likelihood: int
    label: str
    cells: tuple[RiskCell, ...]


@dataclass(frozen=True)
class ImpactLabel(Record):
    impact: int
    label: str


@dataclass(frozen=True)
class RiskGrid(Record):
    rows: tuple[RiskRow, ...]  # likelihood 5 (top) down to 1
    impacts: tuple[ImpactLabel, ...]


@dataclass(frozen=True)
class ParetoSummary(Record):
    ops: tuple[str, ...]
    count: int
    share_types_text: str
    share_effort_text: str
    shown: tuple[str, ...]
    more: int


@dataclass(frozen=True)
class ParetoBar(Record):
    x: str
    y: str
    width: str
    height: str
    label: str
    title: str
    category: str
    label_x: str
    label_y: str
    cx: str
    cy: str


@dataclass(frozen=True)
class Tick(Record):
    y: str
    text: str


@dataclass(frozen=True)
class ParetoChart(Record):
    width: str
    height: str
    view_box: str
    left: str
    right: str
    top: str
    baseline: str
    bars: tuple[ParetoBar, ...]
    line: str
    left_ticks: tuple[Tick, ...]
    right_ticks: tuple[Tick, ...]
    ref_y: str
    ref_label_x: str
    left_label_x: str
    right_label_x: str
    mid_y: str
    tick_left_x: str
    tick_right_x: str


@dataclass(frozen=True)
class ModuleRow(Record):
    path: str
    name: str
    class_: str
    depth: int
    indent: str
    likely_text: str
    range_text: str
    share_text: str
    bar_pct: str

    def __getattr__(self, name: str) -> Any:  # templates write row.class
        if name == "class":
            return self.class_
        raise AttributeError(name)


@dataclass(frozen=True)
class FindingRow(Record):
    kind: str
    title: str
    ops: tuple[str, ...]
    source: str
    npu_api: str
    effect: str
    time_text: str = ""  # "-1.80 ms of 6.20 ms at risk (estimate)"; "" without a time model or a gain


@dataclass(frozen=True)
class RuleRange(Record):
    """A category's person-day range as the weights state it, for rule texts: '3-5', or '10+' for the open top."""

    category: Category
    text: str


@dataclass(frozen=True)
class ActivityRow(Record):
    """A model-level activity line (environment bring-up, validation, accuracy alignment, performance tuning)."""

    title: str
    likely_text: str
    range_text: str
    basis: str


@dataclass(frozen=True)
class DecisionRow(Record):
    """A model-level decision: operators sharing one cause and one fix, priced once plus a check each."""

    title: str
    likely_text: str
    range_text: str
    basis: str
    operators: tuple[str, ...]
    plan: tuple[str, ...]


@dataclass(frozen=True)
class OriginRow(Record):
    """Effort of one origin: the project's code, an upstream library, or the model-level activities."""

    origin: str
    who: str  # who would make the change
    likely_text: str
    range_text: str
    share_text: str


@dataclass(frozen=True)
class ActionItem(Record):
    """One thing to do: an operator that needs work, or a performance finding, with what to do about it."""

    kind: str  # category or finding kind
    subject: str  # operator key or finding title
    action: str
    days_text: str  # '' when not costed on its own
    time_text: str = ""  # "recovers ~12.00 ms per step (estimate), 6.00 ms per person-day"; '' when nothing measured
