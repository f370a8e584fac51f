"""The graph-mode records: per operator a verdict per NPU graph back-end, per model its readiness and breaks."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..messages import Message
from ..records import DynamoRun, Effort
from ..vocabulary import GRAPH_BACKENDS

BACKENDS = GRAPH_BACKENDS  # the NPU graph back-ends (vocabulary.py states them once)
# Per back-end, its verdicts from best to worst; the last one (and only it) keeps a model from being ready, except
# for the inductor, whose eager fallback still runs inside the compiled graph.
VERDICTS: Mapping[str, tuple[str, ...]] = {
    "inductor": ("lowered", "eager-fallback"),
    "npugraph_ex": ("capturable", "needs-update-handler", "not-capturable"),
    "ge": ("supported", "partial", "no-converter"),
}
ALL_VERDICTS: tuple[str, ...] = tuple(v for backend in BACKENDS for v in VERDICTS[backend])  # the schema's enum
BLOCKING: Mapping[str, frozenset[str]] = {
    "inductor": frozenset(), "npugraph_ex": frozenset({"not-capturable"}), "ge": frozenset({"no-converter"}),
}
# How the model-level breaks were found: from the dispatched ATen calls of the capture alone (always), or with
# torch._dynamo run on the model in the worker as well (--graph-mode dynamo).
METHODS: tuple[str, ...] = ("capture", "dynamo")
# Break kinds: a host read of a device value; an output size that depends on the data; an op the back-end cannot
# take (not capturable, no converter); the backward pass (npugraph_ex); a break torch._dynamo reported.
BREAK_KINDS: tuple[str, ...] = ("host-sync", "data-dependent", "operator", "backward", "dynamo")


@dataclass(frozen=True)
class BackendVerdict:
    """One operator on one back-end: the verdict, why, and the fact rows behind it."""

    backend: str
    verdict: str
    reason: str
    evidence: tuple[str, ...]  # "torchair_ge_converter_status.tsv:6 (aten::_adaptive_avg_pool3d: not_implemented)"
    aten: tuple[str, ...] = ()  # the ATen ops that decided it
    message: Message | None = None  # the reason as a catalog message (reason == message.text())

    @property
    def blocking(self) -> bool:
        return self.verdict in BLOCKING[self.backend]


@dataclass(frozen=True)
class GraphBreak:
    """A place where one back-end's graph ends: the op, why, and its source line."""

    op: str  # operator key ("Tensor.item"), "backward pass", or what torch._dynamo named
    reason: str
    source: str | None  # "model.py:12"
    kind: str  # one of BREAK_KINDS
    method: str = "capture"  # one of METHODS: which analysis found it
    fix: str | None = None  # the cheap fix, when there is one ("move .item() out of forward")
    # reason and fix as catalog messages (reason == message.text()), for the reports in the reader's language
    message: Message | None = None
    fix_message: Message | None = None


@dataclass(frozen=True)
class BackendReadiness:
    """One back-end for the whole model."""

    backend: str
    ready: bool
    breaks: tuple[GraphBreak, ...]
    capturable_flops_share: float | None  # FLOPs in nodes the back-end takes / all FLOPs; None: no FLOPs known
    split_points: tuple[str, ...]  # the ops a piecewise capture splits at (vLLM's splitting ops), first seen first
    notes: tuple[str, ...] = ()  # facts that hold beyond the breaks: no backward capture, the re-capture limit
    note_messages: tuple[Message, ...] = ()  # the notes as catalog messages (notes[i] == note_messages[i].text())


@dataclass(frozen=True)
class GraphEffort:
    """Person-days to make one back-end work for this model, apart from the eager migration (not in its total)."""

    backend: str
    person_days: Effort
    basis: str  # "2 host-sync x [0.1-0.25-1] + 1 operator x [0.5-2-5]"; "" when nothing is to do
    basis_message: Message | None = None  # the basis as a catalog message (basis == basis_message.text())


@dataclass(frozen=True)
class GraphMode:
    """Graph-mode readiness of one scan: per operator key its verdicts, per back-end the model's readiness."""

    method: str  # one of METHODS
    unseen: str  # what the method cannot see
    backends: tuple[BackendReadiness, ...]  # in BACKENDS order
    operators: Mapping[str, tuple[BackendVerdict, ...]] = field(default_factory=dict)  # op key -> BACKENDS order
    dynamo: DynamoRun | None = None  # torch._dynamo's report (--graph-mode dynamo), as the capture carried it
    chosen: str = "inductor"  # --graph-backend: the back-end the CI gate and the effort item are for
    effort: GraphEffort | None = None

    def backend(self, name: str) -> BackendReadiness:
        return next(b for b in self.backends if b.backend == name)
