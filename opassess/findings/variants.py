"""The 2026 attention and MoE-era variants: attention with sinks and sliding windows (gpt-oss), multi-head latent
attention and its interleaved rotary layout (DeepSeek-V3), incremental (decode) attention in inference.

Each is matched on the data-flow graph by its structure, and names a fused NPU op only where the knowledge base
(npu_custom_ops.tsv) has it, with the parameter the facts give for the variant: npu_fusion_attention's `sink` and
`pre_tockens`/`next_tockens` (training), npu_fused_infer_attention_score_v2's `learnable_sink` and `pre_tokens`
(inference), atb npu_multi_head_latent_attention and npu_mla_prolog (inference), npu_fusion_attention_v2's
`query_rope`/`key_rope`, npu_interleave_rope, npu_incre_flash_attention / npu_fused_infer_attention_score. The time
model (opassess/perf) counts the members other than the chain's heaviest operator as at risk, so each finding
carries the time it costs.
"""
from __future__ import annotations

from collections.abc import Iterable

from ..advice import AttentionFacts, Call, attention_call
from ..messages import N_, Message
from ..records import Finding
from .calls import attention_constraints, call_fields, manual_attention_facts
from .families import Survey, family
from .graph import Graph
from .registry import uses_roles

uses_roles(__name__, "softmax", "cat", "slice", "matmul", "sdpa", "linear", "view", "transpose", "mask", "scale", "div")

KIND = "attention-variant"
SPLIT_KEYS = ("torch.split", "Tensor.split", "aten::split_with_sizes", "aten::split", "torch.tensor_split")
BAND_KEYS = ("torch.tril", "Tensor.tril", "aten::tril", "torch.triu", "Tensor.triu", "aten::triu")
HOPS = 5  # nodes walked from a softmax to the attention's matmuls
LATENT_HOPS = 12  # nodes walked from a latent split to the expanding Linear (a hand-written RMSNorm is 8 ops)
SINK_HOPS = 3  # producers walked back from a softmax to the cat that adds the sink (transformers: cat, max, sub)
# The titles, as message ids (the reports translate them): with the fused route the facts give, and without one
SINKS = N_("attention with sinks (gpt-oss style: a learned logit per head joins the softmax, {count}x): {routes}")
NO_SINK_OP = N_("no fused NPU op with a sink in the facts")
BAND = N_("sliding-window attention mask (band of {window} positions, {count}x)")
BAND_ROUTE = N_("sliding-window attention mask (band of {window} positions, {count}x): npu_fusion_attention takes the "
                "window as {params} (sparse_mode) instead of a materialised S x S mask")
DECODE = N_("incremental (decode) attention: one query position against the KV cache ({count}x)")
DECODE_ROUTE = N_("incremental (decode) attention: one query position against the KV cache ({count}x): {apis} "
                  "(npu_fusion_attention is training-only)")
LATENT = N_("multi-head latent attention (DeepSeek-V3 style: K/V through a narrow latent, {count}x)")
LATENT_ROUTE = N_("multi-head latent attention (DeepSeek-V3 style: K/V through a narrow latent, {count}x): {routes}")
INTERLEAVED = N_("interleaved rotary layout (view to (..., d/2, 2) and swap, DeepSeek-V3 style, {count}x)")
INTERLEAVED_ROUTE = N_("interleaved rotary layout (view to (..., d/2, 2) and swap, DeepSeek-V3 style, {count}x): {api} "
                       "takes the interleaved layout as is")


def _keys(graph: Graph, name: str) -> set[str]:
    node = graph.node[name]
    return {node.key, *node.entry, *node.entry_names, *(c.op for c in node.aten)}


def _custom(kb, name: str) -> bool:
    return kb is not None and (kb.has_custom_op(name) or name in kb.custom_op_names())


def _schema_has(kb, name: str, *params: str) -> bool:
    fact = kb.custom_op(name) if kb is not None else None
    return fact is not None and all(f" {p}=" in fact.schema or f" {p}," in fact.schema for p in params)


