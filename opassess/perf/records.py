"""The time model's records: one call's time, an operator's over its calls, a step's on one product."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..messages import N_, Text
from ..options import ParallelLayout

UNITS = ("cube", "vector", "aicpu", "cpu-fallback", "none")  # "none": a view or host op that launches no kernel
MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "kv_cache")
COLLECTIVES = ("tp-all-reduce", "sp-all-gather", "sp-reduce-scatter", "ep-all-to-all", "dp-all-reduce", "pp-send-recv")
BOUNDS = ("compute", "memory", "launch", "host", "none")
# Penalty codes, each the time a fact says is added over the roofline
PENALTIES = ("cpu-fallback", "online-compile", "host-sync", "transdata", "unaligned-cube", "unaligned-attention",
             "fp32-cube", "unfused")
ESTIMATE = Text(N_("estimate from modelled peaks and efficiencies (Huawei msModeling TensorCast figures, "
                   "ascend_hw_figures.tsv) and labelled assumptions (time_model.toml), not a measurement"))
# the same on a product whose cube matmul efficiencies by shape class are medians of published measurements
# (cube_shapes.json, from gemm_measurements.tsv): those efficiencies are measured, the step still is not
ESTIMATE_MEASURED_SHAPES = Text(N_(
    "estimate from modelled peaks and efficiencies (Huawei msModeling TensorCast figures, ascend_hw_figures.tsv), "
    "a cube matmul's efficiency by its shape class from published measurements (gemm_measurements.tsv; 'opassess kb "
    "show device' cites each) and labelled assumptions (time_model.toml); not a measurement of this model"))


@dataclass(frozen=True)
class Penalty:
    """Time a fact adds to a call over its roofline."""

    code: str  # one of PENALTIES
    us: float
    why: str  # one sentence naming the fact (and the assumption, when a factor is assumed)


@dataclass(frozen=True)
class CallTime:
    """One captured call on the device: us = roofline + penalties; at_risk_us = what the penalties add."""

    node: str
    op: str  # operator key
    unit: str  # one of UNITS
    bound: str  # one of BOUNDS
    roofline_us: float  # max(compute, memory) + launch, on the NPU, as if nothing were wrong
    us: float
    penalties: tuple[Penalty, ...] = ()
    compute_us: float = 0.0
    memory_us: float = 0.0

    @property
    def at_risk_us(self) -> float:
        return max(0.0, self.us - self.roofline_us)


@dataclass(frozen=True)
class OperatorTime:
    """An operator's calls summed: `estimated_time` in the JSON document."""

    op: str
    us: float
    at_risk_us: float
    bound: str  # of the calls carrying most time
    unit: str  # the unit carrying most time
    penalties: Mapping[str, float]  # code -> us over the calls
    calls: int


@dataclass(frozen=True)
class StepTime:
    """One product's step: the sum over the captured calls (forward, or the training step)."""

    product: str
    variant: str
    label: str
    step_us: float
    at_risk_us: float
    by_unit: Mapping[str, float]  # unit -> us
    operators: tuple[OperatorTime, ...]  # by at-risk time, then time, largest first
    calls: tuple[CallTime, ...] = field(default=(), repr=False)
    notes: tuple[str, ...] = ()  # the profile's derived values, assumptions, overlay
    host_us: float = 0.0  # eager mode: the host's dispatch time over the calls (time_model.toml [host] dispatch_us)
    eager_us: float = 0.0  # max(device time, host time) + syncs: the step as eager mode runs it

    def operator(self, key: str) -> OperatorTime | None:
        return next((o for o in self.operators if o.op == key), None)


@dataclass(frozen=True)
class DeviceMemory:
    """What one device holds during the step; `hbm_bytes` None when the tables give no figures for the product."""

    bytes: float
    hbm_bytes: float | None
    breakdown: Mapping[str, float]  # one of MEMORY_PARTS -> bytes (parts that hold nothing left out)
    basis: str  # how it was counted, in one sentence (English: the JSON contract)

    @property
    def fits(self) -> bool | None:
        return None if self.hbm_bytes is None else self.bytes <= self.hbm_bytes


@dataclass(frozen=True)
class Collective:
    """One kind of communication a layout implies, over a step: what it moves and what of it is not hidden."""

    kind: str  # one of COLLECTIVES
    group: int  # ranks in the group
    tier: str  # the link it crosses ("HCCS", "RoCE", ...)
    calls: int  # per step
    bytes: float  # per call (message size)
    us: float  # per step, all calls
    exposed_us: float  # per step, what compute does not hide


@dataclass(frozen=True)
class ParallelStep:
    """`performance.parallel`: the step of the whole job under a --parallel layout, per device."""

    layout: ParallelLayout
    micro_batches: int  # per step and data-parallel replica
    global_batch: int  # samples per step
    memory: DeviceMemory
    step_us: float | None = None  # None: the product has no device figures
    compute_us: float | None = None
    comm_us: float | None = None  # exposed communication
    bubble_us: float | None = None
    tokens_per_s_per_device: float | None = None
    samples_per_s_per_device: float | None = None
    collectives: tuple[Collective, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class GpuBaseline:
    """`performance.gpu_baseline`: the captured step on one GPU, and the NPU step's ratio to it."""

    gpu: str
    label: str
    step_us: float
    ratio: float  # NPU step / GPU step
    operators: dict[str, float] = field(default_factory=dict)  # operator key -> us on the GPU
    notes: tuple[str, ...] = ()
    match_gpus: int | None = None  # --match-gpus N
    matching_npus: int | None = None  # NPUs whose throughput matches N GPUs


@dataclass(frozen=True)
class Performance:
    """`performance` in the JSON document: the target's step, and each --compare product's (None: no figures)."""

    product: str
    step: StepTime | None  # None when the tables give no figures for the product
    method: str
    compare: tuple[tuple[str, StepTime | None], ...] = ()
    note: str | None = None  # why there is no step, or how the profile was chosen
    estimate: str = ESTIMATE
    memory: DeviceMemory | None = None  # the step's memory on one device
    parallel: ParallelStep | None = None  # the job under --parallel
    gpu_baseline: GpuBaseline | None = None  # the same step on an NVIDIA GPU (--gpu-baseline)
    two_dies: ParallelStep | None = None  # a two-die device (Atlas A3) without --parallel: the step over both dies
