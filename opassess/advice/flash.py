"""A flash-attn call mapped onto torch_npu.npu_fusion_attention with the call's own arguments.

The mapping is the knowledge base's route rows for flash_attn (third_party_kernel_libs.tsv: "head_num=q.shape[2],
'BSND', keep_prob=1-dropout_p, scale=softmax_scale or 1/sqrt(head_dim); causal adds atten_mask=triu(ones(2048,2048),
1).bool() and sparse_mode=3 ...; varlen uses input_layout='TND', actual_seq_qlen/kvlen=tuple(cu_seqlens[1:]...)";
"sliding window via sparse_mode=4 (band, pre_tockens/next_tockens)") applied to one call:

    flash_attn_func(q, k, v, causal=True, window_size=(256, 0))
    -> torch_npu.npu_fusion_attention(query=q, key=k, value=v, head_num=q.shape[2], input_layout="BSND",
           scale=q.shape[-1] ** -0.5,
           atten_mask=mask, sparse_mode=4, pre_tockens=256, next_tockens=0)[0]
       with  mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device=q.device), diagonal=1)

flash-attn's window (left, right) counts keys before and after the query; -1 is unbounded (2147483647, the op's
default). The op returns a tuple: the attention output is its first element.
"""
from __future__ import annotations

import ast

from ..messages import N_, Text
from .call import Argument, Call
from .constraints import Constraints, check_attention

API = "torch_npu.npu_fusion_attention"
UNBOUNDED = "2147483647"  # pre_tockens / next_tockens default: no limit
MASK = "torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device={q}.device), diagonal=1)"
# Each flash-attn entry point: its positional parameters in order, and the layout its q/k/v come in
PARAMETERS = {
    "flash_attn.flash_attn_func": ("q", "k", "v", "dropout_p", "softmax_scale", "causal", "window_size", "softcap",
                                   "alibi_slopes", "deterministic", "return_attn_probs"),
    "flash_attn.flash_attn_varlen_func": ("q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q",
                                          "max_seqlen_k", "dropout_p", "softmax_scale", "causal", "window_size",
                                          "softcap", "alibi_slopes", "deterministic", "return_attn_probs",
                                          "block_table"),
    "flash_attn.flash_attn_qkvpacked_func": ("qkv", "dropout_p", "softmax_scale", "causal", "window_size", "softcap",
                                             "alibi_slopes", "deterministic", "return_attn_probs"),
}
# flash_attn/__init__.py re-exports these from flash_attn.flash_attn_interface, where they are defined: code that
# imports them from there makes the same call (Dao-AILab/flash-attention, flash_attn/__init__.py)
INTERFACE = "flash_attn.flash_attn_interface"
PARAMETERS.update({f"{INTERFACE}.{name.rsplit('.', 1)[1]}": names for name, names in list(PARAMETERS.items())})
FLASH_CALLS = frozenset(PARAMETERS)
# Arguments the mapping reads (the rest is said as not carried over)
# What the capture saw at the call: q's shape, k's shape, q's dtype (None where it saw nothing)
Captured = tuple[tuple[int, ...] | None, tuple[int, ...] | None, str | None]
MAPPED = frozenset({"q", "k", "v", "qkv", "dropout_p", "softmax_scale", "causal", "window_size", "cu_seqlens_q",
                    "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k", "softcap", "return_attn_probs"})


def _value(text: str | None) -> object:
    """The literal a source expression is (True, 0.1, (256, 0)), else the expression itself as a str."""
    if text is None:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _is_expr(value: object) -> bool:
    return isinstance(value, str)


def bound_arguments(subject: str, positional: list[str], keywords: dict[str, str]) -> dict[str, str]:
    """The call's arguments by parameter name (source expressions)."""
    names = PARAMETERS[subject]
    bound = dict(zip(names, positional, strict=False))
    bound.update((k, v) for k, v in keywords.items() if k)
    return bound


