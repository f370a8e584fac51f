"""The records of a portfolio scan: its options, one model's result, the plan entries and the whole portfolio."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..ci.policy import Breach, Policy
from ..ci.snapshot import Snapshot
from ..errors import UsageError
from ..isolation.worker import DEFAULT_TIMEOUT
from ..machine import physical_memory
from ..options import ScanOptions
from ..records import Effort
from .targets import Skipped


def default_jobs() -> int:
    """The number of cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


MEMORY_FLOOR = 2**30  # bytes: the least address space a default per-worker cap leaves a scan


def largest_memory_limit() -> int:
    """The largest RLIMIT_AS this process may set (its hard limit, or what the kernel's rlim_t holds)."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    return 2**63 - 1 - 2**40 if hard == resource.RLIM_INFINITY else hard  # room for the mapped bytes added to it


@dataclass(frozen=True)
class PortfolioOptions:
    """What to scan and how: the targets, one ScanOptions template (its target is replaced per model), limits."""

    targets: tuple[str, ...]  # model files, directories of model files, package.module:factory
    scan: ScanOptions
    out_dir: Path
    formats: tuple[str, ...] = ()  # per-model report formats written besides JSON (which is always written)
    jobs: int = field(default_factory=default_jobs)
    timeout: float = DEFAULT_TIMEOUT  # seconds per model
    memory_limit: int | None = None  # bytes of address space per worker; None: physical memory / jobs; 0: no cap
    resume: bool = False
    policy: Policy = Policy()

    def __post_init__(self) -> None:
        if self.memory_limit is not None and self.memory_limit > largest_memory_limit():
            raise UsageError(f"--memory-limit {self.memory_limit / 2**30:g} GiB is above what this system lets a "
                             f"process be capped at ({largest_memory_limit() / 2**30:g} GiB)")
        self.memory_cap()  # a default cap below the floor is refused now, not as a model's failure later

    def memory_cap(self, models: int | None = None) -> int:
        """The address space a worker may add: --memory-limit, else physical memory shared by the workers that
        can run at once (min of --jobs, the models and the cores), never below MEMORY_FLOOR."""
        if self.memory_limit is not None:
            return self.memory_limit
        physical = physical_memory()
        if not physical:
            return 0  # the platform does not say: no cap
        at_once = max(1, min(self.jobs, default_jobs(), models or self.jobs))
        cap = physical // at_once
        if cap < MEMORY_FLOOR:
            raise UsageError(f"{physical / 2**30:.1f} GiB of memory shared by {at_once} workers leaves "
                             f"{cap / 2**30:.2f} GiB each, below the {MEMORY_FLOOR / 2**30:g} GiB a scan needs: "
                             f"pass fewer --jobs or an explicit --memory-limit (0 for no cap)")
        return cap



@dataclass(frozen=True)
class ModelResult:
    """How one model's scan ended."""

    target: str
    name: str
    status: str  # "ok" | "failed"
    cause: str | None  # why it failed: "timed out after 5 s", "worker crashed: SIGABRT (abort)", ...
    reports: tuple[str, ...]  # files written, relative to the output directory
    seconds: float
    resumed: bool = False  # taken from an earlier, interrupted run
    snapshot: Snapshot | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ModelPlan:
    """One model in porting order: what it costs alone and what it adds after the models before it."""

    name: str
    target: str
    standalone: Effort  # its report's total (operators, sites, model-level activities, decisions), as if ported alone
    marginal: Effort  # what it adds given the models before it
    cumulative: Effort  # marginal summed over the plan so far
    new_ops: tuple[str, ...]  # operator types it pays for first
    extended_ops: tuple[str, ...]  # already ported, but it brings new signatures
    shared_ops: tuple[str, ...]  # already covered entirely by earlier models
    custom_dev: tuple[str, ...]
    costs: tuple[tuple[str, Effort], ...] = ()  # (operator, what this model pays for it) for new and extended ones
    # what it pays for its model-level activities and decisions (in marginal): its own validation, accuracy alignment
    # and tuning in full, the environment bring-up and a decision's one-off fix only when no model before it paid them
    model_level: Effort = Effort(0.0, 0.0, 0.0)
    # (what a piece of its work costs alone, the share of it this model pays): what the simulation draws
    shares: tuple[tuple[Effort, float], ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class OpDemand:
    """A custom-dev operator and the models it unblocks."""

    op: str
    models: tuple[str, ...]  # models that need it
    sole_blocker_of: tuple[str, ...]  # models whose only custom-dev operator it is
    effort: Effort  # what porting it costs across the portfolio (paid once, plus signature extensions)


@dataclass(frozen=True)
class Portfolio:
    """The result of a portfolio scan."""

    results: tuple[ModelResult, ...]  # in target order
    skipped: tuple[Skipped, ...]
    plan: tuple[ModelPlan, ...]  # successfully scanned models, cheapest marginal first
    custom_dev: tuple[OpDemand, ...]  # ranked by how many models each unblocks
    standalone_total: Effort  # every model ported on its own
    shared_total: Effort  # with each operator paid once
    breaches: tuple[tuple[str, Breach], ...]  # (model name, breach)
    out_dir: Path | None = None
    # (P10, P50, P90) of the simulated sums (score.estimate.simulate over every cost paid): the headline is P50
    shared_band: tuple[float, float, float] = (0.0, 0.0, 0.0)
    standalone_band: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def failed(self) -> tuple[ModelResult, ...]:
        return tuple(r for r in self.results if r.status != "ok")


@dataclass(frozen=True)
class PortfolioEvent:
    """Progress of a portfolio scan, for a progress bar: kind is 'start', 'resumed' or 'done'."""

    kind: str
    name: str
    done: int  # models finished so far
    total: int
    result: ModelResult | None = None

