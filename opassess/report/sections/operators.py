"""The operator-level parts of the JSON document read back (report/parts.py): each operator (`operators`,
$defs/operator) with its signatures, reasons, scores and risk, each pattern finding (`findings`), the `summary`
with its decisions and activities, the model and the tool. report/document.py builds them; renderers, the display
and the gates read these records. tests/test_vocabulary.py ties each part's fields to the schema's properties."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..parts import EffortPart, RiskPart, key
from .graph import GraphVerdictPart
from .performance import EstimatedTimePart, FindingTimePart


@dataclass(frozen=True)
class SignaturePart:
    """One attribute/shape/dtype signature of an operator."""

    attrs: Mapping[str, Any] = field(default_factory=dict)
    input_shapes: tuple[Any, ...] = ()
    input_dtypes: tuple[str | None, ...] = ()
    count: int = 0
    modules: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    category: str | None = None


@dataclass(frozen=True)
class ReasonPart:
    """Why an operator is classified as it is (`signature`: the index of the signature it is about, if one)."""

    code: str = ""
    message: str = ""
    evidence: str = ""
    signature: int | None = None


@dataclass(frozen=True)
class ExclusionPart:
    """A kernel the knowledge base has that does not apply to the operator as the model calls it, and why."""

    code: str = ""
    message: str = ""
    evidence: str = ""


@dataclass(frozen=True)
class SubscorePart:
    dimension: str
    criterion: str
    value: float
    weight: float
    signal: str | None = None


@dataclass(frozen=True)
class ScoresPart:
    functional: float | None = None
    performance: float | None = None
    ecosystem: float | None = None
    composite: float | None = None
    subscores: tuple[SubscorePart, ...] = ()


@dataclass(frozen=True)
class DeprecatedPart:
    successor: str | None = None


@dataclass(frozen=True)
class OperatorPart:
    """One operator type: what it is, where it is called, its category and, once estimated, its cost."""

    op: str
    kind: str = ""
    aten: tuple[str, ...] = ()
    entry: tuple[str, ...] = ()
    count: int = 0
    modules: tuple[str, ...] = ()
    signatures: tuple[SignaturePart, ...] = ()
    source: tuple[str, ...] = ()
    project_source: tuple[str, ...] = ()
    flops: int | None = None
    bytes_moved: int | None = None
    category: str | None = None
    known: bool | None = None
    reasons: tuple[ReasonPart, ...] = ()
    replacement: str | None = None
    replacement_deprecated: DeprecatedPart | None = None
    cann_op: str | None = None
    aten_support: Mapping[str, bool] = field(default_factory=dict)
    confidence: str | None = None
    exclusions: tuple[ExclusionPart, ...] = ()
    backward_aten: tuple[str, ...] | None = None  # absent in a report written without --train's field
    backward_support: Mapping[str, bool] = field(default_factory=dict)
    backward_flops: int | None = None
    scores: ScoresPart | None = None
    person_days: EffortPart | None = None
    risk: RiskPart | None = None
    pareto: bool | None = None
    cost: str | None = None
    origin: str | None = None
    cost_note: str | None = None
    decisions: tuple[str, ...] = ()
    graph_mode: Mapping[str, GraphVerdictPart] | None = None
    estimated_time: EstimatedTimePart | None = None


@dataclass(frozen=True)
class FindingPart:
    """One pattern finding (`findings`): a rewrite the model's graph offers, and what it would recover."""

    kind: str
    title: str = ""
    nodes: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    source: str | None = None
    npu_api: str | None = None
    effect: str = ""
    call: str | None = None
    call_notes: tuple[str, ...] = ()
    time: FindingTimePart | None = None


# ------------------------------------------------------------------ the summary


@dataclass(frozen=True)
class ParetoPart:
    ops: tuple[str, ...] = ()
    share_of_types: float = 0.0
    share_of_effort: float = 0.0


@dataclass(frozen=True)
class ActivityPart:
    """A model-level activity line (integration, validation, ...) and what it costs."""

    name: str
    title: str = ""
    person_days: EffortPart | None = None
    basis: str = ""


@dataclass(frozen=True)
class DecisionPart:
    """A decision the model's operators share (precision, ...): its plan, what it costs once and in all."""

    name: str
    title: str = ""
    cause: str | None = None
    operators: tuple[str, ...] = ()
    person_days: EffortPart | None = None
    once: EffortPart | None = None
    basis: str = ""
    plan: tuple[str, ...] = ()
    sites: tuple[str, ...] = ()


@dataclass(frozen=True)
class PresentPart:
    """Source sites present in the project but not reached by the run: how many, and what they would cost."""

    sites: int
    person_days: EffortPart


@dataclass(frozen=True)
class SummaryPart:
    """`summary`: counts by category and, once estimated, the totals, the band and how they were reached."""

    operator_types: int = 0
    occurrences: int = 0
    categories: Mapping[str, int] = field(default_factory=dict)
    unknown: int = 0
    person_days: EffortPart | None = None
    p10: float | None = None
    p50: float | None = None
    p90: float | None = None
    method: str | None = None
    pareto: ParetoPart | None = None
    by_category: Mapping[str, EffortPart] | None = None
    headline: str | None = None
    band: str | None = None
    profile: str | None = None
    assumptions: str | None = None
    by_origin: Mapping[str, EffortPart] | None = None
    activities: tuple[ActivityPart, ...] | None = None  # None in a report written before they were listed
    cost_bases: Mapping[str, tuple[str, ...]] | None = None
    decisions: tuple[DecisionPart, ...] | None = None
    present: PresentPart | None = None


# ------------------------------------------------------------------ the model and the tool


@dataclass(frozen=True)
class StandInPart:
    library: str
    symbols: tuple[str, ...]
    why: str
    built_by: str | None = None  # the project's own extension, not built here: the setup.py line that builds it


@dataclass(frozen=True)
class AttemptPart:
    method: str = ""
    error: str | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class CapturePart:
    """How the graph was captured: the method, the device, the step, the stand-ins and the attempts."""

    method: str | None = None
    device: str = ""
    device_note: str | None = None
    step: str | None = None
    step_note: str | None = None
    stand_ins: tuple[StandInPart, ...] = ()
    attempts: tuple[AttemptPart, ...] = ()


@dataclass(frozen=True)
class ModelPart:
    """`model`: where the model came from ("examples/net.py", "build_model", "Net") and how it was captured."""

    source: str
    entry: str | None = ""
    class_name: str = key("class", "")
    parameters: int = 0
    dtype: str = ""
    inputs: tuple[str, ...] = ()
    label: str | None = None
    capture: CapturePart = field(default_factory=CapturePart)


@dataclass(frozen=True)
class ToolPart:
    name: str
    version: str
