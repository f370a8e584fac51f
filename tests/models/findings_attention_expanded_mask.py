"""Whisper-style attention: q, k and v all have 4 heads, and an additive float causal mask is expanded to the batch
before F.scaled_dot_product_attention.

What it exercises (input (2, 8, 32): batch 2, sequence 8, hidden 32; 4 heads of 8, so sequence == head size):
- mask buffer (8, 8) -> mask[None, None].expand(2, 1, 8, 8): an `aten::expand` feeding the attention, as
  Whisper's 4-D attention-mask helper does. It repeats the batch, not heads: 1 "head" in and 1 out, while the
  query has 4, so it is not grouped-query attention (no GQA hint), although its last dimension (8) equals the
  head size.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

BATCH, SEQ, HIDDEN, HEADS = 2, 8, 32, 4
HEAD_DIM = HIDDEN // HEADS


class WhisperLikeAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(HIDDEN, HIDDEN)
        self.k = nn.Linear(HIDDEN, HIDDEN)
        self.v = nn.Linear(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, HIDDEN)
        mask = torch.full((SEQ, SEQ), float("-inf")).triu(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q = self.q(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.k(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        v = self.v(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        mask = self.mask[None, None].expand(BATCH, 1, SEQ, SEQ)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out(y.transpose(1, 2).reshape(b, t, c))


def build_model() -> nn.Module:
    return WhisperLikeAttention().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(BATCH, SEQ, HIDDEN),)
