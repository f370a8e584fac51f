"""The capture methods trace_model knows and their default orders, all read from the registry."""
from __future__ import annotations

from ..errors import TraceError
from ..vocabulary import FORWARD_STEP, TRAIN_STEP, CaptureStep
from . import dispatch, export, fx  # noqa: F401 - importing a capture module registers its methods
from .registry import CaptureMethod, registered
from .train import TrainOptions  # the training step's methods register themselves as well

# Large models: the dispatch capture first. On a Llama-2-7B shape on meta (benchmarks/bench_scan.py) one recorded
# forward costs ~0.4 s, symbolic tracing plus a node-by-node run ~1.3 s when it works at all (slicing a buffer by
# the sequence length already breaks it, after 0.2 s), torch.export ~3.5 s. Above this size a failed or slow fx
# attempt would cost more than the rest of the scan, so the default order becomes dispatch, fx, export.
LARGE_MODEL_PARAMETERS = 1_000_000_000


def capture_order(parameters: int, step: CaptureStep = FORWARD_STEP) -> tuple[str, ...]:
    """The default order of the capture methods of `step` ("forward", or "train": a training step) for a model of
    this size (each method's registered rank)."""
    methods = {name: cls for name, cls in registered().items() if cls.step == step}
    if parameters > LARGE_MODEL_PARAMETERS:
        return tuple(sorted(methods, key=lambda name: methods[name].rank_large))
    return tuple(sorted(methods, key=lambda name: methods[name].rank_small))


# Every capture method, in the default order for models up to LARGE_MODEL_PARAMETERS: fx gives the true graph;
# dispatch keeps user-level names, module paths, attributes and source lines at the cost of one eager forward;
# dispatch-compiling is the same with torch.compiler.is_compiling() true, for code that reads tensor values unless
# it is being compiled (tried on meta only); export is the last resort (slow on large models, names ATen-level ops).
METHODS = capture_order(0)


def check_methods(methods: tuple[str, ...]) -> None:
    """Raise TraceError naming the first forward capture method that does not exist (--capture)."""
    known = capture_order(0)
    unknown = [m for m in methods if m not in known]
    if unknown:
        raise TraceError(f"unknown capture method {unknown[0]!r}; expected one of {', '.join(known)}")


def method_named(name: str, train: TrainOptions | None = None) -> CaptureMethod:
    """An instance of the capture method registered under `name` (check_methods first)."""
    return registered()[name](train)


def capture_methods(parameters: int, methods: tuple[str, ...] | None = None, train: TrainOptions | None = None
                    ) -> list[CaptureMethod]:
    """The capture methods to try, in order: with `train`, the training step's (train, then train-compiling), each
    running that step; else `methods` (checked) or the default forward order for a model of this size."""
    if train is not None:
        return [method_named(name, train) for name in capture_order(parameters, TRAIN_STEP)]
    methods = methods or capture_order(parameters)
    check_methods(methods)
    return [method_named(name) for name in methods]
