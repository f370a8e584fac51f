"""The training-step capture (--train): one forward in train mode with its loss, backward() and one optimizer step,
recorded on the meta device like the forward captures.

The forward is the dispatch capture (its operator nodes, names and edges) run with gradients enabled, under
emulated autocast for --amp (autocast.py), and with the loss computed inside it, so the loss's operators are
operators of the step. Each operator node then carries the ATen ops its backward dispatched (backward.py); the
engine's own calls (seeding the loss gradient, writing .grad) form the node `Tensor.backward`. The GradScaler
(fp16), gradient clipping and the optimizer step are nodes of kind "optimizer" with their ATen ops (step.py says
what runs when the model file does not say). GradScaler.step is not called: it reads found_inf's value, which the
meta device does not have; its work is the recorded unscale_ followed by the optimizer's step.
Registered as the capture methods of the step "train" (train, then train-compiling): --train tries them, and the
forward orders never hold them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
from typing import Any

from ...errors import TraceError
from ...load import LoadedModel
from ...records import OpNode
from ...vocabulary import TRAIN_STEP
from ..dispatch import ForwardStep, capture_dispatch
from ..nodes import NodeBuild
from ..patches import compiling
from ..recorder import AtenRecorder
from ..registry import CaptureMethod, Graph, Progress, Skipped, no_progress, register_capture
from ..values import dtype_name, tensors_in
from .autocast import autocast_mode
from .backward import GradOwners, record_backward
from .options import TrainOptions
from .step import STEP_NOTES, TrainPlan, foreach_on_meta, optimizer_attrs, optimizer_key, plan_step

__all__ = ["COMPILING", "TrainCapture", "TrainCompilingCapture", "TrainOptions"]


class _TrainForward(ForwardStep):
    """The forward and the loss, with gradients, under autocast when asked; claims each operator's autograd nodes."""

    def __init__(self, plan: TrainPlan) -> None:
        self.plan = plan
        self.owners = GradOwners()
        self.loss: Any = None

    def context(self) -> Any:
        import torch

        stack = contextlib.ExitStack()
        stack.enter_context(torch.enable_grad())
        if self.plan.amp:
            stack.enter_context(autocast_mode(self.plan.amp))
        return stack

    def created(self, name: str, outputs: list) -> None:
        self.owners.claim(name, outputs)

    def run(self, model: Any, args: tuple, kwargs: dict) -> Any:
        output = model(*args, **kwargs)
        self.loss = self.plan.loss_fn(output, kwargs if kwargs else args)
        return output


# BatchNorm in train mode refuses a batch of one sample per channel: the step is run with the batch doubled
_ONE_SAMPLE = "Expected more than 1 value per channel when training"
COMPILING = "train-compiling"


