"""The parts of one training step besides the forward: the loss, the optimizer, clipping and the GradScaler, each
taken from the model file when it defines them, else opassess's defaults (stated in TrainPlan.note)."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ...errors import TraceError
from ...messages import N_
from .options import TrainOptions

# Gradient clipping is part of the default step, as in Hugging Face's Trainer (max_grad_norm=1.0) and most LLM
# recipes; a model file sets `max_grad_norm = None` to leave it out, or another number.
DEFAULT_MAX_GRAD_NORM = 1.0


@dataclass(frozen=True)
class TrainPlan:
    """What the step runs, resolved against the model file."""

    loss_fn: Callable[[Any, Any], Any]
    build_optimizer: Callable[[Any], Any]
    max_grad_norm: float | None
    amp: str | None
    note: str


def default_loss(output: Any, inputs: Any) -> Any:
    """A scalar reduction of the output: the sum of the means of its floating tensors that require grad."""
    from ..values import tensors_in

    tensors = [t for t in tensors_in(output) if t.is_floating_point() and t.requires_grad]
    if not tensors:
        raise TraceError("the model's output has no floating tensor that requires grad: define "
                         "loss_fn(output, inputs) in the model file")
    loss = tensors[0].mean()
    for t in tensors[1:]:
        loss = loss + t.mean()
    return loss


def default_optimizer(model: Any) -> Any:
    """torch.optim.AdamW with foreach=True, the implementation accelerators run by default."""
    import torch

    return torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)


# What the step ran, joined by '; ' into Capture.step_note. The worker sends it as English; the reports read each part
# back as one of these message ids (messages.parsed) and say it in the reader's language.
STEP_NOTES = (N_("loss_fn(output, inputs) of the model file"), N_("loss: mean of the output (no loss_fn)"),
              N_("build_optimizer(model) of the model file"), N_("optimizer: AdamW(foreach=True)"),
              N_("no gradient clipping"), N_("autocast %(amp)s"), N_("autocast %(amp)s with GradScaler"),
              N_("the example batch of 1 was doubled to 2 (train-mode BatchNorm needs more than one value per "
                 "channel)"))


def plan_step(namespace: Any, options: TrainOptions, source: str) -> TrainPlan:
    """The step for this model file: its loss_fn(output, inputs), build_optimizer(model) and max_grad_norm, if any."""
    loss_fn = getattr(namespace, "loss_fn", None)
    build = getattr(namespace, "build_optimizer", None)
    for name, value in (("loss_fn", loss_fn), ("build_optimizer", build)):
        if value is not None and not callable(value):
            raise TraceError(f"{source}: {name} is not a function")
    clip = getattr(namespace, "max_grad_norm", DEFAULT_MAX_GRAD_NORM)
    if clip is not None and (isinstance(clip, bool) or not isinstance(clip, (int, float)) or clip <= 0):
        raise TraceError(f"{source}: max_grad_norm must be a positive number or None, not {clip!r}")
    parts = [STEP_NOTES[0] if loss_fn else STEP_NOTES[1], STEP_NOTES[2] if build else STEP_NOTES[3],
             f"clip_grad_norm_({clip})" if clip is not None else STEP_NOTES[4]]
    if options.amp:
        parts.append((STEP_NOTES[6] if options.amp == "fp16" else STEP_NOTES[5]) % {"amp": options.amp})
    return TrainPlan(loss_fn or default_loss, build or default_optimizer, None if clip is None else float(clip),
                     options.amp, "; ".join(parts))


def optimizer_key(optimizer: Any) -> str:
    """The step as torch_npu's API lists name it: 'torch.optim.AdamW.step' (else module, class name, '.step')."""
    import torch

    from ..keys import class_key

    return f"{class_key(type(optimizer), torch.optim, 'torch.optim')}.step"


def optimizer_attrs(optimizer: Any) -> dict[str, Any]:
    """The step's JSON-able settings (foreach, fused, lr, ...) from its first parameter group."""
    group = optimizer.param_groups[0] if optimizer.param_groups else {}
    keep = ("foreach", "fused", "lr", "weight_decay", "betas", "eps", "amsgrad", "momentum", "capturable")
    attrs = {k: group[k] for k in keep if k in group and isinstance(group[k], (bool, int, float, tuple, type(None)))}
    attrs["param_groups"] = len(optimizer.param_groups)
    return attrs


@contextlib.contextmanager
def foreach_on_meta() -> Iterator[None]:
    """clip_grad_norm_(foreach=True) accepts meta tensors. torch keeps a list of devices with foreach kernels (cuda,
    xpu, the privateuse1 backend torch_npu registers, and the CPU) and refuses others; meta tensors stand for the
    NPU's here, and every _foreach_* op has a meta kernel. clip_grad looks the check up in its own module globals."""
    from torch.nn.utils import clip_grad

    original = clip_grad._device_has_foreach_support
    clip_grad._device_has_foreach_support = lambda device: device.type == "meta" or original(device)
    try:
        yield
    finally:
        clip_grad._device_has_foreach_support = original
