"""A project-defined torch.library op with attributes, called in two dtypes: the operator-description hand-off.

`opassess_desc::scaled_clamp(Tensor x, Tensor bound, *, float scale, int[] dims, bool keep) -> Tensor` computes
clamp(x * scale, -|bound|, |bound|) summed over `dims` (kept when `keep`); it has a CPU implementation only, so it
is custom-dev. The model calls it with keyword attributes in float32 and, on a half-precision copy of its input,
float16; `scale` differs between the two calls, `dims` and `keep` do not.

Expected captured signatures, by hand (input (2, 8, 16)):
  1. x float32 (2, 8, 16), bound float32 (16,); scale=0.5, dims=[1], keep=True
  2. x float16 (2, 8, 16), bound float16 (16,); scale=2.0, dims=[1], keep=True
"""
from __future__ import annotations

import torch
from torch import nn


@torch.library.custom_op("opassess_desc::scaled_clamp", mutates_args=(), device_types="cpu")
def scaled_clamp(x: torch.Tensor, bound: torch.Tensor, *, scale: float, dims: list[int], keep: bool) -> torch.Tensor:
    limit = bound.abs()
    return torch.clamp(x * scale, -limit, limit).sum(dim=dims, keepdim=keep)


@scaled_clamp.register_fake
def _scaled_clamp_fake(x, bound, *, scale, dims, keep):
    return x.sum(dim=dims, keepdim=keep)


class Clamped(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bound = nn.Parameter(torch.ones(16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        full = torch.ops.opassess_desc.scaled_clamp(x, self.bound, scale=0.5, dims=[1], keep=True)
        half = torch.ops.opassess_desc.scaled_clamp(x.half(), self.bound.half(), scale=2.0, dims=[1], keep=True)
        return full + half.float()


def build_model() -> nn.Module:
    return Clamped().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(2, 8, 16),)
