"""LLM blocks (RMSNorm, rotary embedding, SwiGLU/GeGLU): which chains they are is data (patterns.toml); the code
here is what the fused kernels need to know that a chain alone does not say."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..messages import N_, Message
from .graph import Graph
from .registry import detail, uses_roles

uses_roles(__name__, "slice")


@detail("glu_split", ("split",))
def glu_split(graph: Graph, chain: Sequence[str]) -> dict[str, Any]:
    """npu_swiglu / npu_geglu take one tensor and split it themselves: say whether the model already has one."""
    from_split = any(graph.plays(p, ("slice",)) for p in graph.ancestors_through_transparent(chain[0]))
    return {"split": Message(N_("pass the projection before its chunk, dim=-1") if from_split
                             else N_("two projections: concatenate their weights into one first"))}
