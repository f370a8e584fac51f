"""A model's step time on a product: every captured call timed (perf/model.py), summed per operator and per unit."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..findings.graph import DataFlow, Graph
from ..findings.patterns import load_patterns
from ..kb.store import KnowledgeBase
from ..messages import N_, Text
from ..options import ParallelLayout
from ..records import ClassifiedOp, Finding, Inventory
from .device import DeviceProfile, NoDeviceProfile, load_profile, product_note
from .gpu import gpu_baseline, gpu_profile
from .inputs import backward_work, flag_nodes, node_work, unfused_nodes
from .interconnect import load_interconnect
from .memory import step_memory
from .model import CallWork, time_call
from .parallel import parallel_step
from .records import ESTIMATE, ESTIMATE_MEASURED_SHAPES, UNITS, CallTime, OperatorTime, Performance, StepTime

KERNEL_UNITS = frozenset({"cube", "vector", "aicpu"})  # calls the host dispatches a kernel for
METHOD = N_("sum over the captured calls (%(step)s) of max(FLOPs / (peak x efficiency), bytes / (HBM bandwidth x "
            "efficiency)) + launch cost, plus penalties (CPU fallback over the host link, online compilation, host "
            "syncs, TransData copies, unaligned shapes, float32 on the cube, unfused chains); no overlap between "
            "calls, no communication, no caches")


def call_works(inventory: Inventory, classified: Sequence[ClassifiedOp], findings: Sequence[Finding],
               profile: DeviceProfile, *, aclop_only: Callable[[str], bool] | None = None,
               flow: DataFlow | None = None, graph: Graph | None = None) -> list[CallWork]:
    """The CallWork of every captured call (and backward), with the unfused members of fused chains flagged
    (`graph`: the findings' role-annotated graph, when the caller built it)."""
    if graph is None:
        graph = Graph(flow if flow is not None else DataFlow.of(inventory.capture), load_patterns())
    by_key = {c.operator.key: c for c in classified}
    flags = flag_nodes(findings, graph, aclop_only)
    works: list[CallWork] = []
    nodes = {}
    for operator in inventory.operators:
        for node in operator.nodes:
            work = node_work(graph, node, by_key.get(operator.key), frozenset(flags.get(node.name, ())))
            works.append(work)
            nodes[node.name] = node
    members = {n for f in findings if f.kind in graph.book.fused_kinds and f.npu_api for n in f.nodes}
    first = {w.node: time_call(w, profile).us for w in works if w.node in members}  # to pick each chain's anchor
    unfused = unfused_nodes(findings, first, graph)
    works = [replace(w, flags=w.flags | {"unfused"}) if w.node in unfused else w for w in works]
    out = []
    for work in works:
        out.append(work)
        back = backward_work(work, nodes[work.node])
        if back is not None:
            out.append(back)
    return out


def operator_times(calls: Sequence[CallTime]) -> tuple[OperatorTime, ...]:
    """Calls summed per operator, by at-risk time then time, largest first."""
    groups: dict[str, list[CallTime]] = {}
    for call in calls:
        groups.setdefault(call.op, []).append(call)
    out = []
    for op, members in groups.items():
        by_unit: dict[str, float] = {}
        penalties: dict[str, float] = {}
        for call in members:
            by_unit[call.unit] = by_unit.get(call.unit, 0.0) + call.us
            for p in call.penalties:
                penalties[p.code] = penalties.get(p.code, 0.0) + p.us
        top = max(members, key=lambda c: c.us)
        out.append(OperatorTime(op=op, us=sum(c.us for c in members), at_risk_us=sum(c.at_risk_us for c in members),
                                bound=top.bound, unit=max(by_unit, key=by_unit.__getitem__), penalties=penalties,
                                calls=len(members)))
    return tuple(sorted(out, key=lambda o: (-o.at_risk_us, -o.us, o.op)))


def outside_fitted(works: Sequence[CallWork], profile: DeviceProfile) -> list[str]:
    """A warning per unit and size whose calls reach outside the per-call sizes the calibration was fitted on (more
    than a factor 2 beyond them): its fitted values are an extrapolation there."""
    notes = []
    for name, (low, high) in sorted(profile.fitted_sizes.items()):
        unit, kind = name.split(".")
        sizes = [getattr(w, kind) for w in works if w.unit == unit and getattr(w, kind) > 0]
        if sizes and (max(sizes) > 2 * high or min(sizes) < low / 2):
            notes.append(f"warning: the calibration was fitted on {unit} calls of {low:.3g}-{high:.3g} {kind} per "
                         f"call; this scan's reach {min(sizes):.3g}-{max(sizes):.3g}: outside the fitted sizes, the "
                         f"calibrated {unit} values are an extrapolation")
    return notes


def step_time(works: Sequence[CallWork], profile: DeviceProfile) -> StepTime:
    """The step on `profile`: every call timed and summed."""
    calls = tuple(time_call(w, profile) for w in works)
    by_unit = {unit: sum(c.us for c in calls if c.unit == unit) for unit in UNITS}
    notes = (*profile.notes, *([f"calibrated by {profile.overlay}"] if profile.overlay else ()),
             *outside_fitted(works, profile))
    step = sum(c.us for c in calls)
    # eager mode: the host dispatches every kernel; the device waits for it when that is slower (syncs wait for both)
    host = sum(w.launches for w in works if w.unit in KERNEL_UNITS) * profile.host.dispatch_us
    syncs = sum(p.us for c in calls for p in c.penalties if p.code in ("host-sync", "cpu-fallback"))
    return StepTime(product=profile.product, variant=profile.variant, label=profile.label,
                    step_us=step, at_risk_us=sum(c.at_risk_us for c in calls),
                    by_unit={u: v for u, v in by_unit.items() if v > 0}, operators=operator_times(calls), calls=calls,
                    notes=notes, host_us=host, eager_us=max(step - syncs, host) + syncs)


def estimate_performance(inventory: Inventory, classified: Sequence[ClassifiedOp], findings: Sequence[Finding],
                         product: str, *, kb: KnowledgeBase | None = None, compare: Sequence[str] = (),
                         overlay: Path | None = None, aclop_only: Callable[[str], bool] | None = None,
                         flow: DataFlow | None = None, graph: Graph | None = None,
                         layout: ParallelLayout | None = None, global_batch: int | None = None,
                         gpu: str | None = None, match_gpus: int | None = None) -> Performance:
    """The step on the target `product` (with the overlay applied) and on each `compare` product (shipped figures),
    its memory on one device, and the job under `layout` (with `global_batch` samples per step).

    A product the tables give no figures for gets step None and the table's note: a missing profile is data."""
    method = Text(METHOD, {"step": Text(N_("training step")) if inventory.capture.training else
                           Text(N_("forward pass"))})
    works: list[CallWork] | None = None
    target: list[DeviceProfile] = []

    def on(name: str, over: Path | None) -> StepTime | None:
        nonlocal works
        try:
            profile = load_profile(name, kb, over)
        except NoDeviceProfile:
            return None
        if name == product:
            target.append(profile)
        if works is None:  # the unit and flags do not depend on the product; the fusion anchors barely do
            works = call_works(inventory, classified, findings, profile, aclop_only=aclop_only, flow=flow,
                               graph=graph)
        return step_time(works, profile)

    step = on(product, overlay)
    others = tuple((name, on(name, None)) for name in compare if name != product)
    hbm = target[0].hbm_bytes if target else None
    parallel = two_dies = None
    links = load_interconnect(product, kb)
    if layout is not None:
        parallel = parallel_step(inventory, works or [], target[0] if target else None, layout, global_batch, links)
    elif target and works is not None and links is not None and links.tiers[0].ranks == 2:
        # a device of two dies (Atlas A3: the profile is one die's): the step split over both, tp=2 over their link
        two_dies = parallel_step(inventory, works, target[0], ParallelLayout(tp=2), None, links)
    baseline = None
    if gpu is not None and step is not None and works is not None:
        replica = layout.tp * layout.pp * layout.cp if layout is not None else 1
        baseline = gpu_baseline(works, step.step_us, gpu_profile(gpu, target[0], kb), match_gpus=match_gpus,
                                replica=replica)
    return Performance(product=product, step=step, method=method, compare=others, note=product_note(product, kb),
                       estimate=ESTIMATE_MEASURED_SHAPES if target and target[0].published_shapes else ESTIMATE,
                       memory=step_memory(inventory, hbm), parallel=parallel, gpu_baseline=baseline,
                       two_dies=two_dies)
