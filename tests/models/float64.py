"""A float64 MLP (a physics-informed regression net, as scientific codes write them): weights and inputs in float64.

What it exercises: dtype handling. Every Linear and Tanh runs in float64, which the NPU does not compute natively
(it must be cast to float32 or rejected), so every operator here carries input dtype "float64".

Expected inventory, by hand (input (8, 3) float64):
  - torch.nn.Linear   3  (3 -> 32, 32 -> 32, 32 -> 1), all float64
  - torch.nn.Tanh     2
  Output (8, 1) float64. Parameters 3*32 + 32 + 32*32 + 32 + 32*1 + 1 = 1,217.
"""
from __future__ import annotations

import torch
from torch import nn


class Float64PINN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1)
        )

    def forward(self, coords: torch.Tensor) -> torch.Tensor:
        return self.net(coords)


def build_model() -> nn.Module:
    return Float64PINN().to(torch.float64).eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    """Eight (x, y, t) points."""
    return (torch.randn(8, 3, dtype=torch.float64),)
