"""The call each pattern's finding names, written out from what the capture saw (opassess/advice renders it).

A renderer is registered per pattern id next to nothing else (`@renders("attention-sdpa")`); it reads the matched
chain and the detail facts the pattern's title already has (layout, heads) and returns an advice.Call. The
attention op's documented constraints come from the knowledge base's route row that states them
(third_party_kernel_libs.tsv, flash_attn direct calls: npu_fusion_attention's layouts, dtypes, head dim, heads).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

from ..advice import (
    AttentionFacts,
    Call,
    Constraints,
    attention_call,
    notes_of,
    rms_norm_call,
    rotary_call,
    swiglu_call,
)
from ..advice.call import Argument
from ..source.facts import load_source_facts
from .graph import Graph
from .registry import uses_roles

uses_roles(__name__, "sdpa", "matmul", "mask", "scale", "eps", "slice", "repeat")

Renderer = Callable[[Graph, Sequence[str], Mapping[str, Any]], Call | None]
RENDERERS: dict[str, Renderer] = {}


def renders(*pattern_ids: str) -> Callable[[Renderer], Renderer]:
    """Register the call renderer of these patterns (a pattern id registered twice is an error)."""
    def register(fn: Renderer) -> Renderer:
        for pid in pattern_ids:
            if pid in RENDERERS:
                raise ValueError(f"call renderer for pattern {pid!r} registered twice")
            RENDERERS[pid] = fn
        return fn
    return register


@cache
def attention_constraints() -> Constraints | None:
    """npu_fusion_attention's documented constraints: the route row that states them, cited."""
    row = next((lib for lib in load_source_facts().libraries
                if lib.constraints and "npu_fusion_attention" in lib.route), None)
    return Constraints(row.cite, row.constraints) if row else None


def call_fields(call: Call | None) -> dict[str, Any]:
    """Finding(call=..., call_notes=...) for a rendered call: failures first, then the adapter lines, then notes."""
    if call is None:
        return {}
    return {"call": call.text(), "call_notes": tuple(notes_of(call))}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _scalar(graph: Graph, name: str) -> float | None:
    """The scalar operand of a one-tensor op (x * 0.125, x + 1e-6), from its attributes."""
    for key in ("other", "arg1", "alpha"):
        value = graph.node[name].attrs.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _heads(q: tuple[int, ...] | None, k: tuple[int, ...] | None) -> tuple[int | None, int | None, int | None]:
    """(query heads, key/value heads, head dim) of (B, N, S, D) operands."""
    if q is None or len(q) != 4:
        return None, None, None
    return q[1], (k[1] if k is not None and len(k) == 4 else None), q[-1]


@renders("attention-sdpa")
def _sdpa(graph: Graph, chain: Sequence[str], fields: Mapping[str, Any]) -> Call | None:
    node = graph.node[chain[0]]
    shapes = node.input_shapes
    heads, kv_heads, dim = _heads(shapes[0] if shapes else None, shapes[1] if len(shapes) > 1 else None)
    mask = "causal" if node.attrs.get("is_causal") else "none"
    if mask == "none" and len(node.input_dtypes) > 3:
        mask = "bool" if node.input_dtypes[3] == "bool" else "additive"
    scale = node.attrs.get("scale")
    if fields.get("gqa") and heads:  # k and v were repeated to the query's heads: the call takes them before that
        kv_heads = _kv_before_repeat(graph, chain[0], heads) or kv_heads
    facts = AttentionFacts(layout=fields.get("layout", "BNSD"), heads=_int(fields.get("heads")) or heads,
                           kv_heads=kv_heads, head_dim=dim, dtype=node.input_dtypes[0] if node.input_dtypes else None,
                           scale=float(scale) if isinstance(scale, int | float) else None, mask=mask)
    return attention_call(facts, attention_constraints())


def _kv_before_repeat(graph: Graph, name: str, heads: int) -> int | None:
    """The key/value head count before repeat_kv: the repeat (expand) within 4 producers of the attention whose
    input has fewer heads than the query (attention.py's _repeated_kv decides that there is one)."""
    frontier, seen = [name], {name}
    for _ in range(4):
        nxt = []
        for n in frontier:
            for p in graph.producers[n]:
                if p in seen:
                    continue
                seen.add(p)
                shape = graph.node[p].input_shapes[0] if graph.node[p].input_shapes else None
                if graph.plays(p, ("repeat",)) and shape and len(shape) >= 4 and shape[1] < heads:
                    return shape[1]
                nxt.append(p)
        frontier = nxt
    return None


