"""Attention: the facts npu_fusion_attention needs (input layout, head count, mask convention, grouped-query
key/value heads), added to the attention patterns' titles by the detail functions patterns.toml names."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..messages import N_, Message
from .graph import Graph
from .layout import permutation
from .registry import detail, uses_roles

uses_roles(__name__, "transpose", "sdpa", "mask", "repeat", "view", "slice", "cast")


@detail("attention_layout", ("layout", "heads", "mask", "gqa"))
def attention_layout(graph: Graph, chain: Sequence[str]) -> dict[str, Any]:
    """npu_fusion_attention's input_layout for this attention, from the query's shape and how it was made.

    A 4-D query is (batch, heads, seq, dim): BNSD. When it comes straight from a transpose(1, 2) of a
    (batch, seq, heads, dim) view, BSND takes that view as is and the q/k/v (and output) transposes go.
    A 3-D query (batch * heads, seq, dim) is BSH with head_num 1."""
    first = chain[0]
    node = graph.node[first]
    q = node.input_shapes[0] if node.input_shapes else None
    facts = {"mask": _attention_mask(graph, chain), "gqa": _repeated_kv(graph, first, q)}
    if q is None or len(q) not in (3, 4):
        return {"layout": "BNSD", "heads": "?", **facts}
    if len(q) == 3:
        return {"layout": "BSH", "heads": 1, **facts}
    # Edges do not say which operand they feed, and q, k, v often share a shape: BSND only when every producer
    # of that shape is a (0, 2, 1, 3) transpose (otherwise q may be one that is not).
    candidates = [p for p in graph.producers[first] if graph.node[p].output_shapes[:1] == (q,)]
    if candidates and all(graph.plays(p, ("transpose",)) and permutation(graph, p) == (0, 2, 1, 3)
                          for p in candidates):
        return {"layout": "BSND", "heads": q[1], **facts}
    return {"layout": "BNSD", "heads": q[1], **facts}


def _repeated_kv(graph: Graph, name: str, q: tuple[int, ...] | None) -> Message | str:
    """Grouped-query attention written with repeat_kv (expand + reshape of k and v) shortly before the attention:
    npu_fusion_attention takes fewer key/value heads than query heads, so the repeat (a copy) can go.

    Decided by head counts, not by the presence of an expand: a mask expanded to the batch (Whisper's
    (1, 1, T, S) -> (B, 1, T, S)) is a repeat too. It is GQA only when the repeated tensor has fewer heads than
    the query and the repeat brings them to the query's count, with the query's head size: for q (1, 8, 128, 32),
    k (1, 2, 128, 32) expanded to (1, 2, 4, 128, 32) is 2 kv heads repeated to 2 * 4 = 8."""
    if q is None or len(q) != 4:
        return ""
    frontier, seen = [name], {name}
    for _ in range(4):  # the reshape, the expand, the unsqueeze and a transpose at most
        nxt = []
        for n in frontier:
            for p in graph.producers[n]:
                if p in seen:
                    continue
                seen.add(p)
                if graph.plays(p, ("repeat",)) and _repeats_heads(graph, p, q):
                    return Message(N_(", GQA: drop repeat_kv, npu_fusion_attention takes the kv heads as they are"))
                if graph.plays(p, ("view", "transpose", "slice", "cast")):
                    nxt.append(p)
        frontier = nxt
    return ""


def _repeats_heads(graph: Graph, name: str, q: tuple[int, ...]) -> bool:
    """Whether this repeat turns fewer kv heads into the query's heads (see _repeated_kv)."""
    node = graph.node[name]
    if not node.input_shapes or not node.output_shapes:
        return False
    before, after = node.input_shapes[0], node.output_shapes[0]
    if before is None or after is None or len(before) < 4 or len(after) not in (4, 5) or after[-1] != q[-1]:
        return False
    repeated = after[1] * after[2] if len(after) == 5 else after[1]
    return before[1] < q[1] and repeated == q[1]


def _attention_mask(graph: Graph, chain: Sequence[str]) -> Message:
    """How the model's mask maps onto atten_mask, where True (1) means 'masked out'."""
    node = graph.node[chain[0]]
    if graph.plays(chain[0], ("sdpa",)):
        if node.attrs.get("is_causal"):
            return Message(N_("causal, atten_mask = triu(ones(S, S), 1)"))
        if len(node.input_dtypes) > 3:
            return Message(N_("bool attn_mask, invert it (True keeps in SDPA)") if node.input_dtypes[3] == "bool"
                           else N_("additive float mask, pass it as a bool atten_mask"))
        return Message(N_("none"))
    for name in chain:
        if not graph.plays(name, ("mask",)):
            continue
        keys = " ".join((graph.node[name].key, *graph.node[name].entry))
        if "masked_fill" in keys:
            return Message(N_("masked_fill mask, same convention"))
        if "where" in keys:
            return Message(N_("where(keep, scores, -inf), pass ~keep"))
        return Message(N_("additive float mask, pass it as a bool atten_mask"))
    return Message(N_("none"))


@detail("mha_layout", ("layout", "heads"))
def mha_layout(graph: Graph, chain: Sequence[str]) -> dict[str, Any]:
    """nn.MultiheadAttention: (batch, seq, embed) when batch_first, else (seq, batch, embed)."""
    attrs = graph.node[chain[0]].attrs
    return {"layout": "BSH" if attrs.get("batch_first") else "SBH", "heads": attrs.get("num_heads", "?")}
