"""An atrous (dilated) convolution block, as in DeepLab: Conv2d with dilation DILATION (default 2).

What it exercises: a Conv2d attribute the NPU limits. The block holds one ordinary 3x3 convolution (dilation 1)
and one 3x3 convolution with dilation DILATION and padding DILATION (which keeps H and W unchanged), so a
classifier must tell the two Conv2d signatures apart by their traced attributes. Change DILATION (or call
build_model(dilation=...)) to move the second convolution's value.

Expected inventory, by hand (input (1, 3, 32, 32), DILATION = 2):
  - torch.nn.Conv2d   2 calls, 2 signatures: {kernel 3, stride 1, padding 1, dilation 1} 3 -> 8 and
                      {kernel 3, stride 1, padding 2, dilation 2} 8 -> 8
  - torch.nn.ReLU     2
  Output (1, 8, 32, 32): with padding = dilation, H_out = 32 + 2*2 - 2*(3 - 1) - 1 + 1 = 32.
  Parameters 3*8*9 + 8 + 8*8*9 + 8 = 808.
"""
from __future__ import annotations

import torch
from torch import nn

DILATION = 2


class AtrousBlock(nn.Module):
    def __init__(self, dilation: int = DILATION) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.relu1 = nn.ReLU()
        self.atrous = nn.Conv2d(8, 8, kernel_size=3, padding=dilation, dilation=dilation)
        self.relu2 = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu2(self.atrous(self.relu1(self.conv(x))))


def build_model(dilation: int = DILATION) -> nn.Module:
    return AtrousBlock(dilation).eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 3, 32, 32),)