@register_capture("train", small=1, large=1)
class TrainCapture(CaptureMethod):
    """One training step: forward + loss, backward, clipping and the optimizer step; a batch of 1 that train-mode
    BatchNorm refuses is doubled (and the note says so)."""

    eager = True
    reported_as = "dispatch"  # the training step's forward is the dispatch capture: the method the report names
    step = TRAIN_STEP
    compiling = False

    def __init__(self, train: TrainOptions | None = None) -> None:
        self.options = train or TrainOptions()
        self.note: str | None = None

    def capture(self, loaded: LoadedModel, progress: Progress = no_progress) -> Graph:
        if not self.compiling:
            return self._doubling(loaded, progress)
        if loaded.device != "meta":
            raise Skipped("skipped: only needed on the meta device")
        with compiling():
            return self._doubling(loaded, progress)

    def _doubling(self, loaded: LoadedModel, progress: Progress) -> Graph:
        """The step; again with the batch doubled when a batch of 1 is refused in train mode (BatchNorm)."""
        try:
            return self._step(loaded, progress)
        except ValueError as exc:
            doubled = _doubled(loaded) if _ONE_SAMPLE in str(exc) else None
            if doubled is None:
                raise
        graph = self._step(doubled, progress)
        self.note = f"{self.note}; {STEP_NOTES[7]}"
        return graph

    def _step(self, loaded: LoadedModel, progress: Progress) -> Graph:
        import torch

        plan = plan_step(loaded.namespace, self.options, loaded.info.source)
        self.note = plan.note
        model = loaded.module
        model.train()
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
            raise TraceError(f"{loaded.info.source}: {loaded.info.class_name} has no parameter that requires grad: "
                             "nothing to train")
        forward = _TrainForward(plan)
        nodes, edges = capture_dispatch(loaded, progress, forward)
        loss = forward.loss
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
            raise TraceError(f"{loaded.info.source}: the loss is not a scalar tensor that requires grad "
                             f"({type(loss).__name__}); check loss_fn(output, inputs)")
        progress("capturing the backward pass and the optimizer step")
        steps = _OptimizerCalls(sorted({dtype_name(p.dtype) for p in params}))
        scaler = torch.amp.GradScaler(loaded.device) if plan.amp == "fp16" else None
        optimizer = plan.build_optimizer(model)
        scaled = steps.record("torch.amp.GradScaler.scale", {}, lambda: scaler.scale(loss)) if scaler else loss
        backward = record_backward(forward.owners, scaled.backward)
        nodes = [dataclasses.replace(n, backward=tuple(backward.calls.get(n.name, ())),
                                     backward_flops=backward.flops.get(n.name, 0)) for n in nodes]
        extra = [NodeBuild("backward", "Tensor.backward", "method", "", {}, ((), ()), ((), ()),
                           tuple(backward.engine), None, 0, 0).freeze()] if backward.engine else []
        if scaler:
            steps.record("torch.amp.GradScaler.unscale_", {}, lambda: scaler.unscale_(optimizer))
        if plan.max_grad_norm is not None:
            with foreach_on_meta():
                steps.record("torch.nn.utils.clip_grad_norm_", {"max_norm": plan.max_grad_norm, "foreach": True},
                             lambda: torch.nn.utils.clip_grad_norm_(params, plan.max_grad_norm, foreach=True))
        steps.record(optimizer_key(optimizer), optimizer_attrs(optimizer), optimizer.step)
        if scaler:
            steps.record("torch.amp.GradScaler.update", {}, scaler.update)
        return nodes + extra + steps.nodes, edges


def _doubled(loaded: LoadedModel) -> LoadedModel | None:
    """The model with every example tensor repeated once along its first dimension, when each has a batch of 1."""
    import torch

    tensors = tensors_in((loaded.args, loaded.kwargs))
    if not tensors or any(t.dim() == 0 or t.shape[0] != 1 for t in tensors):
        return None

    def double(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return torch.cat([value, value]) if value.device.type != "meta" else value.expand(2, *value.shape[1:])
        if isinstance(value, (list, tuple)):
            return type(value)(double(v) for v in value)
        if isinstance(value, dict):
            return {k: double(v) for k, v in value.items()}
        return value

    return dataclasses.replace(loaded, args=double(loaded.args), kwargs=double(loaded.kwargs))


@register_capture(COMPILING, small=2, large=2)
class TrainCompilingCapture(TrainCapture):
    """The training step with torch.compiler.is_compiling() true, tried on meta after the plain step failed on a
    value: the same rung as the forward's dispatch-compiling (Hugging Face's mask helpers skip their value reads)."""

    eager = False
    reported_as = "dispatch-compiling"
    compiling = True


class _OptimizerCalls:
    """Runs the optimizer-side calls of the step, one node of kind "optimizer" each, with their ATen ops."""

    def __init__(self, dtypes: list[str]) -> None:
        # the parameters' dtypes are the inputs a step is judged by (torch_npu documents AdamW.step for fp16/fp32)
        self.inputs = ((None,) * len(dtypes), tuple(dtypes))
        self.recorder = AtenRecorder()
        self.nodes: list[OpNode] = []
        self._counter = itertools.count()

    def record(self, key: str, attrs: dict, run: Any) -> Any:
        with self.recorder.mode, self.recorder.collect():
            result = run()
        calls, flops, nbytes = self.recorder.last
        calls = tuple(c for c in calls if not c.op.startswith("profiler::"))  # record_function markers, not work
        name = f"{key.removesuffix('.step').rsplit('.', 1)[-1].strip('_').lower()}_{next(self._counter)}"
        self.nodes.append(NodeBuild(name, key, "optimizer", "", attrs, self.inputs, ((), ()), calls, None, flops,
                                    nbytes).freeze())
        return result