def flash_call(subject: str, positional: list[str], keywords: dict[str, str],
               constraints: Constraints | None = None, captured: Captured | None = None) -> Call:
    """The npu_fusion_attention call replacing one flash-attn call (see the module's docstring). `captured`: the
    shapes and dtype the capture saw at this call (q, k and their dtype), which make the head count and scale numbers
    and let the head dim, head counts and dtype be checked."""
    args = bound_arguments(subject, positional, keywords)
    adapters: list[str] = []
    notes: list[Text] = []
    failures: list[Text] = []
    if subject.endswith("qkvpacked_func"):
        adapters.append(f"q, k, v = {args.get('qkv', 'qkv')}.unbind(dim=2)")
        q, k, v = "q", "k", "v"
    else:
        q, k, v = args.get("q", "q"), args.get("k", "k"), args.get("v", "v")
    varlen = subject.endswith("varlen_func")
    layout = "TND" if varlen else "BSND"
    q_shape, k_shape, dtype = captured or (None, None, None)
    axis = 1 if varlen else 2  # the heads axis: (B, S, N, D) or (T, N, D)
    heads = q_shape[axis] if q_shape and len(q_shape) > axis else None
    kv_heads = k_shape[axis] if k_shape and len(k_shape) > axis else None
    head_dim = q_shape[-1] if q_shape else None
    out = [Argument("query", q), Argument("key", k), Argument("value", v),
           Argument("head_num", str(heads) if heads else f"{q}.shape[{axis}]"),
           Argument("input_layout", f'"{layout}"')]
    dropout = _value(args.get("dropout_p"))
    if _is_expr(dropout):
        out.append(Argument("keep_prob", f"1 - {args['dropout_p']}"))
    elif isinstance(dropout, int | float) and dropout:
        out.append(Argument("keep_prob", repr(round(1 - dropout, 6))))
    scale = args.get("softmax_scale")
    out.append(Argument("scale", scale if scale not in (None, "None") else
                        repr(round(head_dim ** -0.5, 6)) if head_dim else f"{q}.shape[-1] ** -0.5"))
    causal, window = _value(args.get("causal")), _value(args.get("window_size"))
    windowed = window is not None and (_is_expr(window) or (
        isinstance(window, tuple) and len(window) == 2 and any(w >= 0 for w in window)))
    mask = MASK.format(q=q)
    if windowed:
        adapters.append(f"atten_mask = {mask}")
        if isinstance(window, tuple):
            left, right = (str(w) if w >= 0 else UNBOUNDED for w in window)
        else:
            left, right = f"{args['window_size']}[0]", f"{args['window_size']}[1]"
            notes.append(Text(N_("window_size is known at run time only: sparse_mode=4 holds when it is not "
                                 "(-1, -1)")))
        if causal is True:
            right = "0"
        elif _is_expr(causal):
            right = f"0 if {args['causal']} else {right}"
        out += [Argument("atten_mask", "atten_mask"), Argument("sparse_mode", "4"),
                Argument("pre_tockens", left), Argument("next_tockens", right)]
    elif causal is True or _is_expr(causal):
        adapters.append(f"atten_mask = {mask}")
        if causal is True:
            out += [Argument("atten_mask", "atten_mask"), Argument("sparse_mode", "3")]
        else:
            out += [Argument("atten_mask", f"atten_mask if {args['causal']} else None"),
                    Argument("sparse_mode", f"3 if {args['causal']} else 0")]
    if varlen:
        for name, cu in (("actual_seq_qlen", "cu_seqlens_q"), ("actual_seq_kvlen", "cu_seqlens_k")):
            out.append(Argument(name, f"tuple({args.get(cu, cu)}[1:].cpu().tolist())"))
        notes.append(Text(N_("actual_seq_qlen/kvlen are host tuples: a device-to-host copy on every call")))
    softcap = _value(args.get("softcap"))
    if softcap not in (None, 0, 0.0):
        failures.append(Text(N_("softcap=%(value)s: npu_fusion_attention has no soft-capping argument"),
                             {"value": args["softcap"]}))
    if _value(args.get("return_attn_probs")) not in (None, False):
        failures.append(Text(N_("return_attn_probs: npu_fusion_attention does not return the attention "
                                "probabilities")))
    for name in args:
        if name not in MAPPED:
            notes.append(Text(N_("%(name)s=%(value)s is not carried over: map it by hand"),
                              {"name": name, "value": args[name]}))
    failures += check_attention(constraints, layout=layout, head_dim=head_dim, heads=heads, kv_heads=kv_heads,
                                dtype=dtype)
    return Call(API, tuple(out), "[0]", tuple(adapters), tuple(failures), tuple(notes))
