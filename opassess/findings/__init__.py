"""Findings stage: performance-work patterns found on the captured graph (fusions, attention, layouts, ...).

What is matched, and with which NPU API each is replaced, is data: opassess/data/patterns.toml, loaded and
validated by `patterns.load_patterns`. The code is the matching engine (`match`), the graph it walks (`graph`)
and one module per finding family (`layout`, `dynamic`, `precision`, `compute`; `attention` and `llm` add facts
to their patterns' titles), each registered next to its implementation (`families`; `registry` holds what
patterns.toml is checked against).

Why match on the records' edges and not with torch.fx's SubgraphMatcher: only the fx capture has a real fx
graph, and it never leaves the trace stage; the export and dispatch captures (the ones large or untraceable
models get) produce the same OpNode records and (producer, consumer) edges, so matching on those works for every
capture method. The records also say more than an fx node does about what a node *is* across methods
(`x + y` is `Tensor.add` in fx and dispatch but `aten::add` in export; OpNode.entry names the ATen op of
both), so a pattern is a chain of *roles* that each list those keys. Patterns need what a literal subgraph
cannot express: optional and repeated steps (scale and mask in attention), nodes looked through (views,
casts, eval-mode dropout) and constraints on operands (x * 0.5 is a scale, x * y a gate). Chains are
followed along data-flow edges, so two ops that are adjacent in the node list but not connected never match.

Every finding names its nodes, the operator keys involved, a source line, the torch_npu API to use (None
when no fused API exists) and its effect on the score (the kind's `effect` in patterns.toml). Repeated blocks
give one finding per pattern, with the occurrence count in the title and in `metrics["occurrences"]`.
"""
from __future__ import annotations

from ..errors import KnowledgeBaseError
from ..kb.store import KnowledgeBase
from ..options import DEFAULT_PRODUCT
from ..records import Finding, Inventory

# Importing a family module registers it (and its detail functions, FLOP formulas and roles).
from . import attention, compute, dynamic, layout, llm, match, precision, recurrence, slow, variants  # noqa: F401
from .families import Survey, families
from .graph import DataFlow, Graph
from .patterns import PatternBook, load_patterns

__all__ = ["DataFlow", "Graph", "PatternBook", "find_findings", "load_patterns"]


def find_findings(inventory: Inventory, kb: KnowledgeBase, *, dtype: str | None = None, product: str = DEFAULT_PRODUCT,
                  torch_version: str | None = None, patterns: PatternBook | None = None,
                  flow: DataFlow | None = None, graph: Graph | None = None,
                  natively: frozenset[str] = frozenset()) -> tuple[Finding, ...]:
    """Every performance-work finding in the captured graph, family by family: patterns (as listed in
    patterns.toml), layout churn, dynamic shapes, mixed precision (float64 always; kernel dtype gaps when `dtype`
    is given), compute weight. `flow` is the capture's data-flow graph when the caller already built it, `graph`
    the role-annotated graph over it (with the shipped patterns) when the caller built that too. `natively`: the
    operators whose classification found, from the kernel facts, that the target dtype runs (no dtype-gap finding
    contradicts that verdict)."""
    book = patterns or load_patterns()
    if dtype is not None and dtype not in book.precision_dtypes and dtype != "float32":
        raise KnowledgeBaseError(f"{book.source}: precision.dtypes: no mixed-precision check for {dtype!r} "
                                 f"(known: {', '.join(book.precision_dtypes)})")
    if dtype not in (None, "float32") and kb is None:
        raise KnowledgeBaseError(f"the mixed-precision check for {dtype} needs the knowledge base (kb is None)")
    if graph is None or graph.book is not book:
        graph = Graph(flow if flow is not None else DataFlow.of(inventory.capture), book)
    survey = Survey(graph=graph, inventory=inventory, kb=kb, dtype=dtype, product=product,
                    torch_version=torch_version, natively=natively)
    return tuple(finding for family in families() for finding in family.find(survey))
