"""Capture methods: each is a class registered under its name with its place in the two default orders (models up
to LARGE_MODEL_PARAMETERS, and larger ones), in the style of torch's register_flop_formula: name, order and
implementation stated once, at the class, and a second registration of a name refused."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from ..errors import TraceError
from ..vocabulary import FORWARD_STEP, CaptureStep

if TYPE_CHECKING:
    from ..load import LoadedModel
    from ..records import OpNode
    from .train.options import TrainOptions

Progress = Callable[[str], None]
Graph = tuple[list["OpNode"], list[tuple[str, str]]]  # operator nodes and (producer, consumer) edges by node name
PROGRESS_EVERY = 250  # operator calls between two progress messages during a capture


def no_progress(_: str) -> None:
    return None


class Skipped(Exception):
    """A capture method was not attempted (size limit, or not needed on this device); the message says why."""


class CaptureMethod:
    """One way to capture a model's operators. Set by register_capture: its name and its rank (1 first) in the
    default order for small and for large models among the methods of its step (a forward pass, or a training step:
    --train tries the training step's methods, never the forward ones, and a forward order never holds those)."""

    name: ClassVar[str]
    rank_small: ClassVar[int]
    rank_large: ClassVar[int]
    # The plain eager run of the model (dispatch, the training step): its error is the one that says why the model
    # does not run on a device, and when it fails for a reason other than a meta kernel, no other method can work.
    eager: ClassVar[bool] = False
    reported_as: ClassVar[str | None] = None  # the method name a report gives its capture (None: its own name)
    step: ClassVar[CaptureStep] = FORWARD_STEP  # what ran: one forward pass, or TRAIN_STEP (a training step)
    note: str | None = None  # a note on the step, set by the capture (the training step's defaults)

    def __init__(self, train: TrainOptions | None = None) -> None:
        """`train`: how a training step runs (--amp), for the methods of step "train"; a forward method has none."""

    def capture(self, loaded: LoadedModel, progress: Progress = no_progress) -> Graph:
        """The model's operator nodes and edges; raises on failure, Skipped when not attempted."""
        raise NotImplementedError


_REGISTRY: dict[str, type[CaptureMethod]] = {}


def register_capture(name: str, *, small: int, large: int) -> Callable[[type[CaptureMethod]], type[CaptureMethod]]:
    """Register a CaptureMethod class under `name`, ranked `small` in the default order for models up to
    LARGE_MODEL_PARAMETERS and `large` above; raises TraceError when the name is taken."""

    def decorate(cls: type[CaptureMethod]) -> type[CaptureMethod]:
        if name in _REGISTRY:
            raise TraceError(f"capture method {name!r} is registered twice "
                             f"({_qualified(_REGISTRY[name])} and {_qualified(cls)})")
        cls.name, cls.rank_small, cls.rank_large = name, small, large
        _REGISTRY[name] = cls
        return cls

    return decorate


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def registered() -> dict[str, type[CaptureMethod]]:
    """Every registered capture method by name (a copy)."""
    return dict(_REGISTRY)
