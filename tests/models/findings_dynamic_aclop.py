"""A data-dependent batch fed to an nn.LSTMCell, whose NPU kernel (aten::lstm_cell) has only CANN's aclop path.

What it exercises (input (6, 8)): rows = x[x.sum(1) > 0] keeps a data-dependent number of rows (boolean-mask
indexing); the LSTMCell then sees a new batch size whenever the data changes, and an aclop-only kernel compiles
online for each new shape: a dynamic-shape finding naming aten::lstm_cell, while the LSTMCell stays direct.
Runs on the CPU (the meta device cannot compute a data-dependent size).
"""
from __future__ import annotations

import torch
from torch import nn


class MaskedCell(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.LSTMCell(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x[x.sum(1) > 0]
        h, _ = self.cell(rows)
        return h.sum()


def build_model() -> nn.Module:
    return MaskedCell().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    return (torch.randn(6, 8),)
