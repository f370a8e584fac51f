"""Operators whose output size depends on the data, and what is computed from them.

What it exercises (input (4, 16)):
- torch.nonzero(x > 0): the number of positive entries is known only at run time;
- x[x > 0] (boolean-mask indexing, aten::index with a bool index) -> its sum feeds the output;
- torch.masked_select(x, mask);
- torch.unique(ids) on an int64 input.
The sizes then flow on: the bool-indexed values are summed, the nonzero indices are cast to float and summed.
Runs on the CPU (the meta device cannot compute a data-dependent size).
"""
from __future__ import annotations

import torch
from torch import nn


class DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        positive = h[h > 0]
        idx = torch.nonzero(h > 0)
        picked = torch.masked_select(h, h < 0)
        uniq = torch.unique(ids)
        return positive.sum() + idx.float().sum() + picked.sum() + uniq.float().sum()


def build_model() -> nn.Module:
    return DataDependent().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    return (torch.randn(4, 16), torch.tensor([3, 1, 3, 2, 1]))
