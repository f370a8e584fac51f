"""The job under a --parallel layout: the micro-batches of a step, the memory per device, the step's time per device.

The example inputs are one micro-batch of one data-parallel replica: a step of `global_batch` samples runs
global_batch / (micro-batch x dp) micro-batches through each replica's pipeline.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import UsageError
from ..options import ParallelLayout
from ..records import Inventory
from .memory import step_memory
from .model import CallWork
from .profile import DeviceProfile
from .records import ParallelStep

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


def parallel_step(inventory: Inventory, works: Sequence[CallWork], profile: DeviceProfile | None,
                  layout: ParallelLayout, global_batch: int | None) -> ParallelStep:
    """The job under `layout`: micro-batches, memory per device and (with a device profile) the step per device."""
    count, batch = micro_batches(inventory, layout, global_batch)
    memory = step_memory(inventory, profile.hbm_bytes if profile is not None else None, layout, count)
    return ParallelStep(layout=layout, micro_batches=count, global_batch=batch, memory=memory)
