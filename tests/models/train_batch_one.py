"""A conv block with BatchNorm whose example batch is a single image, and a mask helper that reads a value unless it
is being compiled (as Hugging Face transformers' mask helpers do).

What it exercises (--train): train-mode BatchNorm refuses one value per channel ("Expected more than 1 value per
channel when training") on the real (1, 8) activations after pooling; the training step doubles the batch to 2 and
says so. `.item()` has no value on meta: the step is retried with torch.compiler.is_compiling() true, which skips
the read.

Expected inventory, by hand (input (1, 3, 8, 8), run as (2, 3, 8, 8)):
  - torch.nn.Conv2d       1  (3 -> 8, 3x3, padding 1)
  - torch.nn.AdaptiveAvgPool2d 1 (to 1x1), Tensor.flatten 1
  - torch.nn.BatchNorm1d  1  (8 features, on (2, 8))
  - torch.nn.Linear       1  (8 -> 2)
"""
from __future__ import annotations

import torch
from torch import nn


class OneImageNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.norm = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.compiler.is_compiling() and x.abs().sum().item() == 0:  # a value read, skipped when compiled
            return x.new_zeros(x.shape[0], 2)
        return self.head(self.norm(self.pool(self.conv(x)).flatten(1)))


def build_model() -> nn.Module:
    return OneImageNet()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 3, 8, 8),)
