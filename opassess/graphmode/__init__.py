"""Graph-mode readiness: per operator and per model, for each NPU graph back-end (inductor, npugraph_ex, GE).

Computed in the parent from the capture and the facts (kb/graph_mode.json); with `--graph-mode dynamo` the worker
also runs torch._dynamo on the model and sends back what it reported (dynamo.py, Capture.dynamo), which joins the
breaks here.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..kb.graph_facts import GraphFacts, load_graph_facts
from ..kb.store import KnowledgeBase
from ..records import Capture, ClassifiedOp
from ..vocabulary import GRAPH_MODES
from .effort import graph_effort
from .readiness import CAPTURE_UNSEEN, DYNAMO_UNSEEN, model_readiness
from .records import (
    BACKENDS,
    BLOCKING,
    BREAK_KINDS,
    METHODS,
    VERDICTS,
    BackendReadiness,
    BackendVerdict,
    GraphBreak,
    GraphEffort,
    GraphMode,
)
from .verdicts import operator_verdicts

__all__ = ["BACKENDS", "BLOCKING", "BREAK_KINDS", "GRAPH_MODES", "METHODS", "VERDICTS", "BackendReadiness",
           "BackendVerdict", "GraphBreak", "GraphEffort", "GraphFacts", "GraphMode",
           "assess_graph_mode", "load_graph_facts"]


def assess_graph_mode(capture: Capture, classified: tuple[ClassifiedOp, ...], kb: KnowledgeBase, torch_version: str, *,
                      backend: str = "inductor", rates: Mapping[str, tuple[float, float, float]] | None = None,
                      inputs: tuple[str, ...] = ()) -> GraphMode:
    """The graph-mode verdicts of every classified operator, the readiness of the model on each back-end and, with
    `rates` ([graph_mode] of the weights), the effort to make `backend` work; `inputs` (ModelInfo.inputs) name the
    shapes the capture saw."""
    facts = load_graph_facts(Path(kb.directory))
    version = kb.resolve_version(torch_version)
    train = capture.training
    verdicts = {c.operator.key: operator_verdicts(c, facts, kb, version, train) for c in classified
                if c.operator.kind != "library"}
    dynamo = capture.dynamo
    backends = model_readiness(capture, verdicts, facts, inputs)
    method = "dynamo" if dynamo is not None and dynamo.error is None else "capture"
    chosen = next(b for b in backends if b.backend == backend)
    return GraphMode(method=method, unseen=DYNAMO_UNSEEN if method == "dynamo" else CAPTURE_UNSEEN,
                     backends=backends, operators=verdicts, dynamo=dynamo, chosen=backend,
                     effort=graph_effort(chosen, rates) if rates is not None else None)