def manual_attention_facts(graph: Graph, chain: Sequence[str], layout: str, sink: bool = False,
                           window: int | None = None) -> AttentionFacts:
    """What a hand-written attention's chain says: q and k from the scores matmul, the scale, the mask's form."""
    first = next((n for n in chain if graph.plays(n, ("matmul",))), chain[0])
    node = graph.node[first]
    shapes = node.input_shapes
    q = shapes[0] if shapes else None
    heads, kv_heads, dim = _heads(q, shapes[1] if len(shapes) > 1 else None)
    scale = None
    for name in chain:
        if graph.plays(name, ("scale",)) and (value := _scalar(graph, name)):
            keys = " ".join((graph.node[name].key, *graph.node[name].entry))
            scale = 1 / value if "div" in keys else value
    mask = "none"
    for name in chain:
        keys = " ".join((graph.node[name].key, *graph.node[name].entry))
        if "masked_fill" in keys:
            mask = "masked_fill"
        elif graph.plays(name, ("mask",)):
            mask = "where" if "where" in keys else "additive"
    return AttentionFacts(layout=layout, heads=heads, kv_heads=kv_heads, head_dim=dim,
                          dtype=node.input_dtypes[0] if node.input_dtypes else None, scale=scale, mask=mask,
                          window=window, sink=sink)


@renders("attention-manual")
def _manual(graph: Graph, chain: Sequence[str], fields: Mapping[str, Any]) -> Call | None:
    return attention_call(manual_attention_facts(graph, chain, fields.get("layout", "BNSD")), attention_constraints())


@renders("attention-mha")
def _mha(graph: Graph, chain: Sequence[str], fields: Mapping[str, Any]) -> Call | None:
    attrs = graph.node[chain[0]].attrs
    heads, embed = _int(attrs.get("num_heads")), _int(attrs.get("embed_dim"))
    dtypes = graph.node[chain[0]].input_dtypes
    facts = AttentionFacts(layout=fields.get("layout", "BSH"), heads=heads, kv_heads=heads,
                           head_dim=embed // heads if embed and heads else None, dtype=dtypes[0] if dtypes else None)
    return attention_call(facts, attention_constraints())


@renders("rmsnorm", "rmsnorm-sqrt")
def _rmsnorm(graph: Graph, chain: Sequence[str], fields: Mapping[str, Any]) -> Call | None:
    eps = next((_scalar(graph, n) for n in chain if graph.plays(n, ("eps",))), None)
    return rms_norm_call(eps)


@renders("rmsnorm-module")
def _rmsnorm_module(graph: Graph, chain: Sequence[str], fields: Mapping[str, Any]) -> Call | None:
    eps = graph.node[chain[0]].attrs.get("eps")
    return rms_norm_call(float(eps) if isinstance(eps, int | float) else None)


@renders("swiglu", "geglu")
def _glu(graph: Graph, chain: Sequence[str], fields: Mapping[str, Any]) -> Call | None:
    from_split = any(graph.plays(p, ("slice",)) for p in graph.ancestors_through_transparent(chain[0]))
    api = "torch_npu.npu_geglu" if any("gelu" in graph.node[n].key for n in chain) else "torch_npu.npu_swiglu"
    return swiglu_call(from_split, api)


@renders("rotary-half")
def _rotary_half(graph: Graph, chain: Sequence[str], fields: Mapping[str, Any]) -> Call | None:
    return rotary_call("half")


@renders("rotary-interleave", "rotary-complex")
def _rotary_interleave(graph: Graph, chain: Sequence[str], fields: Mapping[str, Any]) -> Call | None:
    return rotary_call("interleave")


# Ops that cut a tensor into contiguous pieces: x1, x2 from one of them are the two halves, never even/odd lanes
CONTIGUOUS_SPLITS = frozenset({"aten::chunk", "aten::split", "aten::split_with_sizes", "aten::narrow"})


@renders("rotary-pairs")
def _rotary_pairs(graph: Graph, chain: Sequence[str], fields: Mapping[str, Any]) -> Call | None:
    """x1*cos - x2*sin, x2*cos + x1*sin, cat: npu_interleave_rope when x1, x2 are x's even/odd lanes (DeepSeek-V3's
    rope_interleave: x[..., 0::2], x[..., 1::2], which the capture cannot tell from halves); npu_rotary_mul in 'half'
    mode when they come from a chunk or split of x (gpt-oss: torch.chunk(x, 2, dim=-1)). The pair form multiplies
    each half by a cos/sin of half the head dim; npu_rotary_mul takes them at the full head dim (cos repeated), so
    for cos (1, 1, 16, 8) on x (1, 4, 16, 16) the call needs torch.cat((cos, cos), dim=-1) first."""
    first = graph.node[chain[0]]
    if not CONTIGUOUS_SPLITS.intersection(first.entry_names) or not first.input_shapes \
            or not first.input_shapes[0]:
        return Call("torch_npu.npu_interleave_rope",
                    (Argument("", "x"), Argument("cos", "cos"), Argument("sin", "sin")))
    call = rotary_call("half")
    width = first.input_shapes[0][-1]
    factors = [shape for shape in graph.node[chain[1]].input_shapes if shape]  # x1 * cos
    if len(factors) == 2 and all(shape[-1] * 2 == width for shape in factors):
        call = dataclasses.replace(call, adapters=("cos, sin = torch.cat((cos, cos), dim=-1), "
                                                   "torch.cat((sin, sin), dim=-1)",))
    return call
