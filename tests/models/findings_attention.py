"""Attention written out by hand next to attention through F.scaled_dot_product_attention.

What it exercises (input (2, 16, 32): batch 2, sequence 16, hidden 32; 4 heads of 8):
- block `manual`: q, k, v Linears, view (2, 16, 4, 8) + transpose(1, 2) -> (2, 4, 16, 8) each; then
  scores = q @ k.transpose(-2, -1) / sqrt(8); scores.masked_fill(mask, -inf) with a causal boolean mask buffer;
  softmax(-1); Dropout; @ v; transpose back and reshape to (2, 16, 32); output Linear.
  -> attention by hand: matmul, div, masked_fill, softmax, (dropout looked through), matmul;
     npu_fusion_attention with input_layout "BSND" (q/k/v are (batch, seq, heads, dim) before the transposes)
- block `fused`: the same projections, then F.scaled_dot_product_attention(q, k, v, is_causal=True)
  -> attention through SDPA, also BSND for the same reason, head_num 4.
Attention FLOPs by hand, per block: q @ k^T 2 * (2*4) * 16 * 16 * 8 = 32,768 and the same for p @ v: 65,536.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

BATCH, SEQ, HIDDEN, HEADS = 2, 16, 32, 4
HEAD_DIM = HIDDEN // HEADS


class ManualAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(HIDDEN, HIDDEN)
        self.k = nn.Linear(HIDDEN, HIDDEN)
        self.v = nn.Linear(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, HIDDEN)
        self.drop = nn.Dropout(0.1)
        self.register_buffer("mask", torch.ones(SEQ, SEQ, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q = self.q(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.k(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        v = self.v(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(HEAD_DIM)
        scores = scores.masked_fill(self.mask, float("-inf"))
        probs = self.drop(scores.softmax(dim=-1))
        y = (probs @ v).transpose(1, 2).reshape(b, t, c)
        return self.out(y)


class FusedAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(HIDDEN, HIDDEN)
        self.k = nn.Linear(HIDDEN, HIDDEN)
        self.v = nn.Linear(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q = self.q(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.k(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        v = self.v(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, c))


class TwoAttentions(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.manual = ManualAttention()
        self.fused = FusedAttention()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.manual(x)
        return x + self.fused(x)


def build_model() -> nn.Module:
    return TwoAttentions().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(BATCH, SEQ, HIDDEN),)
