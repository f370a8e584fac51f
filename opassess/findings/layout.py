"""Layout churn: NCHW <-> NHWC conversions between two compute ops (each a TransData copy on the NPU)."""
from __future__ import annotations

from ..messages import Message
from ..records import Finding
from .families import Survey, family
from .graph import Graph
from .registry import uses_roles

uses_roles(__name__, "compute", "transpose", "matmul", "contiguous")


def permutation(graph: Graph, name: str) -> tuple[int, ...] | None:
    """The axis permutation a permute/transpose/movedim node applied, from its attributes, checked on its shapes."""
    node = graph.node[name]
    if not node.input_shapes or not node.output_shapes or node.input_shapes[0] is None:
        return None
    shape_in, shape_out = node.input_shapes[0], node.output_shapes[0]
    rank = len(shape_in)
    ints = []
    for value in node.attrs.values():
        for v in (value if isinstance(value, list) else [value]):
            if isinstance(v, int) and not isinstance(v, bool):
                ints.append(v % rank if rank and -rank <= v < rank else v)
    keys = " ".join((node.key, *node.entry))
    perm: list[int] | None = None
    if "movedim" in keys or "moveaxis" in keys:
        if len(ints) >= 2 and all(0 <= i < rank for i in ints[:2]):
            rest = [d for d in range(rank) if d != ints[0]]
            rest.insert(ints[1], ints[0])
            perm = rest
    elif len(ints) == rank and sorted(ints) == list(range(rank)) and "permute" in keys:
        perm = ints
    elif len(ints) >= 2 and all(0 <= i < rank for i in ints[:2]):
        perm = list(range(rank))
        perm[ints[0]], perm[ints[1]] = perm[ints[1]], perm[ints[0]]
    if perm is None or shape_out is None or tuple(shape_in[p] for p in perm) != tuple(shape_out):
        return None
    return tuple(perm)


def _flow_flags(graph: Graph, anchor: str) -> tuple[set[str], set[str]]:
    """Nodes with an `anchor`-role ancestor, and nodes with an `anchor`-role descendant (node order is topological)."""
    after: set[str] = set()
    for node in graph.nodes:
        if any(p in after or graph.plays(p, (anchor,)) for p in graph.producers[node.name]):
            after.add(node.name)
    before: set[str] = set()
    for node in reversed(graph.nodes):
        if any(c in before or graph.plays(c, (anchor,)) for c in graph.consumers[node.name]):
            before.add(node.name)
    return after, before


def _moves_channels(perm: tuple[int, ...]) -> bool:
    """The channel axis goes from position 1 to the last or back on a 4-D or 5-D tensor (NCHW <-> NHWC, NCDHW <->
    NDHWC): what the NPU's private formats (NC1HWC0) are about. A 3-D [B, L, D] <-> [B, D, L] swap around a conv1d is
    a plain transpose, not a TransData (Mamba's slow path has one on each side of its conv)."""
    rank = len(perm)
    return rank >= 4 and perm[0] == 0 and (perm[-1] == 1 or perm[1] == rank - 1)


@family("layout", order=20, kinds=("layout-churn",))
def layout_findings(survey: Survey) -> list[Finding]:
    """At most one finding: every conversion between two compute ops, and the contiguous copies right after them."""
    graph = survey.graph
    after, before = _flow_flags(graph, "compute")
    conversions: list[str] = []
    for node in graph.nodes:
        name = node.name
        if not (name in after and name in before):
            continue  # not between two compute ops: a parameter or input reformatted once
        if graph.plays(name, ("transpose",)):
            perm = permutation(graph, name)
            if perm is None or not _moves_channels(perm):
                continue
            if any(graph.plays(c, ("matmul",)) for c, _ in graph.successors(name)):
                continue  # a matmul takes a transposed operand through its transpose flag
            conversions.append(name)
        elif any("channels_last" in str(v) for v in node.attrs.values()):
            conversions.append(name)  # .contiguous(memory_format=torch.channels_last), .to(memory_format=...)
    counted = set(conversions)
    copies = [n.name for n in graph.nodes if graph.plays(n.name, ("contiguous",)) and n.name not in counted
              and any(p in counted for p in graph.producers[n.name])]
    if not conversions:
        return []
    names = tuple(sorted(counted | set(copies), key=graph.order.__getitem__))
    title = Message.of(graph.book.layout_title, count=len(names), permutes=len(conversions), copies=len(copies))
    return [Finding(kind="layout-churn", title=title.text(), message=title, nodes=names,
                    ops=tuple(dict.fromkeys(graph.node[n].key for n in names)), source=graph.first_source(names),
                    npu_api=None, effect=graph.book.effects["layout-churn"],
                    metrics={"conversions": len(names), "permutes": len(conversions), "copies": len(copies)})]
