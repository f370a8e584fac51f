"""Replacement calls written from a captured signature: the shapes, dtypes and settings the capture saw.

    F.scaled_dot_product_attention(q, k, v, is_causal=True) on q (1, 8, 128, 64) bfloat16, k (1, 2, 128, 64)
    -> torch_npu.npu_fusion_attention(query=q, key=k, value=v, head_num=8, input_layout="BNSD", scale=0.125,
           atten_mask=atten_mask, sparse_mode=2)[0]   (k, v keep their 2 heads: no repeat_kv; scale 64 ** -0.5)

torch's is_causal is top-left aligned (sparse_mode 2, leftUpCausal); a sliding window of W keys is the band mode
(sparse_mode 4, pre_tockens=W, next_tockens=0); a learned sink per head is `sink=` (gpt-oss). Every value the
capture did not see stays a name for the reader to bind (q, k, v, the mask tensor); the tensors are passed by the
op's parameter names (query=q), so the call reads the same whatever the model calls them.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..messages import N_, Text
from .call import Argument, Call
from .constraints import Constraints, check_attention
from .flash import API, MASK


@dataclass(frozen=True)
class AttentionFacts:
    """What the capture says about one attention: layout and head counts from q and k, the head size, dtype, the
    scale it passes (None: 1/sqrt(head dim)), how it masks ("causal", "bool", "additive", "masked_fill",
    "where", "none"), a sliding window (`window`: the keys before the query it keeps, pre_tockens) and whether a sink
    joins the softmax."""

    layout: str
    heads: int | None
    kv_heads: int | None = None
    head_dim: int | None = None
    dtype: str | None = None
    scale: float | None = None
    mask: str = "none"
    window: int | None = None
    sink: bool = False


# mask convention -> (the atten_mask argument, sparse_mode); the NPU's atten_mask is True where a score is masked out
MASKS = {
    "bool": ("~attn_mask", "0"),            # SDPA's bool mask is True where a score is kept
    "additive": ("attn_mask < 0", "0"),     # 0 keeps, a large negative value masks
    "masked_fill": ("mask", "0"),           # masked_fill(mask, -inf): the same convention
    "where": ("~keep", "0"),                # where(keep, scores, -inf)
}


def attention_call(facts: AttentionFacts, constraints: Constraints | None = None) -> Call:
    """The npu_fusion_attention call for this attention (see the module's docstring)."""
    args = [Argument("query", "q"), Argument("key", "k"), Argument("value", "v"),
            Argument("head_num", str(facts.heads) if facts.heads else "q.shape[1]"),
            Argument("input_layout", f'"{facts.layout}"')]
    scale = facts.scale if facts.scale is not None else (facts.head_dim ** -0.5 if facts.head_dim else None)
    args.append(Argument("scale", repr(round(scale, 6)) if scale is not None else "q.shape[-1] ** -0.5"))
    adapters: list[str] = []
    notes: list[Text] = []
    if facts.window:
        adapters.append(f"atten_mask = {MASK.format(q='q')}")
        args += [Argument("atten_mask", "atten_mask"), Argument("sparse_mode", "4"),
                 Argument("pre_tockens", str(facts.window)), Argument("next_tockens", "0")]
    elif facts.mask == "causal":
        adapters.append(f"atten_mask = {MASK.format(q='q')}")
        args += [Argument("atten_mask", "atten_mask"), Argument("sparse_mode", "2")]
    elif facts.mask in MASKS:
        mask, mode = MASKS[facts.mask]
        args += [Argument("atten_mask", mask), Argument("sparse_mode", mode)]
    if facts.sink:
        args.append(Argument("sink", "sinks"))
        notes.append(Text(N_("sink: the learned logit per head (the module's sinks parameter)")))
    if facts.kv_heads and facts.heads and facts.kv_heads < facts.heads:
        notes.append(Text(N_("k and v keep their %(kv)s heads: no repeat_kv before the call"), {"kv": facts.kv_heads}))
    failures = check_attention(constraints, layout=facts.layout, head_dim=facts.head_dim, heads=facts.heads,
                               kv_heads=facts.kv_heads, dtype=facts.dtype)
    return Call(API, tuple(args), "[0]", tuple(adapters), failures, tuple(notes))


def rms_norm_call(epsilon: float | None) -> Call:
    """npu_rms_norm(x, gamma, epsilon) returns (y, rstd): y is the norm's output."""
    args = [Argument("", "x"), Argument("gamma", "weight")]
    if epsilon is not None:
        args.append(Argument("epsilon", repr(epsilon)))
    return Call("torch_npu.npu_rms_norm", tuple(args), "[0]")


def swiglu_call(from_split: bool, api: str = "torch_npu.npu_swiglu") -> Call:
    """npu_swiglu(x, dim=-1) splits x itself: silu(first half) * second half."""
    if from_split:
        return Call(api, (Argument("", "x"), Argument("dim", "-1")))
    return Call(api, (Argument("", "torch.cat([gate_proj(x), up_proj(x)], dim=-1)"), Argument("dim", "-1")))


def rotary_call(mode: str) -> Call:
    """npu_rotary_mul(x, cos, sin, rotary_mode)."""
    return Call("torch_npu.npu_rotary_mul", (Argument("", "x"), Argument("r1", "cos"), Argument("r2", "sin"),
                                             Argument("rotary_mode", f'"{mode}"')))
