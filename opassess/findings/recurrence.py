"""A sequential scan written as a Python loop over the sequence: state = a[t] * state + b[t], once per token.

Mamba's slow path (transformers' MambaMixer.slow_forward, mamba_ssm's selective_scan_ref) runs its selective scan
this way when the fused CUDA kernel is missing, which is what happens on the NPU: for 64 tokens that is 64 steps of
small kernels (two slices, a multiply, an add, a matmul with C[t], a slice of its result), hundreds of launches
where the fused scan is one. Found on the data-flow graph as a chain of (mul, add) pairs, each multiply fed by the
previous add's state; the routes are what the knowledge base's row for mamba_ssm says (third_party_kernel_libs.tsv),
quoted and cited, never invented here.
"""
from __future__ import annotations

from ..messages import N_, Message
from ..records import Finding
from ..source.facts import load_source_facts
from .families import Survey, family
from .graph import Graph
from .registry import uses_roles

uses_roles(__name__, "mul", "add", "slice", "matmul")

MIN_STEPS = 4  # a recurrence this many steps long is a loop over the sequence, not an unrolled formula
LOOP = N_("sequential selective-scan loop (state = a[t] * state + b[t] once per token: {steps} steps, {count}x; "
          "{slices} indexing ops and {matmuls} matmuls in all): {route} ({cite})")
NO_ROUTE = N_("no fused scan route in the facts")


def _next_state(graph: Graph, add: str) -> str | None:
    """The add of the next step: this state, through transparent nodes, multiplied (mul) and then added to."""
    shape = graph.node[add].output_shapes[:1]
    for mul, _ in graph.successors(add):
        if not graph.plays(mul, ("mul",)) or graph.node[mul].output_shapes[:1] != shape:
            continue
        for nxt, _ in graph.successors(mul):
            if graph.plays(nxt, ("add",)) and graph.node[nxt].output_shapes[:1] == shape:
                return nxt
    return None


def _loops(graph: Graph) -> list[list[str]]:
    """Each recurrence's chain of state adds, in order, MIN_STEPS long or more."""
    following = {n.name: nxt for n in graph.nodes if graph.plays(n.name, ("add",))
                 and (nxt := _next_state(graph, n.name)) is not None}
    followed = set(following.values())
    loops = []
    for start in following:
        if start in followed:
            continue
        chain = [start]
        while chain[-1] in following and len(chain) <= len(following):
            chain.append(following[chain[-1]])
        if len(chain) >= MIN_STEPS:
            loops.append(chain)
    return loops


def _members(graph: Graph, chain: list[str]) -> list[str]:
    """The loop's nodes: the state adds, the multiplies and slices feeding them, the matmuls reading each state and
    the slices of their results."""
    out: list[str] = []
    for add in chain:
        out.append(add)
        for p in graph.producers[add]:
            out.append(p)
            out += [q for q in graph.producers[p] if graph.plays(q, ("slice",))]
        for c, via in graph.successors(add):
            if graph.plays(c, ("matmul",)):
                out += [*via, c, *(d for d in graph.data_consumers(c) if graph.plays(d, ("slice",)))]
                out += [q for q in graph.ancestors_through_transparent(c) if graph.plays(q, ("slice",))]
    return list(dict.fromkeys(out))


@family("recurrence", order=36, kinds=("slow-path",))
def recurrence_findings(survey: Survey) -> list[Finding]:
    """One finding for the model's sequential scan loops (one per layer), with their steps and kernels counted."""
    graph = survey.graph
    loops = _loops(graph)
    if not loops:
        return []
    names = [n for chain in loops for n in _members(graph, chain)]
    names = list(dict.fromkeys(sorted(names, key=graph.order.__getitem__)))
    row = next((lib for lib in load_source_facts().libraries if lib.library == "mamba_ssm"), None)
    title = Message.of(LOOP, steps=max(len(c) for c in loops), count=len(loops),
                       slices=sum(graph.plays(n, ("slice",)) for n in names),
                       matmuls=sum(graph.plays(n, ("matmul",)) for n in names),
                       route=row.route if row else Message(NO_ROUTE), cite=row.cite if row else "")
    return [Finding(kind="slow-path", title=title.text(), message=title, nodes=tuple(names),
                    ops=tuple(dict.fromkeys(graph.node[n].key for n in names)), source=graph.first_source(names),
                    npu_api=None, effect=graph.book.effects["slow-path"],
                    metrics={"occurrences": len(loops), "steps": max(len(c) for c in loops)})]
