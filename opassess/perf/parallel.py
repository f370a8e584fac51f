"""The job under a --parallel layout: the micro-batches of a step, the memory per device, the step's time per device.

The example inputs are one micro-batch of one data-parallel replica: a step of `global_batch` samples runs
m = global_batch / (micro-batch x dp) micro-batches through each replica's pipeline. Per device and micro-batch:
the captured calls with the cube's work (and, with sp, the vector's) split over tp, all work over cp, the calls
split over the pp stages (layers divided evenly); the optimizer step once per step on the device's shard. Ranks are
laid out as Megatron-LM does (tp innermost, then cp, dp, pp): a group crosses the nearest tier reaching its span.

    t_mb   = max(compute, host dispatch) per micro-batch + TP/SP, EP collectives + PP send/recv (none hidden)
    step   = (m + pp - 1) x t_mb + the DP all-reduce compute does not hide + the optimizer step
    bubble = (pp - 1) x t_mb
Worked example (checked in tests/perf/test_parallel.py): pp=4, m=8, t_mb = 100 ms: step 1.1 s, bubble 300 ms =
(p - 1) / m of the 800 ms of work.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace

from ..dtypes import element_bytes
from ..errors import UsageError
from ..options import ParallelLayout
from ..records import Inventory
from .device import DeviceProfile, memory_assumptions
from .interconnect import Interconnect, collective_us
from .layers import ModelShape, model_shape
from .memory import step_memory
from .model import CallWork, time_call
from .records import Collective, ParallelStep

_TENSOR = re.compile(r"[a-z0-9]+\[(\d+)")  # 'int64[4,4096]' -> 4 (load._describe_value)


def micro_batch(inventory: Inventory) -> int:
    """Samples in one micro-batch: the first dimension of the first tensor among the example inputs (1 if none)."""
    for text in inventory.model.inputs:
        match = _TENSOR.search(text)
        if match:
            return max(1, int(match.group(1)))
    return 1


def micro_batches(inventory: Inventory, layout: ParallelLayout, global_batch: int | None) -> tuple[int, int]:
    """(micro-batches per step and replica, global batch): a global batch that the data-parallel replicas' micro-
    batches do not divide is a usage error."""
    size = micro_batch(inventory)
    per_step = size * layout.dp
    batch = global_batch if global_batch is not None else per_step
    if batch % per_step:
        raise UsageError(f"{batch} is not a multiple of the micro-batch ({size} samples, the example inputs' first "
                         f"dimension) x dp ({layout.dp})", option="--global-batch")
    return batch // per_step, batch


def _sharded(work: CallWork, layout: ParallelLayout, optimizer: bool) -> CallWork:
    if optimizer:  # the optimizer updates the device's shard of the parameters
        scale = 1 / (layout.tp * layout.pp * (layout.dp if layout.zero >= 1 else 1))
    else:
        scale = 1 / layout.cp / (layout.tp if work.unit == "cube" or layout.sp else 1)
    return replace(work, flops=work.flops * scale, bytes=work.bytes * scale)


class _Comm:
    """The collectives of one step, each timed on the tier its group crosses."""

    def __init__(self, links: Interconnect, notes: list[str]) -> None:
        self.links, self.notes = links, notes
        self.found: list[Collective] = []

    def add(self, kind: str, group: int, span: int, calls: int, message: float, exposed_us: float | None = None
            ) -> float:
        """Record `calls` collectives of `message` bytes over `group` ranks spanning `span`; return the exposed us
        (all of it unless `exposed_us` says what compute does not hide)."""
        if group <= 1 or calls <= 0:
            return 0.0
        tier, reached = self.links.tier(span)
        if not reached:
            self.notes.append(f"{kind}: its group spans {span} ranks, more than any tier the tables give for "
                              f"{self.links.product} reaches: timed on {tier.name}")
        us = calls * collective_us(kind, message, group, tier, self.links.launch_us)
        exposed = us if exposed_us is None else exposed_us
        self.found.append(Collective(kind=kind, group=group, tier=tier.name, calls=calls, bytes=message, us=us,
                                     exposed_us=min(us, exposed)))
        return min(us, exposed)


def _layer_comm(comm: _Comm, shape: ModelShape, layout: ParallelLayout, m: int, training: bool) -> float:
    """TP (or SP) and EP collectives of one micro-batch on one stage, recorded for the step; returns their us."""
    passes = 2 if training else 1  # forward, and the backward's mirror
    per_stage = math.ceil(shape.layers / layout.pp)
    message = shape.tokens / layout.cp * shape.hidden * shape.element_bytes
    total = 0.0
    if layout.tp > 1 and per_stage:
        kinds = ("sp-all-gather", "sp-reduce-scatter") if layout.sp else ("tp-all-reduce",)
        for kind in kinds:  # two per layer and pass: attention's and the MLP's
            total += comm.add(kind, layout.tp, layout.tp, m * per_stage * 2 * passes, message) / m
    moe = math.ceil(shape.moe_layers / layout.pp)
    if layout.ep > 1 and moe:  # dispatch and combine per MoE layer and pass
        total += comm.add("ep-all-to-all", layout.ep, layout.tp * layout.ep, m * moe * 2 * passes, message) / m
    if layout.pp > 1:  # the activation forward, its gradient back
        total += comm.add("pp-send-recv", 2, 2 * layout.tp * layout.cp * layout.dp, m * passes, message) / m
    return total


def parallel_step(inventory: Inventory, works: Sequence[CallWork], profile: DeviceProfile | None,
                  layout: ParallelLayout, global_batch: int | None,
                  links: Interconnect | None = None) -> ParallelStep:
    """The job under `layout`: micro-batches, memory per device and (with a device profile) the step per device."""
    count, batch = micro_batches(inventory, layout, global_batch)
    memory = step_memory(inventory, profile.hbm_bytes if profile is not None else None, layout, count)
    base = ParallelStep(layout=layout, micro_batches=count, global_batch=batch, memory=memory)
    if profile is None:
        return replace(base, notes=("no device figures for the product: memory only",))
    notes: list[str] = []
    training = inventory.capture.training
    optimizer = {o.key for o in inventory.operators if o.kind == "optimizer"}
    times = [(w, time_call(_sharded(w, layout, w.op in optimizer), profile).us) for w in works]
    opt_us = sum(us for w, us in times if w.op in optimizer)
    mb_us = sum(us for w, us in times if w.op not in optimizer) / layout.pp
    back_us = sum(us for w, us in times if w.op not in optimizer and w.node.endswith(".backward")) / layout.pp
    # eager mode: each stage's host dispatches its kernels; a micro-batch takes the slower of the two
    host_us = sum(w.launches for w in works if w.op not in optimizer and w.unit in ("cube", "vector", "aicpu")) \
        * profile.host.dispatch_us / layout.pp
    if host_us > mb_us:
        notes.append(f"host-bound in eager mode: {host_us:.1f} us of kernel dispatch per micro-batch and stage "
                     f"against {mb_us:.1f} us of device work (dispatch cost assumed)")
        mb_us = host_us
    shape = model_shape(inventory)
    comm_mb = dp_exposed = 0.0
    comm = None
    if links is None:
        notes.append(f"no interconnect figures for {profile.product} in the tables: no communication time")
    else:
        comm = _Comm(links, notes)
        if links.note:
            notes.append(links.note)
        if shape is None:
            notes.append("no Linear call to size the collectives by: tensor, expert and pipeline communication not "
                         "modelled")
        else:
            if not shape.layers and layout.tp > 1:
                notes.append("no repeated layers found: tensor-parallel collectives not modelled")
            comm_mb = _layer_comm(comm, shape, layout, count, training)
        if training and layout.dp * layout.cp > 1:
            params = inventory.model.parameters / (layout.tp * layout.pp)
            bucket = min(params, memory_assumptions().bucket_params)
            buckets = max(1, math.ceil(params / bucket))
            grad = bucket * element_bytes(inventory.model.dtype)
            group = layout.dp * layout.cp
            one = collective_us("dp-all-reduce", grad, group, links.tier(layout.tp * group)[0], links.launch_us)
            exposed = max(one, buckets * one - back_us)  # overlapped with the last micro-batch's backward
            dp_exposed = comm.add("dp-all-reduce", group, layout.tp * group, buckets, grad, exposed_us=exposed)
        if layout.cp > 1:
            notes.append("context parallel: the attention's key/value exchange is not modelled")
    t_mb = mb_us + comm_mb
    step = (count + layout.pp - 1) * t_mb + dp_exposed + opt_us
    seconds = step / 1e6
    samples = batch / seconds / layout.devices if seconds else None
    tokens = None
    if shape is not None and samples is not None:
        tokens = samples * shape.tokens / micro_batch(inventory)
    return replace(base, step_us=step, compute_us=count * mb_us + opt_us, comm_us=count * comm_mb + dp_exposed,
                   bubble_us=(layout.pp - 1) * t_mb, tokens_per_s_per_device=tokens, samples_per_s_per_device=samples,
                   collectives=tuple(comm.found) if comm is not None else (), notes=tuple(notes))