def _walk(graph: Graph, start: str, step, stop_roles: Iterable[str], hops: int = HOPS) -> list[str]:
    """Nodes from `start` along producers or consumers (`step`), up to the first node playing a stop role
    (included), at most `hops` away."""
    out, frontier = [], [start]
    for _ in range(hops):
        following = []
        for name in frontier:
            for other in step(name):
                if other in out:
                    continue
                out.append(other)
                if not graph.plays(other, stop_roles):
                    following.append(other)
        frontier = following
    return out


def _attention_around(graph: Graph, softmax: str) -> list[str]:
    """The hand-written attention a softmax belongs to: back to the scores matmul, forward to the values matmul."""
    back = _walk(graph, softmax, lambda n: graph.producers[n], ("matmul",))
    ahead = _walk(graph, softmax, lambda n: graph.data_consumers(n), ("matmul",))
    scores = graph.node[softmax].input_shapes[:1]  # the (.., S, S + 1) logits every score op writes
    keep = [n for n in back if graph.plays(n, ("matmul", "scale", "mask", "cat", "div"))
            or any("masked_fill" in k for k in _keys(graph, n)) or graph.node[n].output_shapes[:1] == scores]
    return sorted({softmax, *keep, *(n for n in ahead if graph.plays(n, ("matmul", "slice")))},
                  key=graph.order.__getitem__)


def _sinks(graph: Graph) -> list[tuple[str, ...]]:
    """softmax(cat([scores, sink], -1))[..., :-1]: a learned logit per head that takes part of the softmax mass."""
    found = []
    for node in graph.nodes:
        if not graph.plays(node.name, ("softmax",)) or not node.input_shapes or not node.input_shapes[0]:
            continue
        width = node.input_shapes[0][-1]
        cats = [p for p in _walk(graph, node.name, lambda n: graph.producers[n], ("cat", "matmul"), SINK_HOPS)
                if graph.plays(p, ("cat",)) and graph.node[p].output_shapes[:1] == (node.input_shapes[0],)
                and any(s and len(s) >= 3 and s[-1] == 1 for s in graph.node[p].input_shapes)]
        cut = [c for c in graph.data_consumers(node.name) if graph.plays(c, ("slice",))
               and graph.node[c].output_shapes and graph.node[c].output_shapes[0]
               and graph.node[c].output_shapes[0][-1] == width - 1]  # type: ignore[index]  # checked just before
        if cats and cut:
            found.append(tuple(_attention_around(graph, node.name)))
    return found


def _bands(graph: Graph) -> list[tuple[str, int]]:
    """tril/triu with a negative diagonal: a band mask, i.e. a sliding window of that many positions."""
    out = []
    for node in graph.nodes:
        diagonal = node.attrs.get("diagonal", node.attrs.get("arg1"))
        if isinstance(diagonal, int) and not isinstance(diagonal, bool) and diagonal < 0 \
                and _keys(graph, node.name) & set(BAND_KEYS):
            out.append((node.name, -diagonal))
    return out


COMPARE_KEYS = ("aten::gt", "aten::ge", "aten::lt", "aten::le")


def _index_windows(graph: Graph) -> list[tuple[str, int]]:
    """A window built from position indices (transformers' sliding_window_causal_mask_function): q_idx - W
    compared with kv_idx, giving a bool (.., S, S) mask. (comparison, W) for each."""
    out = []
    for node in graph.nodes:
        window = node.attrs.get("other", node.attrs.get("arg1"))
        if not isinstance(window, int) or isinstance(window, bool) or window <= 0 \
                or not ({node.key, *node.entry} & {"aten::sub", "Tensor.sub", "torch.sub"}) \
                or node.output_dtypes[:1] != ("int64",):
            continue
        for c in graph.data_consumers(node.name):
            consumer = graph.node[c]
            if _keys(graph, c) & set(COMPARE_KEYS) and consumer.output_dtypes[:1] == ("bool",) \
                    and consumer.output_shapes and len(consumer.output_shapes[0] or ()) >= 2:
                out.append((c, window))
    return out


def _keys_before(graph: Graph, name: str, window: int) -> int:
    """The keys before the query a band lets through (npu_fusion_attention's pre_tockens, flash-attn's left window).
    `kv_idx > q_idx - W` (transformers' sliding_window_overlay, a strict comparison) keeps W positions, the query's
    own and W - 1 before it (transformers passes flash-attn window_size W - 1 for it:
    modeling_flash_attention_utils.py); so does masking tril(ones, diagonal=-W) (it masks j <= i - W). Keeping
    triu(ones, diagonal=-W) or `kv_idx >= q_idx - W` keeps W before it."""
    return window - 1 if _keys(graph, name) & {"aten::gt", "aten::lt", "aten::tril"} else window


