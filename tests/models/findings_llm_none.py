"""Look-alikes of RMSNorm, rotary embeddings and SwiGLU that are something else: none of those findings may fire.

What it exercises (input (2, 8, 32)):
- LayerNorm by hand: mu = x.mean(-1), d = x - mu, var = d.pow(2).mean(-1), d / torch.sqrt(var + eps): the
  pow -> mean -> add -> sqrt -> div chain of an RMSNorm, but on a centred input (x - mean): LayerNorm, not RMSNorm;
- a half swap without negation: cat(x[..., 4:], x[..., :4]) * s + x: slicing and cat, but no rotation;
- F.silu(x) straight into a Linear (no gating product), and F.silu(y) * 2.0 (a scalar, not a gate).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

BATCH, SEQ, HIDDEN = 2, 8, 32


class LookAlikes(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(HIDDEN, HIDDEN)
        self.register_buffer("s", torch.ones(HIDDEN), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mu = x.mean(-1, keepdim=True)
        d = x - mu
        x = d / torch.sqrt(d.pow(2).mean(-1, keepdim=True) + 1e-5)
        half = x.shape[-1] // 2
        x = torch.cat((x[..., half:], x[..., :half]), dim=-1) * self.s + x
        y = self.fc(F.silu(x))
        return F.silu(y) * 2.0


def build_model() -> nn.Module:
    return LookAlikes().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(BATCH, SEQ, HIDDEN),)
