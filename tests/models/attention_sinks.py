"""gpt-oss-style attention written by hand: a learned sink logit per head joins the softmax, and a sliding-window
(band) causal mask. The 2026 variants the time model and the findings name (opassess/findings/variants.py).

Expected by hand (input (2, 16, 64), 4 heads of 16, window 8):
  - sinks: softmax(cat([scores (2, 4, 16, 16), sink (2, 4, 16, 1)], -1))[..., :-1], one place: the facts' routes are
    npu_fusion_attention(sink=...) in training and npu_fused_infer_attention_score_v2(learnable_sink=...) in
    inference; the chain from the scores matmul to the values matmul is one finding;
  - sliding window: torch.tril(ones, diagonal=-8) | torch.triu(ones, diagonal=1): a band of 8 positions, which
    npu_fusion_attention takes as pre_tockens/next_tockens instead of an S x S mask.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class SinkAttention(nn.Module):
    def __init__(self, hidden: int = 64, heads: int = 4, window: int = 8) -> None:
        super().__init__()
        self.heads, self.head_dim, self.window = heads, hidden // heads, window
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.sinks = nn.Parameter(torch.zeros(heads))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / self.head_dim ** 0.5
        ones = torch.ones(t, t, dtype=torch.bool, device=x.device)
        band = torch.triu(ones, diagonal=1) | torch.tril(ones, diagonal=-self.window)
        scores = scores.masked_fill(band, float("-inf"))
        sink = self.sinks.reshape(1, -1, 1, 1).expand(b, -1, t, 1)
        probs = F.softmax(torch.cat([scores, sink], dim=-1), dim=-1)[..., :-1]
        return self.out((probs @ v).transpose(1, 2).reshape(b, t, h))


def build_model() -> nn.Module:
    return SinkAttention().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(2, 16, 64),)