def _softmaxes_after(graph: Graph, start: str) -> set[str]:
    """The softmax nodes downstream of `start` (the attention layers a mask reaches)."""
    seen, frontier, found = {start}, [start], set()
    while frontier:
        name = frontier.pop()
        for c in graph.consumers[name]:
            if c in seen:
                continue
            seen.add(c)
            if graph.plays(c, ("softmax", "sdpa")):
                found.add(c)
            else:
                frontier.append(c)
    return found


def _mask_chain(graph: Graph, band: str) -> list[str]:
    """The band mask's construction: the tril/triu, what combines it (or, and) up to the masked_fill that applies it,
    and the other triangle combined with it."""
    chain = [band]
    for name in _walk(graph, band, lambda n: graph.data_consumers(n), ("mask",)):
        if graph.plays(name, ("matmul", "softmax", "cat", "sdpa")):
            continue
        chain.append(name)
        chain += [p for p in graph.producers[name] if _keys(graph, p) & set(BAND_KEYS)]
        if any("masked_fill" in k for k in _keys(graph, name)):
            break
    return chain


def _decode(graph: Graph) -> list[str]:
    """Attention whose query is one position against a longer key/value (a KV cache): incremental decoding."""
    out = []
    for node in graph.nodes:
        if graph.plays(node.name, ("sdpa",)) and len(node.input_shapes) >= 2 and all(
                s is not None and len(s) >= 3 for s in node.input_shapes[:2]):
            q, k = node.input_shapes[:2]
            if q is not None and k is not None and q[-2] == 1 < k[-2]:  # (not None: checked above)
                out.append(node.name)
    return out


def _latent(graph: Graph) -> list[tuple[str, ...]]:
    """Multi-head latent attention: a Linear down to a narrow latent, split (latent | rotary part), the latent
    normalised and expanded again by a second Linear (DeepSeek-V2/V3's kv_a_proj_with_mqa -> kv_b_proj)."""
    found = []
    for node in graph.nodes:
        if not graph.plays(node.name, ("linear",)):
            continue
        width_in, width = node.attrs.get("in_features"), node.attrs.get("out_features")
        if not isinstance(width_in, int) or not isinstance(width, int) or width * 2 > width_in:
            continue
        splits = [c for c in graph.consumers[node.name] if _keys(graph, c) & set(SPLIT_KEYS)]
        for split in splits:
            reach = _walk(graph, split, lambda n: graph.data_consumers(n) or graph.consumers[n], ("linear",),
                          LATENT_HOPS)
            ups = [n for n in reach if graph.plays(n, ("linear",))
                   and isinstance(graph.node[n].attrs.get("in_features"), int)
                   and graph.node[n].attrs["in_features"] < width
                   and graph.node[n].attrs.get("out_features", 0) >= 2 * graph.node[n].attrs["in_features"]]
            if ups:
                found.append((node.name, split, *ups))
    return found


def _interleaved(graph: Graph) -> list[str]:
    """A view to (..., d/2, 2) followed by a swap of the last two axes: the interleaved rotary layout."""
    out = []
    for node in graph.nodes:
        shape = node.output_shapes[0] if node.output_shapes else None
        if not graph.plays(node.name, ("view",)) or not shape or len(shape) < 3 or shape[-1] != 2:
            continue
        for c in graph.consumers[node.name]:
            consumer = graph.node[c]
            out_shape = consumer.output_shapes[0] if consumer.output_shapes else None
            if graph.plays(c, ("transpose",)) and out_shape and tuple(out_shape[-2:]) == (2, shape[-2]):
                out.append(c)
    return out


