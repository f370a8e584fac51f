"""The `performance` part of the JSON document (each operator's `estimated_time`, each finding's `time`): its shape
as the builders in sections/time.py write it (TypedDicts: mypy checks their keys) and as the time and job displays
read it back (parts: frozen records decoded once, report/parts.py). tests/test_vocabulary.py ties both to the
schema: $defs/estimated_time, properties/performance and its parts."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

# ------------------------------------------------------------------ as the builders write it



class PenaltyDoc(TypedDict):
    code: str
    us: float


class EstimatedTimeDoc(TypedDict):
    us: float
    at_risk_us: float
    bound: str
    unit: str
    penalties: list[PenaltyDoc]
    calls: int
    gpu_us: NotRequired[float]


class CompareDoc(TypedDict):
    product: str
    step_us: float | None
    at_risk_us: float | None
    by_unit: dict[str, float]
    host_us: NotRequired[float]
    eager_step_us: NotRequired[float]
    variant: NotRequired[str | None]
    label: NotRequired[str | None]
    notes: NotRequired[list[str]]


class GpuBaselineDoc(TypedDict):
    gpu: str
    label: str
    step_us: float
    ratio: float
    match_gpus: int
    matching_npus: float
    notes: list[str]


class TwoDiesDoc(TypedDict):
    step_us: float
    compute_us: float
    comm_us: float
    tier: str | None


class PerformanceDoc(TypedDict):
    product: str
    step_us: float | None
    at_risk_us: float | None
    by_unit: dict[str, float]
    method: str
    estimate: str
    note: str | None
    variant: str | None
    label: str | None
    notes: list[str]
    host_us: NotRequired[float]
    eager_step_us: NotRequired[float]
    compare: list[CompareDoc]
    memory: dict[str, Any] | None  # $defs/device_memory: MemoryPart's keys
    gpu_baseline: GpuBaselineDoc | None
    parallel: dict[str, Any] | None
    two_dies: TwoDiesDoc | None



# ------------------------------------------------------------------ as the displays read it


@dataclass(frozen=True)
class PenaltyPart:
    code: str
    us: float


@dataclass(frozen=True)
class EstimatedTimePart:
    """One operator's time on the target ($defs/estimated_time)."""

    us: float
    at_risk_us: float
    bound: str
    unit: str
    penalties: tuple[PenaltyPart, ...] = ()
    calls: int = 0
    gpu_us: float | None = None  # only with --gpu-baseline


@dataclass(frozen=True)
class FindingTimePart:
    """A finding's `time`: what its fix recovers and the step's time at risk."""

    gain_us: float = 0.0
    step_at_risk_us: float = 0.0


@dataclass(frozen=True)
class ComparePart:
    product: str
    step_us: float | None = None
    at_risk_us: float | None = None
    by_unit: Mapping[str, float] = field(default_factory=dict)
    host_us: float | None = None
    eager_step_us: float | None = None
    variant: str | None = None
    label: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class GpuBaselinePart:
    gpu: str
    step_us: float
    ratio: float
    label: str = ""
    match_gpus: int | None = None
    matching_npus: int | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TwoDiesPart:
    step_us: float
    comm_us: float
    compute_us: float = 0.0
    tier: str | None = None


@dataclass(frozen=True)
class MemoryPart:
    """$defs/device_memory: GiB per device against the product's HBM (`fits` null without an HBM figure)."""

    per_device_gib: float
    hbm_gib: float | None
    fits: bool | None
    breakdown: Mapping[str, float]
    basis: str = ""


@dataclass(frozen=True)
class CollectivePart:
    kind: str
    group: int
    tier: str
    calls: int
    bytes: float
    us: float
    exposed_us: float


@dataclass(frozen=True)
class ParallelPart:
    """`performance.parallel`: the --parallel layout's step, throughput, memory and collectives."""

    tp: int
    pp: int
    dp: int
    ep: int
    sp: bool
    cp: int
    devices: int
    micro_batches: int
    step_us: float | None
    compute_us: float | None
    comm_us: float | None
    bubble_us: float | None
    tokens_per_s_per_device: float | None
    memory: MemoryPart
    zero: int | None = None
    global_batch: int | None = None
    samples_per_s_per_device: float | None = None
    collectives: tuple[CollectivePart, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class PerformancePart:
    """`performance`: the step on the target, each --compare product, memory, the layout, the GPU baseline."""

    product: str
    step_us: float | None
    at_risk_us: float | None
    by_unit: Mapping[str, float]
    method: str
    estimate: str = ""
    note: str | None = None
    variant: str | None = None
    label: str | None = None
    notes: tuple[str, ...] = ()
    host_us: float | None = None
    eager_step_us: float | None = None
    compare: tuple[ComparePart, ...] = ()
    memory: MemoryPart | None = None
    gpu_baseline: GpuBaselinePart | None = None
    parallel: ParallelPart | None = None
    two_dies: TwoDiesPart | None = None
