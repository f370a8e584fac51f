"""Pieces of attention that do not make an attention: no attention finding may fire.

What it exercises (input (2, 16, 32)):
- similarity scores q @ k^T, softmax over them, then only a sum: no second matmul with the values;
- a mixture-of-experts style router: Linear -> softmax -> topk (a softmax after a Linear, not after a matmul);
- two chained matmuls with an activation and no softmax between them: h @ w1 -> relu -> @ w2.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

BATCH, SEQ, HIDDEN = 2, 16, 32


class NotAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(HIDDEN, HIDDEN)
        self.k = nn.Linear(HIDDEN, HIDDEN)
        self.router = nn.Linear(HIDDEN, 4)
        self.w1 = nn.Parameter(torch.randn(HIDDEN, HIDDEN))
        self.w2 = nn.Parameter(torch.randn(HIDDEN, HIDDEN))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = self.q(x) @ self.k(x).transpose(-2, -1)
        similarity = scores.softmax(dim=-1).sum(-1, keepdim=True)
        weights, _ = self.router(x).softmax(dim=-1).topk(2, dim=-1)
        h = F.relu(x @ self.w1) @ self.w2
        return h * similarity + weights.sum(-1, keepdim=True)


def build_model() -> nn.Module:
    return NotAttention().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(BATCH, SEQ, HIDDEN),)
