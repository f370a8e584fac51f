"""A model file that imports cleanly but defines no build_model(): the loader must name the missing function.

Error-path fixture: it has a model class, a differently named factory (make_model) and example_inputs().
"""
from __future__ import annotations

import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def make_model() -> nn.Module:
    return Tiny()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 4),)
