"""DeepSeek-V3-style multi-head latent attention, one decode step against a KV cache, written by hand.

What it exercises (opassess/findings/variants.py):
- latent K/V: kv_a = Linear(256 -> 64 + 16) (latent 64, rotary part 16), split, the latent RMS-normalised and
  expanded by kv_b = Linear(64 -> 4 heads x (32 + 32)): multi-head latent attention;
- the interleaved rotary layout: k_pe.view(..., 8, 2).transpose(-1, -2) (d = 16);
- decode: the query is one position, the keys and values are that position concatenated to a 15-position cache:
  F.scaled_dot_product_attention with q (1, 4, 1, 48) and k, v (1, 4, 16, ...).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

HIDDEN, HEADS, LATENT, ROPE, NOPE, VDIM, CACHE = 256, 4, 64, 16, 32, 32, 15


class LatentAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q_proj = nn.Linear(HIDDEN, HEADS * (NOPE + ROPE), bias=False)
        self.kv_a = nn.Linear(HIDDEN, LATENT + ROPE, bias=False)
        self.kv_norm = nn.RMSNorm(LATENT)
        self.kv_b = nn.Linear(LATENT, HEADS * (NOPE + VDIM), bias=False)
        self.out = nn.Linear(HEADS * VDIM, HIDDEN, bias=False)

    def forward(self, x: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, HEADS, NOPE + ROPE).transpose(1, 2)
        latent, k_pe = torch.split(self.kv_a(x), [LATENT, ROPE], dim=-1)
        kv = self.kv_b(self.kv_norm(latent)).view(b, t, HEADS, NOPE + VDIM).transpose(1, 2)
        k_nope, v = torch.split(kv, [NOPE, VDIM], dim=-1)
        k_pe = k_pe.view(b, 1, t, ROPE // 2, 2).transpose(-1, -2).reshape(b, 1, t, ROPE).expand(b, HEADS, t, ROPE)
        k = torch.cat([torch.cat([k_nope, k_pe], dim=-1), k_cache], dim=2)
        v = torch.cat([v, v_cache], dim=2)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.out(out.transpose(1, 2).reshape(b, t, HEADS * VDIM))


def build_model() -> nn.Module:
    return LatentAttention().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 1, HIDDEN), torch.randn(1, HEADS, CACHE, NOPE + ROPE), torch.randn(1, HEADS, CACHE, VDIM))
