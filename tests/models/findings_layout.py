"""A ConvNeXt-style block that hops between NCHW and NHWC around its channels-last LayerNorm and MLP.

What it exercises (input (1, 8, 8, 8) NCHW):
- depthwise 7x7 Conv2d (NCHW) -> x.permute(0, 2, 3, 1) (to NHWC) -> LayerNorm(8) -> Linear 8->32 -> GELU ->
  Linear 32->8 -> x.permute(0, 3, 1, 2) (back to NCHW) -> .contiguous() -> residual add -> 1x1 Conv2d
  -> 2 permutes between NCHW and NHWC on the main path, plus 1 contiguous copy right after one of them: 3 counted;
- a learned (1, 8, 8, 8) NHWC position table, permuted (0, 3, 1, 2) to NCHW and added to the input: a permute of
  a parameter, not of the activations flowing from the input, so it is not on the main path and not counted.
"""
from __future__ import annotations

import torch
from torch import nn


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.pos = nn.Parameter(torch.zeros(1, 8, 8, dim))  # NHWC
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.pw1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pw2 = nn.Linear(4 * dim, dim)
        self.proj = nn.Conv2d(dim, dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.pos.permute(0, 3, 1, 2)
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pw2(self.act(self.pw1(self.norm(y))))
        y = y.permute(0, 3, 1, 2).contiguous()
        return self.proj(x + y)


def build_model() -> nn.Module:
    return ConvNeXtBlock().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 8, 8, 8),)
