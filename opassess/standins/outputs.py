"""What known entry points of stand-in libraries return: tensors of the documented shape and dtype on the inputs'
device, their values left unset (the capture runs on meta; shapes are what the next operators need).

Rules are registered by library root and function name, so `flash_attn.flash_attn_func` also matches the same
function imported from `flash_attn.flash_attn_interface`. A call without a rule is not guessed at (calls.py).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

_RULES: dict[tuple[str, str], Callable[..., Any]] = {}


class NotModelled(ValueError):
    """A known entry point called with options whose results the rule does not model."""


def returns(*qualified: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the output rule of each `library.function` name (duplicates refused)."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in qualified:
            key = (name.split(".")[0], name.rsplit(".", 1)[-1])
            if key in _RULES:
                raise ValueError(f"output rule for {name} registered twice")
            _RULES[key] = fn
        return fn

    return decorate


def output_rule(qualified: str) -> Callable[..., Any] | None:
    """The output rule of a stand-in symbol ('flash_attn.flash_attn_interface.flash_attn_func'), or None."""
    return _RULES.get((qualified.split(".")[0], qualified.rsplit(".", 1)[-1]))


def _like(t: Any, shape: tuple[int, ...], dtype: Any = None) -> Any:
    import torch

    return torch.empty(shape, dtype=dtype or t.dtype, device=t.device)


def _no_probs(name: str, kwargs: dict) -> None:
    if kwargs.get("return_attn_probs") or kwargs.get("return_softmax_lse"):
        raise NotModelled(f"{name}(return_attn_probs/return_softmax_lse=True): the stand-in models only the "
                           "attention output; the capture cannot continue")


# flash_attn (Dao-AILab/flash-attention, flash_attn_interface.py): q (batch, seqlen, heads, headdim), v (batch,
# seqlen_k, heads_k, headdim_v) -> out (batch, seqlen, heads, headdim_v); varlen: q (total_q, heads, headdim).
@returns("flash_attn.flash_attn_func", "flash_attn.flash_attn_kvpacked_func", "flash_attn.flash_attn_varlen_func",
         "flash_attn.flash_attn_varlen_kvpacked_func", "flash_attn.flash_attn_with_kvcache")
def _flash_attn(q: Any, kv_or_k: Any, v: Any = None, *args: Any, **kwargs: Any) -> Any:
    _no_probs("flash_attn", kwargs)
    value = v if v is not None and hasattr(v, "shape") else kv_or_k  # kvpacked: kv (..., 2, heads_k, headdim)
    return _like(q, (*q.shape[:-1], value.shape[-1]))


# qkv (batch, seqlen, 3, heads, headdim) -> (batch, seqlen, heads, headdim); varlen: (total, 3, heads, headdim).
@returns("flash_attn.flash_attn_qkvpacked_func", "flash_attn.flash_attn_varlen_qkvpacked_func")
def _flash_attn_qkvpacked(qkv: Any, *args: Any, **kwargs: Any) -> Any:
    _no_probs("flash_attn", kwargs)
    return _like(qkv, (*qkv.shape[:-3], *qkv.shape[-2:]))


# xformers.ops.memory_efficient_attention: query (B, M, [H,] K), value (B, N, [H,] Kv) -> (B, M, [H,] Kv).
@returns("xformers.memory_efficient_attention")
def _xformers(query: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
    return _like(query, (*query.shape[:-1], value.shape[-1]))


# causal_conv1d: x (batch, dim, seqlen) -> the same shape (causal_conv1d_fn and causal_conv1d_update).
@returns("causal_conv1d.causal_conv1d_fn", "causal_conv1d.causal_conv1d_update")
def _causal_conv1d(x: Any, *args: Any, **kwargs: Any) -> Any:
    return _like(x, tuple(x.shape))


# mamba_ssm selective_scan_fn(u, delta, A, B, C, ...): u (batch, dim, seqlen) -> out like u; with
# return_last_state=True also last_state (batch, dim, dstate) where A is (dim, dstate).
@returns("mamba_ssm.selective_scan_fn")
def _selective_scan(u: Any, delta: Any, A: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N803 - the library's names
    out = _like(u, tuple(u.shape))
    if kwargs.get("return_last_state"):
        return out, _like(u, (u.shape[0], u.shape[1], A.shape[-1]))
    return out
