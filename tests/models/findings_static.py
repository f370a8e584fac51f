"""Indexing and selection whose output size is fixed by the shapes alone: no dynamic-shape finding may fire.

What it exercises (input (4, 16)): slicing h[:, :8], integer-tensor indexing with index_select, a three-argument
torch.where(cond, a, b) (same shape as its inputs), and a comparison producing a bool mask that is only multiplied.
"""
from __future__ import annotations

import torch
from torch import nn


class StaticShapes(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.register_buffer("index", torch.tensor([0, 2, 4, 6]), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        left = h[:, :8]
        picked = torch.index_select(h, 1, self.index)
        clipped = torch.where(h > 0, h, torch.zeros_like(h))
        masked = h * (h > 0)
        return left.sum() + picked.sum() + clipped.sum() + masked.sum()


def build_model() -> nn.Module:
    return StaticShapes().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(4, 16),)