@family("variants", order=28, kinds=(KIND,))
def variant_findings(survey: Survey) -> list[Finding]:
    """One finding per variant found, naming the fused NPU op and its parameter only where the facts have them."""
    graph, kb = survey.graph, survey.kb
    effect = graph.book.effects[KIND]
    findings = []

    def add(title: Message, names: Iterable[str], api: str | None, call: Call | None = None, **metrics: float) -> None:
        names = tuple(dict.fromkeys(names))
        findings.append(Finding(kind=KIND, title=title.text(), message=title, nodes=names,
                                ops=tuple(dict.fromkeys(graph.node[n].key for n in names)),
                                source=graph.first_source(names), npu_api=api, effect=effect,
                                metrics={"occurrences": metrics.pop("occurrences", 1), **metrics}, **call_fields(call)))

    windows = {softmax: window for name, window in (*_bands(graph), *_index_windows(graph))
               for softmax in _softmaxes_after(graph, name)}
    sinks = _sinks(graph)
    if sinks:
        routes = []
        if _schema_has(kb, "npu_fusion_attention", "sink"):
            routes.append(Message(N_("npu_fusion_attention(sink=...) in training")))
        if _schema_has(kb, "npu_fused_infer_attention_score_v2", "learnable_sink"):
            routes.append(Message(N_("npu_fused_infer_attention_score_v2(learnable_sink=...) in inference")))
        windowed = [w for chain in sinks for n in chain if (w := windows.get(n))]
        call = attention_call(manual_attention_facts(graph, sinks[0], "BNSD", sink=True),
                              attention_constraints()) if routes else None
        add(Message.of(SINKS, count=len(sinks), routes=Message.join(routes, "; ") if routes else Message(NO_SINK_OP)),
            [n for chain in sinks for n in chain], "torch_npu.npu_fusion_attention" if routes else None,
            call=call, occurrences=len(sinks), **({"sliding_layers": len(windowed)} if windowed else {}))
    bands = [*_bands(graph), *_index_windows(graph)]
    if bands:
        widest, window = max(bands, key=lambda band: band[1])
        before = _keys_before(graph, widest, window)
        params = "pre_tockens/next_tockens" if _schema_has(kb, "npu_fusion_attention", "pre_tockens") else ""
        layers = sorted({s for s, w in windows.items() if w == window}, key=graph.order.__getitem__)
        chain = _attention_around(graph, layers[0]) if layers and graph.plays(layers[0], ("softmax",)) else None
        call = attention_call(manual_attention_facts(graph, chain, "BNSD", sink=bool(sinks), window=before)
                              if chain else AttentionFacts("BNSD", None, window=before),
                              attention_constraints()) if params else None
        add(Message.of(BAND_ROUTE if params else BAND, window=window, count=max(len(bands), len(layers)),
                       params=params),
            [n for name, _ in bands for n in _mask_chain(graph, name)],
            "torch_npu.npu_fusion_attention" if params else None, call=call,
            occurrences=max(len(bands), len(layers)), window=window)
    decode = _decode(graph)
    if decode:
        apis = [a for a in ("npu_fused_infer_attention_score", "npu_incre_flash_attention") if _custom(kb, a)]
        add(Message.of(DECODE_ROUTE if apis else DECODE, count=len(decode), apis=Message.join(apis, N_(" or "))),
            decode, f"torch_npu.{apis[0]}" if apis else None, occurrences=len(decode))
    latent = _latent(graph)
    if latent:
        apis = [a for a in ("npu_mla_prolog", "atb::npu_multi_head_latent_attention") if _custom(kb, a)]
        train = _schema_has(kb, "npu_fusion_attention_v2", "query_rope", "key_rope")
        routes = ([Message.of(N_("{apis} in inference"), apis=Message.join(apis, N_(" and ")))] if apis else []) + \
            ([Message(N_("npu_fusion_attention_v2(query_rope=..., key_rope=...) in training"))] if train else [])
        add(Message.of(LATENT_ROUTE if routes else LATENT, count=len(latent), routes=Message.join(routes, "; ")),
            [n for chain in latent for n in chain],
            f"torch_npu.{apis[0].removeprefix('atb::')}" if apis else None, occurrences=len(latent))
    interleaved = _interleaved(graph)
    if interleaved:
        api = "npu_interleave_rope" if _custom(kb, "npu_interleave_rope") else None
        add(Message.of(INTERLEAVED_ROUTE if api else INTERLEAVED, count=len(interleaved), api=api), interleaved,
            f"torch_npu.{api}" if api else None, occurrences=len(interleaved))
    return findings
